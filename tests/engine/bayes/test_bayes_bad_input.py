"""Issue 30's probit probe as tests: separated data is refused under the flat prior (the probe's
posterior mean grew with the draws, 12 to 421,570) and warned about under the horseshoe; the
separation check agrees with the probit MLE (which refuses the same data) and with a
brute-force definition (a direction b that classifies every row)."""
import numpy as np
import pandas as pd
import pytest

import engine
from engine.bayes.separation import separating_columns

RNG = np.random.default_rng(30)
N = 60
X1 = RNG.normal(size=N)
X2 = RNG.normal(size=N)


def _cohort(y, **columns):
    df = pd.DataFrame({"y": y.astype(int), **columns})
    return engine.Cohort.from_frame(df, time=None, event="y", covariates=list(columns))


SEPARATED = {
    "one predictor": (X1 > 0.1, {"x1": X1, "x2": X2}, ["x1"]),
    "quasi, a binary seen only with events": (
        (X1 > 0) | (np.arange(N) < 5), {"x1": X1, "flag": (np.arange(N) < 5) * 1.0}, ["flag"]),
    "two predictors together": (X1 + X2 > 0, {"x1": X1, "x2": X2}, ["x1", "x2"]),
}


def _separates(X, y, b):
    """Brute-force definition: q_i x_i'b >= 0 on every row, > 0 on some."""
    s = (2 * y - 1) * (X @ b)
    return bool(np.all(s >= -1e-12) and np.any(s > 1e-9))


@pytest.mark.parametrize("case", list(SEPARATED), ids=list(SEPARATED))
def test_flat_prior_refuses_separated_data_as_the_mle_does(case):
    y, columns, named = SEPARATED[case]
    cohort = _cohort(y, **columns)
    with pytest.raises(engine.CohortError, match="separate|probit MLE does not exist"):
        engine.probit_mle(cohort)
    with pytest.raises(engine.CohortError, match=r"separate 'y'.*" + repr(named[0]) +
                       r".*flat prior.*improper.*horseshoe_probit"):
        engine.sample(cohort, model="probit", draws=20, burn_in=5, chains=1)


@pytest.mark.parametrize("case", list(SEPARATED), ids=list(SEPARATED))
def test_horseshoe_warns_names_and_records(case):
    y, columns, named = SEPARATED[case]
    with pytest.warns(engine.MonotoneLikelihoodWarning, match=r"separate 'y'.*prior's tails"):
        post = engine.sample(_cohort(y, **columns), draws=20, burn_in=5, chains=1)
    assert set(named) <= set(post.spec["separated"])
    assert np.isfinite(post.draws).all()


def test_the_lp_direction_separates_by_the_definition():
    y, columns, _ = SEPARATED["two predictors together"]
    X = np.column_stack([np.ones(N), columns["x1"], columns["x2"]])
    found, check = separating_columns(X, y)
    assert {1, 2} <= set(found) and check == "columns and linear program"
    assert _separates(X, y, np.array([0.0, 1.0, 1.0]))
    assert not (separating_columns(X[:, [0, 1]], y)[0])    # x1 alone does not separate


def test_overlapping_data_passes_and_matches_the_mle_side():
    y = X1 + RNG.normal(size=N) > 0
    cohort = _cohort(y, x1=X1, x2=X2)
    mle = engine.probit_mle(cohort)                          # exists: the check agrees
    assert np.isfinite(mle.coef).all()
    post = engine.sample(cohort, model="probit", draws=20, burn_in=5, chains=1)
    assert post.spec["separated"] == []
    assert post.spec["separation_check"] == "columns and linear program"
