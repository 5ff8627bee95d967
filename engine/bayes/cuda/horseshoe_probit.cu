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

// One proposal of the two-branch sampler of z* ~ N(m, 1) truncated to (0, inf)
// (truncated_normal._proposal): normal rejection above THRESHOLD, Robert's exponential below.
__device__ inline bool tn_proposal(double m, double theta, double ua, double ub, double* z)
{
    if (m >= THRESHOLD) {
        *z = box_muller(ua, ub) + m;
        return *z > 0.0;
    }
    *z = -log1p(-ua) / theta;
    const double d = *z - m - theta;
    return ub < exp(-0.5 * d * d);
}

// z_i ~ TN(mu_i, 1) truncated to R+ (sign_i = 1) or R- (sign_i = -1), one thread a row; row i
// reads its Philox stream, two proposals a block.
extern "C" __global__ void latent_z(long long n, const real* mu, const double* sign, u64 k0,
                                    u64 k1, u64 iteration, real* z)
{
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const double s = sign[i], m = s * (double)mu[i];
    const double theta = m < THRESHOLD ? 0.5 * (-m + sqrt(m * m + 4.0)) : 0.0;
    double draw = 0.0;
    for (u64 block = 0;; ++block) {
        const Uniforms4 u = philox_uniforms(k0, k1, block, (u64)i, iteration, STEP_Z);
        if (tn_proposal(m, theta, u.u[0], u.u[1], &draw)) break;
        if (tn_proposal(m, theta, u.u[2], u.u[3], &draw)) break;
    }
    z[i] = (real)(s * draw);
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
