"""bench cvprofile: the per-grid-point pass counts of a serial cross-validation add up to the
kernel calls counted over the whole run, and its curve is engine.cross_validate's."""
import json

import numpy as np

import engine


def test_cv_profile_counts_every_fold_fit(tmp_path):
    from bench.__main__ import main

    record = main(["cvprofile", "--n", "400", "--p", "6", "--folds", "3", "--grid", "4",
                   "--out", str(tmp_path)])
    saved = json.loads((tmp_path / "cv_profile_n400_p6_k3_g4.json").read_text())
    assert (tmp_path / "cv_profile_n400_p6_k3_g4.md").exists()
    cv = engine.cross_validate(engine.simulate(400, 6, density=0.05, seed=0), folds=3, grid=4,
                               seed=0)
    np.testing.assert_array_equal(saved["curve_mean"], cv.curve["mean"].to_numpy())
    assert [row["lambda"] for row in record["per_lambda"]] == list(cv.curve["lambda"])
    # the fold fits' row passes never exceed the run's (the rest: lambda_max and the refit)
    folds_rows = 3 * sum(row["row passes"] for row in record["per_lambda"])
    run_rows = sum(record["kernels"].get(k, {"calls": 0})["calls"]
                   for k in ("cox_kernels.risk_set_pass", "cox_cpu.direction_curvature"))
    assert 0 < folds_rows <= run_rows
    assert all(row["outer_steps"] >= 1 for row in record["per_lambda"][1:])
