"""E-values against VanderWeele & Ding (2017)'s published examples and the closed forms the
EValue R package's own tests (tests/testthat/testthat.R: "Rare HR", "Common HR") write out."""
import numpy as np
import pytest

import engine
from engine.sensitivity.evalue import evalue_rr


def test_published_examples_of_vanderweele_and_ding_2017():
    # breastfeeding and leukaemia, RR 0.80 (0.71, 0.91): E-values 1.81 and 1.43
    out = engine.evalues_hr(0.80, 0.71, 0.91, rare=True)
    np.testing.assert_allclose(out.iloc[0], [1.81, 1.43], atol=0.005)
    # RR 3.9 (1.8, 8.7): E-values 7.26 and 3.0
    out = engine.evalues_hr(3.9, 1.8, 8.7, rare=True)
    np.testing.assert_allclose(out.iloc[0], [7.26, 3.0], atol=0.005)


def test_rare_hr_against_evalue_closed_form_with_a_true_value():
    expected = (1 / 0.3 + np.sqrt(1 / 0.3 * (1 / 0.3 - 1 / 0.4))) / (1 / 0.4)
    out = engine.evalues_hr(0.3, 0.2, 0.35, rare=True, true=0.4)
    np.testing.assert_allclose(out["evalue_point"][0], expected, rtol=1e-14)


def test_common_hr_square_root_transformation():
    def rr(h):
        return (1 - 0.5 ** np.sqrt(h)) / (1 - 0.5 ** np.sqrt(1 / h))
    hr, lo, hi, true = 1.3, 1.2, 1.4, 1.1
    out = engine.evalues_hr(hr, lo, hi, rare=False, true=true)
    point = (rr(hr) + np.sqrt(rr(hr) * (rr(hr) - rr(true)))) / rr(true)
    lower = (rr(lo) + np.sqrt(rr(lo) * (rr(lo) - rr(true)))) / rr(true)
    np.testing.assert_allclose(out.iloc[0], [point, lower], rtol=1e-14)
    # EValue's documented example, HR 0.56 (0.46, 0.69), common outcome: below 1, inverted
    out = engine.evalues_hr(0.56, 0.46, 0.69, rare=False)
    r, r_hi = 1 / rr(0.56), 1 / rr(0.69)
    np.testing.assert_allclose(out.iloc[0], [r + np.sqrt(r * (r - 1)),
                                             r_hi + np.sqrt(r_hi * (r_hi - 1))], rtol=1e-14)


def test_interval_holding_the_null_has_evalue_one_and_symmetry():
    out = engine.evalues_hr([1.5, 0.7], [0.9, 0.4], [2.5, 1.1], rare=True)
    np.testing.assert_array_equal(out["evalue_ci"], [1.0, 1.0])
    np.testing.assert_allclose(evalue_rr(0.8), evalue_rr(1 / 0.8), rtol=1e-15)
    assert np.isnan(evalue_rr(np.nan)) and np.isnan(evalue_rr(-1.0))


def test_estimate_outside_its_interval_is_refused():
    with pytest.raises(ValueError, match="outside its confidence interval"):
        engine.evalues_hr(1.2, 1.3, 1.4, rare=True)
