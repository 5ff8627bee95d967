"""One Markov chain of the horseshoe probit sampler, and a picklable task that runs one.

``run_chain`` iterates ``HorseshoeProbit.step`` for burn_in + draws * thin iterations, keeps
every thin-th draw after burn-in, reports progress and polls ``cancel`` every iteration.
``ChainTask`` wraps it for engine.parallel (processes or Dask): it rebuilds the sampler (X'X)
once per worker and runs the chain whose index it is given, so a chain gives the same draws
wherever it runs.
"""
import time

import numpy as np

from ..core.errors import Cancelled
from ..core.parallel import WorkerCache
from .horseshoe_probit import HorseshoeProbit
from .rng import ChainStreams


def run_chain(gibbs, chain, seed, draws, burn_in, thin, column_variance,
              progress=None, cancel=None, done_before=0, total=None):
    """Run one chain.

    Returns
    -------
    dict with beta (draws, p), tau (draws,), shrinkage (p_s,) posterior mean of kappa,
    seconds (wall time of the iterations).
    """
    p = gibbs.X.shape[1]
    beta = np.empty((draws, p))
    tau = np.empty(draws)
    kappa = np.zeros(int(gibbs.shrunk.sum()))
    state = gibbs.initial_state()
    chain_streams = ChainStreams(seed, chain)
    iterations = burn_in + draws * thin
    total = iterations if total is None else total
    every = max(1, iterations // 200)
    start = time.perf_counter()
    for it in range(iterations):
        if cancel is not None and cancel.is_set():
            raise Cancelled(f"sampling cancelled at iteration {it} of {iterations} "
                            f"(chain {chain})")
        state, _ = gibbs.step(state, chain_streams, it)
        kept = it - burn_in
        if kept >= 0 and kept % thin == 0:
            k = kept // thin
            beta[k] = state.beta
            tau[k] = state.tau_sq_inv ** -0.5
            kappa += gibbs.shrinkage(state, column_variance)
        if progress is not None and ((it + 1) % every == 0 or it + 1 == iterations):
            progress(done_before + it + 1, total)
    return {"beta": beta, "tau": tau, "shrinkage": kappa / draws,
            "seconds": time.perf_counter() - start}


class ChainTask:
    """``task(chain) -> run_chain(...)`` for engine.parallel: picklable, the sampler cached."""

    def __init__(self, X, y, shrunk, fixed_sd, prior, precision, seed, draws, burn_in, thin,
                 column_variance, blas_threads=None):
        self.X, self.y, self.shrunk = X, y, shrunk
        self.fixed_sd, self.prior, self.precision, self.seed = fixed_sd, prior, precision, seed
        self.draws, self.burn_in, self.thin = draws, burn_in, thin
        self.column_variance = column_variance
        self.blas_threads = blas_threads
        self.cache = WorkerCache()

    def __call__(self, chain):
        gibbs = self.cache.get("gibbs", lambda: HorseshoeProbit(
            self.X, self.y, self.shrunk, self.fixed_sd, self.prior, precision=self.precision))
        if self.blas_threads is None:
            return self._run(gibbs, chain)
        from threadpoolctl import threadpool_limits

        with threadpool_limits(self.blas_threads):
            return self._run(gibbs, chain)

    def _run(self, gibbs, chain):
        return run_chain(gibbs, chain, self.seed, self.draws, self.burn_in, self.thin,
                         self.column_variance)
