"""engine.adjusted_rates: a Poisson fit's rates standardised over the cohort's covariates and
person-time with the treatment set to each level (the g-formula for rates). A model of the
treatment alone gives the crude rates and incidence_rates' Wald rate difference (and the fit's
own rate ratio); with confounders the rates, differences and ratios equal a brute-force
computation from statsmodels' GLM (its coefficients and covariance, the average taken by hand,
the gradient by central differences, the rows' sampling term summed by subject), on whole
rows and on follow-up split into bands."""
import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from scipy import stats

import engine
from rossi_episodes import survsplit

Z95 = stats.norm.ppf(0.975)


def test_the_treatment_alone_gives_the_crude_rates(rossi):
    cohort = engine.Cohort.from_frame(rossi, "week", "arrest", covariates=["fin"])
    res = engine.fit(cohort, model="poisson", tol=1e-12)
    out = engine.adjusted_rates(res, "fin")
    crude = engine.incidence_rates(cohort, by=rossi["fin"].to_numpy())
    np.testing.assert_allclose(out.rates["rate"], crude.rates["rate"], rtol=1e-9)
    c, want = out.contrasts.iloc[0], crude.comparisons.iloc[0]
    assert c["difference"] == pytest.approx(want["rate_difference"], rel=1e-9)
    assert c["lower"] == pytest.approx(want["rd_lower"], rel=1e-8)
    assert c["ratio"] == pytest.approx(res.summary.loc["fin", "irr"], rel=1e-9)
    assert c["ratio_upper"] == pytest.approx(res.summary.loc["fin", "irr_upper"], rel=1e-8)
    assert out.levels == [0.0, 1.0] and out.per == 1000.0


def _brute_force(frame, columns, groups, t):
    """(rates, their SEs, the difference's SE, the log ratio's SE) per 1,000 by hand."""
    X = sm.add_constant(frame[columns].astype(float))
    fit = sm.GLM(frame["arrest"], X, family=sm.families.Poisson(),
                 offset=np.log(t)).fit(tol=1e-13)
    V = fit.cov_params().to_numpy()

    def rows(beta, level):
        return np.exp(X.assign(fin=float(level)).to_numpy() @ beta)

    def theta(beta, level):
        return t @ rows(beta, level) / t.sum()

    def gradient(f, beta, h=1e-6):
        return np.array([(f(beta + h * e) - f(beta - h * e)) / (2 * h)
                         for e in np.eye(beta.size)])

    def variance(f, r):
        g = gradient(f, fit.params.to_numpy())
        scores = pd.Series(t * (r - r @ t / t.sum())).groupby(groups).sum().to_numpy()
        return g @ V @ g + scores @ scores / t.sum() ** 2

    b = fit.params.to_numpy()
    r0, r1 = rows(b, 0), rows(b, 1)
    th = np.array([theta(b, 0), theta(b, 1)])
    se = [np.sqrt(variance(lambda x, a=a: theta(x, a), r)) for a, r in ((0, r0), (1, r1))]
    diff = np.sqrt(variance(lambda x: theta(x, 1) - theta(x, 0), r1 - r0))
    log = np.sqrt(variance(lambda x: np.log(theta(x, 1) / theta(x, 0)),
                           r1 / th[1] - r0 / th[0]))
    return th * 1000, np.array(se) * 1000, diff * 1000, log


@pytest.mark.parametrize("bands", [None, [20, 40]])
def test_adjusted_for_age_and_priors_as_a_brute_force_computation(rossi, bands):
    columns = ["fin", "age", "prio"]
    cohort = engine.Cohort.from_frame(rossi, "week", "arrest", covariates=columns)
    res = engine.fit(cohort, model="poisson", bands=bands, tol=1e-12)
    out = engine.adjusted_rates(res, "fin")
    frame = rossi.assign(id=np.arange(len(rossi)), start=0.0)
    if bands:
        frame = survsplit(frame, bands)
        frame = frame.assign(b2=(frame["band"] == 2) * 1.0, b3=(frame["band"] == 3) * 1.0)
        columns = [*columns, "b2", "b3"]
    rates, se, diff_se, log_se = _brute_force(frame, columns, frame["id"].to_numpy(),
                                              (frame["week"] - frame["start"]).to_numpy(float))
    np.testing.assert_allclose(out.rates["rate"], rates, rtol=1e-8)
    np.testing.assert_allclose(out.rates["se"], se, rtol=1e-5)
    c = out.contrasts.iloc[0]
    assert c["difference"] == pytest.approx(rates[1] - rates[0], rel=1e-8)
    assert c["se"] == pytest.approx(diff_se, rel=1e-5)
    assert c["ratio_lower"] == pytest.approx(rates[1] / rates[0] * np.exp(-Z95 * log_se),
                                             rel=1e-6)


def test_what_it_refuses(rossi):
    cohort = engine.Cohort.from_frame(rossi, "week", "arrest", covariates=["fin", "age"])
    with pytest.raises(ValueError, match="standardise a Poisson fit's rates"):
        engine.adjusted_rates(engine.fit(cohort), "fin")
    res = engine.fit(cohort, model="poisson")
    with pytest.raises(engine.CohortError, match="'wexp' is not a covariate"):
        engine.adjusted_rates(res, "wexp")
    with pytest.raises(ValueError, match="per must be"):
        engine.adjusted_rates(res, "fin", per=0)
    lasso = engine.fit(cohort, model="poisson", penalty=engine.L1(0.5))
    assert engine.adjusted_rates(lasso, "fin").rates["se"].isna().all()
