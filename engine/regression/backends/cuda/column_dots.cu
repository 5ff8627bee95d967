// X^T v over the sorted rows, CSC: one block per column, a fixed-order tree sum per block.
// Binary columns (vptr[j] < 0) store no values: x = 1.  The full gradient is X^T (w e - r).
#include "flag_scan.cuh"

extern "C" __global__ void column_dots(const long long* indptr, const int* indices,
                                       const real* values, const long long* vptr,
                                       const real* v, real* out)
{
    __shared__ real sums[SCAN_THREADS];
    const long long j = blockIdx.x, lo = indptr[j], hi = indptr[j + 1], v0 = vptr[j];
    real acc = 0;
    for (long long k = lo + threadIdx.x; k < hi; k += blockDim.x)
        acc += (v0 < 0 ? (real)1 : values[v0 + k - lo]) * v[indices[k]];
    const real total = block_sum(acc, sums);
    if (threadIdx.x == 0) out[j] = total;
}
