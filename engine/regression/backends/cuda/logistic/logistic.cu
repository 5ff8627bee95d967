// Kernels of the logistic (Bernoulli) and Poisson likelihoods on a GPU: the same numbers as
// engine/regression/backends/logistic_cpu.py and poisson_cpu.py.  Logistic, with
// p_i = 1 / (1 + exp(-eta_i)):
//     l = sum_i w_i (y_i eta_i - log(1 + exp(eta_i))),
//     r_i = dl/deta_i = w_i (y_i - p_i),   h_i = -d2l/deta_i^2 = w_i p_i (1 - p_i);
// Poisson, with mu_i = exp(eta_i + log t_i) (t_i the row's person-time):
//     l = sum_i w_i (y_i (eta_i + log t_i) - mu_i),   r_i = w_i (y_i - mu_i),   h_i = w_i mu_i.
// Only the row terms differ (logistic_* and poisson_* kernels); the column kernels serve both.
// The Hessian in eta is diagonal, so a coordinate touches only the rows of its column: the
// update and the derivatives of coordinate j run one thread per non-zero of column j
// (O(nnz_j)); rows are column j's row positions (CSC), vals its values.
#include "flag_scan.cuh"

// r_i and h_i of row i in place; returns its log-likelihood term (log1p forms: no overflow).
__device__ inline real row_terms(long long i, const real* eta, const real* y, const real* w,
                                 real* r, real* h)
{
    const real e = eta[i];
    real p, softplus;
    if (e > 0) {
        const real z = exp(-e);
        p = 1 / (1 + z);
        softplus = e + log1p(z);
    } else {
        const real z = exp(e);
        p = z / (1 + z);
        softplus = log1p(z);
    }
    r[i] = w[i] * (y[i] - p);
    h[i] = w[i] * p * (1 - p);
    return w[i] > 0 ? w[i] * (y[i] * e - softplus) : (real)0;
}

// Every row's r and h; partial[block] = the block's share of l (folded by logistic_finish).
extern "C" __global__ void logistic_terms(long long n, const real* eta, const real* y,
                                          const real* w, real* r, real* h, real* partial)
{
    __shared__ real sums[SCAN_THREADS];
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const real ll = i < n ? row_terms(i, eta, y, w, r, h) : (real)0;
    const real total = block_sum(ll, sums);
    if (threadIdx.x == 0) partial[blockIdx.x] = total;
}

// beta_j += delta: eta, r and h on column j's rows only (distinct rows: no race).
extern "C" __global__ void logistic_update(const int* rows, const real* vals, long long nnz,
                                           double delta, real* eta, const real* y,
                                           const real* w, real* r, real* h)
{
    const long long k = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= nnz) return;
    const int i = rows[k];
    eta[i] += (real)(delta * vals[k]);
    row_terms(i, eta, y, w, r, h);
}

// The Poisson row terms of row i in place; returns its log-likelihood term.
__device__ inline real poisson_row_terms(long long i, const real* eta, const real* log_t,
                                         const real* y, const real* w, real* r, real* h)
{
    const real mu = exp(eta[i] + log_t[i]);
    r[i] = w[i] * (y[i] - mu);
    h[i] = w[i] * mu;
    return w[i] > 0 ? w[i] * (y[i] * (eta[i] + log_t[i]) - mu) : (real)0;
}

// logistic_terms for the Poisson likelihood.
extern "C" __global__ void poisson_terms(long long n, const real* eta, const real* log_t,
                                         const real* y, const real* w, real* r, real* h,
                                         real* partial)
{
    __shared__ real sums[SCAN_THREADS];
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const real ll = i < n ? poisson_row_terms(i, eta, log_t, y, w, r, h) : (real)0;
    const real total = block_sum(ll, sums);
    if (threadIdx.x == 0) partial[blockIdx.x] = total;
}

// logistic_update for the Poisson likelihood.
extern "C" __global__ void poisson_update(const int* rows, const real* vals, long long nnz,
                                          double delta, real* eta, const real* log_t,
                                          const real* y, const real* w, real* r, real* h)
{
    const long long k = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= nnz) return;
    const int i = rows[k];
    eta[i] += (real)(delta * vals[k]);
    poisson_row_terms(i, eta, log_t, y, w, r, h);
}

// eta += b x_j, for eta = X beta from scratch column by column (the CPU's order of additions).
extern "C" __global__ void logistic_add_column(const int* rows, const real* vals, long long nnz,
                                               double b, real* eta)
{
    const long long k = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (k < nnz) eta[rows[k]] += (real)(b * vals[k]);
}

// Column j's share of dl/dbeta_j = x_j' r (partial[block]) and of -d2l/dbeta_j^2 = (x_j^2)' h
// (partial[G + block]), one thread per non-zero.
extern "C" __global__ void logistic_grad_hess(const int* rows, const real* vals, long long nnz,
                                              const real* r, const real* h, real* partial)
{
    __shared__ real sums[SCAN_THREADS];
    const long long k = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    real g = 0, hh = 0;
    if (k < nnz) {
        const real x = vals[k];
        g = x * r[rows[k]];
        hh = x * x * h[rows[k]];
    }
    const real gs = block_sum(g, sums);
    const real hs = block_sum(hh, sums);
    if (threadIdx.x == 0) {
        partial[blockIdx.x] = gs;
        partial[gridDim.x + blockIdx.x] = hs;
    }
}

// out[c] = sum_b partial[c G + b] for c < count, by one block (fixed order).
extern "C" __global__ void logistic_finish(const real* partial, long long G, int count,
                                           real* out)
{
    __shared__ real sums[SCAN_THREADS];
    for (int c = 0; c < count; ++c) {
        real acc = 0;
        for (long long b = threadIdx.x; b < G; b += blockDim.x) acc += partial[c * G + b];
        const real total = block_sum(acc, sums);
        if (threadIdx.x == 0) out[c] = total;
    }
}
