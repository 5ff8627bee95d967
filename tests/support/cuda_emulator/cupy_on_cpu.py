"""A stand-in for the part of CuPy that engine/regression/backends/gpu*.py uses, on the CPU, for tests.

``installed()`` puts it in sys.modules as ``cupy`` (and ``cupyx.scipy.sparse``) for the duration
of a ``with`` block, so the unchanged CoxGpuBackend runs its host code here and its CUDA kernels
through the emulator of this package (cupy.RawModule -> cuda_emulator.Module).

Device arrays wrap NumPy arrays and keep CuPy's rules where a GPU would enforce them, so host
code that only works on a CPU fails here too:
- implicit conversion to NumPy raises (np.asarray, Numba, scipy on a device array), as in CuPy:
  use ``.get()``;
- a NumPy array mixed into device arithmetic or device functions raises TypeError;
- reductions return 0-d device arrays; float() / int() of a one-element array are allowed;
- kernel arguments are checked against the kernels' C parameter types (cuda_emulator.Kernel);
- stream capture (cupy.cuda.Stream.begin_capture / end_capture -> Graph.launch) records the
  kernel launches with their arguments as a CUDA graph does, device pointers and scalar values
  fixed at capture, and replays them: host code that rebinds an array or changes a scalar after
  capture gets stale results here as on a device.  Any other device operation during a capture
  raises (stricter than CuPy, which would capture element-wise kernels and refuse transfers).
Everything else is NumPy's arithmetic, so results equal the GPU's up to the order of additions.
"""
from __future__ import annotations

import contextlib
import sys
import types

import numpy as np
import scipy.sparse as host_sparse
from numpy.lib.mixins import NDArrayOperatorsMixin

from . import Module

_IMPLICIT = ("Implicit conversion to a NumPy array is not allowed. Please use `.get()` to "
             "construct a NumPy array explicitly.")
_capturing: list = []            # the launches recorded by the capture in progress, if any


def _not_capturing(what):
    if _capturing:
        raise RuntimeError(f"emulator: {what} during a stream capture (only kernel launches "
                           "may be captured)")


class ndarray(NDArrayOperatorsMixin):
    """A device array: a NumPy array only reachable through device operations or .get()."""

    __slots__ = ("_a",)

    def __init__(self, a: np.ndarray):
        self._a = a

    # -- what CuPy forbids ---------------------------------------------------------------
    def __array__(self, *args, **kwargs):
        raise TypeError(_IMPLICIT)

    # -- NumPy protocols: device in, device out ------------------------------------------------
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        _not_capturing(f"{ufunc.__name__}")
        if "out" in kwargs:
            kwargs["out"] = tuple(_unwrap(o) for o in kwargs["out"])
        return _wrap(getattr(ufunc, method)(*(_unwrap(x) for x in inputs), **kwargs))

    def __array_function__(self, func, types_, args, kwargs):
        _not_capturing(func.__name__)
        return _wrap(func(*_unwrap(args), **_unwrap(kwargs)))

    # -- attributes and methods used by the backend ------------------------------------------------
    _emulated_device = property(lambda self: self._a)
    shape = property(lambda self: self._a.shape)
    dtype = property(lambda self: self._a.dtype)
    size = property(lambda self: self._a.size)
    ndim = property(lambda self: self._a.ndim)
    T = property(lambda self: ndarray(self._a.T))

    def get(self, stream=None, order="C", out=None, blocking=True) -> np.ndarray:
        """A host copy, or the copy into ``out`` (a C-contiguous host array of the same shape
        and type, as CuPy asks of an asynchronous copy into pinned memory)."""
        _not_capturing("a device-to-host copy")
        if out is None:
            return self._a.copy()
        if isinstance(out, ndarray) or out.shape != self.shape or out.dtype != self.dtype \
                or not out.flags.c_contiguous:
            raise ValueError("get(out=): a C-contiguous NumPy array of the same shape and type")
        out[...] = self._a
        return out

    def set(self, host, stream=None):
        """Copy a host array of the same shape into this device array."""
        _not_capturing("a host-to-device copy")
        if isinstance(host, ndarray) or host.shape != self.shape:
            raise ValueError("set() takes a NumPy array of the same shape")
        if host.dtype != self.dtype:
            raise TypeError(f"set(): a {host.dtype} array into a {self.dtype} one")
        self._a[...] = host

    def __getitem__(self, key):
        return _wrap(self._a[_index(key)])

    def __setitem__(self, key, value):
        _not_capturing("an assignment")
        self._a[_index(key)] = _unwrap(value)

    def __len__(self):
        return len(self._a)

    def __iter__(self):
        return (ndarray(row) for row in self._a)

    def __float__(self):
        return float(self._a)

    def __int__(self):
        return int(self._a)

    def __bool__(self):
        return bool(self._a)

    def __repr__(self):
        return f"device{self._a!r}"

    def astype(self, dtype, copy=True):
        return ndarray(self._a.astype(dtype, copy=copy))

    def copy(self):
        return ndarray(self._a.copy())

    def fill(self, value):
        _not_capturing("fill")
        self._a.fill(value)

    def reshape(self, *shape):
        return ndarray(self._a.reshape(*shape))

    def ravel(self):
        return ndarray(self._a.ravel())

    def __getattr__(self, name):      # sum, max, min, any, all, mean, ...: device results
        if name.startswith("__"):
            raise AttributeError(name)
        method = getattr(self._a, name)
        return lambda *a, **k: _wrap(method(*_unwrap(a), **_unwrap(k)))


def _wrap(x):
    if isinstance(x, np.ndarray):
        return ndarray(x)
    if isinstance(x, np.generic):           # CuPy reductions give 0-d arrays
        return ndarray(np.asarray(x))
    if isinstance(x, tuple):
        return tuple(_wrap(v) for v in x)
    if isinstance(x, list):
        return [_wrap(v) for v in x]
    return x


def _unwrap(x):
    if isinstance(x, ndarray):
        return x._a
    if isinstance(x, np.ndarray):
        raise TypeError(f"Unsupported type {type(x)}: a NumPy array in device code "
                        "(cupy.asarray it first)")
    if isinstance(x, (tuple, list)):
        return type(x)(_unwrap(v) for v in x)
    if isinstance(x, dict):
        return {k: _unwrap(v) for k, v in x.items()}
    return x


def _index(key):
    """Indices may be device arrays, NumPy arrays (CuPy copies those up) or slices."""
    if isinstance(key, tuple):
        return tuple(_index(k) for k in key)
    return key._a if isinstance(key, ndarray) else key


# -- the cupy module -----------------------------------------------------------------------------
def asarray(a, dtype=None):
    _not_capturing("asarray")
    if isinstance(a, ndarray):
        return a if dtype is None or a.dtype == dtype else a.astype(dtype)
    return ndarray(np.array(a, dtype=dtype, copy=True))


def array(a, dtype=None, copy=True):
    return ndarray(np.array(_unwrap(a) if isinstance(a, ndarray) else a, dtype=dtype, copy=True))


def asnumpy(a):
    return a.get() if isinstance(a, ndarray) else np.asarray(a)


def _device_function(name):
    fn = getattr(np, name)

    def call(*args, **kwargs):
        _not_capturing(name)
        return _wrap(fn(*_unwrap(args), **_unwrap(kwargs)))
    call.__name__ = name
    return call


class _Runtime:
    class CUDARuntimeError(RuntimeError):
        pass

    @staticmethod
    def getDeviceCount() -> int:
        return 1

    @staticmethod
    def memGetInfo() -> tuple[int, int]:
        """(free, total) bytes of a pretend 80 GiB device (the arrays live in host memory)."""
        return 64 * 2 ** 30, 80 * 2 ** 30

    @staticmethod
    def driverGetVersion() -> int:
        return 0    # no CUDA driver: the kernels run on the CPU

    @staticmethod
    def runtimeGetVersion() -> int:
        return 0

    @staticmethod
    def getDeviceProperties(device: int) -> dict:
        return {"name": b"CPU emulator (tests/support/cuda_emulator)", "multiProcessorCount": 2,
                "totalGlobalMem": 80 * 2 ** 30}


class RawModule:
    """cupy.RawModule: the source compiled by the CPU emulator."""

    def __init__(self, code: str, options=(), **_):
        self._module = Module(code, options)

    def get_function(self, name):
        return _CapturableKernel(self._module.get_function(name))


class _CapturableKernel:
    """A kernel whose launches a stream capture records instead of running."""

    def __init__(self, kernel):
        self._kernel = kernel

    def __call__(self, grid, block, args, shared_mem=0, stream=None):
        if _capturing:
            self._kernel.check(args)
            _capturing[-1].append((self._kernel, grid, block, tuple(args)))
        else:
            self._kernel(grid, block, args)


class Graph:
    """cupy.cuda.Graph: the captured launches, replayed in order with the captured arguments."""

    def __init__(self, launches):
        self._launches = launches

    def launch(self, stream=None):
        _not_capturing("a graph launch")
        for kernel, grid, block, args in self._launches:
            kernel(grid, block, args)


class Event:
    """cupy.cuda.Event: work runs at once here, so every recorded event has completed."""

    def __init__(self, block=False, disable_timing=False, interprocess=False):
        self.recorded = False

    def record(self, stream=None):
        _not_capturing("an event record")
        self.recorded = True

    def synchronize(self):
        if not self.recorded:
            raise RuntimeError("emulator: synchronize() on an event never recorded")

    @property
    def done(self) -> bool:
        return True


class Stream:
    """cupy.cuda.Stream: work runs at once (synchronously); capture records launches."""

    def __init__(self, null=False, non_blocking=False, ptds=False):
        self._recording = None

    def wait_event(self, event):
        """Later work on this stream waits for ``event`` (recorded first, as CUDA asks)."""
        if not event.recorded:
            raise RuntimeError("emulator: wait_event() on an event never recorded")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def begin_capture(self, mode=None):
        if self._recording is not None:
            raise RuntimeError("the stream is already capturing")
        self._recording = []
        _capturing.append(self._recording)

    def end_capture(self) -> Graph:
        if self._recording is None:
            raise RuntimeError("the stream is not capturing")
        _capturing.remove(self._recording)
        graph, self._recording = Graph(self._recording), None
        return graph

    def is_capturing(self) -> bool:
        return self._recording is not None

    def synchronize(self):
        _not_capturing("a stream synchronisation")


def _cupy_module():
    mod = types.ModuleType("cupy")
    mod.__doc__ = __doc__
    mod.ndarray = ndarray
    mod.asarray, mod.array, mod.asnumpy, mod.RawModule = asarray, array, asnumpy, RawModule
    mod.cuda = types.SimpleNamespace(runtime=_Runtime, Stream=Stream, Graph=Graph,
                                     Event=Event)
    for name in ("zeros", "empty", "ones", "full", "arange", "linspace"):
        setattr(mod, name, _device_function(name))
    for name in ("empty_like", "zeros_like", "ascontiguousarray", "exp", "log", "sqrt", "where",
                 "multiply", "add", "subtract",
                 "stack", "concatenate", "sum", "outer", "abs", "maximum", "minimum", "cumsum",
                 "searchsorted", "dot", "isfinite", "all", "any", "bincount", "nonzero",
                 "isnan", "floor", "clip"):
        setattr(mod, name, _device_function(name))
    mod.__getattr__ = lambda name: getattr(np, name)       # dtypes: cupy.float64 is numpy's
    return mod


# -- cupyx.scipy.sparse --------------------------------------------------------------------------
class _SparseMatrix:
    """cupyx.scipy.sparse's csc/csr matrix: scipy's, with device arrays in and out."""

    def __init__(self, m):
        self._m = m

    shape = property(lambda self: self._m.shape)
    nnz = property(lambda self: self._m.nnz)
    T = property(lambda self: _SparseMatrix(self._m.T))
    indices = property(lambda self: ndarray(self._m.indices))
    indptr = property(lambda self: ndarray(self._m.indptr))

    @property
    def data(self):
        return ndarray(self._m.data)

    @data.setter
    def data(self, value):
        self._m.data = _unwrap(value)

    @property
    def has_canonical_format(self):
        return self._m.has_canonical_format

    @has_canonical_format.setter
    def has_canonical_format(self, value):
        """cupyx trusts the flag (sorted indices, no repeats) and skips its checks; here it
        is checked, so a matrix marked canonical that is not fails the emulator's tests."""
        m = self._m
        fresh = type(m)((m.data, m.indices, m.indptr), shape=m.shape)
        if value and not fresh.has_canonical_format:
            raise AssertionError("a sparse matrix marked canonical has unsorted or repeated "
                                 "indices")
        m.has_canonical_format = value

    def copy(self):
        return _SparseMatrix(self._m.copy())

    def tocsr(self):
        return _SparseMatrix(self._m.tocsr())

    def tocsc(self):
        return _SparseMatrix(self._m.tocsc())

    def toarray(self):
        return ndarray(self._m.toarray())

    def __getitem__(self, key):
        return _SparseMatrix(self._m[key])

    def __matmul__(self, other):
        if isinstance(other, _SparseMatrix):
            return _SparseMatrix(self._m @ other._m)
        return ndarray(np.asarray(self._m @ _unwrap(other)))


def csc_matrix(arg, shape=None):
    data, indices, indptr = arg
    for name, a in (("data", data), ("indices", indices), ("indptr", indptr)):
        if not isinstance(a, ndarray):
            raise TypeError(f"cupyx csc_matrix: {name} must be a device array")
    if indices.dtype != np.int32 or indptr.dtype != np.int32:
        raise TypeError("cupyx csc_matrix: indices and indptr must be int32")
    return _SparseMatrix(host_sparse.csc_matrix((data._a, indices._a, indptr._a), shape=shape))


def _cupyx_modules():
    cupyx = types.ModuleType("cupyx")
    cupyx.empty_pinned = np.empty          # pinned host memory: plain host memory here
    scipy_ = types.ModuleType("cupyx.scipy")
    sparse = types.ModuleType("cupyx.scipy.sparse")
    sparse.csc_matrix = csc_matrix
    cupyx.scipy, scipy_.sparse = scipy_, sparse
    return {"cupyx": cupyx, "cupyx.scipy": scipy_, "cupyx.scipy.sparse": sparse}


def _clear_kernel_caches():
    """Forget every GPU backend's compiled kernels (functools caches), so kernels built by the
    stand-in never serve a real device and the reverse."""
    import functools
    import importlib

    from engine.regression.backends import REGISTRY

    for (_, device), target in REGISTRY.items():
        if device != "gpu":
            continue
        module = importlib.import_module(f"engine.regression.backends.{target.split(':')[0]}")
        for value in vars(module).values():
            if isinstance(value, functools._lru_cache_wrapper):
                value.cache_clear()


@contextlib.contextmanager
def installed():
    """``import cupy`` (and cupyx.scipy.sparse) give the stand-in inside the block."""
    modules = {"cupy": _cupy_module(), **_cupyx_modules()}
    saved = {name: sys.modules.get(name) for name in modules}
    sys.modules.update(modules)
    _clear_kernel_caches()
    try:
        yield modules["cupy"]
    finally:
        _clear_kernel_caches()
        for name, mod in saved.items():
            if mod is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = mod
