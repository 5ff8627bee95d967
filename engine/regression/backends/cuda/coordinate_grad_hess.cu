// Gradient dl/dbeta_j and curvature -d2l/dbeta_j^2 of one coordinate in one fused pass
// (Yang2022 Fig. 2; Yang2024 eqs 22-23 with strata, Yang2022 eqs 14-17).
//
// Each row contributes the tuple (D, x_j D, x_j^2 D); rows are sorted by stratum then time
// descending, so the risk-set sums R at the end of a block of tied times are prefix sums that
// restart at each stratum head (Yang2024 eq. 18).  The tied events' sums E = (D, x D, x^2 D, w, 1)
// over events restart at each tie group's first row.  Both are one scan of the pair
//     ((HEAD, GROUP_HEAD), (R, E))
// whose operator applies eq. 18 to R with the HEAD bit and to E with the GROUP_HEAD bit (a
// product of two flag-value operators, still associative).  At each group end the running sums
// stay in registers and are transformed and reduced at once:
//     Breslow:  g -= W m1,                    h += W (m2 - m1^2),          m_k = R_k / R_0
//     Efron:    g -= wbar sum_l m1_l,         h += wbar sum_l (m2_l - m1_l^2),
//               m_k,l = (R_k - (l/d) E_k) / (R_0 - (l/d) E_0),  l = 0 .. d-1,  wbar = W / d
// and every event adds w x_j to g.  With entry times the risk set at t is the stop-ordered
// prefix minus the rows of the stratum with start >= t: their sums S come from a scan over the
// start-ordered rows (segmented_scan.cu, input from gather_start_rows), read at the position
// late[i] found once on the host by searchsorted; late[i] = -1 when no row has entered late.
#include "flag_scan.cuh"

struct RiskTuple {
    unsigned char f;   // FLAG_HEAD | FLAG_GROUP_HEAD
    real r[3];         // risk-set sums of D, x D, x^2 D
    real e[5];         // tied events' sums of D, x D, x^2 D, w, count
    struct Agg { unsigned char* f; real* v; };
    __device__ static RiskTuple identity()
    {
        RiskTuple t;
        t.f = 0;
        for (int k = 0; k < 3; ++k) t.r[k] = 0;
        for (int k = 0; k < 5; ++k) t.e[k] = 0;
        return t;
    }
    // Yang2024 eq. 18 on each half
    __device__ static RiskTuple combine(const RiskTuple& a, const RiskTuple& b)
    {
        RiskTuple t;
        t.f = a.f | b.f;
        const bool new_stratum = b.f & FLAG_HEAD, new_group = b.f & FLAG_GROUP_HEAD;
        for (int k = 0; k < 3; ++k) t.r[k] = new_stratum ? b.r[k] : a.r[k] + b.r[k];
        for (int k = 0; k < 5; ++k) t.e[k] = new_group ? b.e[k] : a.e[k] + b.e[k];
        return t;
    }
    __device__ static RiskTuple load(const Agg& s, long long g)
    {
        RiskTuple t;
        t.f = s.f[g];
        for (int k = 0; k < 3; ++k) t.r[k] = s.v[8 * g + k];
        for (int k = 0; k < 5; ++k) t.e[k] = s.v[8 * g + 3 + k];
        return t;
    }
    __device__ static void store(const Agg& s, long long g, const RiskTuple& t)
    {
        s.f[g] = t.f;
        for (int k = 0; k < 3; ++k) s.v[8 * g + k] = t.r[k];
        for (int k = 0; k < 5; ++k) s.v[8 * g + 3 + k] = t.e[k];
    }
};

// The transform of Yang2022 Fig. 3's sparse kernel output: row i's tuple for column j, read
// from D and the dense scratch xs holding column j (zero elsewhere).
struct StopRows {
    const real* D;
    const real* xs;
    const real* w;
    const unsigned char* flags;
    __device__ RiskTuple operator()(long long i) const
    {
        RiskTuple t;
        const unsigned char f = flags[i];
        const real d = D[i], x = xs[i], xd = x * d, ev = (f & FLAG_EVENT) ? 1 : 0;
        t.f = f & (FLAG_HEAD | FLAG_GROUP_HEAD);
        t.r[0] = d;
        t.r[1] = xd;
        t.r[2] = x * xd;
        t.e[0] = ev * d;
        t.e[1] = ev * xd;
        t.e[2] = ev * x * xd;
        t.e[3] = ev * w[i];
        t.e[4] = ev;
        return t;
    }
};

extern "C" __global__ void grad_hess_reduce(const real* D, const real* xs, const real* w,
                                            const unsigned char* flags, long long n,
                                            unsigned char* agg_f, real* agg_v)
{
    StopRows load = {D, xs, w, flags};
    RiskTuple::Agg agg = {agg_f, agg_v};
    tile_reduce<RiskTuple>(load, n, agg);
}

extern "C" __global__ void grad_hess_carry(unsigned char* agg_f, real* agg_v, long long G,
                                           unsigned char* carry_f, real* carry_v)
{
    RiskTuple::Agg agg = {agg_f, agg_v}, carry = {carry_f, carry_v};
    carry_scan<RiskTuple>(agg, G, carry);
}

// One group end's terms, added to (g, h) (the Breslow and Efron lines of the header).
__device__ inline void group_terms(const real a[3], const real e[5], int efron, real& g, real& h)
{
    const int d = (int)e[4];
    const real W = e[3];
    if (efron && d > 1) {
        const real wbar = W / d;
        for (int l = 0; l < d; ++l) {
            const real c = (real)l / d;
            const real den = a[0] - c * e[0];
            const real m1 = (a[1] - c * e[1]) / den;
            const real m2 = (a[2] - c * e[2]) / den;
            g -= wbar * m1;
            h += wbar * (m2 - m1 * m1);
        }
    } else {
        const real inv = 1 / a[0];
        const real m1 = a[1] * inv;
        g -= W * m1;
        h += W * (a[2] * inv - m1 * m1);
    }
}

// Phase 3 fused with the transform-reduce: partial[block] = this tile's share of g,
// partial[G + block] of h.  start_sums is the scanned start-ordered tuple (3 x n, column-major)
// or unused when has_start = 0.
extern "C" __global__ void grad_hess_tiles(const real* D, const real* xs, const real* w,
                                           const unsigned char* flags, long long n,
                                           const unsigned char* carry_f, const real* carry_v,
                                           int efron, int has_start, const real* start_sums,
                                           const long long* late, real* partial)
{
    __shared__ RiskTuple shared[SCAN_THREADS];
    __shared__ real sums[SCAN_THREADS];
    const long long G = gridDim.x;
    StopRows load = {D, xs, w, flags};
    RiskTuple::Agg carries = {(unsigned char*)carry_f, (real*)carry_v};
    const RiskTuple carry = RiskTuple::load(carries, blockIdx.x);
    const long long first = (long long)blockIdx.x * SCAN_TILE + (long long)threadIdx.x * SCAN_IPT;
    RiskTuple items[SCAN_IPT];
    RiskTuple acc = RiskTuple::identity();
    for (int k = 0; k < SCAN_IPT; ++k) {
        items[k] = (first + k < n) ? load(first + k) : RiskTuple::identity();
        acc = RiskTuple::combine(acc, items[k]);
    }
    RiskTuple run = block_prefix(carry, acc, shared);
    real g = 0, h = 0;
    for (int k = 0; k < SCAN_IPT && first + k < n; ++k) {
        const long long i = first + k;
        run = RiskTuple::combine(run, items[k]);
        const unsigned char f = flags[i];
        if (f & FLAG_EVENT) g += w[i] * xs[i];
        if ((f & FLAG_GROUP_END) && run.e[4] > 0) {
            real a[3] = {run.r[0], run.r[1], run.r[2]};
            if (has_start && late[i] >= 0)
                for (int c = 0; c < 3; ++c) a[c] -= start_sums[c * n + late[i]];
            group_terms(a, run.e, efron, g, h);
        }
    }
    const real gs = block_sum(g, sums);
    const real hs = block_sum(h, sums);
    if (threadIdx.x == 0) {
        partial[blockIdx.x] = gs;
        partial[G + blockIdx.x] = hs;
    }
}

// The G partial sums folded into out[0] = g, out[1] = h by one block (fixed order).
extern "C" __global__ void grad_hess_finish(const real* partial, long long G, real* out)
{
    __shared__ real sums[SCAN_THREADS];
    real g = 0, h = 0;
    for (long long b = threadIdx.x; b < G; b += blockDim.x) {
        g += partial[b];
        h += partial[G + b];
    }
    const real gs = block_sum(g, sums);
    const real hs = block_sum(h, sums);
    if (threadIdx.x == 0) {
        out[0] = gs;
        out[1] = hs;
    }
}

// Entry times: the tuple (D, x D, x^2 D) of the rows in start order (3 x n, column-major), the
// input of the start-ordered segmented scan.
extern "C" __global__ void gather_start_rows(const long long* start_order, const real* D,
                                             const real* xs, long long n, real* out)
{
    const long long q = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (q >= n) return;
    const long long r = start_order[q];
    const real d = D[r], x = xs[r];
    out[q] = d;
    out[n + q] = x * d;
    out[2 * n + q] = x * x * d;
}
