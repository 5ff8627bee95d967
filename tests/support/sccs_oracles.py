"""Reference definitions for the SCCS tests, independent of engine/'s kernels: the conditional
likelihood and its gradient case by case (Suchard2013 eq. 1), a day-by-day expansion of raw case
histories (formatdata's inclusive-day rules, written the slow and obvious way), and small
random era data."""
from __future__ import annotations

import numpy as np
import pandas as pd

import engine

AGE_CUTS = [427, 488, 549, 610, 671]     # itpdat's age groups (R SCCS's example)


def read(name):
    """An R SCCS dataset as published (engine.datasets.load_sccs)."""
    return engine.datasets.load_sccs(name)


def brute_loglik(case, length, y, X, beta):
    """sum over cases of sum_k y_k log(l_k e^{x_k b} / sum_k' l_k' e^{x_k' b}) (seed eq. 1)."""
    eta = X @ beta
    total = 0.0
    for c in np.unique(case):
        at = case == c
        p = length[at] * np.exp(eta[at])
        total += np.sum(y[at] * np.log(p / p.sum()))
    return total


def brute_gradient(case, length, y, X, beta):
    eta = X @ beta
    g = np.zeros(X.shape[1])
    for c in np.unique(case):
        at = case == c
        p = length[at] * np.exp(eta[at])
        g += X[at].T @ (y[at] - y[at].sum() * p / p.sum())
    return g


def simulated(seed, n_cases=60, p=5, eras=6):
    """Small random eras: a few binary exposures and one continuous one."""
    rng = np.random.default_rng(seed)
    k = rng.integers(2, eras + 1, n_cases)
    case = np.repeat(np.arange(n_cases), k)
    n = case.size
    X = (rng.random((n, p)) < 0.3).astype(float)
    X[:, -1] = rng.normal(size=n)
    length = rng.integers(1, 60, n).astype(float)
    beta = np.linspace(-0.8, 0.8, p)
    rate = length * np.exp(X @ beta) / 30.0
    y = rng.poisson(rate).astype(float)
    return case, length, y, X


def day_by_day(df, case, sta, end, event, windows, age_cuts=()):
    """One row per observed day (the definition, no cleverness): exposure by the inclusive
    window arithmetic of formatdata, a later dose taking over from the day its window opens,
    overlapping doses of a drug with ends first joined into their union (OHDSI), events
    counted once per (case, day)."""
    rows = []
    for c, g in df.groupby(case):
        s, e = int(g[sta].iloc[0]), int(g[end].iloc[0])
        days = np.arange(s, e + 1)
        events = np.isin(days, g[event].unique()).astype(float)
        cols = {}
        for name, (start_col, end_col, a, b) in windows.items():
            x = np.zeros(days.size)
            doses = g.drop_duplicates([start_col, end_col] if end_col else start_col)
            doses = doses[doses[start_col].notna()]
            spans = sorted(zip(doses[start_col], doses[end_col] if end_col else doses[start_col]))
            if end_col:                       # OHDSI: overlapping exposures are one, their union
                merged = []
                for s0, e0 in spans:
                    if merged and s0 <= merged[-1][1]:
                        merged[-1][1] = max(merged[-1][1], e0)
                    else:
                        merged.append([s0, e0])
                spans = merged
            for s0, e0 in spans:
                hi = e0 + b
                later = days >= s0 + a
                x[later] = (days[later] <= hi) * 1.0
            cols[name] = x
        for lo, hi in zip(age_cuts, [*age_cuts[1:], np.inf]):
            cols[f"age[{lo},{'inf' if np.isinf(hi) else hi})"] = ((days >= lo) & (days < hi)) * 1.
        rows.append(pd.DataFrame({"case": c, "length": 1.0, "events": events, **cols}))
    return pd.concat(rows, ignore_index=True)
