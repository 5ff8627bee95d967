"""engine.cross_validate against its definition, brute force: every fold fitted from scratch
with engine.fit on its training rows alone, and the Verweij-van Houwelingen score computed here
from a direct Breslow partial likelihood.  Guards the shared-work shortcuts (one sorted layout,
folds as weights, warm and pilot-fold starts, reused gradients) against changing the curve or
the chosen lambda."""
import numpy as np
import pytest

import engine
from engine.regression.drivers.resampling import fold_of_rows


def breslow_loglik(time, event, X, beta):
    """sum over events of eta_i - log sum_{t_j >= t_i} exp(eta_j), by the definition."""
    eta = X @ beta
    at_risk = time[None, :] >= time[:, None]            # row i: who is at risk at t_i
    return float(sum(eta[i] - np.log(np.exp(eta[at_risk[i]]).sum())
                     for i in np.flatnonzero(event)))


@pytest.fixture(scope="module")
def cohort():
    sim = engine.simulate(600, 15, density=0.3, seed=3, nonzero=0.3)
    time = np.ceil(sim.time * 10) / 10                   # tied event times
    return engine.Cohort.from_arrays(time=time, event=sim.event, X=sim.X, names=sim.names)


def test_curve_and_lambda_equal_independent_fits_from_scratch(cohort):
    folds, unpen = 4, ["x0"]
    cv = engine.cross_validate(cohort, folds=folds, grid=7, seed=5, tol=1e-12,
                               unpenalized=unpen)
    X = cohort.X.toarray() if hasattr(cohort.X, "toarray") else np.asarray(cohort.X)
    time, event = np.asarray(cohort.time), np.asarray(cohort.event).astype(bool)
    fold = fold_of_rows(cohort, folds, seed=5, repeat=0)
    expected = np.zeros((len(cv.curve), folds))
    for k in range(folds):
        keep = fold != k
        train = engine.Cohort.from_arrays(time=time[keep], event=event[keep], X=X[keep],
                                          names=cohort.names)
        for row, lam in enumerate(cv.curve["lambda"]):
            beta = engine.fit(train, penalty=engine.L1(lam), unpenalized=unpen,
                              tol=1e-12).coef.to_numpy()
            expected[row, k] = (breslow_loglik(time, event, X, beta)
                                - breslow_loglik(time[keep], event[keep], X[keep], beta))
    got = cv.curve[[f"r0_f{k}" for k in range(folds)]].to_numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-7, atol=1e-7)
    np.testing.assert_allclose(cv.curve["mean"], expected.mean(axis=1), rtol=1e-7)
    best = cv.curve["lambda"].iloc[int(np.argmax(expected.mean(axis=1)))]
    assert cv.penalty.lam == best
    full = engine.fit(cohort, penalty=engine.L1(best), unpenalized=unpen, tol=1e-12)
    np.testing.assert_allclose(cv.fit.coef, full.coef, rtol=1e-6, atol=1e-9)
