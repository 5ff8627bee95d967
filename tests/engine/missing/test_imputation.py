"""engine.impute(method="mice") and Imputations.fit against statsmodels' own MICE: the same
chained equations (MICEData with the same seed and the same imputation model: the
covariates, the event indicator and the Nelson-Aalen cumulative hazard, built here with
lifelines), each completed data set fitted by statsmodels' PHReg and pooled by its
MICE.combine.  Equal pooled
coefficients and covariance mean equal draws, equal Cox fits and equal Rubin's rules."""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import engine
from engine.missing.chained_equations import nelson_aalen_at

COLUMNS = ["age", "sex", "ph.ecog", "ph.karno", "pat.karno", "meal.cal", "wt.loss"]
COVARIATES = ["age", "sex", "ph.ecog", "wt.loss", "meal.cal"]


@pytest.fixture(scope="module")
def lung():
    """R's lung data: 228 patients, meal.cal missing for 47, wt.loss for 14."""
    return engine.datasets.load_lung()[["time", "status"] + COLUMNS]


def _cumulative_hazard(time, died):
    from lifelines import NelsonAalenFitter

    na = NelsonAalenFitter(nelson_aalen_smoothing=False).fit(time, died)
    return na.cumulative_hazard_at_times(time).to_numpy()


def test_nelson_aalen_at_each_time_equals_lifelines(lung):
    t, e = lung["time"].to_numpy(), lung["status"].to_numpy()
    np.testing.assert_allclose(nelson_aalen_at(t, e), _cumulative_hazard(t, e), rtol=1e-12)
    codes = np.where(e == 1, 1 + (np.arange(e.size) % 2), 0)      # two causes, made up
    for k in (1, 2):
        np.testing.assert_allclose(nelson_aalen_at(t, codes, k),
                                   _cumulative_hazard(t, codes == k), rtol=1e-12)


def _statsmodels_mice(lung, m, burn_in, skip, donors, seed):
    """statsmodels' MICE over the same imputation model, its analysis model PHReg (Breslow),
    pooled by its own MICE.combine."""
    import statsmodels.api as sm
    from statsmodels.imputation.mice import MICE, MICEData

    frame = lung[COLUMNS].astype(float).copy()
    frame["event"] = lung["status"].astype(float)
    frame["H"] = _cumulative_hazard(lung["time"], lung["status"])
    names = [f"v{j}" for j in range(frame.shape[1])]
    frame.columns = names
    time = lung["time"].to_numpy(float)

    class TimedPHReg(sm.PHReg):
        """PHReg with the follow-up time beside the imputed data: the time is the analysis
        model's, not a variable of the imputation model."""

        @classmethod
        def from_formula(cls, formula, data, **kwargs):
            return sm.PHReg.from_formula(formula, data.assign(time=time), **kwargs)

    data = MICEData(frame, k_pmm=donors, rng=np.random.default_rng(seed))
    covariates = " + ".join(names[COLUMNS.index(c)] for c in COVARIATES)
    mice = MICE(f"time ~ {covariates}", TimedPHReg, data,
                init_kwds={"status": lung["status"].to_numpy(), "ties": "breslow"}, n_skip=skip)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            mice.fit(n_burnin=burn_in, n_imputations=m)
        except AttributeError:      # its combine reads results._results, which PHReg's lack
            pass
    assert len(mice.results_list) == m
    for result in mice.results_list:
        result._results = result
    return mice.combine()


def test_pooled_cox_equals_statsmodels_mice(lung):
    imp = engine.impute(lung, "time", "status", method="mice", m=6, burn_in=4, skip=2,
                        donors=5, seed=11)
    assert imp.model == COLUMNS + ["event", "H_event"]
    pooled = imp.fit(covariates=COVARIATES, ties="breslow")
    oracle = _statsmodels_mice(lung, m=6, burn_in=4, skip=2, donors=5, seed=11)
    np.testing.assert_allclose(pooled.coef.to_numpy(), oracle.params, rtol=1e-6)
    np.testing.assert_allclose(pooled.cov.to_numpy(), oracle.cov_params(), rtol=1e-6)
    np.testing.assert_allclose(pooled.summary["lambda"], oracle.frac_miss_info, rtol=1e-6)
    # the draws: observed values of the column (predictive mean matching), in every data set
    for column, draws in imp.imputed.items():
        observed = set(lung[column].dropna())
        assert draws.shape == (6, lung[column].isna().sum())
        assert set(np.unique(draws.to_numpy())) <= observed
        assert list(draws.columns) == list(lung.index[lung[column].isna()])
    assert imp.summary.loc["meal.cal", "missing"] == 47


def test_completed_data_sets_keep_the_observed_values(lung):
    imp = engine.impute(lung, "time", "status", columns=["wt.loss", "meal.cal"],
                        method="mice", predictors=["age", "sex", "ph.ecog"], m=3, burn_in=2,
                        skip=0, seed=2)
    assert imp.model == ["age", "sex", "ph.ecog", "meal.cal", "wt.loss", "event", "H_event"]
    complete = imp.dataset(2)
    observed = lung["meal.cal"].notna()
    pd.testing.assert_series_equal(complete.loc[observed, "meal.cal"],
                                   lung.loc[observed, "meal.cal"])
    assert complete[["meal.cal", "wt.loss"]].notna().all().all()
    assert complete["ph.karno"].isna().sum() == 1           # not asked for: left as it was
    np.testing.assert_array_equal(complete.loc[~observed, "meal.cal"],
                                  imp.imputed["meal.cal"].iloc[2])
    with pytest.raises(IndexError, match="3 imputed data sets"):
        imp.dataset(3)


def test_same_seed_same_draws_and_competing_causes(lung):
    data = lung.assign(status=np.where(lung["status"] == 1, 1 + (lung["age"] > 63), 0))
    a = engine.impute(data, "time", "status", columns=["wt.loss"], method="mice", m=2, seed=5)
    b = engine.impute(data, "time", "status", columns=["wt.loss"], method="mice", m=2, seed=5)
    pd.testing.assert_frame_equal(a.imputed["wt.loss"], b.imputed["wt.loss"])
    assert a.model[-4:] == ["event 1", "H_cause 1", "event 2", "H_cause 2"]


def test_categorical_predictors_enter_as_level_indicators(lung):
    data = lung.assign(site=np.where(lung.index % 3 == 0, "north", "south"))
    imp = engine.impute(data, "time", "status", columns=["wt.loss"], method="mice",
                        predictors=["age", "site"], m=2, seed=1)
    assert imp.model == ["age", "wt.loss", "site[south]", "event", "H_event"]


@pytest.mark.parametrize("change, kwargs, message", [
    (lambda d: d.assign(time=d["time"].where(d.index != 4)), {}, r"'time' \(time\) has 1 row"),
    (lambda d: d.assign(status=d["status"] * 0), {}, "no events"),
    (lambda d: d.assign(status=d["status"] * 0.5), {}, "codes that are not 0"),
    (lambda d: d.assign(grade=np.where(d.index % 2, "high", None)), {"columns": ["grade"]},
     "not numeric"),
    (lambda d: d.assign(gone=np.nan), {"columns": ["gone"]}, "0 distinct observed value"),
    (lambda d: d.assign(one=np.where(d.index % 2, 1.0, np.nan)), {"columns": ["one"]},
     "1 distinct observed value"),
    (lambda d: d, {"columns": ["weight"]}, "'weight' \\(column to impute\\) is not in the data"),
    (lambda d: d, {"columns": ["status"]}, "outcome's"),
    (lambda d: d.assign(grade=np.where(d.index % 2, "high", None)),
     {"columns": ["wt.loss"], "predictors": ["grade"], "method": "mice"},
     "text with missing values"),
    (lambda d: d.assign(site=np.where(d.index % 2, "a", "b")),
     {"columns": ["wt.loss"], "predictors": ["site"]}, "'site' is not numeric"),
    (lambda d: d, {"columns": ["wt.loss"], "predictors": ["meal.cal"]},
     "'meal.cal' misses 47 value"),
    (lambda d: d, {"method": "hot deck"}, "method is"),
    (lambda d: d, {"m": 0}, "m must be a whole number"),
    (lambda d: d[["time", "status", "age"]], {}, "nothing to impute"),
])
def test_bad_input_is_named(lung, change, kwargs, message):
    with pytest.raises((engine.CohortError, ValueError), match=message):
        engine.impute(change(lung), "time", "status", **{"m": 2, "iterations": 1, **kwargs})


def test_progress_and_cancel(lung):
    import threading

    seen = []
    imp = engine.impute(lung, "time", "status", columns=["wt.loss"], predictors=["age"], m=2,
                        iterations=3, seed=1, progress=lambda done, total: seen.append(
                            (done, total)))
    assert seen == [(k, 6) for k in range(1, 7)]
    stop = threading.Event()
    stop.set()
    for method in ("smcfcs", "mice"):
        with pytest.raises(engine.Cancelled, match="after 1 of"):
            engine.impute(lung, "time", "status", columns=["wt.loss"], method=method,
                          predictors=["age"], m=2, seed=1, cancel=stop)
    with pytest.raises(engine.Cancelled, match="after 1 of 2 fits"):
        imp.fit(cancel=stop)


def test_competing_causes_then_a_pooled_fine_gray_fit():
    """bmtcrr with Age missing for every fifth patient: chained equations with both causes'
    indicators and hazards as predictors, then Fine-Gray fits of relapse on each completed
    data set, pooled: Rubin's rules over engine.fit of each data set as the user would."""
    bmt = engine.datasets.load_bmtcrr()
    data = bmt.assign(Age=bmt["Age"].astype(float).mask(bmt.index % 5 == 0))
    imp = engine.impute(data, "ftime", "Status", columns=["Age"], method="mice",
                        predictors=["Sex", "D", "Source"], m=3, burn_in=2, skip=1, seed=4)
    assert imp.model[-4:] == ["event 1", "H_cause 1", "event 2", "H_cause 2"]
    options = dict(covariates=["Age", "Sex", "Source"], competing_risks=True)
    pooled = imp.fit(model="fine_gray", cause=1, **options)
    fits = [engine.fit(engine.Cohort.from_frame(imp.dataset(k), "ftime", "Status", **options),
                       model="fine_gray", cause=1) for k in range(3)]
    np.testing.assert_allclose(pooled.coef, np.mean([f.coef for f in fits], axis=0),
                               rtol=1e-12)
    np.testing.assert_allclose(pooled.within, np.mean([f.cov for f in fits], axis=0),
                               rtol=1e-12)
    assert "hr" in pooled.summary and pooled.fits[0].spec["model"] == "fine_gray"
