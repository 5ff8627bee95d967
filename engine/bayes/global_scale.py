r"""tau | z, lambda with beta integrated out: a Metropolis-Hastings move of log tau.

Johndrow, Orenstein & Bhattacharya (2020, "Scalable approximate MCMC algorithms for the horseshoe
prior", JMLR 21(73); sec. 2, their exact algorithm's blocked Metropolis-within-Gibbs step for
xi = tau^-2) update the global precision of the horseshoe with the coefficients integrated out,
then draw beta given it, instead of drawing tau | beta: tau and beta are strongly dependent, tau
and the data much less. For the probit's latent z (Albert &
Chib), beta integrated out leaves

    z | tau, lambda ~ N(0, I + X D X'),   D = diag(prior variances) (tau^2 lambda_j^2 if shrunk),

times the indicator sign(z) = 2y - 1, which does not depend on tau. Its log-density comes from the
Cholesky factor L of Q = X'X + D^-1 that the beta draw needs anyway (Woodbury and the matrix
determinant lemma):

    log det(I + X D X') = log det Q + sum_j log D_jj,   z'(I + X D X')^-1 z = z'z - |L^-1 X'z|^2.

The move: t = log tau, proposal t' = t + s e (e ~ N(0, 1), s = PROPOSAL_SD / sqrt(p_s)),
accepted with probability min(1, pi(t') / pi(t)), pi(t) = N(z; 0, I + X D(t) X') times the
half-Cauchy prior of tau in t (xi integrated out: e^t / (1 + e^2t)). Then xi^-1 | tau and beta |
z, tau, lambda are drawn exactly: a valid blocked (tau, xi, beta) | z, lambda, nu step. The
marginal augmentation (expansion.py) moves z given (lambda, tau) with beta integrated out, so it
stays valid after it. It costs a second Cholesky per iteration (the proposal's Q).
"""
import math

from . import philox
from .rng import STEP_GLOBAL

PROPOSAL_SD = 3.0     # s sqrt(p_s): acceptance ~0.45 at the paper's design, N = 10^4, p = 100


def log_density(log_det_q, sum_log_variance, zz, half):
    """log N(z; 0, I + X D X') up to -N/2 log(2 pi), from log det Q, sum_j log D_jj, z'z and
    half = L^-1 X'z."""
    return -0.5 * (log_det_q + sum_log_variance) - 0.5 * (zz - float(half @ half))


def log_target(t, p_s, log_det_q, zz, half):
    """log pi(t), t = log tau, up to a constant (lambda's share of sum_j log D_jj, the same in
    both states of a move, left out): the marginal density of z times the half-Cauchy prior."""
    return (log_density(log_det_q, 2.0 * p_s * t, zz, half)
            + t - math.log1p(math.exp(2.0 * t)))


def proposal(key, iteration, t, p_s):
    """(t', u): the random-walk proposal and the uniform that accepts it, from block 0 of
    element 0 of the move's Philox stream (words 0, 1: the normal; word 2: u)."""
    u0, u1, u2, _ = philox.uniforms4(key, 0, 0, iteration, STEP_GLOBAL)
    return t + PROPOSAL_SD / math.sqrt(p_s) * philox.box_muller(u0, u1), u2


def accept(u, log_ratio):
    """Metropolis-Hastings' test of a symmetric proposal."""
    return log_ratio >= 0.0 or u < math.exp(log_ratio)
