"""The plane step's exact curvature (backends/cox_subspace.direction_curvature) against a
brute-force one written here from the definition: the Breslow or Efron partial likelihood over
the caller's rows, each risk set built anew by its start < t <= stop rule, in each stratum."""
import numpy as np
import pytest

from engine.regression.backends.linear_predictor import set_linear_predictor

from contract import CASES, away_from_zero, problem

COX = {c.name: c for c in CASES if c.options["model"] == "cox"}
# each case's (time, event, start, strata) columns, as its Cohort names them
COLUMNS = {"cox breslow": ("week", "arrest", None, None),
           "cox efron": ("week", "arrest", None, None),
           "cox strata": ("week", "arrest", None, "race"),
           "cox entry times": ("stop", "event", "start", None)}


def _event_terms(df, case):
    """(tied events, at risk, Efron) per event time per stratum, boolean masks over rows."""
    time, event, start, strata = COLUMNS[case.name]
    time, event = df[time].to_numpy(float), df[event].to_numpy() == 1
    start = df[start].to_numpy(float) if start else np.full(len(df), -np.inf)
    strata = df[strata].to_numpy() if strata else np.zeros(len(df))
    efron = case.options["ties"] == "efron"
    for s in np.unique(strata):
        here = strata == s
        for t in np.unique(time[event & here]):
            yield event & (time == t) & here, (start < t) & (time >= t) & here, efron


def _brute(df, case, X, beta, w, U):
    """(log-likelihood at beta, -d2l along the columns of U = X directions)."""
    eta = X @ beta
    r = w * np.exp(eta)
    ll, C = 0.0, np.zeros((U.shape[1], U.shape[1]))
    for tied, at_risk, efron in _event_terms(df, case):
        d = tied.sum()
        ll += w[tied] @ eta[tied]
        for c in (np.arange(d) / d if efron else np.zeros(1)):
            v = r * (at_risk - c * tied)           # the weights of this term's denominator
            wbar = w[tied].sum() / (d if efron else 1)
            ll -= wbar * np.log(v.sum())
            m1 = v @ U / v.sum()
            C += wbar * ((U.T * v) @ U / v.sum() - np.outer(m1, m1))
    return ll, C


@pytest.mark.parametrize("m", [2, 3])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("name", list(COX))
def test_direction_curvature_equals_the_brute_force_hessian(name, weighted, m):
    case = COX[name]
    df = case.frame()
    pr = problem(case, df)
    n = len(df)
    w = np.random.default_rng(1).uniform(0.5, 2.0, n) if weighted else np.ones(n)
    if weighted:
        pr.set_weights(w)
    beta = away_from_zero(pr.p)
    pr.set_beta(beta)
    X = df[pr.names].to_numpy(float)
    D = np.random.default_rng(2).normal(size=(pr.p, m))
    md = pr.model.data
    U = np.vstack([set_linear_predictor(md.indptr, md.indices, md.values, md.vptr, D[:, a], n)
                   for a in range(m)])
    ll, C = _brute(df, case, X, beta, w, X @ D)
    assert pr.loglik() == pytest.approx(ll, rel=1e-12)        # the same likelihood
    np.testing.assert_allclose(pr.model.backend.direction_curvature(U), C, rtol=1e-10)
    # the brute force itself: a second difference of its log-likelihood along D[:, 0] + D[:, 1]
    e, h = D[:, 0] + D[:, 1], 1e-4
    f = [_brute(df, case, X, beta + k * h * e, w, X @ D[:, :1])[0] for k in (-1, 0, 1)]
    assert -(f[0] - 2 * f[1] + f[2]) / h**2 == pytest.approx(C[:2, :2].sum(), rel=1e-5)
