"""Run the CUDA kernel sources of engine/regression/backends/cuda/ on the CPU (no GPU, no CUDA runtime).

``Module(code, options)`` stands where cupy.RawModule stands: the source is compiled unchanged by
g++ with cuda_on_cpu.h forced in front, into a shared library (cached by the hash of source and
options), with a C wrapper per ``extern "C" __global__`` entry point that unpacks an argument
array as cuLaunchKernel does.  ``Module.get_function(name)`` returns a kernel called as CuPy's:
``kernel(grid, block, args)``.

Arguments are checked against the kernel's parameter types before the launch (the emulator's
addition to what a GPU would do): arrays must be C-contiguous with the pointee's element type,
scalars must be NumPy scalars of the parameter's exact type.  A mismatch raises TypeError
naming the kernel and the parameter.  ``schedule(name)`` sets the order in which a block's
threads run between barriers ("forward", "reverse", "interleaved"): a kernel whose results
change with it has a data race.  With SURVSCAN_EMULATOR_ASAN=1 the kernels are built with
AddressSanitizer (the process must preload libasan; tests/engine/regression/backends/test_cuda_emulator.py does).  See
cuda_on_cpu.h for what the emulation does not model.
"""
from __future__ import annotations

import contextlib
import ctypes
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

HEADER = Path(__file__).with_name("cuda_on_cpu.h")
CXX = shutil.which("g++") or shutil.which("c++")
_ENTRY = re.compile(r'extern\s+"C"\s+__global__\s+void\s+(\w+)\s*\(')
_CACHE = Path(tempfile.gettempdir()) / "survscan-cuda-emulator"
_KIND = {"f": "floating", "i": "signed integer", "u": "unsigned integer"}
SCHEDULES = ("forward", "reverse", "interleaved")
_schedule = [0]


@contextlib.contextmanager
def schedule(name: str):
    """Run the threads of every block in this order between barriers, inside the block."""
    saved, _schedule[0] = _schedule[0], SCHEDULES.index(name)
    try:
        yield
    finally:
        _schedule[0] = saved


class EmulatorError(RuntimeError):
    """A launch the emulator refused or that failed (e.g. barrier divergence)."""


def _build(code: str, options: tuple[str, ...]) -> tuple[ctypes.CDLL, list[str]]:
    if CXX is None:
        raise EmulatorError("no C++ compiler (g++) to build the CUDA emulator")
    flags = [o for o in options if o.startswith(("-I", "-D"))]
    if os.environ.get("SURVSCAN_EMULATOR_ASAN") == "1":      # see test_cuda_emulator.py
        flags += ["-fsanitize=address", "-fno-omit-frame-pointer"]
    names = _ENTRY.findall(code)
    key = hashlib.sha256("\0".join([code, *flags, HEADER.read_text()]).encode()).hexdigest()[:20]
    lib = _CACHE / f"{key}.so"
    if not lib.exists():
        _CACHE.mkdir(parents=True, exist_ok=True)
        wrappers = "".join(
            f'extern "C" __attribute__((visibility("default"))) const char* emu_launch_{n}('
            f"unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, "
            f"void** args, unsigned order) {{ return emu::launch({n}, dim3{{gx, gy, gz}}, "
            f"dim3{{bx, by, bz}}, args, order); }}\n"
            f'extern "C" __attribute__((visibility("default"))) const char* '
            f"emu_signature_{n}() {{ static const std::string s = emu::signature({n}); "
            f"return s.c_str(); }}\n" for n in names)
        src = _CACHE / f"{key}.cpp"
        src.write_text(code + "\n" + wrappers)
        tmp = lib.with_suffix(f".{os.getpid()}.tmp")
        cmd = [CXX, "-std=c++17", "-O1", "-g0", "-U_FORTIFY_SOURCE", "-fPIC", "-shared", "-fvisibility=hidden",
               "-x", "c++", "-include", str(HEADER), *flags, "-o", str(tmp), str(src)]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0:
            raise EmulatorError(f"g++ could not compile the kernels:\n{done.stderr}")
        tmp.replace(lib)            # atomic: parallel test workers may build the same library
    return ctypes.CDLL(str(lib)), names


class Module:
    """cupy.RawModule's role: the kernels of one source, compiled for the CPU."""

    def __init__(self, code: str, options=()):
        self._lib, self.names = _build(code, tuple(options))

    def get_function(self, name: str) -> "Kernel":
        if name not in self.names:
            raise EmulatorError(f"no extern \"C\" __global__ function {name!r} in the module")
        return Kernel(self._lib, name)


class Kernel:
    """One kernel; ``kernel(grid, block, args)`` launches it on the CPU, synchronously."""

    def __init__(self, lib: ctypes.CDLL, name: str):
        self.name = name
        self._launch = getattr(lib, f"emu_launch_{name}")
        self._launch.restype = ctypes.c_char_p
        self._launch.argtypes = ([ctypes.c_uint] * 6 + [ctypes.POINTER(ctypes.c_void_p)]
                                 + [ctypes.c_uint])
        sig = getattr(lib, f"emu_signature_{name}")
        sig.restype = ctypes.c_char_p
        self.params = sig().decode().split()

    def __call__(self, grid, block, args, shared_mem=0, stream=None):
        keep = self.check(args)
        pointers = (ctypes.c_void_p * len(keep))(*[ctypes.addressof(k) for k in keep])
        g, b = _dim3(grid, GRID_MAX), _dim3(block, BLOCK_MAX)
        if b[0] * b[1] * b[2] > THREADS_MAX:
            raise EmulatorError(f"{self.name}: {b} is more than {THREADS_MAX} threads a block")
        error = self._launch(*g, *b, pointers, _schedule[0])
        if error:
            raise EmulatorError(f"{self.name}: {error.decode()}")

    def check(self, args) -> list:
        """The arguments as ctypes objects, or TypeError where one does not fit its parameter."""
        if len(args) != len(self.params):
            raise TypeError(f"{self.name}: {len(args)} arguments for {len(self.params)} "
                            "parameters")
        return [self._argument(i, code, a) for i, (code, a) in enumerate(zip(self.params, args))]

    def _argument(self, i, code, a):
        """A ctypes object holding argument i as the kernel reads it (value or pointer)."""
        if code.startswith("*"):
            arr = getattr(a, "_emulated_device", None)
            if arr is None:
                raise TypeError(f"{self.name}: parameter {i} is a pointer; pass a device array, "
                                f"not {type(a).__name__}")
            _check_dtype(self.name, i, code[1:], arr.dtype, "array")
            if not arr.flags.c_contiguous:
                raise TypeError(f"{self.name}: parameter {i}: the array is not contiguous")
            return ctypes.c_void_p(arr.ctypes.data)
        if not isinstance(a, np.generic):
            raise TypeError(f"{self.name}: parameter {i} ({code}): pass a NumPy scalar of the "
                            f"exact type, not {type(a).__name__}")
        _check_dtype(self.name, i, code, a.dtype, "scalar")
        buf = (ctypes.c_char * a.dtype.itemsize).from_buffer_copy(a.tobytes())
        return buf


def _check_dtype(name, i, code, dtype, what):
    kind, size = code[0], int(code[1:])
    ok = dtype.itemsize == size and (
        (kind == "f" and dtype.kind == "f") or (kind == "i" and dtype.kind == "i")
        or (kind == "u" and dtype.kind in "ub"))
    if not ok:
        raise TypeError(f"{name}: parameter {i} expects {_KIND[kind]} of {size} bytes; "
                        f"got a {what} of {dtype}")


GRID_MAX = (2 ** 31 - 1, 65535, 65535)     # a CUDA device's limits (compute capability 9.0)
BLOCK_MAX = (1024, 1024, 64)
THREADS_MAX = 1024


def _dim3(d, limits=None):
    d = (d,) if np.isscalar(d) else tuple(d)
    d = tuple(int(v) for v in d) + (1,) * (3 - len(d))
    if min(d) < 1:
        raise EmulatorError(f"launch dimensions must be positive, got {d}")
    if limits is not None and any(v > m for v, m in zip(d, limits)):
        raise EmulatorError(f"launch dimensions {d} exceed the device's {limits}")
    return d
