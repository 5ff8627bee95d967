"""Shared by the formula, spline and effect-curve tests: a simulated cohort frame with numeric,
text and strata columns, and Harrell's restricted cubic spline written out from its definition
(an oracle independent of engine.data.splines)."""
from __future__ import annotations

import numpy as np
import pandas as pd


def frame(n=400, seed=7):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({
        "age": rng.normal(60, 10, n).round(1),
        "sex": rng.choice(["F", "M"], n),
        "treat": rng.integers(0, 2, n),
        "bmi": rng.normal(27, 4, n).round(2),
        "site": rng.choice(["north", "south", "west"], n),
    })
    lp = (0.03 * (df.age - 60) + 0.6 * df.treat - 0.4 * df.treat * (df.sex == "M")
          + 0.01 * (df.bmi - 27) ** 2)
    df["time"] = rng.exponential(np.exp(-lp)).round(3) + 0.001
    df["event"] = (rng.uniform(size=n) < 0.75).astype(int)
    return df


def harrell_rcs(x, t):
    """Harrell (2015, RMS eq. 2.25): X_1 = x, X_{j+1} = (x-t_j)+^3 - (x-t_{k-1})+^3
    (t_k-t_j)/(t_k-t_{k-1}) + (x-t_k)+^3 (t_{k-1}-t_j)/(t_k-t_{k-1}), each divided by
    (t_k - t_1)^2 (Hmisc's norm=2)."""
    k = len(t)
    cols = [x]
    for j in range(k - 2):
        v = (np.clip(x - t[j], 0, None) ** 3
             - np.clip(x - t[k - 2], 0, None) ** 3 * (t[k - 1] - t[j]) / (t[k - 1] - t[k - 2])
             + np.clip(x - t[k - 1], 0, None) ** 3 * (t[k - 2] - t[j]) / (t[k - 1] - t[k - 2]))
        cols.append(v / (t[k - 1] - t[0]) ** 2)
    return np.column_stack(cols)
