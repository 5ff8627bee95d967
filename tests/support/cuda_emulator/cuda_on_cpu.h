// CUDA kernels run on the CPU, for tests on machines without a GPU.
//
// The kernel sources of engine/regression/backends/cuda/ are compiled unchanged as C++ with this header
// forced in front (g++ -include).  A launch runs the grid's blocks one after another; the
// threads of a block are cooperative fibers (ucontext), so __syncthreads() is a real barrier:
// every thread of the block runs up to it before any goes on, and the block's __shared__ arrays
// (static here, one copy, reused by the next block) are shared by exactly those threads.  Every
// thread gets its own copy of the kernel's arguments, as on a device.
//
// What it checks besides the arithmetic: launch dimensions within a device's limits (in the
// Python launcher); a barrier that not every thread of a block reaches
// (divergence, undefined on a GPU) fails the launch; emu_signature_<kernel> describes the
// kernel's parameters so the Python side can refuse an argument whose C type does not match
// (a float64 array for a float*, an int64 scalar for an int).
// Fibers run between barriers in one of three orders (forward, reverse, even-then-odd thread
// ids): a kernel that reads another thread's write without a barrier between them (a data race)
// gives results that depend on the order, which the tests compare.
// What it cannot check: races within a warp-synchronous idiom, memory-model effects, timings.
//
// A fiber starts on its own stack through makecontext/swapcontext once per process (both save
// the signal mask: a system call each); after that every switch is _setjmp/_longjmp, which
// saves none, so a barrier costs a few hundred nanoseconds per thread.  A fiber that finishes
// a block's kernel parks and runs the next block's from there (starting a fiber per thread and
// block cost three system calls each: a third of an emulated run's time was the kernel's).
#pragma once

#include <math.h>
#include <setjmp.h>
#include <stdint.h>
#include <ucontext.h>

#if defined(__SANITIZE_ADDRESS__)
#include <dlfcn.h>
#include <sanitizer/common_interface_defs.h>
#endif

#include <functional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

struct dim3 {
    unsigned x = 1, y = 1, z = 1;
};

namespace emu {

inline dim3 thread_idx, block_idx, block_dim, grid_dim;

struct Fiber {
    ucontext_t context;     // only to start the fiber on its stack
    jmp_buf resume;         // where it waits in __syncthreads()
    std::vector<char> stack;
    dim3 idx;
    bool started = false, done = false;
};

inline ucontext_t start_from;
inline jmp_buf scheduler;
inline std::vector<Fiber> fibers;
inline Fiber* current = nullptr;
inline const std::function<void()>* body = nullptr;
inline unsigned arrived = 0, finished = 0, order = 0;
inline unsigned long long generation = 0;
constexpr size_t STACK_BYTES = 256 * 1024;

// AddressSanitizer builds (tests/support/cuda_emulator: SURVSCAN_EMULATOR_ASAN=1) are told of every
// switch between the scheduler's stack and a fiber's, so its stack bookkeeping stays right.
#if defined(__SANITIZE_ADDRESS__)
inline void* fake_stack = nullptr;
inline const void* main_bottom = nullptr;
inline size_t main_size = 0;
// AddressSanitizer's _longjmp first unpoisons the frames a jump abandons, asking the kernel for
// the signal stack each time (a sigaltstack system call per switch: a third of a sanitised
// run's time).  A switch between fibers abandons no frame (each side resumes where it stopped),
// so here the switches call glibc's own _longjmp.
inline void (*const jump)(jmp_buf, int) = [] {
    void* libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
    auto own = libc ? reinterpret_cast<void (*)(jmp_buf, int)>(dlsym(libc, "_longjmp")) : nullptr;
    return own ? own : &_longjmp;
}();
inline void to_fiber(Fiber& f)
{
    __sanitizer_start_switch_fiber(&fake_stack, f.stack.data(), f.stack.size());
}
inline void to_scheduler() { __sanitizer_start_switch_fiber(nullptr, main_bottom, main_size); }
inline void arrived_in_fiber() { __sanitizer_finish_switch_fiber(nullptr, &main_bottom, &main_size); }
inline void arrived_in_scheduler() { __sanitizer_finish_switch_fiber(fake_stack, nullptr, nullptr); }
#else
inline void (*const jump)(jmp_buf, int) = &_longjmp;
inline void to_fiber(Fiber&) {}
inline void to_scheduler() {}
inline void arrived_in_fiber() {}
inline void arrived_in_scheduler() {}
#endif

// Park the current fiber: back to the scheduler until resume() picks it up again.
inline void park()
{
    if (_setjmp(current->resume) == 0) {
        to_scheduler();
        jump(scheduler, 1);
    }
    arrived_in_fiber();
}

// A fiber's whole life: the kernel of each block it is given, parked in between.
inline void fiber_entry()
{
    arrived_in_fiber();
    for (;;) {
        (*body)();
        current->done = true;
        ++finished;
        park();
    }
}

inline unsigned threads_per_block() { return block_dim.x * block_dim.y * block_dim.z; }

inline void syncthreads()
{
    const unsigned long long mine = generation;
    if (++arrived == threads_per_block()) {
        arrived = 0;
        ++generation;
        return;
    }
    while (generation == mine) park();
}

// Run fiber f until it waits at a barrier or finishes its block.
inline void resume(Fiber& f)
{
    current = &f;
    thread_idx = f.idx;
    if (_setjmp(scheduler) != 0) {
        arrived_in_scheduler();
        return;
    }
    to_fiber(f);
    if (f.started) jump(f.resume, 1);
    f.started = true;
    swapcontext(&start_from, &f.context);
}

// One block: every thread a fiber (parked ones reused, new ones made), resumed round-robin
// until all have finished.  Returns an error message, or nullptr; after an error the fibers are
// dropped, since some stopped inside the failed kernel.
inline const char* run_block(const std::function<void()>& kernel)
{
    const unsigned count = threads_per_block();
    if (fibers.size() < count) fibers.resize(count);   // parked fibers keep their stacks' buffers
    body = &kernel;
    arrived = finished = 0;
    for (unsigned t = 0; t < count; ++t) {
        Fiber& f = fibers[t];
        f.done = false;
        f.idx.x = t % block_dim.x;
        f.idx.y = (t / block_dim.x) % block_dim.y;
        f.idx.z = t / (block_dim.x * block_dim.y);
        if (f.started) continue;
        if (f.stack.empty()) f.stack.resize(STACK_BYTES);
        getcontext(&f.context);
        f.context.uc_stack.ss_sp = f.stack.data();
        f.context.uc_stack.ss_size = f.stack.size();
        f.context.uc_link = nullptr;
        makecontext(&f.context, fiber_entry, 0);
    }
    const unsigned evens = (count + 1) / 2;
    for (bool running = true; running;) {
        running = false;
        for (unsigned s = 0; s < count; ++s) {
            const unsigned t = order == 1 ? count - 1 - s
                             : order == 2 ? (s < evens ? 2 * s : 2 * (s - evens) + 1) : s;
            Fiber& f = fibers[t];
            if (f.done) continue;
            resume(f);
            if (!f.done) running = true;
            if (finished > 0 && arrived > 0) {
                for (Fiber& g : fibers) g.started = false;
                return "barrier divergence: a thread returned while others wait in __syncthreads()";
            }
        }
    }
    return nullptr;
}

template <class... A, size_t... I>
void call(void (*kernel)(A...), void** args, std::index_sequence<I...>)
{
    kernel(*static_cast<std::remove_cv_t<std::remove_reference_t<A>>*>(args[I])...);
}

// The grid's blocks in order, x fastest; threads resumed in ``schedule`` order (0 forward,
// 1 reverse, 2 even then odd).  Returns an error message, or nullptr.
template <class... A>
const char* launch(void (*kernel)(A...), dim3 grid, dim3 block, void** args, unsigned schedule)
{
    order = schedule;
    grid_dim = grid;
    block_dim = block;
    const std::function<void()> one_thread = [&] {
        call(kernel, args, std::index_sequence_for<A...>{});
    };
    for (unsigned z = 0; z < grid.z; ++z)
        for (unsigned y = 0; y < grid.y; ++y)
            for (unsigned x = 0; x < grid.x; ++x) {
                block_idx.x = x;
                block_idx.y = y;
                block_idx.z = z;
                if (const char* error = run_block(one_thread)) return error;
            }
    return nullptr;
}

template <class T>
std::string scalar_code()
{
    const char kind = std::is_floating_point_v<T> ? 'f' : (std::is_signed_v<T> ? 'i' : 'u');
    return kind + std::to_string(sizeof(T));
}

template <class T>
std::string param_code()
{
    if constexpr (std::is_pointer_v<T>)
        return "*" + scalar_code<std::remove_cv_t<std::remove_pointer_t<T>>>();
    else
        return scalar_code<std::remove_cv_t<T>>();
}

// "*f8 i8 u1 ...": one code per parameter, '*' for a pointer to that element type.
template <class... A>
std::string signature(void (*)(A...))
{
    std::string out;
    ((out += param_code<A>() + " "), ...);
    return out;
}

}  // namespace emu

#define threadIdx emu::thread_idx
#define blockIdx emu::block_idx
#define blockDim emu::block_dim
#define gridDim emu::grid_dim
#define __syncthreads() emu::syncthreads()
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__ static

// atomicAdd: a block's fibers switch only at __syncthreads() and blocks run one after another,
// so a plain read-modify-write is atomic here, as the device's is.
template <class T>
inline T atomicAdd(T* address, T value)
{
    const T old = *address;
    *address = old + value;
    return old;
}
