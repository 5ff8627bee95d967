"""Unit-variance normals truncated to one side of 0: the latent z of the probit model.

Terenin, Dong & Draper (2019, sec. 5, "z" step ii) draw z_i ~ TN(mu_i, 1, y_i), truncated to
R+ when y_i = 1 and to R- when y_i = 0, by one branch-free trick and two rejection samplers:

a. y*_i = 2 y_i - 1 and mu*_i = y*_i mu_i, so every draw is truncated to R+ and z_i = y*_i z*_i.
b. mu* >= 0.47 (the paper's threshold, which keeps the acceptance probability above ~2/3):
   normal rejection, z* = s + mu* with s ~ N(0, 1), accepted when z* > 0.
c. mu* < 0.47: Robert's (1995) exponential rejection. With the standardised truncation point
   a = -mu*, the optimal rate is theta = (a + sqrt(a^2 + 4)) / 2; the proposal z* ~ Exp(theta)
   (on the original scale, because the exponential starts at the truncation point 0), from
   a uniform u1 as -log(1 - u1) / theta, is accepted when a second uniform
   u2 < rho = exp(-(z* - mu* - theta)^2 / 2).

Row i reads its own Philox stream (philox.py): block b gives two proposals, from its words
(0, 1) and (2, 3) (s by Box-Muller on branch b). One compiled loop over the rows here; one
thread a row in cuda/horseshoe_probit.cu (``latent_draw``), with the same numbers.
"""
import math

import numba
import numpy as np

from .philox import box_muller, uniforms4
from .unit_math import log_one_minus

THRESHOLD = 0.47


@numba.njit(cache=True, inline="always")
def _proposal(m, theta, ua, ub):
    """(z*, accepted) of one proposal from the uniforms (ua, ub)."""
    if m >= THRESHOLD:                                  # b: normal rejection
        z = box_muller(ua, ub) + m
        return z, z > 0.0
    z = -log_one_minus(ua) / theta                      # c: Robert's exponential rejection
    d = z - m - theta
    return z, ub < math.exp(-0.5 * d * d)


@numba.njit(cache=True, nogil=True)
def positive_draw(m, key, element, iteration, step):
    """One z* ~ N(m, 1) truncated to (0, inf) from element ``element``'s Philox stream."""
    theta = 0.5 * (-m + math.sqrt(m * m + 4.0)) if m < THRESHOLD else 0.0
    block = 0
    while True:
        u0, u1, u2, u3 = uniforms4(key, block, element, iteration, step)
        block += 1
        z, ok = _proposal(m, theta, u0, u1)
        if ok:
            return z
        z, ok = _proposal(m, theta, u2, u3)
        if ok:
            return z


@numba.njit(cache=True, nogil=True)
def _draw_positive(mu_star, key, iteration, step, out):
    for i in range(mu_star.size):
        out[i] = positive_draw(mu_star[i], key, i, iteration, step)


def draw_positive(mu_star, stream):
    """z* ~ N(mu*, 1) truncated to (0, inf), elementwise, from one step's Philox stream
    (rng.Stream); shape of ``mu_star``."""
    mu_star = np.ascontiguousarray(mu_star, dtype=np.float64)
    out = np.empty_like(mu_star)
    _draw_positive(mu_star, stream.key, stream.iteration, stream.step, out)
    return out


def draw_latent(mu, sign, stream):
    """z_i ~ TN(mu_i, 1, y_i) with sign = 2 y - 1 (step a): truncated to R+ where sign = 1,
    to R- where sign = -1."""
    return sign * draw_positive(sign * mu, stream)
