"""engine.autocorrelation: the autocorrelation of Markov chain draws, by lag.

What a trace's autocorrelation plot shows: per chain, r_k = sum_t (x_t - m)(x_{t+k} - m) /
sum_t (x_t - m)^2 (ArviZ's FFT estimate, the one its ESS builds on), averaged over chains.
"""
import warnings

import numpy as np


def autocorrelation(draws, max_lag=50):
    """Autocorrelation at lags 0..max_lag of draws shaped (chain, draw) or (chain, draw, k).

    Returns an ndarray (max_lag + 1,) or (max_lag + 1, k): the chains' mean; lags beyond the
    chain length are left out.
    """
    with warnings.catch_warnings():   # ArviZ 0.x warns once a day about its 1.0 refactor
        warnings.simplefilter("ignore", FutureWarning)
        import arviz
    draws = np.asarray(draws, dtype=np.float64)
    if draws.ndim not in (2, 3) or draws.shape[1] < 2:
        raise ValueError(f"draws must be (chain, draw[, k]) with at least 2 draws, got "
                         f"shape {draws.shape}")
    if not (isinstance(max_lag, (int, np.integer)) and max_lag >= 0):
        raise ValueError(f"max_lag must be an integer >= 0, got {max_lag!r}")
    r = arviz.autocorr(draws, axis=1)
    return r[:, : max_lag + 1].mean(axis=0)
