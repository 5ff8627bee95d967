"""The sorted layout's row order (radix sort) is np.lexsort((-time, strata)) exactly."""
import numpy as np
import pytest

from engine.regression.row_order import stratum_time_order


@pytest.mark.parametrize("n", [1, 2, 17, 5000])
@pytest.mark.parametrize("kind", ["continuous", "tied", "signed"])
@pytest.mark.parametrize("strata", [None, 1, 7])
def test_order_equals_lexsort(n, kind, strata):
    rng = np.random.default_rng(n)
    t = {"continuous": rng.exponential(size=n), "tied": np.round(rng.exponential(size=n) * 3),
         "signed": rng.standard_normal(n) * 1e3}[kind]
    if n > 3:
        t[:3] = [0.0, -0.0, 0.0]          # -0.0 ties with 0.0, as in lexsort
    codes = None if strata is None else rng.integers(0, strata, n)
    reference = np.lexsort((-t, np.zeros(n, np.int64) if codes is None else codes))
    np.testing.assert_array_equal(stratum_time_order(t, codes), reference)


def test_codes_outside_the_row_range_fall_back_to_lexsort():
    t = np.array([3.0, 1.0, 2.0, 2.0])
    codes = np.array([10, -4, 10, 10])
    np.testing.assert_array_equal(stratum_time_order(t, codes), np.lexsort((-t, codes)))
