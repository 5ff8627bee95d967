"""Unit-variance normals truncated to one side of 0: the latent z of the probit model.

Terenin, Dong & Draper (2019, sec. 5, "z" step ii) draw z_i ~ TN(mu_i, 1, y_i), truncated to
R+ when y_i = 1 and to R- when y_i = 0, by one branch-free trick and two rejection samplers:

a. y*_i = 2 y_i - 1 and mu*_i = y*_i mu_i, so every draw is truncated to R+ and z_i = y*_i z*_i.
b. mu* >= 0.47 (the paper's threshold, which keeps the acceptance probability above ~2/3):
   normal rejection, z* = s + mu* with s ~ N(0, 1), accepted when z* > 0.
c. mu* < 0.47: Robert's (1995) exponential rejection. With the standardised truncation point
   a = -mu*, the optimal rate is theta = (a + sqrt(a^2 + 4)) / 2; the proposal z* ~ Exp(theta)
   (on the original scale, because the exponential starts at the truncation point 0) is accepted
   with probability rho = exp(-(z* - mu* - theta)^2 / 2).

Each round draws two uniforms per pending row (u1 makes the proposal, through the inverse normal
CDF in branch b and -log(1 - u1) / theta in branch c; u2 decides acceptance in branch c) and
retries only the rejected rows, so there is no per-row Python and a round costs a few vector
operations. The uniforms come from the caller's generator, so a draw is fixed by the Philox
stream (see rng.py).
"""
import numpy as np
from scipy.special import ndtri

THRESHOLD = 0.47


def propose(mu_star, u1, u2):
    """One rejection round for z* ~ N(mu*, 1) truncated to (0, inf).

    Parameters
    ----------
    mu_star : ndarray of float64, shape (m,)
    u1, u2 : ndarray of float64 in [0, 1), shape (m,)

    Returns
    -------
    proposal : ndarray, shape (m,); accepted : ndarray of bool, shape (m,)
    """
    normal = mu_star >= THRESHOLD
    # branch b: Gaussian proposal by inversion (as the authors' CUDA kernel), accepted above 0
    gaussian = ndtri(u1) + mu_star
    # branch c: exponential proposal on (0, inf), Robert (1995) acceptance
    theta = 0.5 * (-mu_star + np.sqrt(mu_star * mu_star + 4.0))
    exponential = -np.log1p(-u1) / theta
    rho = np.exp(-0.5 * (exponential - mu_star - theta) ** 2)
    proposal = np.where(normal, gaussian, exponential)
    accepted = np.where(normal, gaussian > 0.0, u2 < rho)
    return proposal, accepted


def draw_positive(mu_star, rng):
    """z* ~ N(mu*, 1) truncated to (0, inf), elementwise; shape of ``mu_star``."""
    out = np.empty_like(mu_star)
    pending = np.arange(mu_star.size)
    while pending.size:
        u = rng.random((2, pending.size))
        proposal, accepted = propose(mu_star[pending], u[0], u[1])
        out[pending[accepted]] = proposal[accepted]
        pending = pending[~accepted]
    return out


def draw_latent(mu, sign, rng):
    """z_i ~ TN(mu_i, 1, y_i) with sign = 2 y - 1 (step a): truncated to R+ where sign = 1,
    to R- where sign = -1."""
    return sign * draw_positive(sign * mu, rng)
