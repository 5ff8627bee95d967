"""engine.simulate_sccs: the stated design (era counts, drug prevalence law, one event or more a
case) and the model it claims (an unpenalised fit recovers the true log IRRs); bench sccs end to
end on a tiny size."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import engine
from bench.__main__ import main


def test_design_and_determinism():
    a = engine.simulate_sccs(5_000, 40, eras_per_case=8, seed=3)
    b = engine.simulate_sccs(5_000, 40, eras_per_case=8, seed=3)
    assert a.n == b.n and (a.X != b.X).nnz == 0 and np.array_equal(a.events, b.events)
    assert a.n_cases == 5_000 and a.names[0] == "drug0"
    assert a.n / 5_000 == pytest.approx(8, rel=0.03)                  # 1 + Poisson(7) a case
    per_case = np.bincount(np.unique(a.case, return_inverse=True)[1], weights=a.events)
    assert per_case.min() >= 1 and per_case.mean() == pytest.approx(1.2, rel=0.05)
    assert a.length.min() >= 1 and a.length.max() <= 59
    # drug j is drawn with probability log((j + 2) / (j + 1)) / log(J + 1); one draw an era on
    # average, so P(era holds drug j) = 1 - exp(-P(j)) (Poisson thinning)
    share = np.diff(a.X.indptr) / a.n
    j = np.arange(40)
    expected = 1.0 - np.exp(-np.log((j + 2) / (j + 1)) / np.log(41))
    sd = np.sqrt(expected * (1 - expected) / a.n)
    assert np.all(np.abs(share - expected) < 5 * sd)


def test_unpenalised_fit_recovers_the_truth():
    sccs = engine.simulate_sccs(20_000, 6, eras_per_case=6, n_signals=3, drugs_per_era=0.8,
                                seed=5)
    res = engine.fit(sccs, model="sccs")
    z = (res.coef.to_numpy() - sccs.beta_true) / res.se.to_numpy()
    assert np.count_nonzero(sccs.beta_true) == 3
    assert np.all(np.abs(z) < 4.0)


def test_bench_sccs_tiny_end_to_end(tmp_path):
    main(["sccs", "--n", "3000", "--p", "30", "--peer-sizes", "200", "--out", str(tmp_path)])
    record = json.loads(next(Path(tmp_path).glob("sccs_*.json")).read_text())
    md = next(Path(tmp_path).glob("sccs_*.md")).read_text()
    (peer,) = record["peers"]
    assert peer["same_optimum"] and peer["max_abs_coef_diff"] < 1e-6
    assert record["large"]["converged"] and record["large"]["n_cases"] == 3000
    profile = record["profile"]
    assert profile["lower"] < profile["coef"] < profile["upper"] and profile["seconds"] > 0
    assert "statsmodels" in md and "One L1 fit" in md
