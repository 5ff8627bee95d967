"""The horseshoe's scale conditionals of one iteration in one compiled call.

lambda^-2, tau^-2 (step i) and nu^-1, xi^-1 (step ii) of horseshoe_probit's docstring, each from
its own Philox stream as rng.Stream draws them (element j of steps lambda and nu, element 0 of
steps tau and xi). nu^-1 | lambda and xi^-1 | tau depend on neither z nor beta, so drawing them
here, before z and beta, is the same Markov kernel as drawing them after beta (the paper's
order) and with the same numbers. One call instead of four NumPy/Numba round trips: at
p = 100 the Python around the steps cost as much as the Cholesky.
"""
import numba
import numpy as np

from . import philox
from .rng import STEP_LAMBDA, STEP_NU, STEP_TAU, STEP_XI


@numba.njit(cache=True, nogil=True)
def draw_scales(key, iteration, beta_sq, nu_inv, tau_sq_inv, xi_inv):
    """(lambda^-2, nu^-1, tau^-2, xi^-1) given beta_j^2 of the shrunk coefficients and the
    previous nu^-1, tau^-2, xi^-1:

    lambda_j^-2 ~ Exp(nu_j^-1 + tau^-2 beta_j^2 / 2);
    tau^-2 ~ Gamma((p_s + 1) / 2, xi^-1 + sum_j lambda_j^-2 beta_j^2 / 2);
    nu_j^-1 ~ Exp(1 + lambda_j^-2);  xi^-1 ~ Exp(1 + tau^-2).
    """
    lambda_sq_inv = philox.exponentials(key, iteration, STEP_LAMBDA,
                                        nu_inv + 0.5 * tau_sq_inv * beta_sq)
    tau_sq_inv = philox.gamma(key, iteration, STEP_TAU, 0.5 * (beta_sq.size + 1),
                              xi_inv + 0.5 * np.dot(lambda_sq_inv, beta_sq))
    nu_inv = philox.exponentials(key, iteration, STEP_NU, 1.0 + lambda_sq_inv)
    xi_inv = philox.exponentials(key, iteration, STEP_XI, np.array([1.0 + tau_sq_inv]))[0]
    return lambda_sq_inv, nu_inv, tau_sq_inv, xi_inv
