"""Philox4x64-10 (Salmon et al. 2011) and the per-element draws of the Gibbs sampler, compiled
by Numba: the CPU twin of cuda/philox.cuh, so that the CPU and the GPU sampler draw the same
numbers.

One block of four 64-bit words is ``philox(k0, k1, c0, c1, c2, c3)``, NumPy's
``np.random.Philox`` bijection (tests check it against NumPy word for word). Element ``i`` of
step ``s`` of iteration ``t`` of a chain keyed ``(seed, chain)`` reads the blocks with counter
``(b, i, t, s)``, b = 0, 1, ...: every element owns its stream, so the elements can be drawn in
any order or all at once (one GPU thread each), and a rejection sampler takes as many blocks as
it needs. Words become doubles in [0, 1) as NumPy does (the top 53 bits times 2^-53); normals
come from Box-Muller (one per two words; log and cos by unit_math), exponentials from
-log1p(-u), gammas (shape >= 1) from Marsaglia & Tsang (2000, "A simple method for generating
gamma variables").
"""
import math

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from .unit_math import cos_turns, log_one_minus

M0 = np.uint64(0xD2E7470EE14C6C93)
M1 = np.uint64(0xCA5A826395121157)
W0 = np.uint64(0x9E3779B97F4A7C15)
W1 = np.uint64(0xBB67AE8584CAA73B)
S11 = np.uint64(11)
TO_UNIT = 1.0 / 9007199254740992.0          # 2^-53


@intrinsic
def _mulhilo(typingctx, a, b):
    """(high, low) 64-bit halves of the 128-bit product a * b of two uint64 (one native
    multiply; NumPy's Philox and CUDA's __umul64hi compute the same)."""
    if a != types.uint64 or b != types.uint64:
        return None
    signature = types.UniTuple(types.uint64, 2)(types.uint64, types.uint64)

    def codegen(context, builder, sig, args):
        wide = ir.IntType(128)
        product = builder.mul(builder.zext(args[0], wide), builder.zext(args[1], wide))
        high = builder.trunc(builder.lshr(product, ir.Constant(wide, 64)), ir.IntType(64))
        low = builder.trunc(product, ir.IntType(64))
        return context.make_tuple(builder, sig.return_type, [high, low])
    return signature, codegen


@numba.njit(cache=True)
def philox(k0, k1, c0, c1, c2, c3):
    """Philox4x64-10 of the counter (c0, c1, c2, c3) under the key (k0, k1): four uint64."""
    for r in range(10):
        if r:
            k0 += W0
            k1 += W1
        hi0, lo0 = _mulhilo(M0, c0)
        hi1, lo1 = _mulhilo(M1, c2)
        c0, c1, c2, c3 = hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0
    return c0, c1, c2, c3


@numba.njit(cache=True, inline="always")
def _unit(word):
    return np.float64(word >> S11) * TO_UNIT


@numba.njit(cache=True)
def uniforms4(key, block, element, iteration, step):
    """The four doubles in [0, 1) of one block of one element's stream."""
    w0, w1, w2, w3 = philox(key[0], key[1], np.uint64(block), np.uint64(element),
                            np.uint64(iteration), np.uint64(step))
    return _unit(w0), _unit(w1), _unit(w2), _unit(w3)


@numba.njit(cache=True, inline="always")
def box_muller(u1, u2):
    """sqrt(-2 log(1 - u1)) cos(2 pi u2), by unit_math's inline kernels."""
    return math.sqrt(-2.0 * log_one_minus(u1)) * cos_turns(u2)


@numba.njit(cache=True)
def normals(key, iteration, step, n):
    """n standard normals; element j from block 0 of its stream."""
    out = np.empty(n)
    for j in range(n):
        u0, u1, _, _ = uniforms4(key, 0, j, iteration, step)
        out[j] = box_muller(u0, u1)
    return out


@numba.njit(cache=True)
def exponentials(key, iteration, step, rate):
    """Exp(rate_j) draws, one per element of ``rate``."""
    out = np.empty(rate.size)
    for j in range(rate.size):
        u0, _, _, _ = uniforms4(key, 0, j, iteration, step)
        out[j] = -math.log1p(-u0) / rate[j]
    return out


@numba.njit(cache=True)
def gamma(key, iteration, step, shape, rate):
    """One Gamma(shape, rate) draw, shape >= 1, by Marsaglia-Tsang: block b proposes
    x = Box-Muller(u0, u1) and accepts with u2."""
    d = shape - 1.0 / 3.0
    c = 1.0 / math.sqrt(9.0 * d)
    block = 0
    while True:
        u0, u1, u2, _ = uniforms4(key, block, 0, iteration, step)
        block += 1
        x = box_muller(u0, u1)
        v = 1.0 + c * x
        if v <= 0.0:
            continue
        v = v * v * v
        if math.log1p(-u2) < 0.5 * x * x + d - d * v + d * math.log(v):
            return d * v / rate
