"""Counter-based random streams: one Philox stream per (seed, chain, iteration, step, element).

Terenin, Dong & Draper (2019, sec. 5) recommend Philox (Salmon et al. 2011, "Parallel random
numbers: as easy as 1, 2, 3") because it skips ahead in constant time. Here the skip is the
counter itself: the 128-bit key is (seed, chain) and element i of a step reads the blocks
(b, i, iteration, step) (philox.py), so every element of every Gibbs step of every iteration of
every chain owns a disjoint stream. A chain is reproducible whatever ran before it, chains are
independent, the steps of one iteration may run in any order, and the CPU (Numba) and the GPU
(cuda/philox.cuh, one thread an element) draw the same numbers.
"""
from dataclasses import dataclass

import numpy as np

from . import philox

# the steps of one iteration, in the order the paper (sec. 5) updates them
STEP_Z, STEP_LAMBDA, STEP_TAU, STEP_BETA, STEP_NU, STEP_XI, STEP_EXPAND = range(7)
STEP_GLOBAL = 7        # the Metropolis-Hastings move of tau with beta integrated out (global_scale)


@dataclass(frozen=True)
class Stream:
    """The draws of one step of one iteration of one chain."""

    key: np.ndarray          # (2,) uint64: seed, chain
    iteration: int
    step: int

    def standard_normal(self, n):
        return philox.normals(self.key, self.iteration, self.step, n)

    def exponential(self, rate):
        """Exp(rate_j), one per element of rate."""
        return philox.exponentials(self.key, self.iteration, self.step,
                                   np.ascontiguousarray(rate, dtype=np.float64))

    def gamma(self, shape, rate):
        """One Gamma(shape, rate) draw (shape >= 1)."""
        return philox.gamma(self.key, self.iteration, self.step, float(shape), float(rate))


class ChainStreams:
    """The Philox streams of one chain: ``at(iteration, step)`` is one step's Stream."""

    def __init__(self, seed: int, chain: int):
        if not (isinstance(seed, (int, np.integer)) and 0 <= seed < 2**64):
            raise ValueError(f"seed must be an integer in [0, 2**64), got {seed!r}")
        self.key = np.array([seed, chain], dtype=np.uint64)

    def at(self, iteration: int, step: int) -> Stream:
        return Stream(self.key, iteration, step)


def stream(seed: int, chain: int, iteration: int, step: int) -> Stream:
    """One step's stream (the same numbers as ChainStreams(seed, chain).at(iteration, step))."""
    return ChainStreams(seed, chain).at(iteration, step)
