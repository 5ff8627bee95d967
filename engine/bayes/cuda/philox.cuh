// Philox4x64-10 (Salmon et al. 2011) and the per-element draws of the horseshoe probit Gibbs
// sampler: the GPU twin of engine/bayes/philox.py (Numba), same numbers.  NumPy's
// np.random.Philox bijection; element i of step s of iteration t, keyed (seed, chain), reads
// the blocks with counter (b, i, t, s), b = 0, 1, ...  Words become doubles in [0, 1) as NumPy
// does (top 53 bits times 2^-53); normals by Box-Muller, exponentials by -log1p(-u).
#pragma once

#ifndef SURVSCAN_REAL
#define SURVSCAN_REAL double
#endif
typedef SURVSCAN_REAL real;
typedef unsigned long long u64;

#define PHILOX_M0 0xD2E7470EE14C6C93ULL
#define PHILOX_M1 0xCA5A826395121157ULL
#define PHILOX_W0 0x9E3779B97F4A7C15ULL
#define PHILOX_W1 0xBB67AE8584CAA73BULL
#define PHILOX_TWO_PI 6.283185307179586

__device__ inline u64 philox_mulhi(u64 a, u64 b)
{
#if defined(__CUDACC__)
    return __umul64hi(a, b);
#else
    return (u64)(((unsigned __int128)a * b) >> 64);
#endif
}

struct Uniforms4 { double u[4]; };

// The four doubles in [0, 1) of block `block` of element `element`'s stream.
__device__ inline Uniforms4 philox_uniforms(u64 k0, u64 k1, u64 block, u64 element,
                                            u64 iteration, u64 step)
{
    u64 c0 = block, c1 = element, c2 = iteration, c3 = step;
    for (int r = 0; r < 10; ++r) {
        if (r) { k0 += PHILOX_W0; k1 += PHILOX_W1; }
        const u64 hi0 = philox_mulhi(PHILOX_M0, c0), lo0 = PHILOX_M0 * c0;
        const u64 hi1 = philox_mulhi(PHILOX_M1, c2), lo1 = PHILOX_M1 * c2;
        c0 = hi1 ^ c1 ^ k0; c1 = lo1; c2 = hi0 ^ c3 ^ k1; c3 = lo0;
    }
    const double scale = 1.0 / 9007199254740992.0;
    Uniforms4 out;
    out.u[0] = (double)(c0 >> 11) * scale;
    out.u[1] = (double)(c1 >> 11) * scale;
    out.u[2] = (double)(c2 >> 11) * scale;
    out.u[3] = (double)(c3 >> 11) * scale;
    return out;
}

__device__ inline double box_muller(double u1, double u2)
{
    return sqrt(-2.0 * log1p(-u1)) * cos(PHILOX_TWO_PI * u2);
}

// One Gamma(shape, rate) draw, shape >= 1, by Marsaglia-Tsang (philox.gamma).
__device__ inline double philox_gamma(u64 k0, u64 k1, u64 iteration, u64 step, double shape,
                                      double rate)
{
    const double d = shape - 1.0 / 3.0, c = 1.0 / sqrt(9.0 * d);
    for (u64 block = 0;; ++block) {
        const Uniforms4 u = philox_uniforms(k0, k1, block, 0, iteration, step);
        const double x = box_muller(u.u[0], u.u[1]);
        double v = 1.0 + c * x;
        if (v <= 0.0) continue;
        v = v * v * v;
        if (log1p(-u.u[2]) < 0.5 * x * x + d - d * v + d * log(v)) return d * v / rate;
    }
}
