"""What this machine can run: CUDA devices seen by CuPy and the backends available.

The app's and the benchmarks' probes go through here.  CuPy is an optional extra, imported only
when asked, never by ``import engine``.
"""
from __future__ import annotations

import importlib.util
import sys


def cupy_or_error():
    """CuPy, or a ValueError that says how to get it."""
    try:
        import cupy
    except ImportError as err:
        raise ValueError("backend='gpu' needs CuPy and a CUDA device: install the extra "
                         "(pip install 'survscan[gpu]', i.e. cupy-cuda13x) or use "
                         "backend='cpu' or 'auto'.") from err
    return cupy


def cupy_on_device(rows: int | None = None, unit: str = "rows",
                   instead: str = "backend='cpu' or 'auto'"):
    """CuPy for a GPU backend's constructor, or a ValueError saying what to use ``instead``:
    without CuPy, without a device, or with ``rows`` past the int32 row indices every kernel
    uses (``unit`` names them in the message)."""
    cp = cupy_or_error()
    if device_count() < 1:
        raise ValueError(f"backend='gpu': CuPy sees no CUDA device; use {instead}.")
    if rows is not None and rows >= 2 ** 31:
        raise ValueError(f"backend='gpu' indexes {unit} with int32; {rows:,} {unit} are too "
                         "many, use backend='cpu'.")
    return cp


def has_cupy() -> bool:
    """CuPy is installed (a device may still be missing)."""
    return sys.modules.get("cupy") is not None or importlib.util.find_spec("cupy") is not None


def device_count() -> int:
    """CUDA devices CuPy sees; 0 without CuPy, without a driver or on any CUDA error."""
    try:
        import cupy
    except ImportError:
        return 0
    try:
        return int(cupy.cuda.runtime.getDeviceCount())
    except (cupy.cuda.runtime.CUDARuntimeError, RuntimeError, OSError):
        return 0


def description() -> str:
    """One line naming the first CUDA device, or saying why there is none."""
    if not has_cupy():
        return "no GPU: CuPy is not installed (pip install 'survscan[gpu]')"
    if device_count() == 0:
        return "no GPU: CuPy sees no CUDA device"
    import cupy

    props = cupy.cuda.runtime.getDeviceProperties(0)
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    return f"{name}, {props['totalGlobalMem'] / 2 ** 30:.0f} GiB"


def available_backends() -> tuple[str, ...]:
    """The ``backend=`` values that can run here: "cpu" always, "gpu" with CuPy and a device."""
    return ("cpu", "gpu") if device_count() > 0 else ("cpu",)
