// Kernels of the horseshoe probit Gibbs sampler on a GPU (engine/bayes/gpu.py): the steps that
// are not cuBLAS/cuSOLVER calls, with the numbers of the CPU sampler (horseshoe_probit.py,
// truncated_normal.py, philox.py).  Step numbers are rng.py's STEP_*.
#include "philox.cuh"

#define STEP_Z 0
#define STEP_LAMBDA 1
#define STEP_TAU 2
#define STEP_NU 4
#define STEP_XI 5
#define STEP_EXPAND 6
#define SCALE_THREADS 256
#define THRESHOLD 0.47

// The parts of one Philox block's two proposals that do not depend on mu (so that latent_pass
// computes block 0's while X's rows are loading): log(1 - u_a) of each (Box-Muller's radius,
// the exponential proposal), cos(2 pi u_b) and u_b (Box-Muller's angle, the exponential's
// acceptance uniform); (u_a, u_b) = words (0, 1) and (2, 3).
struct Proposals { double log_u[2], cos_u[2], ub[2]; };

__device__ inline Proposals tn_proposals(u64 k0, u64 k1, u64 block, long long i, u64 iteration)
{
    const Uniforms4 u = philox_uniforms(k0, k1, block, (u64)i, iteration, STEP_Z);
    Proposals q;
    for (int h = 0; h < 2; ++h) {
        q.log_u[h] = log1p(-u.u[2 * h]);
        q.cos_u[h] = cos(PHILOX_TWO_PI * u.u[2 * h + 1]);
        q.ub[h] = u.u[2 * h + 1];
    }
    return q;
}

// Proposal h of the two-branch sampler of z* ~ N(m, 1) truncated to (0, inf)
// (truncated_normal._proposal): normal rejection above THRESHOLD (box_muller's numbers),
// Robert's exponential below.
__device__ inline bool tn_proposal(double m, double theta, const Proposals& q, int h, double* z)
{
    if (m >= THRESHOLD) {
        *z = sqrt(-2.0 * q.log_u[h]) * q.cos_u[h] + m;
        return *z > 0.0;
    }
    *z = -q.log_u[h] / theta;
    const double d = *z - m - theta;
    return q.ub[h] < exp(-0.5 * d * d);
}

// z_i ~ TN(mu_i, 1) truncated to R+ (sign_i = 1) or R- (sign_i = -1) from row i's Philox
// stream, two proposals a block (truncated_normal.positive_draw); block 0's parts given.
__device__ inline double latent_draw(double mu, double s, const Proposals& block0, u64 k0,
                                     u64 k1, u64 iteration, long long i)
{
    const double m = s * mu;
    const double theta = m < THRESHOLD ? 0.5 * (-m + sqrt(m * m + 4.0)) : 0.0;
    double draw = 0.0;
    if (tn_proposal(m, theta, block0, 0, &draw) || tn_proposal(m, theta, block0, 1, &draw))
        return s * draw;
    for (u64 block = 1;; ++block) {
        const Proposals q = tn_proposals(k0, k1, block, i, iteration);
        if (tn_proposal(m, theta, q, 0, &draw) || tn_proposal(m, theta, q, 1, &draw))
            return s * draw;
    }
}

// z = latent_draw(mu), one thread a row: the unfused z step, latent_pass's reference in the tests.
extern "C" __global__ void latent_z(long long n, const real* mu, const double* sign, u64 k0,
                                    u64 k1, u64 iteration, real* z)
{
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const Proposals block0 = tn_proposals(k0, k1, 0, i, iteration);
    z[i] = (real)latent_draw((double)mu[i], sign[i], block0, k0, k1, iteration, i);
}

// The z step and X'z in one pass over X (latent_pass.py's, on the device): a persistent grid,
// each block taking tiles of LATENT_ROWS rows in turn (tile = blockIdx.x, + gridDim.x, ...).
// Thread t holds columns j = t + c LATENT_THREADS (c < LATENT_COLS) of the tile's rows in
// registers, read once from X (a warp reads consecutive columns of a row); per tile:
//   1. its share of mu_i = x_i beta for each row (double), into dots;
//   2. LATENT_LANES partial sums per row (lane l adds dots[r][l], dots[r][l + 32], ...);
//   3. thread r < LATENT_ROWS adds row r's lanes to mu_i and draws z_i (latent_draw; sign_i
//      and the mu-free parts of its first proposals read in step 1, while X's loads are in
//      flight);
//   4. every thread adds z_i x_ij of the tile's rows to its X'z partials (double).
// Block b leaves its X'z partials in partial_Xtz[b p + j] and its z'z in partial_zz[b]; the
// sums in a fixed order (here and in latent_sum), so a launch gives the same numbers each run.
// With LATENT_PREFETCH, each tile first asks L2 for the block's next tile (rows contiguous in
// X), so that memory keeps streaming while the block reduces and draws.
#ifndef LATENT_THREADS
#define LATENT_THREADS 256     // gpu.py passes these four (latent_launch.LatentLaunch)
#endif
#ifndef LATENT_COLS
#define LATENT_COLS 4
#endif
#ifndef LATENT_ROWS
#define LATENT_ROWS 8
#endif
#ifndef LATENT_PREFETCH
#define LATENT_PREFETCH 1
#endif
#define LATENT_LANES 32
#define LINE_BYTES 128

// A hint, no effect on the numbers: the line at ``address`` into L2 (on the CPU emulator, none).
__device__ inline void prefetch_l2(const char* address)
{
#if defined(__CUDACC__)
    asm volatile("prefetch.global.L2 [%0];" : : "l"(address));
#else
    (void)address;
#endif
}

extern "C" __global__ void latent_pass(long long n, long long p, const real* X,
                                       const double* beta, const double* sign, u64 k0, u64 k1,
                                       u64 iteration, double* z, double* partial_Xtz,
                                       double* partial_zz)
{
    __shared__ double dots[LATENT_ROWS][LATENT_THREADS];
    __shared__ double lanes[LATENT_ROWS][LATENT_LANES];
    __shared__ double z_tile[LATENT_ROWS];
    const int t = threadIdx.x;
    double b[LATENT_COLS], acc[LATENT_COLS];
#pragma unroll
    for (int c = 0; c < LATENT_COLS; ++c) {
        const long long j = t + (long long)c * LATENT_THREADS;
        b[c] = j < p ? beta[j] : 0.0;
        acc[c] = 0.0;
    }
    double zz = 0.0;
    const long long tiles = (n + LATENT_ROWS - 1) / LATENT_ROWS;
    for (long long tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
        const long long first = tile * LATENT_ROWS;
        if (LATENT_PREFETCH && tile + gridDim.x < tiles) {     // the block's next tile: in L2
            const long long next = first + (long long)gridDim.x * LATENT_ROWS;   // while this
            const long long stop = next + LATENT_ROWS < n ? next + LATENT_ROWS : n;  // is drawn
            const char* rows = (const char*)(X + next * p);
            const int bytes = (int)((stop - next) * p * (long long)sizeof(real));
            for (int b = t * LINE_BYTES; b < bytes; b += LINE_BYTES * LATENT_THREADS)
                prefetch_l2(rows + b);
        }
        real x[LATENT_ROWS][LATENT_COLS];
#pragma unroll
        for (int r = 0; r < LATENT_ROWS; ++r)
#pragma unroll
            for (int c = 0; c < LATENT_COLS; ++c) {
                const long long i = first + r, j = t + (long long)c * LATENT_THREADS;
                x[r][c] = i < n && j < p ? X[i * p + j] : (real)0;
            }
        Proposals block0 = {};                // row first + t's, with its sign: off the
        double sign_i = 0.0;                   // critical path of step 3
        if (t < LATENT_ROWS && first + t < n) {
            sign_i = sign[first + t];
            block0 = tn_proposals(k0, k1, 0, first + t, iteration);
        }
#pragma unroll
        for (int r = 0; r < LATENT_ROWS; ++r) {
            double dot = 0.0;
#pragma unroll
            for (int c = 0; c < LATENT_COLS; ++c) dot += (double)x[r][c] * b[c];
            dots[r][t] = dot;
        }
        __syncthreads();
        for (int u = t; u < LATENT_ROWS * LATENT_LANES; u += LATENT_THREADS) {
            const int r = u / LATENT_LANES, l = u % LATENT_LANES;
            double sum = 0.0;
            for (int k = l; k < LATENT_THREADS; k += LATENT_LANES) sum += dots[r][k];
            lanes[r][l] = sum;
        }
        __syncthreads();
        if (t < LATENT_ROWS) {
            const long long i = first + t;
            double zi = 0.0;
            if (i < n) {
                double part[4] = {0.0, 0.0, 0.0, 0.0};    // four chains: a shorter latency
#pragma unroll
                for (int l = 0; l < LATENT_LANES; l += 4)
#pragma unroll
                    for (int q = 0; q < 4; ++q) part[q] += lanes[t][l + q];
                const double mu = (part[0] + part[1]) + (part[2] + part[3]);
                zi = latent_draw(mu, sign_i, block0, k0, k1, iteration, i);
                z[i] = zi;
                zz += zi * zi;
            }
            z_tile[t] = zi;
        }
        __syncthreads();
#pragma unroll
        for (int r = 0; r < LATENT_ROWS; ++r)
#pragma unroll
            for (int c = 0; c < LATENT_COLS; ++c)     // + 0 (exact): x stays held as real,
                acc[c] += z_tile[r] * (double)(x[r][c] + (real)0);   // not as step 1's doubles
    }
#pragma unroll
    for (int c = 0; c < LATENT_COLS; ++c) {
        const long long j = t + (long long)c * LATENT_THREADS;
        if (j < p) partial_Xtz[blockIdx.x * p + j] = acc[c];
    }
    __syncthreads();                       // the last tile's z_tile is read
    if (t < LATENT_ROWS) z_tile[t] = zz;
    __syncthreads();
    if (t == 0) {
        double sum = 0.0;
        for (int r = 0; r < LATENT_ROWS; ++r) sum += z_tile[r];
        partial_zz[blockIdx.x] = sum;
    }
}

// X'z[j] = sum_b partial_Xtz[b p + j] (a thread a column) and zz[0] = sum_b partial_zz[b]
// (thread p), the blocks in order.
extern "C" __global__ void latent_sum(long long p, int blocks, const double* partial_Xtz,
                                      const double* partial_zz, double* Xtz, double* zz)
{
    const long long j = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (j > p) return;
    double sum = 0.0;
    if (j == p) {
        for (int b = 0; b < blocks; ++b) sum += partial_zz[b];
        zz[0] = sum;
        return;
    }
    for (int b = 0; b < blocks; ++b) sum += partial_Xtz[b * p + j];
    Xtz[j] = sum;
}

// The scale steps of one iteration in one block (horseshoe_probit.step):
//   lambda_j^-2 ~ Exp(nu_j^-1 + tau^-2 beta_j^2 / 2),
//   tau^-2 ~ Gamma((p_s + 1) / 2, xi^-1 + sum_j lambda_j^-2 beta_j^2 / 2),
//   nu_j^-1 ~ Exp(1 + lambda_j^-2),  xi^-1 ~ Exp(1 + tau^-2),
// and the prior precision d[shrunk_j] = tau^-2 lambda_j^-2.  scalars = {tau^-2, xi^-1}.
extern "C" __global__ void scales(int p_s, const int* shrunk, const double* beta,
                                  double* lambda_sq_inv, double* nu_inv, double* scalars,
                                  u64 k0, u64 k1, u64 iteration, double* d)
{
    __shared__ double sums[SCALE_THREADS];
    __shared__ double tau_new;
    const int t = threadIdx.x;
    const double tau_old = scalars[0];
    double partial = 0.0;
    for (int j = t; j < p_s; j += SCALE_THREADS) {
        const double b = beta[shrunk[j]], b2 = b * b;
        const Uniforms4 u = philox_uniforms(k0, k1, 0, (u64)j, iteration, STEP_LAMBDA);
        const double lam = -log1p(-u.u[0]) / (nu_inv[j] + 0.5 * tau_old * b2);
        lambda_sq_inv[j] = lam;
        partial += lam * b2;
    }
    sums[t] = partial;
    __syncthreads();
    for (int half = SCALE_THREADS / 2; half > 0; half /= 2) {
        if (t < half) sums[t] += sums[t + half];
        __syncthreads();
    }
    if (t == 0) {
        const double tau = philox_gamma(k0, k1, iteration, STEP_TAU, 0.5 * (p_s + 1),
                                        scalars[1] + 0.5 * sums[0]);
        const Uniforms4 u = philox_uniforms(k0, k1, 0, 0, iteration, STEP_XI);
        scalars[0] = tau;
        scalars[1] = -log1p(-u.u[0]) / (1.0 + tau);
        tau_new = tau;
    }
    __syncthreads();
    for (int j = t; j < p_s; j += SCALE_THREADS) {
        const double lam = lambda_sq_inv[j];
        const Uniforms4 u = philox_uniforms(k0, k1, 0, (u64)j, iteration, STEP_NU);
        nu_inv[j] = -log1p(-u.u[0]) / (1.0 + lam);
        d[shrunk[j]] = tau_new * lam;
    }
}

// Q = X'X + diag(d), p x p (row-major; symmetric).
extern "C" __global__ void precision_matrix(long long p, const real* XtX, const double* d,
                                            real* Q)
{
    const long long k = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= p * p) return;
    const long long i = k / p, j = k - i * p;
    Q[k] = i == j ? (real)((double)XtX[k] + d[i]) : XtX[k];
}

// n standard normals of one step, element j from block 0 of its stream (philox.normals).
extern "C" __global__ void normals(long long n, u64 k0, u64 k1, u64 iteration, u64 step,
                                   double* out)
{
    const long long j = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= n) return;
    const Uniforms4 u = philox_uniforms(k0, k1, 0, (u64)j, iteration, step);
    out[j] = box_muller(u.u[0], u.u[1]);
}

// The marginal augmentation's scale (expansion.py): g = sqrt(Gamma(n / 2, rate = q / 2)) with
// q = z'z - |L^-1 X'z|^2 (qparts = {z'z, |L^-1 X'z|^2}), one thread.
extern "C" __global__ void expansion(long long n, const double* qparts, u64 k0, u64 k1,
                                     u64 iteration, double* g)
{
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    const double q = qparts[0] - qparts[1];
    g[0] = q > 0.0 ? sqrt(philox_gamma(k0, k1, iteration, STEP_EXPAND, 0.5 * (double)n, 0.5 * q))
                   : nan("");
}
