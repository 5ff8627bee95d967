// Segmented inclusive scan (sum) of c columns at once, column-major (c x n), one column per
// grid row (blockIdx.y): the flag-value scan of Yang2024 eq. 18 with a single value per pair.
// A row starts a segment when (flags[row] & bit) != 0.  With reverse = 1 the rows are read from
// the end, which gives the suffix sums within segments (pass the flag of each segment's last
// row).  Used for the risk-set sums of the log-likelihood pass, entry-time sums over the
// start-ordered rows and the column blocks of the information matrix.
#include "flag_scan.cuh"

struct Pair {
    unsigned char f;
    real v;
    struct Agg { unsigned char* f; real* v; };
    __device__ static Pair identity() { Pair p; p.f = 0; p.v = 0; return p; }
    // Yang2024 eq. 18
    __device__ static Pair combine(const Pair& a, const Pair& b)
    {
        Pair p;
        p.f = a.f | b.f;
        p.v = b.f ? b.v : a.v + b.v;
        return p;
    }
    __device__ static Pair load(const Agg& s, long long g) { Pair p; p.f = s.f[g]; p.v = s.v[g]; return p; }
    __device__ static void store(const Agg& s, long long g, const Pair& p) { s.f[g] = p.f; s.v[g] = p.v; }
};

struct ColumnRows {
    const real* x;
    const unsigned char* flags;
    int bit;
    long long n;
    int reverse;
    __device__ long long row(long long i) const { return reverse ? n - 1 - i : i; }
    __device__ Pair operator()(long long i) const
    {
        Pair p;
        const long long r = row(i);
        p.f = (flags[r] & bit) ? 1 : 0;
        p.v = x[r];
        return p;
    }
};

extern "C" __global__ void segscan_reduce(const real* x, const unsigned char* flags, int bit,
                                          long long n, int reverse, unsigned char* agg_f,
                                          real* agg_v)
{
    const long long c = blockIdx.y, G = gridDim.x;
    ColumnRows load = {x + c * n, flags, bit, n, reverse};
    Pair::Agg agg = {agg_f + c * G, agg_v + c * G};
    tile_reduce<Pair>(load, n, agg);
}

extern "C" __global__ void segscan_carry(unsigned char* agg_f, real* agg_v, long long G,
                                         unsigned char* carry_f, real* carry_v)
{
    const long long c = blockIdx.y;
    Pair::Agg agg = {agg_f + c * G, agg_v + c * G};
    Pair::Agg carry = {carry_f + c * G, carry_v + c * G};
    carry_scan<Pair>(agg, G, carry);
}

extern "C" __global__ void segscan_apply(const real* x, const unsigned char* flags, int bit,
                                         long long n, int reverse, const unsigned char* carry_f,
                                         const real* carry_v, real* out)
{
    __shared__ Pair shared[SCAN_THREADS];
    const long long c = blockIdx.y, G = gridDim.x;
    ColumnRows load = {x + c * n, flags, bit, n, reverse};
    Pair carry;
    carry.f = carry_f[c * G + blockIdx.x];
    carry.v = carry_v[c * G + blockIdx.x];
    const long long first = (long long)blockIdx.x * SCAN_TILE + (long long)threadIdx.x * SCAN_IPT;
    Pair items[SCAN_IPT];
    Pair acc = Pair::identity();
    for (int k = 0; k < SCAN_IPT; ++k) {
        items[k] = (first + k < n) ? load(first + k) : Pair::identity();
        acc = Pair::combine(acc, items[k]);
    }
    Pair run = block_prefix(carry, acc, shared);
    for (int k = 0; k < SCAN_IPT && first + k < n; ++k) {
        run = Pair::combine(run, items[k]);
        out[c * n + load.row(first + k)] = run.v;
    }
}
