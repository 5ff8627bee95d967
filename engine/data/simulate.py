"""Synthetic sparse survival cohorts, as in the papers' (Yang2022, Yang2024) synthetic experiments.

Design (Yang2024, sec. 3.1; Yang2022, sec. 3.1 / Fig. 4):

- X is an N x P binary matrix; every entry is 1 independently with probability `density`
  (the seeds use 5%, "95% sparsity"), built directly as CSC, column by column.
- beta_j ~ N(0, 1) x Bernoulli(`nonzero`): on average 80% of the true coefficients are 0
  (the papers' (Yang2022, Yang2024) "N(0,1) x Bernoulli(0.80)", where 0.80 is the chance of a zero).
- T_i ~ Exponential(rate = h_k exp(x_i' beta)); h_k = 1 without strata, and with
  `baseline_sd` > 0 each stratum k gets its own baseline rate h_k = exp(baseline_sd * Z_k).
- Strata (Yang2024 sec. 3.1 stratifies the same design): K strata of equal size (up to one row),
  assigned to rows at random; K = N/2 gives strata of two rows.
- Independent censoring C, exponential or uniform on (0, u), its rate (or u) solved so that the
  expected censored fraction P(C < T) is `censoring`. The papers' Cox simulations have no
  censoring (`censoring=0`); 0.5 is the default here to exercise censored risk sets.
- time = min(T, C), event = T <= C.

Everything is drawn from one `numpy.random.Generator(seed)`, so a seed fixes the cohort.
"""
import numpy as np
import scipy.sparse as sp
from scipy.optimize import brentq

from engine.data.cohort import Cohort


def simulate(n, p, density=0.05, n_strata=1, censoring=0.5, seed=0, nonzero=0.2,
             censoring_dist="exponential", baseline_sd=0.0):
    """Simulate a Cohort (see the module docstring); the true beta is `cohort.beta_true`."""
    time, event, X, beta, strata = simulate_arrays(
        n, p, density=density, n_strata=n_strata, censoring=censoring, seed=seed,
        nonzero=nonzero, censoring_dist=censoring_dist, baseline_sd=baseline_sd)
    cohort = Cohort.from_arrays(time=time, event=event, X=X,
                                names=[f"x{j}" for j in range(p)], strata=strata)
    cohort.beta_true = beta
    return cohort


def simulate_arrays(n, p, density=0.05, n_strata=1, censoring=0.5, seed=0, nonzero=0.2,
                    censoring_dist="exponential", baseline_sd=0.0):
    """Return (time, event, X, beta, strata): float64 times, int8 events, CSC X (float64),
    the true beta and int64 stratum labels (None when n_strata == 1)."""
    if n < 1 or p < 1:
        raise ValueError(f"n and p must be positive, got n={n}, p={p}")
    if not 0 < density <= 1:
        raise ValueError(f"density must be in (0, 1], got {density}")
    if not 0 <= censoring < 1:
        raise ValueError(f"censoring must be in [0, 1), got {censoring}")
    if not 1 <= n_strata <= n:
        raise ValueError(f"n_strata must be in [1, n], got {n_strata}")
    if censoring_dist not in ("exponential", "uniform"):
        raise ValueError(f"censoring_dist must be 'exponential' or 'uniform', "
                         f"got {censoring_dist!r}")
    rng = np.random.default_rng(seed)
    X = sparse_binary(n, p, density, rng)
    beta = rng.standard_normal(p) * (rng.random(p) < nonzero)
    rate = np.exp(X @ beta)
    strata = None
    if n_strata > 1:
        strata = rng.permutation(np.arange(n, dtype=np.int64) % n_strata)
        rate *= np.exp(baseline_sd * rng.standard_normal(n_strata))[strata]
    t_event = rng.standard_exponential(n) / rate
    t_censor = censoring_times(rate, censoring, censoring_dist, rng)
    event = (t_event <= t_censor).astype(np.int8)
    return np.minimum(t_event, t_censor), event, X, beta, strata


def sparse_binary(n, p, density, rng):
    """CSC n x p matrix of ones, each entry present with probability `density`.

    Per column, the gaps between successive ones of a Bernoulli(density) sequence are
    Geometric(density): a cumulative sum of geometric draws gives sorted row indices directly.
    """
    draws = int(n * density + 8 * np.sqrt(n * density) + 16)
    columns = []
    for _ in range(p):
        rows = np.cumsum(rng.geometric(density, size=draws)) - 1
        while rows[-1] < n:
            more = rows[-1] + np.cumsum(rng.geometric(density, size=draws))
            rows = np.concatenate([rows, more])
        columns.append(rows[:np.searchsorted(rows, n)].astype(np.int32))
    indptr = np.zeros(p + 1, dtype=np.int64)
    np.cumsum([len(c) for c in columns], out=indptr[1:])
    indices = np.concatenate(columns)
    data = np.ones(len(indices))
    return sp.csc_matrix((data, indices, indptr), shape=(n, p))


def censoring_times(rate, censoring, dist, rng):
    """Independent censoring times whose expected censored fraction P(C < T) is `censoring`."""
    n = len(rate)
    if censoring == 0:
        return np.full(n, np.inf)
    scale = np.median(rate)
    if dist == "exponential":
        # C ~ Exp(c): P(C < T | rate) = c / (c + rate)
        def censored(log_c):
            c = np.exp(log_c) * scale
            return np.mean(c / (c + rate)) - censoring
        c = np.exp(brentq(censored, -40, 40, xtol=1e-10)) * scale
        return rng.standard_exponential(n) / c
    # C ~ U(0, u): P(C < T | rate) = (1 - exp(-rate u)) / (rate u)
    def censored(log_u):
        ru = rate * (np.exp(log_u) / scale)
        return np.mean(-np.expm1(-ru) / ru) - censoring
    u = np.exp(brentq(censored, -40, 40, xtol=1e-10)) / scale
    return rng.uniform(0, u, size=n)
