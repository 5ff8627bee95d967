"""unit_math's log(1 - u) and cos(2 pi u) against the C library's (NumPy's log1p and cos) on the
uniforms the Philox streams produce (multiples of 2^-53 in [0, 1)), the ends and the quarter
turns included: log within one unit in the last place; cos within 1e-15 of cos(2 pi u) in
double (what the C library and CUDA compute, whose rounded argument 2 pi u errs by up to 1e-15)
and within 2 units in the last place (plus 1e-18 where it crosses 0) of cos(2 pi u) in extended
precision."""
import numba
import numpy as np

from engine.bayes.unit_math import cos_turns, log_one_minus


@numba.njit
def _both(u):
    logs, cosines = np.empty(u.size), np.empty(u.size)
    for i in range(u.size):
        logs[i], cosines[i] = log_one_minus(u[i]), cos_turns(u[i])
    return logs, cosines


def _uniforms():
    rng = np.random.default_rng(0)
    k = np.r_[rng.integers(0, 2**53, 200_000, dtype=np.int64), 0, 1, 2, 2**53 - 1, 2**52,
              2**51, 3 * 2**51, 2**50, 2**53 - 2**20, rng.integers(0, 2**20, 1000)]
    quarters = np.arange(8) * 2**50                            # u = j / 8
    return np.r_[k, quarters, quarters + 1, quarters - 1].clip(0, 2**53 - 1) * 2.0**-53


def test_log_one_minus_is_log1p_within_one_ulp():
    u = _uniforms()
    logs, _ = _both(u)
    exact = np.log1p(-u)
    assert logs[u == 0].tolist() == [0.0] * int((u == 0).sum())
    assert np.all(np.abs(logs - exact) <= np.spacing(np.abs(exact)))


def test_cos_turns_is_cos_of_two_pi_u():
    u = _uniforms()
    _, cosines = _both(u)
    assert np.max(np.abs(cosines - np.cos(2.0 * np.pi * u))) < 1e-15
    pi = np.longdouble("3.14159265358979323846264338327950288")
    exact = np.cos(2 * pi * u.astype(np.longdouble)).astype(np.float64)
    assert np.finfo(np.longdouble).nmant >= 63, "the reference needs 80-bit long double"
    assert np.all(np.abs(cosines - exact) <= 2 * np.spacing(np.abs(exact)) + 1e-18)
