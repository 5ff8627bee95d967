"""The robust (sandwich) variance of engine.fit(variance=, cluster=) against its oracles:

* a brute-force transcription of R survival's score residuals (coxscore.c / agscore.c: Efron's
  tied deaths each get 1/d of the event term and (1 - k/d) of the k-th increment), summed by
  cluster and sandwiched by a brute-force information, O(N^2) in plain numpy;
* statsmodels PHReg(...).fit(groups=) for Breslow ties (strata, entry times), to 1e-8;
* lifelines CoxPHFitter(robust=True, cluster_col=) where no event times tie (its robust
  variance uses Breslow-form residuals, lifelines 0.15.0 release notes: with tied times it
  departs from R's Efron convention, e.g. rossi with weights: fin 0.2005 against R's 0.2053);
* statsmodels Logit with cov_type="cluster" / "HC0" and a brute-force Huber-White for
  logistic; a brute-force case-clustered sandwich for SCCS; Fine-Gray's own sandwich.
"""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

import engine
from engine import CohortError, DataWarning
from engine.regression.backends import cox_score
from engine.regression import variance as variance_module

sm = pytest.importorskip("statsmodels.api")


# -- the oracle: R's score residuals, written from coxscore.c / agscore.c ------------------
def brute_cox_pieces(start, stop, event, X, beta, w, strata, efron):
    """(U, I): weighted score residuals (n, p) and the observed information, by definition."""
    n, p = X.shape
    risk = np.exp(X @ beta)
    U = np.zeros((n, p))
    info = np.zeros((p, p))
    for s in np.unique(strata):
        for t in np.unique(stop[(strata == s) & (event == 1)]):
            at_risk = (strata == s) & (start < t) & (stop >= t)
            dead = at_risk & (stop == t) & (event == 1)
            d = int(dead.sum())
            wbar = w[dead].sum() / d
            terms = range(d) if efron and d > 1 else [None]
            for k in terms:
                c = 0.0 if k is None else k / d
                scale = w * risk * np.where(dead, 1.0 - c, 1.0)   # the k-th term's risk set
                den = scale[at_risk].sum()
                mean = scale[at_risk] @ X[at_risk] / den
                second = (X[at_risk] * scale[at_risk][:, None]).T @ X[at_risk] / den
                hazard = (w[dead].sum() if k is None else wbar) / den
                share = 1.0 if k is None else 1.0 / d
                centred = X - mean
                U[dead] += share * centred[dead]
                U[at_risk] -= (centred * (risk * np.where(dead, 1.0 - c, 1.0)
                                          * hazard)[:, None])[at_risk]
                info += (w[dead].sum() if k is None else wbar) * (second - np.outer(mean, mean))
    return U * w[:, None], info


def brute_sandwich(U, info, cluster):
    codes = pd.factorize(cluster)[0]
    C = np.zeros((codes.max() + 1, U.shape[1]))
    np.add.at(C, codes, U)
    inv = np.linalg.inv(info)
    return inv @ C.T @ C @ inv


def tied_data(seed=0, n=240, entry=False):
    rng = np.random.default_rng(seed)
    X = np.c_[rng.normal(size=n), rng.integers(0, 2, n), rng.uniform(-1, 1, n)]
    stop = rng.integers(2, 25, n).astype(float)              # many ties
    start = np.where(rng.uniform(size=n) < 0.4, rng.integers(0, 2, n), 0).astype(float) \
        if entry else np.zeros(n)
    event = (rng.uniform(size=n) < 0.7).astype(int)
    return dict(X=X, stop=stop, start=start, event=event, w=rng.uniform(0.3, 2.5, n),
                g=rng.integers(0, 2, n), cluster=rng.integers(0, 60, n))


def cohort_of(d, weights=True, strata=False, entry=False):
    return engine.Cohort.from_arrays(time=d["stop"], event=d["event"], X=d["X"],
                                     names=["a", "b", "c"],
                                     start=d["start"] if entry else None,
                                     id=np.arange(len(d["stop"])) if entry else None,
                                     strata=d["g"] if strata else None,
                                     weights=d["w"] if weights else None)


@pytest.mark.parametrize("ties", ["breslow", "efron"])
@pytest.mark.parametrize("case", ["weights", "weights strata", "entry weights",
                                  "entry strata clusters", "clusters"])
def test_cox_robust_equals_r_score_residual_definition(ties, case):
    d = tied_data(entry="entry" in case)
    coh = cohort_of(d, weights="weights" in case, strata="strata" in case,
                    entry="entry" in case)
    cluster = d["cluster"] if "clusters" in case else None
    res = engine.fit(coh, ties=ties, tol=1e-12, variance="robust", cluster=cluster)
    w = d["w"] if "weights" in case else np.ones(len(d["stop"]))
    strata = d["g"] if "strata" in case else np.zeros(len(d["stop"]))
    U, info = brute_cox_pieces(d["start"], d["stop"], d["event"], d["X"], res.beta, w,
                               strata, ties == "efron")
    np.testing.assert_allclose(U.sum(axis=0), 0.0, atol=1e-8)          # at the optimum
    np.testing.assert_allclose(info, np.linalg.inv(res.cov_model.to_numpy()), rtol=1e-8)
    V = brute_sandwich(U, info, np.arange(len(w)) if cluster is None else cluster)
    np.testing.assert_allclose(res.cov_robust.to_numpy(), V, rtol=1e-8, atol=1e-14)
    assert res.variance == "robust"
    np.testing.assert_array_equal(res.se.to_numpy(), res.se_robust.to_numpy())
    np.testing.assert_allclose(res.se_robust.to_numpy(), np.sqrt(np.diag(V)), rtol=1e-8)


def test_rossi_weighted_efron_r_convention(rossi):
    """The issue's case: rossi, uniform(0.5, 3) weights, Efron ties.  R's convention (the
    brute-force transcription) gives fin 0.2053; lifelines' Breslow-form residuals 0.2005."""
    df = rossi.copy()
    rng = np.random.default_rng(0)
    df["w"] = rng.uniform(0.5, 3, len(df))
    covs = ["fin", "age", "race", "wexp", "mar", "paro", "prio"]
    coh = engine.Cohort.from_frame(df, time="week", event="arrest", covariates=covs,
                                   weights="w")
    res = engine.fit(coh, ties="efron", tol=1e-12)
    assert res.variance == "robust"                 # non-integer weights: robust by default
    X = df[covs].to_numpy(float)
    U, info = brute_cox_pieces(np.zeros(len(df)), df.week.to_numpy(float), df.arrest.to_numpy(),
                               X, res.beta, df.w.to_numpy(), np.zeros(len(df)), True)
    V = brute_sandwich(U, info, np.arange(len(df)))
    np.testing.assert_allclose(res.se.to_numpy(), np.sqrt(np.diag(V)), rtol=1e-8)
    assert res.se["fin"] == pytest.approx(0.2053, abs=5e-4)
    assert res.se_model["fin"] == pytest.approx(0.138, abs=5e-4)
    assert "robust SE" in str(res) and res.summary.attrs["variance"] == "robust"


# -- statsmodels (Breslow) and lifelines (no ties) ----------------------------------------
@pytest.mark.parametrize("layout", ["plain", "strata", "entry"])
def test_breslow_clustered_equals_statsmodels_phreg(layout):
    rng = np.random.default_rng(3)
    n = 300
    X = rng.normal(size=(n, 3))
    time = rng.integers(1, 30, n).astype(float)
    event = (rng.uniform(size=n) < 0.75).astype(int)
    entry = np.where(rng.uniform(size=n) < 0.5, rng.uniform(0, 0.9, n) * time, 0.0)
    g = rng.integers(0, 3, n)
    cluster = rng.integers(0, 40, n)
    kw = dict(strata=g) if layout == "strata" else {}
    coh = engine.Cohort.from_arrays(time=time, event=event, X=X,
                                    start=entry if layout == "entry" else None,
                                    id=np.arange(n) if layout == "entry" else None, **kw)
    res = engine.fit(coh, ties="breslow", tol=1e-13, cluster=cluster)
    m = sm.PHReg(time, X, status=event, ties="breslow",
                 entry=entry if layout == "entry" else None,
                 strata=g if layout == "strata" else None).fit(groups=cluster)
    np.testing.assert_allclose(res.coef.to_numpy(), m.params, rtol=1e-7)
    np.testing.assert_allclose(res.se.to_numpy(), m.bse, rtol=1e-8)


def test_efron_without_ties_equals_lifelines():
    lifelines = pytest.importorskip("lifelines")
    rng = np.random.default_rng(5)
    n = 250
    df = pd.DataFrame(rng.normal(size=(n, 3)), columns=["a", "b", "c"])
    df["t"] = rng.exponential(size=n) * np.exp(-0.5 * df.a)
    df["e"] = (rng.uniform(size=n) < 0.8).astype(int)
    df["w"] = rng.uniform(0.5, 3, n)
    df["site"] = rng.integers(0, 50, n)
    coh = engine.Cohort.from_frame(df, time="t", event="e", covariates=["a", "b", "c"],
                                   weights="w")
    res = engine.fit(coh, ties="efron", tol=1e-13, cluster=df.site.to_numpy())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cph = lifelines.CoxPHFitter().fit(df, "t", "e", weights_col="w", cluster_col="site",
                                          robust=True, fit_options={"precision": 1e-12})
    np.testing.assert_allclose(res.coef.to_numpy(), cph.params_.to_numpy(), rtol=1e-6)
    np.testing.assert_allclose(res.se.to_numpy(), cph.standard_errors_.to_numpy(), rtol=1e-6)


# -- penalised fits, the parallel kernel, the block-pair middle ----------------------------
def test_penalised_fit_sandwich_over_unpenalised_columns():
    d = tied_data(seed=2)
    coh = cohort_of(d)
    res = engine.fit(coh, ties="efron", penalty=engine.L2(5.0), unpenalized=["a"], tol=1e-12)
    assert np.isnan(res.se["b"]) and np.isnan(res.se["c"])
    w = d["w"]
    z = np.zeros(len(w))
    U, info = brute_cox_pieces(z, d["stop"], d["event"], d["X"], res.beta, w, z, True)
    V = brute_sandwich(U[:, :1], info[:1, :1], np.arange(len(w)))
    assert res.se["a"] == pytest.approx(np.sqrt(V[0, 0]), rel=1e-8)


def test_parallel_kernel_equals_serial_and_blocks_equal_one_pass(monkeypatch):
    d = tied_data(seed=4, entry=True)
    res = engine.fit(cohort_of(d, strata=True, entry=True), ties="efron", tol=1e-12,
                     cluster=d["cluster"])
    b = res.problem.model.backend
    md, s = b.md, b.state
    _, r, _ = b.risk_set_pass(1)
    codes = pd.factorize(d["cluster"])[0][md.order]
    args = (md.indptr, md.indices, md.values, md.vptr, np.arange(3, dtype=np.int64), s.D,
            md.weights, r, md.flags, True, True, md.stop, b._start, b._start_order,
            md.strata_bounds, codes.astype(np.int64), int(codes.max() + 1))
    serial = cox_score.cluster_scores(*args)
    parallel = cox_score.cluster_scores_parallel(*args, np.array([0, 1, 3], np.int64))
    np.testing.assert_array_equal(serial, parallel)
    whole = res.cov_robust.to_numpy()
    monkeypatch.setattr(variance_module, "MEAT_MEMORY", 16 * 60)   # one column per block
    again = engine.fit(cohort_of(d, strata=True, entry=True), ties="efron", tol=1e-12,
                       cluster=d["cluster"])
    np.testing.assert_allclose(again.cov_robust.to_numpy(), whole, rtol=1e-12)


def test_sparse_wide_design_never_densified():
    """10^4 x 200 at 2% density, L1 with one unpenalised column: scans over the sparse
    columns; equals the brute-force sandwich of that column."""
    rng = np.random.default_rng(7)
    n, p = 4000, 200
    X = sp.random(n, p, density=0.02, random_state=7, format="csc")
    X.data[:] = 1.0
    time = rng.integers(1, 100, n).astype(float)
    event = (rng.uniform(size=n) < 0.5).astype(int)
    coh = engine.Cohort.from_arrays(time=time, event=event, X=X, weights=rng.uniform(0.5, 2, n))
    res = engine.fit(coh, ties="breslow", penalty=engine.L1(0.02), unpenalized=["x0"],
                     tol=1e-10)
    assert res.variance == "robust"
    keep = np.flatnonzero(res.coef.to_numpy() != 0)
    U, info = brute_cox_pieces(np.zeros(n), time, event, X[:, keep].toarray(),
                               res.beta[keep], np.asarray(coh.weights), np.zeros(n), False)
    V = brute_sandwich(U[:, :1], info[:1, :1], np.arange(n))
    assert res.se["x0"] == pytest.approx(np.sqrt(V[0, 0]), rel=1e-8)


# -- logistic, SCCS, Fine-Gray ----------------------------------------------------------
def logistic_data(seed=0, n=400):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-(0.3 + X @ [0.8, -0.5])))).astype(int)
    return X, y, rng.integers(0, 40, n), rng.uniform(0.5, 3, n)


def test_logistic_clustered_equals_statsmodels():
    X, y, g, _ = logistic_data()
    coh = engine.Cohort.from_arrays(time=np.ones(len(y)), event=y, X=X)
    res = engine.fit(coh, model="logistic", tol=1e-13, cluster=g)
    m = sm.Logit(y, sm.add_constant(X)).fit(disp=0, tol=1e-12, cov_type="cluster",
                                            cov_kwds={"groups": g, "use_correction": False})
    np.testing.assert_allclose(res.se.to_numpy(), m.bse, rtol=1e-7)
    hc0 = sm.Logit(y, sm.add_constant(X)).fit(disp=0, tol=1e-12, cov_type="HC0")
    rows = engine.fit(coh, model="logistic", tol=1e-13, variance="robust")
    np.testing.assert_allclose(rows.se.to_numpy(), hc0.bse, rtol=1e-7)


def test_logistic_weighted_huber_white_brute_force():
    X, y, g, w = logistic_data(seed=1)
    coh = engine.Cohort.from_arrays(time=np.ones(len(y)), event=y, X=X, weights=w)
    res = engine.fit(coh, model="logistic", tol=1e-13, cluster=g)
    Z = np.c_[np.ones(len(y)), X]
    prob = 1 / (1 + np.exp(-Z @ res.beta))
    U = Z * (w * (y - prob))[:, None]
    info = (Z * (w * prob * (1 - prob))[:, None]).T @ Z
    np.testing.assert_allclose(res.cov.to_numpy(), brute_sandwich(U, info, g), rtol=1e-8)


def test_sccs_cases_are_the_clusters():
    rng = np.random.default_rng(2)
    n_cases, eras = 150, 4
    case = np.repeat(np.arange(n_cases), eras)
    X = (rng.uniform(size=(case.size, 2)) < 0.4).astype(float)
    length = rng.integers(5, 60, case.size).astype(float)
    events = rng.poisson(0.02 * length * np.exp(X @ [0.5, -0.3]))
    events[np.flatnonzero(np.bincount(case, events) == 0) * eras] = 1   # one event per case
    sccs = engine.SccsData.from_arrays(case=case, length=length, events=events, X=X)
    res = engine.fit(sccs, model="sccs", tol=1e-13, variance="robust")
    assert engine.fit(sccs, model="sccs", tol=1e-13).variance == "model"   # the default
    eta = X @ res.beta + np.log(length)
    U = np.zeros((case.size, 2))
    info = np.zeros((2, 2))
    for i in range(n_cases):
        k = case == i
        p = np.exp(eta[k]) / np.exp(eta[k]).sum()
        m = events[k].sum()
        mean = p @ X[k]
        U[k] = X[k] * (events[k] - m * p)[:, None]
        info += m * ((X[k] * p[:, None]).T @ X[k] - np.outer(mean, mean))
    np.testing.assert_allclose(res.cov_robust.to_numpy(), brute_sandwich(U, info, case),
                               rtol=1e-8)


def test_fine_gray_answers_with_its_sandwich():
    rng = np.random.default_rng(0)
    n = 200
    X = rng.normal(size=(n, 2))
    code = rng.choice([0, 1, 2], n, p=[0.3, 0.45, 0.25])
    coh = engine.Cohort.from_arrays(time=rng.exponential(size=n), event=code, X=X,
                                    competing_risks=True)
    res = engine.fit(coh, model="fine_gray")
    assert res.variance == "robust" and "Fine-Gray sandwich" in res.variance_note
    model = engine.fit(coh, model="fine_gray", variance="model")
    np.testing.assert_allclose(model.se.to_numpy(), res.se_model.to_numpy(), rtol=1e-12)
    assert not np.allclose(res.se.to_numpy(), res.se_model.to_numpy())
    with pytest.raises(ValueError, match="cluster= is not available for model='fine_gray'"):
        engine.fit(coh, model="fine_gray", cluster=np.arange(n))


# -- the default --------------------------------------------------------------------------
def test_default_rule():
    d = tied_data()
    assert engine.fit(cohort_of(d, weights=False)).variance == "model"
    assert engine.fit(cohort_of(d)).variance == "robust"                 # non-integer weights
    integer = engine.Cohort.from_arrays(time=d["stop"], event=d["event"], X=d["X"],
                                        weights=np.round(d["w"] + 0.5))
    assert engine.fit(integer).variance == "model"                       # frequency weights
    assert engine.fit(cohort_of(d, weights=False), cluster=d["cluster"]).variance == "robust"
    # (start, stop] rows of subjects with several events: Andersen-Gill, robust by id
    n = len(d["stop"])
    ids = np.repeat(np.arange(n // 2), 2)
    start = np.where(np.arange(n) % 2 == 1, 30.0, 0.0)
    stop = np.where(np.arange(n) % 2 == 1, 30.0 + d["stop"], d["stop"] + 5)
    recurrent = engine.Cohort.from_arrays(time=stop, event=np.ones(n, int), X=d["X"],
                                          start=start, id=ids)
    res = engine.fit(recurrent)
    assert res.variance == "robust" and res.spec["n_clusters"] == n // 2
    assert res.variance_note == f"robust SE (sandwich), {n // 2} clusters by id"
    # split rows with one event per subject: model-based, as R
    once = engine.Cohort.from_arrays(time=stop, event=np.arange(n) % 2, X=d["X"], start=start,
                                     id=ids)
    assert engine.fit(once).variance == "model"
    assert "model-based SE" in str(engine.fit(once))


def test_cut_points_carry_the_clusters():
    d = tied_data(seed=6)
    coh = cohort_of(d, weights=False)
    res = engine.fit(coh, cut_points={"a": [10.0]}, cluster=d["cluster"], tol=1e-12)
    ep = res.problem.cohort
    start = np.zeros(ep.n) if ep.start is None else np.asarray(ep.start)
    U, info = brute_cox_pieces(start, np.asarray(ep.time),
                               np.asarray(ep.event), ep.X.toarray(), res.beta,
                               np.ones(ep.n), np.asarray(ep.strata if ep.strata is not None
                                                         else np.zeros(ep.n)), False)
    V = brute_sandwich(U, info, d["cluster"][np.asarray(ep.id)])
    np.testing.assert_allclose(res.cov_robust.to_numpy(), V, rtol=1e-8, atol=1e-14)


# -- bad input ------------------------------------------------------------------------------
def test_bad_clusters_and_weights_are_named():
    d = tied_data()
    coh = cohort_of(d, weights=False)
    bad = d["cluster"].astype(float)
    bad[[3, 7]] = np.nan
    with pytest.raises(CohortError, match=r"column 'cluster' \(cluster\) has 2 row\(s\) with a "
                                          r"missing cluster"):
        engine.fit(coh, cluster=bad)
    with pytest.raises(ValueError, match="cluster has 5 values but the cohort has 240 rows"):
        engine.fit(coh, cluster=np.arange(5))
    with pytest.raises(ValueError, match="not a column name"):
        engine.fit(coh, cluster="site")
    with pytest.raises(ValueError, match="variance must be one of"):
        engine.fit(coh, variance="sandwich")
    res = engine.fit(coh, cluster=np.zeros(coh.n))
    with pytest.raises(CohortError, match="at least 2 clusters with positive weight; there is 1"):
        _ = res.se
    with pytest.warns(DataWarning, match="2 clusters for 3 coefficients"):
        _ = engine.fit(coh, cluster=np.arange(coh.n) % 2).se
    heavy = d["w"].copy()
    heavy[0] = 1e6
    with pytest.warns(DataWarning, match="one cluster carries 100% of the total weight"):
        _ = engine.fit(cohort_of(dict(d, w=heavy))).se
    for w, what in [(-d["w"], "negative weights"), (np.where(np.arange(240) == 4, np.inf, 1.0),
                                                    "")]:
        with pytest.raises(CohortError, match="weights"):
            engine.Cohort.from_arrays(time=d["stop"], event=d["event"], X=d["X"], weights=w)
    ids = np.repeat(np.arange(coh.n // 2), 2)
    start = np.where(np.arange(coh.n) % 2 == 1, 30.0, 0.0)
    paired = engine.Cohort.from_arrays(time=start + d["stop"], event=d["event"], X=d["X"],
                                       start=start, id=ids)
    with pytest.warns(DataWarning, match="every cluster is a single row while subject ids "
                                         "repeat"):
        engine.fit(paired, cluster=np.arange(coh.n))


@pytest.mark.parametrize("ties", ["efron", "breslow"])
@pytest.mark.parametrize("clustered", [True, False])
def test_gpu_fit_robust_variance_equals_cpu(where, ties, clustered):
    """A GPU fit (on the device, or its kernels in the CUDA emulator) runs the score scans on
    the device (cox_gpu_risk_set.score_residuals, summed by cluster there); its robust
    covariance equals the CPU's, with clusters of several rows and with one row a cluster."""
    d = tied_data(entry=True, n=120)
    coh = cohort_of(d, strata=True, entry=True)
    cluster = d["cluster"] if clustered else None
    cpu = engine.fit(coh, ties=ties, tol=1e-12, cluster=cluster, variance="robust")
    gpu = engine.fit(coh, ties=ties, tol=1e-12, cluster=cluster, variance="robust",
                     backend="gpu")
    assert gpu.spec["backend"] == "gpu" and hasattr(gpu.problem.model.backend, "cluster_scores")
    np.testing.assert_allclose(gpu.cov_robust.to_numpy(), cpu.cov_robust.to_numpy(), rtol=1e-8)


# -- the bootstrap by cluster -----------------------------------------------------------------
def test_cluster_bootstrap_agrees_with_robust_se():
    """Shared-frailty clusters with a cluster-level covariate: the model-based SE of x0 is
    about 22% too small; the bootstrap drawing whole clusters and the robust SE agree within
    Monte Carlo error (300 replicates: about 4% on an SE)."""
    rng = np.random.default_rng(0)
    k, m = 150, 4
    c = np.repeat(np.arange(k), m)
    frailty = rng.gamma(1 / 1.5, 1.5, k)[c]
    x = np.c_[rng.normal(size=k)[c] + 0.3 * rng.normal(size=k * m), rng.normal(size=k * m)]
    t = rng.exponential(size=k * m) / (frailty * np.exp(x @ [0.5, -0.3]))
    censor = rng.exponential(2.0, size=k * m)
    coh = engine.Cohort.from_arrays(time=np.minimum(t, censor), event=(t <= censor).astype(int),
                                    X=x)
    boot = engine.bootstrap(coh, replicates=300, seed=1, cluster=c)
    spread = boot.replicates.std(ddof=1).to_numpy()
    robust = boot.fit.se.to_numpy()
    assert boot.fit.variance == "robust" and boot.fit.spec["n_clusters"] == k
    np.testing.assert_allclose(spread, robust, rtol=0.15)
    assert spread[0] / boot.fit.se_model["x0"] > 1.2       # the model-based SE is too small
    rows = engine.bootstrap(coh, replicates=300, seed=1)   # rows drawn: clustering ignored
    assert rows.replicates.std(ddof=1)["x0"] / spread[0] < 0.9
