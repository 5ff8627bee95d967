"""Shared pytest configuration: the import path of the support modules, the hypothesis profile,
the GPU/emulator fixture and a few data fixtures.  The markers (gpu, slow, browser) are declared
once, in pyproject.toml.

Tests mirror the code: tests/engine/<family>/, tests/app/<folder>/, tests/browser/ (Chromium),
tests/bench/; tests/support/ holds the oracles, the model contract and the CUDA emulator,
importable by name (``import oracles``) from any test."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # `import engine` from the repository root
    sys.path.insert(0, str(ROOT))
SUPPORT = Path(__file__).resolve().parent / "support"
if str(SUPPORT) not in sys.path:  # `import oracles`, `from cuda_emulator import ...`
    sys.path.insert(0, str(SUPPORT))

try:
    from hypothesis import settings

    settings.register_profile("survscan", deadline=None, derandomize=True, print_blob=True)
    settings.load_profile("survscan")
except ImportError:  # pragma: no cover
    pass


def pytest_configure(config):
    """In the main process, before any xdist worker starts: import ArviZ once.  Its first
    import of the day writes a stamp file in ~/.cache/arviz through one fixed temporary name,
    and two workers importing it at once on a fresh machine raced for that name: one of them
    failed to collect its test module with FileNotFoundError (arviz-devs/arviz#2530, open in
    0.23.4).  Once the stamp is today's, later imports only read it."""
    if hasattr(config, "workerinput"):
        return
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # its once-a-day FutureWarning about version 1
        import arviz  # noqa: F401


def _no_device_reason():
    """Why the GPU backends cannot run on a device here, or None when they can."""
    from engine.core.device import device_count, has_cupy

    if not has_cupy():
        return "CuPy is not installed (pip install 'survscan[gpu]'): the GPU backend cannot run"
    if device_count() < 1:
        return "CuPy is installed but sees no CUDA device: the GPU backend cannot run"
    return None


@pytest.fixture(scope="module", params=[pytest.param("device", marks=pytest.mark.gpu),
                                        pytest.param("emulator", marks=pytest.mark.slow)])
def where(request):
    """Where a GPU backend runs: the CUDA device (marked gpu, skipped without one) or the CPU
    emulator of its kernels (tests/support/cuda_emulator, which clears every backend's kernel
    cache on entry and exit; marked slow: `make test` runs it, `make test-fast` leaves the
    g++-built kernels out)."""
    if request.param == "device":
        reason = _no_device_reason()
        if reason:
            pytest.skip(reason)
        yield "device"
        return
    if shutil.which("g++") is None:
        pytest.fail("the CUDA emulator needs g++ (make test installs it)")
    from cuda_emulator.cupy_on_cpu import installed
    with installed():
        yield "emulator"


def pytest_collection_modifyitems(items):
    """The order that keeps both workers of `-n 2 --dist worksteal` busy: xdist hands each
    worker a contiguous half of the collected tests and steals from the end of a half.  The
    browser tests open the second half: its worker runs them one after another beside the
    first worker's computing tests, where at the end of a half the two workers took them two at
    once (two served apps and two Chromiums on 2 cores, slowing each other).  The long
    AddressSanitizer run (test_cuda_emulator.py) keeps its place late in the first half: its
    child process loads the Numba kernels that the tests before it compiled and cached, where
    run first in a fresh clone it compiled them all again beside both workers (69 s against
    15 s)."""
    browser = [item for item in items if item.get_closest_marker("browser")]
    rest = [item for item in items if not item.get_closest_marker("browser")]
    cut = len(items) // 2
    items[:] = rest[:cut] + browser + rest[cut:]


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    """Keep each phase's report on the test (``item.rep_call``): a fixture's teardown can then
    tell whether its test failed (the browser fixtures print the server's log)."""
    report = yield
    setattr(item, f"rep_{report.when}", report)
    return report


@pytest.fixture(scope="session")
def rossi() -> pd.DataFrame:
    df = pd.read_csv(ROOT / "sample_data" / "rossi.csv")
    assert df.shape == (432, 9)
    return df


@pytest.fixture(scope="session")
def rossi_r_weights() -> pd.DataFrame:
    """rossi with the id (1..432) and case weights w = 0.5 + ((id - 1) %% 7) / 4 that the R
    scripts of tests/data give it (weights that are not counts); its own copy, so that a
    module may name its variant of it ``rossi``."""
    r = pd.read_csv(ROOT / "sample_data" / "rossi.csv")
    r["id"] = np.arange(1, len(r) + 1)
    return r.assign(w=0.5 + ((r["id"] - 1) % 7) / 4)


@pytest.fixture(scope="session")
def dask_client():
    """A two-worker Dask LocalCluster in this process (threads), shared by the session."""
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                       dashboard_address=":0")
    client = distributed.Client(cluster)
    yield client
    client.close()
    cluster.close()
