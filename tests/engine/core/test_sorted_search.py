"""engine.core.sorted_search.searched: np.searchsorted's positions, whatever the values' order,
size (searched as they come below SORT_FROM, in sorted order above) and ties."""
import numpy as np
import pytest

from engine.core import sorted_search


@pytest.mark.parametrize("n", [0, 7, sorted_search.SORT_FROM + 5])
@pytest.mark.parametrize("side", ["left", "right"])
def test_positions_equal_numpys(n, side):
    rng = np.random.default_rng(n)
    times = np.unique(rng.integers(0, 50, 30).astype(float))
    values = rng.integers(-2, 53, n).astype(float)       # ties, and values off both ends
    want = np.searchsorted(times, values, side=side)
    np.testing.assert_array_equal(sorted_search.searched(times, values, side), want)
    order = np.argsort(values, kind="stable")
    np.testing.assert_array_equal(sorted_search.searched(times, values, side, order), want)
