"""log(1 - u) and cos(2 pi u) for the uniforms u in [0, 1) of the Philox streams, compiled inline.

Box-Muller's log1p and cos from the C library took two thirds of a truncated-normal draw (35 of
~50 ns here), and the draws half of an iteration at p = 100. These are fdlibm's kernels
(Sun Microsystems' freely distributable libm, the source of most C libraries' log and cos)
without the argument handling that uniforms never need: 1 - u is exact for u = k 2^-53, and
2 pi u needs no Payne-Hanek reduction. Both are within 1 ulp of the C library (checked in
tests/engine/bayes/test_bayes_unit_math.py), so the chains stay equal to the GPU's (CUDA's log1p and cos) to
rounding.
"""
import math

import numba

LN2_HI = 6.93147180369123816490e-01      # ln 2 split so that e * LN2_HI is exact
LN2_LO = 1.90821492927058770002e-10
SQRT_HALF = 0.7071067811865476
HALF_PI = 0.5 * math.pi


@numba.njit(cache=True, inline="always")
def log_one_minus(u):
    """log(1 - u) for u in [0, 1): fdlibm's __ieee754_log on the exact 1 - u."""
    m, e = math.frexp(1.0 - u)                      # 1 - u = m 2^e, m in [1/2, 1)
    if m < SQRT_HALF:
        m *= 2.0
        e -= 1
    f = m - 1.0                                     # in [sqrt(1/2) - 1, sqrt(2) - 1)
    s = f / (2.0 + f)
    z = s * s
    w = z * z
    r = (w * (3.999999999940941908e-01 + w * (2.222219843214978396e-01
                                              + w * 1.531383769920937332e-01)))
    r += z * (6.666666666666735130e-01 + w * (2.857142874366239149e-01 + w * (
        1.818357216161805012e-01 + w * 1.479819860511658591e-01)))
    half_f_sq = 0.5 * f * f
    return e * LN2_HI - ((half_f_sq - (s * (half_f_sq + r) + e * LN2_LO)) - f)


@numba.njit(cache=True, inline="always")
def _cos_kernel(x):
    """cos x on [-pi/4, pi/4] (fdlibm's __kernel_cos)."""
    z = x * x
    r = z * (4.16666666666666019037e-02 + z * (-1.38888888888741095749e-03 + z * (
        2.48015872894767294178e-05 + z * (-2.75573143513906633035e-07 + z * (
            2.08757232129817482790e-09 + z * -1.13596475577881948265e-11)))))
    half_z = 0.5 * z
    w = 1.0 - half_z
    return w + (((1.0 - w) - half_z) + z * r)


@numba.njit(cache=True, inline="always")
def _sin_kernel(x):
    """sin x on [-pi/4, pi/4] (fdlibm's __kernel_sin)."""
    z = x * x
    r = 8.33333333332248946124e-03 + z * (-1.98412698298579493134e-04 + z * (
        2.75573137070700676789e-06 + z * (-2.50507602534068634195e-08
                                         + z * 1.58969099521155010221e-10)))
    return x + z * x * (-1.66666666666666324348e-01 + z * r)


@numba.njit(cache=True, inline="always")
def cos_turns(u):
    """cos(2 pi u) for u in [0, 1): the quarter turn q nearest 4u, then the kernel on the rest
    (4u - q exact, at most an eighth of a turn)."""
    x = 4.0 * u
    q = math.floor(x + 0.5)
    a = (x - q) * HALF_PI
    quarter = int(q) & 3
    if quarter == 0:
        return _cos_kernel(a)
    if quarter == 1:
        return -_sin_kernel(a)
    if quarter == 2:
        return -_cos_kernel(a)
    return _sin_kernel(a)
