"""FitResult.confint: profile-likelihood intervals against statsmodels refitted with an offset
(unpenalised Cox on rossi) and against a brute-force profile written here (penalised fit)."""
import numpy as np
import pytest
from scipy import optimize, stats
from scipy.interpolate import CubicSpline

import engine

COLS = ["fin", "age", "race", "wexp", "mar", "paro", "prio"]


@pytest.mark.parametrize("ties", ["breslow", "efron"])
def test_rossi_equals_statsmodels_likelihood_ratio_interval(rossi, ties):
    from statsmodels.duration.hazard_regression import PHReg

    cohort = engine.Cohort.from_frame(rossi, time="week", event="arrest", covariates=COLS)
    res = engine.fit(cohort, ties=ties, tol=1e-12)
    ci = res.confint(["fin", "age", "prio"])
    X = rossi[COLS].to_numpy(float)
    top = PHReg(rossi["week"], X, status=rossi["arrest"], ties=ties).fit().llf
    crit = stats.chi2.ppf(0.95, 1) / 2

    for name in ["fin", "age", "prio"]:
        j = COLS.index(name)
        others = np.delete(X, j, axis=1)

        def drop(b):
            fit = PHReg(rossi["week"], others, status=rossi["arrest"], ties=ties,
                        offset=b * X[:, j]).fit()
            return top - fit.llf - crit

        b_hat, se = res.coef[name], res.se[name]
        lower = optimize.brentq(drop, b_hat - 4 * se, b_hat, xtol=1e-10)
        upper = optimize.brentq(drop, b_hat, b_hat + 4 * se, xtol=1e-10)
        assert ci.loc[name, "lower"] == pytest.approx(lower, abs=1e-6)
        assert ci.loc[name, "upper"] == pytest.approx(upper, abs=1e-6)
        assert lower < b_hat < upper


def test_penalised_fit_equals_brute_force_profile_on_a_grid():
    cohort = engine.simulate(300, 6, density=0.3, seed=8)
    lam = 4.0
    keep = ["x0", "x1"]
    res = engine.fit(cohort, penalty=engine.L2(lam), unpenalized=keep, tol=1e-12)
    ci = res.confint(keep, level=0.9)
    penalised = np.array([name not in keep for name in cohort.names])

    def profile(j, b):
        """max over the others of l - lam/2 |beta_penalised|^2 by BFGS on engine.loglik."""
        free = np.arange(cohort.p) != j

        def negative(z):
            beta = np.empty(cohort.p)
            beta[j], beta[free] = b, z
            pen = 0.5 * lam * np.sum(beta[penalised] ** 2)
            grad = -engine.gradient(cohort, beta) + lam * beta * penalised
            return -engine.loglik(cohort, beta) + pen, grad[free]

        out = optimize.minimize(negative, res.coef.to_numpy()[free], jac=True, method="BFGS",
                                options={"gtol": 1e-10})
        return -out.fun

    beta_hat = res.coef.to_numpy()
    top = res.loglik - 0.5 * lam * np.sum(beta_hat[penalised] ** 2)
    crit = stats.chi2.ppf(0.9, 1) / 2
    for j, name in enumerate(keep):
        b_hat, se = beta_hat[j], res.se[name]
        grid = b_hat + se * np.linspace(-3, 3, 61)
        drops = np.array([top - profile(j, b) for b in grid]) - crit
        spline = CubicSpline(grid, drops)
        roots = spline.roots(extrapolate=False)
        assert len(roots) == 2
        assert ci.loc[name, "lower"] == pytest.approx(min(roots), abs=1e-4)
        assert ci.loc[name, "upper"] == pytest.approx(max(roots), abs=1e-4)


def test_default_names_and_errors():
    cohort = engine.simulate(200, 4, density=0.3, seed=1)
    res = engine.fit(cohort, penalty=engine.L1(1.0), unpenalized=["x2"])
    assert list(res.confint().index) == ["x2"]
    with pytest.raises(ValueError, match="penalised"):
        res.confint(["x0"])
    with pytest.raises(ValueError, match="not a covariate"):
        res.confint(["age"])
    with pytest.raises(ValueError, match="level"):
        res.confint(["x2"], level=1.2)
