// Sparse kernels over the non-zeros of one column j (Yang2022 sec. 2.7 and Fig. 3): O(nnz_j),
// one thread per non-zero.  rows are column j's sorted row positions; vals its values, read only
// when has_values (binary indicator columns store none: x = 1).
#include "flag_scan.cuh"

__device__ inline real column_value(const real* vals, int has_values, long long k)
{
    return has_values ? vals[k] : (real)1;
}

// Column j scattered into the all-zero dense scratch xs (the x_j of the fused kernel's tuple).
extern "C" __global__ void scatter_column(const int* rows, const real* vals, int has_values,
                                          long long nnz, real* xs)
{
    const long long k = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (k < nnz) xs[rows[k]] = column_value(vals, has_values, k);
}

// ... and cleared again.
extern "C" __global__ void clear_column(const int* rows, long long nnz, real* xs)
{
    const long long k = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (k < nnz) xs[rows[k]] = 0;
}

// beta_j += *step: eta_i += x_ij step (Yang2024 eq. 27), D_i = w_i exp(eta_i - shift)
// (eq. 24).  The step is read from device memory, so the conditional CCD kernel can decide it
// without a host round trip; a zero step returns at once (Yang2022 Fig. 3's conditional update).
// *recentre is set when some eta_i - shift exceeds reshift (the host then re-centres D).  Step
// and shift are read through pointers, so a captured CUDA graph of a cycle stays valid.
extern "C" __global__ void update_coordinate(const int* rows, const real* vals, int has_values,
                                             long long nnz, const double* step, real* eta,
                                             real* D, const real* w, const double* shift_at,
                                             double reshift, int* recentre)
{
    const double delta = *step, shift = *shift_at;
    const long long k = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (delta == 0.0 || k >= nnz) return;
    const int i = rows[k];
    const real e = eta[i] + (real)(delta * column_value(vals, has_values, k));
    eta[i] = e;
    D[i] = w[i] * exp(e - (real)shift);
    if (e - shift > reshift) *recentre = 1;
}

// eta += b x_j, for eta = X beta from scratch column by column (the CPU's order of additions).
extern "C" __global__ void add_column(const int* rows, const real* vals, int has_values,
                                      long long nnz, double b, real* eta)
{
    const long long k = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (k < nnz) eta[rows[k]] += (real)(b * column_value(vals, has_values, k));
}
