// The flag-value segmented scan of Yang2024 sec. 2.6, eq. 18, as a reduce-then-scan over tiles.
//
//   (f_i, a_i) (+)s (f_j, a_j) := (f_i | f_j,  f_j ? a_j : a_i + a_j)            (Yang2024 eq. 18)
//
// A segmented scan becomes one ordinary scan whose cost does not depend on the number of
// segments K.  Every tuple type T below provides identity(), combine(left, right) (the operator,
// applied component-wise) and load/store of its aggregate; the three phases are
//   1. tile_reduce:  each block reduces its tile of TILE items to one aggregate;
//   2. carry_scan:   one block scans the G aggregates (exclusive): the carry into each tile;
//   3. the caller's kernel re-scans its tile from the carry (block_prefix) and uses the
//      running sums in registers (Yang2022 Fig. 2: the scanned tuple never goes to memory).
// Items are blocked: thread t of a block owns items [t * IPT, (t + 1) * IPT) of the tile, so a
// thread's serial scan followed by a block scan of the thread aggregates is the tile's scan.
// The block scan is Hillis-Steele in shared memory (log2 B steps); it only needs the operator
// to be associative, not commutative.
//
// SURVSCAN_REAL is double unless the module is compiled with -DSURVSCAN_REAL=float.
#pragma once

#ifndef SURVSCAN_REAL
#define SURVSCAN_REAL double
#endif
typedef SURVSCAN_REAL real;

#define SCAN_THREADS 256
#define SCAN_IPT 4
#define SCAN_TILE (SCAN_THREADS * SCAN_IPT)

// Row flags of engine/regression/modeldata.py, plus GROUP_HEAD (first row of a block of tied times within
// a stratum), set on the device copy only.
#define FLAG_EVENT 1
#define FLAG_HEAD 2
#define FLAG_GROUP_END 4
#define FLAG_GROUP_HEAD 8

// Inclusive block scan of one value per thread (Hillis-Steele); returns the block's inclusive
// prefix at this thread and leaves every thread's inclusive prefix in shared[].
template <class T>
__device__ T block_inclusive_scan(T mine, T* shared)
{
    const int t = threadIdx.x;
    shared[t] = mine;
    __syncthreads();
    for (int off = 1; off < blockDim.x; off <<= 1) {
        T left = (t >= off) ? T::combine(shared[t - off], shared[t]) : shared[t];
        __syncthreads();
        shared[t] = left;
        __syncthreads();
    }
    return shared[t];
}

// Phase 3 helper: the exclusive prefix of this thread within the whole array, carry into the
// tile (+)s the aggregates of the threads before it.  ``mine`` is this thread's aggregate.
template <class T>
__device__ T block_prefix(T carry, T mine, T* shared)
{
    block_inclusive_scan(mine, shared);
    T before = (threadIdx.x > 0) ? shared[threadIdx.x - 1] : T::identity();
    T out = T::combine(carry, before);
    __syncthreads();
    return out;
}

// Phase 2: exclusive scan of the G tile aggregates by one block, B at a time, with a running
// carry between rounds.
template <class T>
__device__ void carry_scan(const typename T::Agg agg, long long G, typename T::Agg carry)
{
    __shared__ T shared[SCAN_THREADS];
    T running = T::identity();
    for (long long base = 0; base < G; base += blockDim.x) {
        const long long g = base + threadIdx.x;
        T mine = (g < G) ? T::load(agg, g) : T::identity();
        block_inclusive_scan(mine, shared);
        T before = (threadIdx.x > 0) ? shared[threadIdx.x - 1] : T::identity();
        if (g < G) T::store(carry, g, T::combine(running, before));
        T total = shared[blockDim.x - 1];
        __syncthreads();
        running = T::combine(running, total);
    }
}

// Phase 1: this block's tile reduced to one aggregate, written at index blockIdx.x.
template <class T, class Loader>
__device__ void tile_reduce(const Loader& load, long long n, typename T::Agg agg)
{
    __shared__ T shared[SCAN_THREADS];
    const long long first = (long long)blockIdx.x * SCAN_TILE + (long long)threadIdx.x * SCAN_IPT;
    T acc = T::identity();
    for (int k = 0; k < SCAN_IPT; ++k)
        if (first + k < n) acc = T::combine(acc, load(first + k));
    T total = block_inclusive_scan(acc, shared);
    if (threadIdx.x == blockDim.x - 1) T::store(agg, blockIdx.x, total);
}

// Block-wide sum of one value per thread (tree in shared memory); the total is returned to
// thread 0.  Fixed order, so repeated runs give identical sums.
__device__ inline real block_sum(real mine, real* shared)
{
    shared[threadIdx.x] = mine;
    __syncthreads();
    for (int half = blockDim.x / 2; half > 0; half >>= 1) {
        if (threadIdx.x < half) shared[threadIdx.x] += shared[threadIdx.x + half];
        __syncthreads();
    }
    real total = shared[0];
    __syncthreads();
    return total;
}
