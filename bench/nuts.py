"""NumPyro NUTS on the horseshoe probit model: the independent reference for engine.sample.

The same model as engine/bayes/horseshoe_probit.py, written the way NUTS wants it
(non-centred): intercept ~ N(0, intercept_sd^2); eta_j ~ N(0, 1), beta_j = tau lambda_j eta_j;
P(y_i = 1) = Phi(intercept + x_i beta), the likelihood summed as log Phi(+-eta_i). Each
half-Cauchy scale is the product of a half-normal and the square root of an IG(1/2, 1/2)
(|N(0,1)| / |N(0,1)| is C+(0, 1)), as Piironen & Vehtari (2017) write the horseshoe for
Stan. NUTS struggles with the horseshoe's funnels either way: on the breast-cancer data the
plain half-Cauchy form diverged in 482 of 20,000 transitions, this form in 709 of 10,000
(tests/data/bayes_nuts_breast_cancer.json records the count). Float64 throughout; one chain
after another on the CPU.
"""
import time

import numpy as np


def run_nuts(X, y, *, intercept_sd=10.0, intercept=True, warmup=1000, samples=1000,
             chains=4, seed=0, target_accept=0.95, max_tree_depth=10):
    """NUTS draws of (intercept, beta) on the design X as given.

    Returns
    -------
    dict: draws (chain, draw, coefficient [intercept first]), seconds (warm-up + sampling),
    divergences, steps (leapfrog steps per chain).
    """
    import jax

    jax.config.update("jax_enable_x64", True)
    jax.config.update("jax_platform_name", "cpu")
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist
    from jax.scipy.special import log_ndtr
    from numpyro.infer import MCMC, NUTS

    Xj = jnp.asarray(X)
    sign = jnp.asarray(2.0 * np.asarray(y, dtype=np.float64) - 1.0)
    p = X.shape[1]

    def model():
        a = numpyro.sample("a", dist.Normal(0.0, intercept_sd)) if intercept else 0.0
        tau = (numpyro.sample("tau_a", dist.HalfNormal(1.0))
               * jnp.sqrt(numpyro.sample("tau_b", dist.InverseGamma(0.5, 0.5))))
        lam = (numpyro.sample("lambda_a", dist.HalfNormal(jnp.ones(p)))
               * jnp.sqrt(numpyro.sample("lambda_b", dist.InverseGamma(0.5 * jnp.ones(p), 0.5))))
        eta = numpyro.sample("eta", dist.Normal(jnp.zeros(p), 1.0))
        beta = numpyro.deterministic("beta", tau * lam * eta)
        numpyro.factor("y", jnp.sum(log_ndtr(sign * (a + Xj @ beta))))

    kernel = NUTS(model, target_accept_prob=target_accept, max_tree_depth=max_tree_depth)
    mcmc = MCMC(kernel, num_warmup=warmup, num_samples=samples, num_chains=chains,
                chain_method="sequential", progress_bar=False)
    start = time.perf_counter()
    mcmc.run(jax.random.PRNGKey(seed), extra_fields=("diverging", "num_steps"))
    # JAX dispatches asynchronously: run() can return before the draws exist (at p = 1,000 it
    # returned after 12 s of a 30-minute run), so the clock stops once they are computed
    got = jax.block_until_ready(mcmc.get_samples(group_by_chain=True))
    seconds = time.perf_counter() - start
    beta = np.asarray(got["beta"])
    if intercept:
        beta = np.concatenate([np.asarray(got["a"])[..., None], beta], axis=2)
    extra = mcmc.get_extra_fields(group_by_chain=True)
    return {"draws": beta, "seconds": seconds,
            "divergences": int(np.asarray(extra["diverging"]).sum()),
            "steps": np.asarray(extra["num_steps"]).sum(axis=1).tolist()}
