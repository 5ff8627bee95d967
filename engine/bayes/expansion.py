r"""Marginal augmentation of the probit latent: one rescaling z -> g z before the beta draw.

Liu & Wu (1999, "Parameter expansion for data augmentation", sec. 4's probit example) and van
Dyk & Meng (2001, "The art of data augmentation") speed up Albert & Chib's sampler, which moves
slowly along the common scale of (z, beta) when coefficients are large, by drawing that scale.
Here it is Liu & Sabatti's (2000, "Generalised Gibbs sampler and multigrid Monte Carlo")
generalised Gibbs move on the multiplicative group g > 0 (Haar measure dg / g):

- with beta integrated out, z | lambda, tau ~ N(0, I + X D X') truncated to the orthant
  sign(z) = 2y - 1, D = diag(prior variances); z -> g z keeps the orthant;
- drawing g with density proportional to pi(g z) g^N / g = g^(N-1) exp(-g^2 q / 2), i.e.
  g^2 ~ Gamma(N / 2, rate = q / 2) with q = z'(I + X D X')^-1 z, leaves pi(z | lambda, tau)
  invariant (their theorem 1);
- beta is then drawn from its full conditional given g z, so the joint law is unchanged.

q costs nothing extra: q = z'z - |L^-1 X'z|^2 (Woodbury) with the Cholesky factor L of
Q = X'X + D^-1 that the beta draw computes anyway, or |L_M^-1 z|^2 with M = I + X D X' on the
p > N route. A flat prior (D^-1 = 0) gives Liu & Wu's g^2 ~ Gamma(N / 2, RSS / 2).
"""
import math


def expansion_scale(n, q, stream):
    """g = sqrt(Gamma(N / 2, rate = q / 2)) from one step's Philox stream (rng.Stream); n >= 2."""
    if not q > 0.0:
        raise FloatingPointError(f"z'(I + X D X')^-1 z = {q!r} is not positive: the precision "
                                 "matrix lost accuracy (in float32, try precision='float64').")
    return math.sqrt(stream.gamma(0.5 * n, 0.5 * q))
