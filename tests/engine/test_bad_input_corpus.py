"""Issue 18's bad-input corpus over the public API: every malformed input gets a clear error
(the right type, a message naming the column or argument) or a documented, correct handling.
One case a line: (name, call, error type, message pattern)."""
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import engine
from engine.regression.drivers.resampling import bootstrap_counts

DF = pd.DataFrame({"t": [5.0, 8, 3, 9, 12, 4, 7, 10], "e": [1, 0, 1, 1, 0, 1, 0, 1],
                   "x": [0.5, 1.2, -0.3, 0.8, 2.0, -1.0, 0.1, 0.4],
                   "z": [1, 0, 1, 1, 0, 0, 1, 0]})
COHORT = engine.Cohort.from_frame(DF, "t", "e", covariates=["x", "z"])
CR = pd.DataFrame({"t": [1.0, 2, 3, 4, 5, 6], "e": [1, 0, 2, 1, 2, 0]})


def _with(**columns):
    return DF.assign(**columns)


def _nested_parquet(tmp_path):
    path = tmp_path / "nested.parquet"
    pq.write_table(pa.table({"t": DF["t"], "e": DF["e"], "codes": [[1, 2]] * len(DF)}), path)
    return engine.Cohort.from_parquet(path, "t", "e")


CASES = [
    # cumulative_incidence on a DataFrame checks its columns as a cohort does
    ("cif negative time", lambda tmp: engine.cumulative_incidence(
        CR.assign(t=[-1.0, 2, 3, 4, 5, 6]), time="t", event="e"), engine.CohortError,
     r"'t' \(time\).*negative"),
    ("cif code 1.9", lambda tmp: engine.cumulative_incidence(
        CR.assign(e=[1.9, 0, 2, 1, 2, 0]), time="t", event="e"), engine.CohortError,
     r"'e' \(event\).*non-integer.*row 0 = 1.9"),
    ("cif NaN code", lambda tmp: engine.cumulative_incidence(
        CR.assign(e=[1, np.nan, 2, 1, 2, 0]), time="t", event="e"), engine.CohortError,
     r"'e' \(event\).*missing.*row 1"),
    # fit: what is fitted, and its arguments
    ("fit DataFrame", lambda tmp: engine.fit(DF), TypeError, r"Cohort.*DataFrame.*from_frame"),
    ("fit None", lambda tmp: engine.fit(None), TypeError, r"Cohort.*NoneType"),
    ("fit max_iter=0", lambda tmp: engine.fit(COHORT, max_iter=0), ValueError,
     r"max_iter must be a whole number >= 1"),
    ("fit max_iter=2.5", lambda tmp: engine.fit(COHORT, max_iter=2.5), ValueError, r"max_iter"),
    ("fit init 1e6", lambda tmp: engine.fit(COHORT, init=[1e6, 1e6]), ValueError,
     r"init.*span.*'x'"),
    ("fit init NaN", lambda tmp: engine.fit(COHORT, init=[np.nan, 0.0]), ValueError,
     r"init.*'x' = nan"),
    ("fit init inf", lambda tmp: engine.fit(COHORT, init=[0.0, np.inf]), ValueError,
     r"init.*'z' = inf"),
    ("fit all events weigh 0", lambda tmp: engine.fit(engine.Cohort.from_frame(
        _with(w=1.0 - DF["e"]), "t", "e", covariates=["x"], weights="w")), engine.CohortError,
     r"'w' \(weights\) is 0 on all 5 event rows"),
    # the data layer
    ("covariate 1e308", lambda tmp: engine.Cohort.from_frame(
        _with(x=[1e308, 1, 2, 3, 4, 5, 6, 7]), "t", "e", covariates=["x"]), engine.CohortError,
     r"'x'.*beyond.*row 0 = 1e\+308.*rescale"),
    ("thousands separators", lambda tmp: engine.Cohort.from_frame(
        _with(income=[f"{v:,}" for v in range(1000, 9000, 1000)]), "t", "e",
        covariates=["income"]), engine.CohortError, r"'income'.*thousands separators"),
    ("date strings", lambda tmp: engine.Cohort.from_frame(
        _with(day=[f"2020-03-{d:02d}" for d in range(1, 9)]), "t", "e", covariates=["day"]),
     engine.CohortError, r"'day'.*dates"),
    ("nested Parquet column", _nested_parquet, engine.CohortError,
     r"'codes' \(covariate\).*nested"),
    ("from_duckdb missing file", lambda tmp: engine.Cohort.from_duckdb(
        tmp / "absent.duckdb", "select 1", "t", "e"), engine.CohortError,
     r"absent.duckdb.*does not exist"),
    ("missing= typo", lambda tmp: engine.Cohort.from_frame(DF, "t", "e", missing="dorp"),
     ValueError, r"missing must be"),
    # the survival essentials
    ("km of a DataFrame", lambda tmp: engine.kaplan_meier(DF), TypeError, r"Cohort"),
    ("logrank one group", lambda tmp: engine.logrank_test(COHORT, np.ones(COHORT.n)),
     ValueError, r"single group"),
    ("ph_test without cohort", lambda tmp: engine.ph_test(engine.fit(COHORT), DF), TypeError,
     r"Cohort"),
    ("table_one of arrays", lambda tmp: engine.table_one(DF.to_numpy()), engine.CohortError,
     r"DataFrame"),
    ("table_one of nothing", lambda tmp: engine.table_one(DF[["z"]], by="z"),
     engine.CohortError, r"nothing to describe"),
    ("km rmst text tau", lambda tmp: engine.kaplan_meier(COHORT).rmst("10"), ValueError,
     r"tau must be a positive number"),
    ("km at text times", lambda tmp: engine.kaplan_meier(COHORT).at("soon"), ValueError,
     r"times must be numbers"),
    ("logrank text rho", lambda tmp: engine.logrank_test(COHORT, "z", rho="1"), ValueError,
     r"rho must be a finite number"),
    ("residuals of a penalised fit", lambda tmp: engine.residuals(
        engine.fit(COHORT, penalty=engine.L2(1.0))), ValueError, r"unpenalised Cox"),
]


@pytest.mark.parametrize("name, call, error, pattern", CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_refused_clearly(tmp_path, name, call, error, pattern):
    with pytest.raises(error, match=pattern):
        call(tmp_path)


def test_l1_takes_numpy_scalars():
    assert engine.L1(np.float32(0.5)) == engine.L1(0.5)
    assert engine.L2(np.int64(2)).lam == 2.0
    res = engine.fit(COHORT, penalty=engine.L1(np.float32(0.5)))
    same = engine.fit(COHORT, penalty=engine.L1(0.5))
    pd.testing.assert_series_equal(res.coef, same.coef)
    with pytest.raises(ValueError, match="finite number"):
        engine.L1(True)


def test_bootstrap_replicates_without_events_are_left_out_and_counted():
    """One event among 12 subjects: about (11/12)^12 = 35% of the replicates draw no event;
    they are counted, warned about and left out, never reported as the warm start."""
    df = pd.DataFrame({"t": np.arange(1.0, 13), "e": [0] * 5 + [1] + [0] * 6,
                       "x": np.linspace(-1, 1, 12)})
    cohort = engine.Cohort.from_frame(df, "t", "e", covariates=["x"])
    with pytest.warns(engine.DataWarning, match="drew no event"):
        boot = engine.bootstrap(cohort, penalty=engine.L2(1.0), replicates=20, seed=1)
    # subject 5 holds the event; replicate b draws it bootstrap_counts(12, seed, b)[5] times
    expected_missing = [b for b in range(20) if bootstrap_counts(12, 1, b)[5] == 0]
    assert boot.no_events == len(expected_missing) > 0
    assert sorted(set(range(20)) - set(boot.replicates.index)) == expected_missing
    assert boot.replicates.notna().all().all()
