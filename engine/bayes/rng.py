"""Counter-based random streams: one Philox generator per (seed, chain, iteration, step).

Terenin, Dong & Draper (2019, sec. 5) recommend Philox (Salmon et al. 2011, "Parallel random
numbers: as easy as 1, 2, 3") because it skips ahead in constant time. Here the skip is the
counter itself: the 128-bit key is (seed, chain) and the 256-bit counter starts at
(0, 0, iteration, step), so every Gibbs step of every iteration of every chain owns a disjoint
stream of 2^128 blocks. A chain is reproducible whatever ran before it, chains are independent,
and the steps of one iteration may run in any order (or in parallel) with the same numbers.
"""
import numpy as np

# the steps of one iteration, in the order the paper (sec. 5) updates them
STEP_Z, STEP_LAMBDA, STEP_TAU, STEP_BETA, STEP_NU, STEP_XI = range(6)


def stream(seed: int, chain: int, iteration: int, step: int) -> np.random.Generator:
    """The generator of one step of one iteration of one chain."""
    if not 0 <= seed < 2**64:
        raise ValueError(f"seed must be an integer in [0, 2**64), got {seed!r}")
    key = int(seed) + (int(chain) << 64)
    return np.random.Generator(np.random.Philox(key=key, counter=[0, 0, iteration, step]))
