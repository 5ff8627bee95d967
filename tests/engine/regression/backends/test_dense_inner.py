"""The dense regime of the Cox fit on the CPU: the Gram matrix of chosen columns built from their
CSC arrays (engine.weighted_gram), the proximal-Newton inner solve through it
(backends/diagonal_step on many rows), and the observed information (backends/cox_information),
against brute-force definitions written here and against the column-wise inner solve."""
import numpy as np
import pytest
import scipy.sparse as sp

import engine
from engine import Problem
from engine.core import weighted_gram
from engine.regression.backends import diagonal_step

from contract import CASES, away_from_zero, problem

COX = [c for c in CASES if c.options["model"] == "cox"]


@pytest.fixture(params=COX, ids=[c.name for c in COX])
def case(request):
    return request.param


def _layout(X, binary):
    """X (dense) as modeldata's CSC arrays: values stored only for the non-binary columns."""
    C = sp.csc_matrix(X)
    C.sort_indices()
    values, vptr = [], np.full(X.shape[1], -1, np.int64)
    at = 0
    for j in range(X.shape[1]):
        if not binary[j]:
            vptr[j] = at
            values.append(C.data[C.indptr[j]:C.indptr[j + 1]])
            at += C.indptr[j + 1] - C.indptr[j]
    values = np.concatenate(values) if values else np.zeros(0)
    return C.indptr.astype(np.int64), C.indices.astype(np.int64), values, vptr


def _design(seed=0, n=300, p=12):
    rng = np.random.default_rng(seed)
    X = rng.binomial(1, 0.3, (n, p)).astype(float)
    binary = np.ones(p, bool)
    binary[[1, 4, 9]] = False
    X[:, binary == False] *= rng.normal(1.0, 2.0, (n, 3))  # noqa: E712  (valued columns)
    return X, binary, rng.uniform(0.0, 2.0, n)


def test_weighted_gram_is_x_h_x():
    X, binary, h = _design()
    h[::5] = 0.0
    coords = np.array([7, 2, 0, 11, 4, 9])
    Q = weighted_gram.weighted_gram(*_layout(X, binary), coords, h, 16)   # many chunks
    Xs = X[:, coords]
    np.testing.assert_allclose(Q, Xs.T @ (h[:, None] * Xs), rtol=1e-12, atol=1e-12)


def test_centred_gram_centres_at_the_weighted_means():
    X, binary, h = _design(1)
    coords = np.arange(X.shape[1])
    Q = weighted_gram.centred_gram(*_layout(X, binary), coords, h)
    Xc = X - (h @ X) / h.sum()
    np.testing.assert_allclose(Q, Xc.T @ (h[:, None] * Xc), rtol=1e-10, atol=1e-10)


def test_extended_gram_equals_the_gram_of_the_grown_set():
    """A working set grown by a few columns (and losing one): the kept rows copied, the new
    ones formed, the result the centred Gram matrix of the new set."""
    X, binary, h = _design(2)
    arrays = _layout(X, binary)
    old = np.array([0, 2, 3, 5, 7, 8, 10])
    Q_old = weighted_gram.centred_gram(*arrays, old, h)
    grown = np.array([0, 1, 2, 3, 5, 7, 9, 10, 11])
    Q = weighted_gram.extended_centred_gram(*arrays, grown, h, old, Q_old)
    np.testing.assert_allclose(Q, weighted_gram.centred_gram(*arrays, grown, h), rtol=1e-12,
                               atol=1e-12)


def test_dense_inner_solve_keeps_extends_and_rebuilds_its_gram(monkeypatch):
    """The dense path's model: the Gram matrix at the h of its build, extended when the working
    set grows, rebuilt at the current h after DENSE_REBUILD steps; each step the exact minimiser
    of that model (coordinate descent on the Gram matrix written out here)."""

    monkeypatch.setattr(diagonal_step, "GRAM_PAIRS_PER_NNZ", 0.0)
    monkeypatch.setattr(diagonal_step, "DENSE_MIN_ROWS", 0)
    X, binary, h0 = _design(3)
    arrays = _layout(X, binary)
    rng = np.random.default_rng(4)
    n, p = X.shape
    step = diagonal_step.DiagonalStep(*arrays, n)
    beta, lam1, lam2 = rng.normal(0, 0.1, p), np.full(p, 0.5), np.zeros(p)
    small, grown = np.array([0, 1, 3, 4, 6, 9]), np.array([0, 1, 2, 3, 4, 6, 8, 9, 11])
    for t in range(2 * diagonal_step.DENSE_REBUILD + 1):
        coords = small if t < 3 else grown
        h = h0 * rng.uniform(0.5, 1.5, n)
        v = rng.normal(size=n)
        v -= v.mean()
        if t % diagonal_step.DENSE_REBUILD == 0:
            built_at = h
        delta, g = step.solve(coords, v, h, beta, lam1, lam2, 1e-13, 1000)
        Q = weighted_gram.centred_gram(*arrays, coords, built_at)
        want = diagonal_step.gram_solve(Q, X[:, coords].T @ v, beta[coords], lam1[coords],
                                        lam2[coords], 1e-13, 1000)
        np.testing.assert_allclose(g[coords], X[:, coords].T @ v, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(delta[coords], want, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(step.image(delta), X @ delta, rtol=1e-12, atol=1e-12)


def _brute_information(cohort, beta, efron, w):
    """-d2l/dbeta2 by its definition, event time by event time (O(N^2)): the sum over tied
    event terms of wt (m2 - m1 m1'), m1 and m2 the D-weighted means of x and x x' over the risk
    set {start < t <= stop} of the stratum, less c = l / d of the tied events for Efron."""
    X = cohort.X.toarray()
    n = X.shape[0]
    stop = np.asarray(cohort.time)
    start = np.full(n, -np.inf) if cohort.start is None else np.asarray(cohort.start)
    strata = np.zeros(n, int) if cohort.strata is None else np.asarray(cohort.strata)
    D = w * np.exp(X @ beta)
    event = (np.asarray(cohort.event) == 1) & (w > 0)
    info = np.zeros((X.shape[1], X.shape[1]))
    for k, u in sorted({(k, u) for k, u in zip(strata[event], stop[event])}):
        at_risk = (strata == k) & (start < u) & (stop >= u)
        tied = at_risk & event & (stop == u)
        d = tied.sum()
        terms, wt = (d, w[tied].mean()) if efron else (1, w[tied].sum())
        for l in range(terms):
            a = D * (at_risk - (l / d if efron else 0.0) * tied)
            m1 = a @ X / a.sum()
            m2 = (X * a[:, None]).T @ X / a.sum()
            info += wt * (m2 - np.outer(m1, m1))
    return info


@pytest.mark.parametrize("weighted", [False, True])
def test_information_is_the_brute_force_hessian(case, weighted, monkeypatch):
    """Breslow and Efron ties, strata, entry times, case weights; the event means written a few
    rows at a time (the buffer folded in and the scan resumed many times)."""
    from engine.regression.backends import cox_information

    monkeypatch.setattr(cox_information, "CHUNK_BYTES", 8 * 3)
    pr = problem(case)
    cohort = case.cohort(case.frame())
    n = pr.model.data.n
    w = np.random.default_rng(3).uniform(0.5, 2.0, n) if weighted else np.ones(n)
    if weighted:
        pr.set_weights(w)
    beta = away_from_zero(pr.p)
    pr.set_beta(beta)
    _, _, info = pr.model.information(np.arange(pr.p))
    brute = _brute_information(cohort, beta, case.options["ties"] == "efron", w)
    np.testing.assert_allclose(info, brute, rtol=1e-9, atol=1e-9 * np.abs(brute).max())


@pytest.mark.parametrize("weighted", [False, True])
def test_information_of_a_few_dense_columns_is_the_brute_force_hessian(case, weighted,
                                                                       monkeypatch):
    """The dense columns alone (rossi's age and prio, heart's age and year), in a permuted
    order: cox_dense_information's fused pass, equal to the brute-force Hessian and to the
    buffered route of cox_information, its gradient to engine.gradient's."""
    from engine.regression.backends import cox_dense_information, row_block_parallel

    pr = problem(case)
    cohort = case.cohort(case.frame())
    md = pr.model.data
    dense = row_block_parallel.split_dense(md.indptr, np.arange(pr.p), md.n)[1]
    assert dense.size >= 2
    cols = dense[::-1]
    w = np.random.default_rng(3).uniform(0.5, 2.0, md.n) if weighted else np.ones(md.n)
    if weighted:
        pr.set_weights(w)
    beta = away_from_zero(pr.p)
    pr.set_beta(beta)
    calls = []
    fused = cox_dense_information.information
    monkeypatch.setattr(cox_dense_information, "information",
                        lambda *args: calls.append(1) or fused(*args))
    _, g, info = pr.model.information(cols)
    assert calls
    brute = _brute_information(cohort, beta, case.options["ties"] == "efron", w)
    np.testing.assert_allclose(info, brute[np.ix_(cols, cols)], rtol=1e-9,
                               atol=1e-9 * np.abs(brute).max())
    np.testing.assert_allclose(g, pr.gradient()[cols], rtol=1e-10, atol=1e-10)
    monkeypatch.setattr(cox_dense_information, "FUSED_MAX", 0)
    _, g_buffered, buffered = pr.model.information(cols)
    np.testing.assert_allclose(info, buffered, rtol=1e-12, atol=1e-12 * np.abs(info).max())
    np.testing.assert_allclose(g, g_buffered, rtol=1e-12, atol=1e-12)


def test_information_over_columns_in_any_order(case):
    """Dense columns (age, prio) read as the row block's Z after the sparse ones: the
    information comes back in the order the columns were asked in."""
    pr = problem(case)
    beta = away_from_zero(pr.p)
    pr.set_beta(beta)
    full = pr.model.information(np.arange(pr.p))[2]
    cols = np.random.default_rng(8).permutation(pr.p)[: max(2, pr.p - 1)]
    np.testing.assert_allclose(pr.model.information(cols)[2], full[np.ix_(cols, cols)],
                               rtol=1e-12, atol=1e-12 * np.abs(full).max())


def _fit(cohort, penalty, dense, monkeypatch, **options):
    """The fit with the row-block Gram path ruled out, the working set solved column by column
    or (``dense``) through its Gram matrix built from the columns; how many Gram builds."""
    builds = []
    build = weighted_gram.weighted_gram

    def counted(*args):
        builds.append(1)
        return build(*args)

    aliased = Problem.aliased

    def aliased_uncounted(self, unpenalised):
        """The collinearity check's information (before the solve) is not the inner solve."""
        before = len(builds)
        out = aliased(self, unpenalised)
        del builds[before:]
        return out

    monkeypatch.setattr(weighted_gram, "weighted_gram", counted)
    monkeypatch.setattr(Problem, "aliased", aliased_uncounted)
    monkeypatch.setattr(diagonal_step, "GRAM_PAIRS_PER_NNZ", 0.0)
    monkeypatch.setattr(diagonal_step, "DENSE_MIN_ROWS", 0 if dense else 10 ** 12)
    res = engine.fit(cohort, penalty=penalty, solver="prox_newton", tol=1e-12, **options)
    return res, len(builds)


INNER = [c for c in CASES if c.options["model"] in ("cox", "fine_gray", "logistic")]


@pytest.mark.parametrize("penalty", [engine.L1(2.0), engine.L2(5.0), None],
                         ids=["l1", "l2", "none"])
@pytest.mark.parametrize("model_case", INNER, ids=[c.name for c in INNER])
def test_dense_gram_inner_solve_reaches_the_column_wise_optimum(model_case, penalty,
                                                                monkeypatch):
    """Every likelihood whose CPU backend shares the inner solve (Cox: Breslow, Efron, strata,
    entry times; Fine-Gray; logistic)."""
    case = model_case
    cohort = case.cohort(case.frame())
    column, none_built = _fit(cohort, penalty, False, monkeypatch, **case.options)
    dense, built = _fit(cohort, penalty, True, monkeypatch, **case.options)
    assert none_built == 0 and built >= 1
    assert column.converged and dense.converged
    np.testing.assert_allclose(dense.coef, column.coef, rtol=1e-6, atol=1e-8)


def test_dense_gram_inner_solve_on_a_simulated_dense_design(monkeypatch):
    """N = 600, P = 30 at 50% density (15 of the working set's columns in each row), nearly
    unpenalised L1: the same optimum both ways, and the standard errors of an unpenalised fit
    equal sqrt(diag(I^-1)) of the brute-force information."""
    cohort = engine.simulate(600, 30, density=0.5, seed=4)
    column, _ = _fit(cohort, engine.L1(1.0), False, monkeypatch)
    dense, built = _fit(cohort, engine.L1(1.0), True, monkeypatch)
    assert built >= 1 and np.count_nonzero(dense.coef) >= 25
    np.testing.assert_allclose(dense.coef, column.coef, rtol=1e-6, atol=1e-8)
    res = engine.fit(cohort, tol=1e-12)
    info = _brute_information(cohort, res.coef.to_numpy(), False, np.ones(cohort.n))
    np.testing.assert_allclose(res.se, np.sqrt(np.diag(np.linalg.inv(info))), rtol=1e-8)


def test_gram_solve_moves_the_smooth_coordinates_as_one_block():
    """A natural-spline basis of one covariate, unpenalised (its coordinates one by one contract
    by about 0.97 a sweep), beside L1 and ridge coordinates: gram_solve's step meets the
    quadratic model's optimality conditions, the smooth block's gradient at rounding size,
    where plain coordinate descent stopped at the same tolerance leaves it orders larger."""
    import pandas as pd
    from engine.data.formula import ModelFormula
    from engine.regression.backends import diagonal_step_kernels

    rng = np.random.default_rng(5)
    n = 2000
    S, _ = ModelFormula("ns(bmi, df=4)").build(pd.DataFrame({"bmi": rng.normal(27, 4, n)}))
    X = np.hstack([rng.binomial(1, 0.2, (n, 6)), S.toarray(), rng.normal(size=(n, 2))])
    h = rng.uniform(0.5, 1.5, n)
    Xc = X - h @ X / h.sum()
    Q = Xc.T @ (h[:, None] * Xc)
    g = X.T @ rng.normal(size=n)
    beta = rng.normal(0, 0.1, X.shape[1])
    lam1 = np.r_[np.full(6, 20.0), np.zeros(6)]
    lam2 = np.r_[np.zeros(10), 5.0, 5.0]
    delta = diagonal_step.gram_solve(Q, g, beta, lam1, lam2, 1e-10, 10_000)
    b = beta + delta
    grad = Q @ delta - g + lam2 * b                 # the model's smooth part, at the step
    smooth = lam1 == 0
    assert np.abs(grad[smooth]).max() < 1e-7
    moved = ~smooth & (b != 0)
    assert moved.any() and (~smooth & (b == 0)).any()
    np.testing.assert_allclose(grad[moved], -lam1[moved] * np.sign(b[moved]), atol=1e-7)
    assert np.all(np.abs(grad[~smooth & (b == 0)]) <= lam1[~smooth & (b == 0)] + 1e-7)
    plain = diagonal_step_kernels.quadratic_cd_gram(Q, g, beta, lam1, lam2, 1e-10, 10_000,
                                                    np.zeros(0, np.int64), np.zeros((0, 0)))
    left = Q @ plain - g + lam2 * (beta + plain)
    assert np.abs(left[6:10]).max() > 100 * np.abs(grad[6:10]).max()
