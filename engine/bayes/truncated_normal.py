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

One compiled loop over the rows (Numba) consumes, in row order, standard normals and uniforms
drawn in bulk from the caller's NumPy Generator; should a buffer run dry, the row in progress
restarts on fresh buffers from the same stream. The draws are therefore fixed by
(seed, chain, iteration) (rng.py).
"""
import numba
import numpy as np

THRESHOLD = 0.47


@numba.njit(cache=True, nogil=True)
def _draw_positive(mu_star, first, normals, uniforms, out):
    """Fill out[first:] until a buffer runs dry; returns the first row not drawn."""
    a = b = 0
    for i in range(first, mu_star.size):
        m = mu_star[i]
        if m >= THRESHOLD:                      # b: normal rejection
            while True:
                if a == normals.size:
                    return i
                z = normals[a] + m
                a += 1
                if z > 0.0:
                    break
        else:                                   # c: Robert's exponential rejection
            theta = 0.5 * (-m + np.sqrt(m * m + 4.0))
            while True:
                if b + 2 > uniforms.size:
                    return i
                z = -np.log1p(-uniforms[b]) / theta
                d = z - m - theta
                b += 2
                if uniforms[b - 1] < np.exp(-0.5 * d * d):
                    break
        out[i] = z
    return mu_star.size


def draw_positive(mu_star, rng):
    """z* ~ N(mu*, 1) truncated to (0, inf), elementwise; shape of ``mu_star``."""
    mu_star = np.ascontiguousarray(mu_star, dtype=np.float64)
    out = np.empty_like(mu_star)
    done = 0
    while done < mu_star.size:
        normal_rows = int(np.count_nonzero(mu_star[done:] >= THRESHOLD))
        exponential_rows = mu_star.size - done - normal_rows
        # about 1.5 proposals per row at worst (acceptance >= ~2/3); a shortfall tops up
        normals = rng.standard_normal(normal_rows + normal_rows // 2 + 16)
        uniforms = rng.random(2 * (exponential_rows + exponential_rows // 2 + 16))
        done = _draw_positive(mu_star, done, normals, uniforms, out)
    return out


def draw_latent(mu, sign, rng):
    """z_i ~ TN(mu_i, 1, y_i) with sign = 2 y - 1 (step a): truncated to R+ where sign = 1,
    to R- where sign = -1."""
    return sign * draw_positive(sign * mu, rng)
