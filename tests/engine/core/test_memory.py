"""engine.fit_memory against measured peaks: an upper bound of the resident memory a fit adds
(cohort building, fit, summary), and not more than 2.5 times it.

Each size runs in a fresh Python (the kernels warmed on a tiny fit first), whose peak resident
set (VmHWM, reset through /proc/self/clear_refs just before the fit) is compared with the
resident set before it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import engine

ROOT = Path(__file__).resolve().parents[3]
MEASURE = r'''
import json, sys
import numpy as np, pandas as pd
import engine
n, p, density, model = json.loads(sys.argv[1])

def frame(n, p, seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p)) * (rng.random((n, p)) < density)
    df = pd.DataFrame(X, columns=[f"x{j}" for j in range(p)])
    df["time"] = rng.exponential(size=n) + 0.01
    df["event"] = rng.integers(0, 3 if model == "fine_gray" else 2, size=n)
    return df

def fit(df):
    cohort = engine.Cohort.from_frame(df, time="time", event="event",
                                      covariates=[c for c in df if c.startswith("x")],
                                      competing_risks=model == "fine_gray")
    return engine.fit(cohort, model=model).summary

def status(key):
    line = next(l for l in open("/proc/self/status") if l.startswith(key))
    return int(line.split()[1]) * 1024

fit(frame(300, min(p, 5), 1))
df = frame(n, p, 2)
open("/proc/self/clear_refs", "w").write("5")
before = status("VmRSS")
fit(df)
print(json.dumps(status("VmHWM") - before))
'''


def measured_peak(n, p, density, model):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OPENBLAS_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", MEASURE, json.dumps([n, p, density, model])],
                         env=env, capture_output=True, text=True, timeout=300, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/clear_refs").exists(), reason="needs Linux /proc")
@pytest.mark.parametrize("n, p, density, model", [
    (100_000, 20, 1.0, "cox"),
    (50_000, 200, 0.05, "cox"),
    (20_000, 50, 1.0, "fine_gray"),
])
def test_the_estimate_bounds_the_measured_peak(n, p, density, model):
    peak = measured_peak(n, p, density, model)
    estimate = engine.fit_memory(n, p, density, model)
    assert peak > 20e6  # the fit, not noise, is measured
    assert peak <= estimate <= 2.5 * peak


def test_the_estimate_follows_the_layout():
    base = engine.fit_memory(10_000, 10, 0.5)
    assert base == 80 * 50_000 + 200 * 10_000 + 80 * 100 + 8_000_000
    assert engine.fit_memory(10_000, 10, 0.5, model="fine_gray") == base + 100 * 10_000
    assert engine.fit_memory(10_000, 10, 0.5, n_cut_points=1) == base + 80 * 50_000 + 200 * 10_000
    for bad in ({"n_rows": -1}, {"density": 1.5}, {"n_cut_points": -2}):
        kwargs = {"n_rows": 10, "n_cols": 2, **bad}
        with pytest.raises(ValueError, match="fit_memory needs"):
            engine.fit_memory(**kwargs)
