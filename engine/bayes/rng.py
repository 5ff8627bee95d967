"""Counter-based random streams: one Philox stream per (seed, chain, iteration, step).

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
_EMPTY = np.zeros(4, dtype=np.uint64)


class ChainStreams:
    """The Philox streams of one chain. ``at(iteration, step)`` moves one Generator to the
    start of that stream and returns it (valid until the next ``at``): re-keying a generator
    costs a few microseconds, building one (with its seed sequence) several times more."""

    def __init__(self, seed: int, chain: int):
        if not (isinstance(seed, (int, np.integer)) and 0 <= seed < 2**64):
            raise ValueError(f"seed must be an integer in [0, 2**64), got {seed!r}")
        self.key = np.array([seed, chain], dtype=np.uint64)
        self.bit_generator = np.random.Philox(key=self.key)
        self.generator = np.random.Generator(self.bit_generator)

    def at(self, iteration: int, step: int) -> np.random.Generator:
        counter = np.array([0, 0, iteration, step], dtype=np.uint64)
        self.bit_generator.state = {"bit_generator": "Philox",
                                    "state": {"counter": counter, "key": self.key},
                                    "buffer": _EMPTY, "buffer_pos": 4, "has_uint32": 0,
                                    "uinteger": 0}
        return self.generator


def stream(seed: int, chain: int, iteration: int, step: int) -> np.random.Generator:
    """A new generator at the start of one step's stream (same numbers as ChainStreams.at)."""
    return ChainStreams(seed, chain).at(iteration, step)
