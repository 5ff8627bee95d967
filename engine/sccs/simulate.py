"""Synthetic multi-drug SCCS data at Suchard2013's scale (Suchard2013, sec. 3: millions of cases,
~1,500 drugs, tens of millions of eras).

Design:
- case i has K_i = 1 + Poisson(eras_per_case - 1) eras of whole-day lengths uniform on 1..59;
- each era holds Poisson(drugs_per_era) drug draws (duplicates merged), drug j drawn with
  probability proportional to the integral of (x + 1)^-skew over [j, j + 1) (about
  (j + 1.5)^-skew): a few common drugs and a long tail of rare ones, as in claims data;
- the true log incidence-rate ratios are 0 except for ``n_signals`` drugs spread over the
  prevalence ranks, whose log IRRs are drawn uniformly from (-1, 1) away from 0 (|beta| >= 0.2);
- case i has n_i = 1 + Poisson(extra_events) events, placed in its eras with probabilities
  l_ik exp(x_ik' beta) / sum_k l_ik exp(x_ik' beta): exactly the SCCS model, eq. 1.

Vectorised throughout (no loop over cases or eras); one numpy Generator(seed) fixes the data.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .data import SccsData


def simulate_sccs(n_cases: int, n_drugs: int, eras_per_case: float = 20.0,
                  drugs_per_era: float = 1.0, skew: float = 1.0, n_signals: int = 10,
                  extra_events: float = 0.2, seed: int = 0) -> SccsData:
    """Simulate SCCS eras (see the module docstring); the truth is ``sccs.beta_true``.

    Returns
    -------
    SccsData with columns ``drug0 .. drug{J-1}`` (drug0 the most prevalent; a drug never or
    always taken within each case is left out with SccsData's DataWarning) and the attribute
    ``beta_true`` (ndarray, one value per column kept).
    """
    if n_cases < 1 or n_drugs < 1:
        raise ValueError(f"n_cases and n_drugs must be positive, got {n_cases}, {n_drugs}")
    if not (eras_per_case >= 1 and drugs_per_era > 0 and extra_events >= 0):
        raise ValueError("eras_per_case must be >= 1, drugs_per_era > 0, extra_events >= 0")
    rng = np.random.default_rng(seed)
    sizes = 1 + rng.poisson(eras_per_case - 1.0, n_cases)
    n_eras = int(sizes.sum())
    case_ptr = np.concatenate([[0], np.cumsum(sizes)])
    case = np.repeat(np.arange(n_cases, dtype=np.int64), sizes)
    length = rng.integers(1, 60, n_eras).astype(np.float64)

    draws = rng.poisson(drugs_per_era, n_eras)
    index = np.int32 if n_eras < 2 ** 31 else np.int64
    rows = np.repeat(np.arange(n_eras, dtype=index), draws)
    u = rng.random(rows.size)                 # inverse CDF of the density (x + 1)^-skew on [0, J)
    top = n_drugs + 1.0
    x = top ** u if skew == 1.0 else (1.0 + u * (top ** (1 - skew) - 1.0)) ** (1 / (1 - skew))
    small = np.int16 if n_drugs < 2 ** 15 else np.int64      # int16: numpy's radix sort
    cols = np.minimum(np.floor(x - 1.0), n_drugs - 1).astype(small)
    del u, x
    order = np.argsort(cols, kind="stable")                  # rows stay sorted in a column
    cols, rows = cols[order], rows[order]
    del order
    first = np.ones(rows.size, bool)                          # a drug drawn twice in an era
    first[1:] = (cols[1:] != cols[:-1]) | (rows[1:] != rows[:-1])
    cols, rows = cols[first], rows[first]
    indptr = np.searchsorted(cols, np.arange(n_drugs + 1))
    X = sp.csc_matrix((np.ones(rows.size), rows, indptr), shape=(n_eras, n_drugs))

    beta = np.zeros(n_drugs)
    signals = np.unique(np.geomspace(1, n_drugs, min(n_signals, n_drugs)).astype(int) - 1)
    beta[signals] = rng.choice([-1.0, 1.0], signals.size) * rng.uniform(0.2, 1.0, signals.size)

    # events: inverse-CDF draws inside each case's cumulative l exp(eta)
    eta = X @ beta
    mass = np.cumsum(length * np.exp(eta - eta.max()))
    before = np.concatenate([[0.0], mass])[case_ptr[:-1]]
    total = mass[case_ptr[1:] - 1] - before
    n_events = 1 + rng.poisson(extra_events, n_cases)
    owner = np.repeat(np.arange(n_cases), n_events)
    u = before[owner] + rng.random(owner.size) * total[owner]
    era = np.searchsorted(mass, u, side="right")
    era = np.clip(era, case_ptr[owner], case_ptr[owner + 1] - 1)
    events = np.bincount(era, minlength=n_eras).astype(np.float64)

    names = [f"drug{j}" for j in range(n_drugs)]
    sccs = SccsData.from_arrays(case=case, length=length, events=events, X=X, names=names)
    sccs.beta_true = beta[[names.index(name) for name in sccs.names]] \
        if len(sccs.names) < n_drugs else beta
    return sccs
