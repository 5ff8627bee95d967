"""Spline bases against R's published output and the bases' definitions written here."""
import numpy as np
import pandas as pd
import pytest

from engine.data import splines
from engine.core.errors import CohortError
from formula_data import harrell_rcs

# R's `women` data set (datasets package): height (in), weight (lb)
HEIGHT = np.arange(58.0, 73.0)
WEIGHT = np.array([115, 117, 120, 123, 126, 129, 132, 135, 139, 142, 146, 150, 154, 159, 164.0])


def test_ns_reproduces_r_lm_on_women():
    # R: summary(lm(weight ~ ns(height, df = 5), data = women)), printed in the splintr README
    # (github.com/simisc/splintr): estimates and standard errors.
    r_coef = [114.74466, 15.94736, 25.16949, 33.25822, 50.78938, 45.03633]
    r_se = [0.2337541, 0.3698567, 0.4322604, 0.3540711, 0.6061996, 0.2784267]
    basis = splines.ns_basis(HEIGHT, splines.ns_knots(HEIGHT, 5), (58.0, 72.0))
    X = np.column_stack([np.ones(15), basis])
    coef = np.linalg.solve(X.T @ X, X.T @ WEIGHT)
    resid = WEIGHT - X @ coef
    se = np.sqrt(np.diag(np.linalg.inv(X.T @ X)) * (resid @ resid) / (15 - 6))
    np.testing.assert_allclose(coef, r_coef, rtol=1e-6)
    np.testing.assert_allclose(se, r_se, rtol=1e-6)


def test_ns_knots_are_r_type7_quantiles():
    # R: attr(terms(fm1), "predvars") -> knots at the 20, 40, 60, 80 % quantiles of 58:72
    np.testing.assert_allclose(splines.ns_knots(HEIGHT, 5), [60.8, 63.6, 66.4, 69.2])


def test_ns_is_natural_and_linear_beyond_the_boundary():
    """Second derivative zero at both boundary knots, straight lines outside (finite
    differences of the basis), columns that span the cubic spline with those knots."""
    knots, bk = np.array([2.0, 5.0, 7.0]), (0.0, 10.0)
    h = 1e-3
    for x0 in (bk[0] + 2 * h, bk[1] - 2 * h):
        B = splines.ns_basis(np.array([x0 - h, x0, x0 + h]), knots, bk)
        second = (B[0] - 2 * B[1] + B[2]) / h ** 2
        np.testing.assert_allclose(second, 0.0, atol=2e-2)
    outside = np.array([-3.0, -2.0, -1.0, 11.0, 12.0, 13.0])
    B = splines.ns_basis(outside, knots, bk)
    np.testing.assert_allclose(B[1] - B[0], B[2] - B[1], atol=1e-12)
    np.testing.assert_allclose(B[4] - B[3], B[5] - B[4], atol=1e-12)
    B = splines.ns_basis(np.linspace(0, 10, 200), knots, bk)
    assert B.shape == (200, 4) and np.linalg.matrix_rank(B) == 4


def test_rcs_basis_is_harrells_truncated_power_form():
    x = np.linspace(-5, 30, 301)
    t = np.array([0.0, 4.0, 9.0, 15.0, 25.0])
    np.testing.assert_allclose(splines.rcs_basis(x, t), harrell_rcs(x, t), rtol=1e-12,
                               atol=1e-12)


@pytest.mark.parametrize("nk, probs", [(3, [0.1, 0.5, 0.9]), (4, [0.05, 0.35, 0.65, 0.95]),
                                       (5, [0.05, 0.275, 0.5, 0.725, 0.95]),
                                       (7, [0.025, 0.18333333, 0.34166667, 0.5, 0.65833333,
                                            0.81666667, 0.975])])
def test_harrell_knots_at_his_quantiles(nk, probs):
    x = np.random.default_rng(nk).gamma(2.0, 3.0, 500)
    np.testing.assert_allclose(splines.harrell_knots(x, nk), np.quantile(x, probs),
                               rtol=1e-7)


def test_harrell_knots_below_100_values_put_outer_knots_at_fifth_values():
    x = np.random.default_rng(1).normal(size=60)
    knots = splines.harrell_knots(x, 4)
    s = np.sort(x)
    assert knots[0] == s[4] and knots[-1] == s[-5]
    np.testing.assert_allclose(knots[1:3], np.quantile(x, [0.35, 0.65]))


def test_rcs_is_linear_beyond_the_outer_knots():
    t = np.array([1.0, 2.0, 4.0, 8.0])
    x = np.array([9.0, 10.0, 11.0, 12.0])
    B = splines.rcs_basis(x, t)
    np.testing.assert_allclose(np.diff(B, 2, axis=0), 0.0, atol=1e-9)


def test_too_few_distinct_values_for_rcs_is_refused():
    with pytest.raises(CohortError, match="too few for 5 knots"):
        splines.harrell_knots(np.repeat([1.0, 2.0, 3.0, 4.0], 30), 5)


def test_formulaic_cr_spans_the_same_space_as_ns_with_the_same_knots():
    """formulaic's ``cr`` (mgcv's cubic regression spline) is another basis of the same
    natural cubic splines: with the knots of ns(x, df=4) plus the boundary knots it gives the
    same least-squares fit (with an intercept)."""
    from formulaic import model_matrix

    rng = np.random.default_rng(3)
    x = rng.uniform(0, 10, 300)
    y = np.sin(x) + rng.normal(0, 0.1, 300)
    inner = splines.ns_knots(x, 4)
    ns_X = np.column_stack([np.ones(300), splines.ns_basis(x, inner, (x.min(), x.max()))])
    df = pd.DataFrame({"x": x})
    knots = [float(k) for k in inner]
    cr_X = np.asarray(model_matrix(f"cr(x, knots={knots}, lower_bound={x.min()!r}, "
                                   f"upper_bound={x.max()!r})", df))
    fit_ns = ns_X @ np.linalg.lstsq(ns_X, y, rcond=None)[0]
    fit_cr = cr_X @ np.linalg.lstsq(cr_X, y, rcond=None)[0]
    np.testing.assert_allclose(fit_ns, fit_cr, rtol=1e-8, atol=1e-8)
