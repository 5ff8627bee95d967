// Kernels of the conditional Poisson (SCCS) likelihood on a GPU (Suchard2013, sec. 2.4, Listings
// 1-3).  Eras are sorted by case (case i owns eras case_ptr[i] .. case_ptr[i+1]-1); X is CSC
// over the sorted eras, so column j's entries indices[lo .. lo+nnz) fall case by case.  Per
// case: shift c_i, denominator D_i = sum_k E_k with E_k = l_k exp(eta_k - c_i) (see
// engine/regression/backends/sccs_kernels.py, the CPU's kernels of the same numbers).
#ifndef SURVSCAN_REAL
#define SURVSCAN_REAL double
#endif
typedef SURVSCAN_REAL real;

#define SCCS_THREADS 256

// Fixed-order tree sum of one value per thread over a block of SCCS_THREADS threads.
__device__ inline real sccs_block_sum(real mine, real* shared)
{
    const int t = threadIdx.x;
    shared[t] = mine;
    __syncthreads();
    for (int half = SCCS_THREADS / 2; half > 0; half >>= 1) {
        if (t < half) shared[t] += shared[t + half];
        __syncthreads();
    }
    const real total = shared[0];
    __syncthreads();                        // every thread has read it before shared is reused
    return total;
}

// Per case (one thread each): c_i = max eta, E_k = l_k exp(eta_k - c_i), D_i = sum E_k.
extern "C" __global__ void sccs_recentre(const long long* case_ptr, int n_cases, const real* eta,
                                         const real* length, real* E, real* D, real* shift)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n_cases) return;
    // the first era's eta, not -INFINITY: NVRTC compiles without the host's <math.h>
    real top = case_ptr[i] < case_ptr[i + 1] ? eta[case_ptr[i]] : real(0);
    for (long long k = case_ptr[i] + 1; k < case_ptr[i + 1]; ++k) top = fmax(top, eta[k]);
    real total = 0;
    for (long long k = case_ptr[i]; k < case_ptr[i + 1]; ++k) {
        E[k] = length[k] * exp(eta[k] - top);
        total += E[k];
    }
    shift[i] = top;
    D[i] = total;
}

// Per case: D_i re-summed from E (undoing the rounding of atomic updates) and the case's
// log-likelihood term w_i [sum_k y_k (log l_k + eta_k - c_i) - n_i log D_i] (seed eq. 2).
// Also r_k = w_i (y_k - n_i p_k) and p_k = E_k / D_i when want_residuals.
extern "C" __global__ void sccs_case_terms(const long long* case_ptr, int n_cases,
                                           const real* eta, const real* y,
                                           const real* log_length, const real* E, real* D,
                                           const real* shift, const real* w, const real* n,
                                           real* ll_case, int want_residuals, real* r, real* q)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n_cases) return;
    real total = 0, part = 0;
    for (long long k = case_ptr[i]; k < case_ptr[i + 1]; ++k) {
        total += E[k];
        if (y[k] > 0) part += y[k] * (log_length[k] + eta[k] - shift[i]);
    }
    D[i] = total;
    ll_case[i] = (w[i] > 0 && n[i] > 0) ? w[i] * (part - n[i] * log(total)) : (real)0;
    if (!want_residuals) return;
    for (long long k = case_ptr[i]; k < case_ptr[i + 1]; ++k) {
        q[k] = E[k] / total;
        r[k] = n[i] > 0 ? w[i] * (y[k] - n[i] * q[k]) : (real)0;
    }
}

// The fused per-coordinate reduction over the cases column j touches (eqs. 7-9), one thread
// per non-zero.  Pass 1 (sccs_numerators): N1_i = sum over the case's entries of E_k x_kj, by
// atomicAdd into the scratch N1 (zero on entry).  Pass 2 (sccs_grad_hess_blocks): every entry
// adds w_i (y_k x - n_i E_k x / D_i) to g and w_i n_i E_k x^2 / D_i to h; the first entry of
// each case also subtracts w_i n_i (N1_i / D_i)^2 from h and clears N1_i for the next column;
// each block writes its partial sums.  sccs_finish adds the partials in a fixed order.
extern "C" __global__ void sccs_numerators(const int* rows, const real* vals, long long nnz,
                                           const int* case_of, const real* E, real* N1)
{
    const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t < nnz) atomicAdd(&N1[case_of[rows[t]]], E[rows[t]] * vals[t]);
}

extern "C" __global__ void sccs_grad_hess_blocks(const int* rows, const real* vals,
                                                 long long nnz, const int* case_of,
                                                 const real* y, const real* E, const real* D,
                                                 const real* w, const real* n, real* N1,
                                                 real* partial_g, real* partial_h)
{
    __shared__ real sums[SCCS_THREADS];
    const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    real g = 0, h = 0;
    if (t < nnz) {
        const int k = rows[t], i = case_of[k];
        const real x = vals[t], a = w[i] * n[i];
        if (w[i] > 0 && n[i] > 0) {
            g = w[i] * y[k] * x - a * E[k] * x / D[i];
            h = a * E[k] * x * x / D[i];
        }
        if (t == 0 || case_of[rows[t - 1]] != i) {       // first entry of case i: its square
            const real W1 = N1[i] / D[i];
            if (w[i] > 0 && n[i] > 0) h -= a * W1 * W1;
            N1[i] = 0;
        }
    }
    const real bg = sccs_block_sum(g, sums);
    const real bh = sccs_block_sum(h, sums);
    if (threadIdx.x == 0) {
        partial_g[blockIdx.x] = bg;
        partial_h[blockIdx.x] = bh;
    }
}

extern "C" __global__ void sccs_finish(const real* partial_g, const real* partial_h, int blocks,
                                       real* out)
{
    __shared__ real sums[SCCS_THREADS];
    real g = 0, h = 0;
    for (int b = threadIdx.x; b < blocks; b += blockDim.x) {
        g += partial_g[b];
        h += partial_h[b];
    }
    const real tg = sccs_block_sum(g, sums);
    const real th = sccs_block_sum(h, sums);
    if (threadIdx.x == 0) {
        out[0] = tg;
        out[1] = th;
    }
}

// beta_j += delta over column j's entries (seed Listing 3): eta, E, and the denominator of the
// entry's case by atomicAdd of the change in E.  *recentre is set when eta_k - c_i > reshift.
extern "C" __global__ void sccs_update(const int* rows, const real* vals, long long nnz,
                                       const int* case_of, double delta, real* eta,
                                       const real* length, real* E, real* D, const real* shift,
                                       double reshift, int* recentre)
{
    const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= nnz) return;
    const int k = rows[t], i = case_of[k];
    const real e = eta[k] + (real)(delta * vals[t]);
    eta[k] = e;
    const real fresh = length[k] * exp(e - shift[i]);
    atomicAdd(&D[i], fresh - E[k]);
    E[k] = fresh;
    if (e - shift[i] > reshift) *recentre = 1;
}

// eta += b x_j (eta = X beta from scratch, column by column as the CPU).
extern "C" __global__ void sccs_add_column(const int* rows, const real* vals, long long nnz,
                                           double b, real* eta)
{
    const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t < nnz) eta[rows[t]] += (real)(b * vals[t]);
}

// X' v: one block per column, a fixed-order tree sum per block.
extern "C" __global__ void sccs_column_dots(const long long* indptr, const int* rows,
                                            const real* vals, const real* v, real* out)
{
    __shared__ real sums[SCCS_THREADS];
    const long long j = blockIdx.x, lo = indptr[j], hi = indptr[j + 1];
    real acc = 0;
    for (long long t = lo + threadIdx.x; t < hi; t += blockDim.x) acc += vals[t] * v[rows[t]];
    const real total = sccs_block_sum(acc, sums);
    if (threadIdx.x == 0) out[j] = total;
}
