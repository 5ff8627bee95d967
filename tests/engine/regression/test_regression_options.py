"""One option set for every regression verb: fit, cross_validate, bootstrap, path, lambda_max,
loglik and gradient take every engine.FitOptions field, checked once there; one tol default; one
progress(done, total) and one cancel.  Fine-Gray drivers work for every cause: cause 2 of bmtcrr
against fits of the kept (cross-validation) or copied (bootstrap) rows, and the path against
fits at each of its strengths."""
import threading

import numpy as np
import pandas as pd
import pytest

import engine
from engine.regression.drivers.resampling import bootstrap_counts, fold_of_rows, subjects

COVARIATES = ["Age", "male", "aml"]


def _bmtcrr() -> pd.DataFrame:
    return engine.datasets.load_bmtcrr().assign(male=lambda d: (d["Sex"] == "M").astype(float),
                                                aml=lambda d: (d["D"] == "AML").astype(float))


def _fine_gray(frame):
    return engine.Cohort.from_frame(frame, time="ftime", event="Status", covariates=COVARIATES,
                                    competing_risks=True)


def _cox():
    rng = np.random.default_rng(4)
    n = 120
    X = rng.normal(size=(n, 3))
    t = rng.exponential(1.0 / np.exp(X @ [0.6, -0.4, 0.0]))
    c = rng.exponential(1.5, n)
    return pd.DataFrame({"time": np.minimum(t, c).round(2) + 0.01, "event": (t <= c).astype(int),
                         "x1": X[:, 0], "x2": X[:, 1], "x3": X[:, 2]})


def _cox_cohort(frame):
    return engine.Cohort.from_frame(frame, time="time", event="event",
                                    covariates=["x1", "x2", "x3"])


def test_fine_gray_cross_validation_of_cause_2_equals_fits_of_the_kept_rows():
    """The fold score of cause 2 is l(beta_-k) - l_-k(beta_-k) with beta_-k the cause-2 fit of
    the training rows alone (a cohort built from them) and both pseudo-likelihoods of cause 2."""
    df = _bmtcrr()
    cohort = _fine_gray(df)
    cv = engine.cross_validate(cohort, model="fine_gray", cause=2, folds=3, grid=3, seed=1,
                               tol=1e-12)
    assert cv.spec["cause"] == 2 and cv.fit.spec["cause"] == 2
    keep = fold_of_rows(cohort, 3, seed=1, repeat=0) != 2
    train = _fine_gray(df[keep].reset_index(drop=True))
    for i in range(3):
        lam = cv.curve["lambda"].iloc[i]
        beta = engine.fit(train, model="fine_gray", cause=2, penalty=engine.L1(lam),
                          tol=1e-12).coef.to_numpy()
        expected = (engine.loglik(cohort, beta, model="fine_gray", cause=2)
                    - engine.loglik(train, beta, model="fine_gray", cause=2))
        assert cv.curve["r0_f2"].iloc[i] == pytest.approx(expected, rel=1e-7, abs=1e-7)
    # cause 1 gives another curve: the cause reached the folds
    other = engine.cross_validate(cohort, model="fine_gray", folds=3, grid=3, seed=1, tol=1e-12)
    assert not np.allclose(other.curve["mean"], cv.curve["mean"])
    refit = engine.fit(cohort, model="fine_gray", cause=2, penalty=cv.penalty, tol=1e-12)
    np.testing.assert_allclose(cv.fit.coef, refit.coef, rtol=1e-6, atol=1e-9)


def test_fine_gray_bootstrap_of_cause_2_equals_fits_of_the_copied_rows():
    df = _bmtcrr()
    cohort = _fine_gray(df)
    boot = engine.bootstrap(cohort, model="fine_gray", cause=2, censoring_strata=False,
                            replicates=3, seed=5, tol=1e-12)
    assert boot.spec["cause"] == 2 and boot.fit.spec["cause"] == 2
    direct_full = engine.fit(cohort, model="fine_gray", cause=2, tol=1e-12).coef
    np.testing.assert_allclose(boot.fit.coef, direct_full, rtol=1e-8)
    codes, n_subjects = subjects(cohort)
    for b in range(3):
        rows = np.repeat(np.arange(cohort.n), bootstrap_counts(n_subjects, 5, b)[codes])
        direct = engine.fit(_fine_gray(df.iloc[rows].reset_index(drop=True)), model="fine_gray",
                            cause=2, tol=1e-12).coef
        np.testing.assert_allclose(boot.replicates.iloc[b], direct, rtol=1e-7, atol=1e-9)


def test_censoring_strata_reaches_the_bootstrap():
    """censoring_strata=True (one censoring Kaplan-Meier per stratum) in every replicate: the
    replicate equals that fit of the copied rows, and not the fit with one censoring curve."""
    df = _bmtcrr()

    def cohort_of(frame):
        return engine.Cohort.from_frame(frame, time="ftime", event="Status",
                                        covariates=["Age", "aml"], strata="Sex",
                                        competing_risks=True)

    cohort = cohort_of(df)
    boot = engine.bootstrap(cohort, model="fine_gray", cause=2, censoring_strata=True,
                            replicates=2, seed=5, tol=1e-12)
    assert boot.spec["censoring_strata"] is True
    codes, n_subjects = subjects(cohort)
    rows = np.repeat(np.arange(cohort.n), bootstrap_counts(n_subjects, 5, 1)[codes])
    copied = cohort_of(df.iloc[rows].reset_index(drop=True))
    per_stratum = engine.fit(copied, model="fine_gray", cause=2, censoring_strata=True,
                             tol=1e-12).coef
    pooled = engine.fit(copied, model="fine_gray", cause=2, tol=1e-12).coef
    np.testing.assert_allclose(boot.replicates.iloc[1], per_stratum, rtol=1e-7, atol=1e-9)
    assert not np.allclose(boot.replicates.iloc[1], pooled, rtol=1e-6, atol=0)


def test_fine_gray_path_and_lambda_max_of_cause_2():
    """lambda_max of cause 2 is max |dl/dbeta| at zero (a central difference of the cause-2
    pseudo-likelihood); each point of the path is the cause-2 fit at its strength."""
    cohort = _fine_gray(_bmtcrr())
    top = engine.lambda_max(cohort, model="fine_gray", cause=2)
    h = 1e-5
    numeric = [(engine.loglik(cohort, h * e, model="fine_gray", cause=2)
                - engine.loglik(cohort, -h * e, model="fine_gray", cause=2)) / (2 * h)
               for e in np.eye(cohort.p)]
    assert top == pytest.approx(np.max(np.abs(numeric)), rel=1e-6)
    assert top != pytest.approx(engine.lambda_max(cohort, model="fine_gray", cause=1), rel=1e-3)
    p = engine.path(cohort, model="fine_gray", cause=2, grid=4, tol=1e-12)
    assert p.lambda_max == pytest.approx(top, rel=1e-12) and p.spec["cause"] == 2
    for lam, row in zip(p.lambdas, p.coef.to_numpy()):
        direct = engine.fit(cohort, model="fine_gray", cause=2, penalty=engine.L1(lam),
                            tol=1e-12).coef.to_numpy()
        np.testing.assert_allclose(row, direct, rtol=1e-6, atol=1e-8)


def test_cut_points_reach_the_bootstrap_and_cross_validation():
    """cut_points, a FitOptions field, split every replicate's and fold's rows: a replicate
    equals the fit of the copied rows with the same cut points; a fold's training fit equals
    the fit of its kept rows."""
    df = _cox()
    cohort = _cox_cohort(df)
    cuts = {"x1": [0.5]}
    boot = engine.bootstrap(cohort, replicates=2, seed=3, cut_points=cuts, tol=1e-12)
    assert list(boot.replicates.columns) == ["x1[0,0.5)", "x1[0.5,inf)", "x2", "x3"]
    codes, n_subjects = subjects(cohort)
    rows = np.repeat(np.arange(cohort.n), bootstrap_counts(n_subjects, 3, 1)[codes])
    direct = engine.fit(_cox_cohort(df.iloc[rows].reset_index(drop=True)), cut_points=cuts,
                        tol=1e-12).coef
    np.testing.assert_allclose(boot.replicates.iloc[1], direct, rtol=1e-7, atol=1e-9)

    cv = engine.cross_validate(cohort, folds=3, grid=3, seed=2, cut_points=cuts, tol=1e-12)
    assert cv.fit.spec["cut_points"] == cuts
    keep = fold_of_rows(cohort, 3, seed=2, repeat=0) != 0
    train = _cox_cohort(df[keep].reset_index(drop=True))
    lam = cv.curve["lambda"].iloc[1]
    beta = engine.fit(train, cut_points=cuts, penalty=engine.L1(lam), tol=1e-12).coef
    split = engine.fit(cohort, cut_points=cuts).problem.cohort   # the episodes of all rows
    expected = (engine.loglik(split, beta.to_numpy())
                - engine.loglik(engine.fit(train, cut_points=cuts).problem.cohort,
                                beta.to_numpy()))
    assert cv.curve["r0_f0"].iloc[1] == pytest.approx(expected, rel=1e-7, abs=1e-7)


VERBS = {
    "fit": lambda c, **o: engine.fit(c, **o),
    "cross_validate": lambda c, **o: engine.cross_validate(c, folds=2, grid=2, **o),
    "bootstrap": lambda c, **o: engine.bootstrap(c, replicates=2, **o),
    "path": lambda c, **o: engine.path(c, grid=2, **o),
    "lambda_max": lambda c, **o: engine.lambda_max(c, **o),
    "loglik": lambda c, **o: engine.loglik(c, np.zeros(c.p), **o),
    "gradient": lambda c, **o: engine.gradient(c, np.zeros(c.p), **o),
}


@pytest.mark.parametrize("verb", list(VERBS))
def test_every_verb_checks_the_same_options(verb):
    cohort = _cox_cohort(_cox())
    call = VERBS[verb]
    with pytest.raises(TypeError, match=rf"{verb}\(\) got an unexpected keyword argument "
                                        r"'tie'\. Did you mean 'ties'\?.*censoring_strata"):
        call(cohort, tie="efron")
    with pytest.raises(ValueError, match="solver must be one of"):
        call(cohort, solver="simplex")
    with pytest.raises(ValueError, match="tol must be in"):
        call(cohort, tol=2.0)
    with pytest.raises(ValueError, match="cut_points split survival episodes; logistic"):
        call(cohort, model="logistic", cut_points={"x1": [0.5]})
    with pytest.raises(ValueError, match="cut_points must be a dict"):
        call(cohort, cut_points=[0.5])


def test_one_tol_default():
    """Every driver's fits use FitOptions' tol unless told otherwise."""
    cohort = _cox_cohort(_cox())
    tol = engine.FitOptions().tol
    assert engine.fit(cohort).spec["tol"] == tol
    assert engine.cross_validate(cohort, folds=2, grid=2).fit.spec["tol"] == tol
    assert engine.bootstrap(cohort, replicates=2).fit.spec["tol"] == tol
    assert engine.cross_validate(cohort, folds=2, grid=2, tol=1e-7).fit.spec["tol"] == 1e-7


def test_fit_reports_progress_and_stops_on_cancel():
    cohort = _cox_cohort(_cox())
    seen = []
    res = engine.fit(cohort, solver="ccd", max_iter=50,
                     progress=lambda done, total: seen.append((done, total)))
    assert seen == [(k, 50) for k in range(1, res.n_iter + 1)]
    cancel = threading.Event()

    def stop_at_two(done, total):
        if done == 2:
            cancel.set()
    with pytest.raises(engine.Cancelled, match="fit cancelled, iteration 2"):
        engine.fit(cohort, solver="ccd", progress=stop_at_two, cancel=cancel)
    with pytest.raises(TypeError, match=r"progress is called as progress\(done, total\)"):
        engine.fit(cohort, progress=lambda state: None)     # engine.fit's old signature


def test_old_spellings_name_the_new_ones():
    """0.x keeps no silent aliases: the old grouping and confidence names raise, naming the
    new ones."""
    df = _bmtcrr()
    cohort = _fine_gray(df)
    with pytest.raises(TypeError, match=r"logrank_test\(\) no longer takes group=; pass by="):
        engine.logrank_test(cohort, group="aml")
    with pytest.raises(TypeError, match=r"gray_test\(\) no longer takes group=; pass by="):
        engine.gray_test(df, group="D", time="ftime", event="Status")
    with pytest.raises(TypeError, match=r"no longer takes alpha=; pass level= \(the coverage: "
                                        r"level = 1 - alpha"):
        engine.cumulative_incidence(df, time="ftime", event="Status", alpha=0.05)
    with pytest.raises(ValueError, match=r"level must be a number in \(0, 1\)"):
        engine.cumulative_incidence(df, time="ftime", event="Status", level=95)


def test_cumulative_incidence_level_is_the_coverage():
    """level=0.9 gives R's conf.int = 0.9 log limits, cif exp(-+ z_0.95 se / cif) (the 0.95
    limits and the SEs are R's: test_cumulative_incidence_r.py)."""
    from scipy.stats import norm

    df = engine.datasets.load_bmtcrr()
    out = engine.cumulative_incidence(df, cause=2, time="ftime", event="Status", level=0.9)
    started = out.cif.to_numpy() > 0
    cif, se = out.cif[started], out.std_err[started]
    z = norm.ppf(0.95)
    np.testing.assert_allclose(out.lower[started], cif * np.exp(-z * se / cif), rtol=1e-12)
    np.testing.assert_allclose(out.upper[started], np.minimum(cif * np.exp(z * se / cif), 1),
                               rtol=1e-12)


def test_every_test_returns_a_test_result():
    """logrank_test, gray_test, ph_test, global_tests, lr_test: one result type, whose
    statistic, df and p are read from its table as R prints them."""
    from scipy import stats

    df = _bmtcrr()
    cohort = _fine_gray(df)
    cox = engine.Cohort.from_frame(df.assign(relapse=(df["Status"] == 1).astype(int)),
                                   time="ftime", event="relapse", covariates=COVARIATES)
    small = engine.fit(engine.Cohort.from_frame(df.assign(relapse=(df["Status"] == 1)
                                                          .astype(int)),
                                                time="ftime", event="relapse",
                                                covariates=["Age"]), tol=1e-12)
    big = engine.fit(cox, tol=1e-12)
    results = {
        "logrank": engine.logrank_test(cohort, by="aml"),
        "gray": engine.gray_test(df, by="D", cause=2, time="ftime", event="Status"),
        "ph": engine.ph_test(big),
        "global": engine.global_tests(big),
        "lr": engine.lr_test(small, big),
    }
    for name, r in results.items():
        assert isinstance(r, engine.TestResult), name
        assert isinstance(r.table, pd.DataFrame) and isinstance(r.spec, dict), name
        assert r.p == pytest.approx(stats.chi2.sf(r.statistic, r.df), rel=1e-12), name
    assert results["gray"].statistic == results["gray"].table.loc[2, "statistic"]
    assert results["ph"].statistic == results["ph"].table.loc["GLOBAL", "chisq"]
    assert results["global"].statistic == results["global"].table.loc["likelihood ratio",
                                                                      "statistic"]
    assert results["lr"].statistic == pytest.approx(2 * (big.loglik - small.loglik), rel=1e-12)
    both = engine.gray_test(df, by="D", time="ftime", event="Status")
    assert np.isnan(both.statistic) and both.table.index.tolist() == [1, 2]


@pytest.mark.parametrize("verb", [engine.fit, engine.cross_validate, engine.bootstrap,
                                  engine.path, engine.lambda_max, engine.loglik,
                                  engine.gradient])
def test_fit_options_reach_every_verb_through_one_door(verb):
    """No verb spells out a FitOptions field itself (bar model): they all take **options,
    so a field added to FitOptions reaches every verb without touching it."""
    import inspect

    from engine.regression.options import FIELDS

    params = inspect.signature(verb).parameters
    assert [p.name for p in params.values() if p.kind is p.VAR_KEYWORD] == ["options"]
    assert [name for name in params if name in FIELDS] == ["model"]


def test_one_progress_and_one_cancel():
    """Every long-running verb takes progress(done, total) and cancel (an Event-like;
    engine.Cancelled when set), by those names; the regression drivers report each step."""
    import inspect

    import engine.gwas

    for verb in (engine.fit, engine.cross_validate, engine.bootstrap, engine.path,
                 engine.sample, engine.gwas.scan):
        params = inspect.signature(verb).parameters
        assert params["progress"].default is None and params["cancel"].default is None
    cohort = _cox_cohort(_cox())
    seen = {"bootstrap": [], "path": []}
    engine.bootstrap(cohort, replicates=3, progress=lambda d, t: seen["bootstrap"].append((d, t)))
    engine.path(cohort, grid=3, progress=lambda d, t: seen["path"].append((d, t)))
    assert seen == {"bootstrap": [(1, 3), (2, 3), (3, 3)], "path": [(1, 3), (2, 3), (3, 3)]}
    cancel = threading.Event()
    cancel.set()
    for verb in (engine.bootstrap, engine.path):
        with pytest.raises(engine.Cancelled):
            verb(cohort, cancel=cancel)
