"""Shared pytest configuration: markers, the hypothesis profile, and a few data fixtures."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # `import engine` from the repository root
    sys.path.insert(0, str(ROOT))
TESTS = Path(__file__).resolve().parent
if str(TESTS) not in sys.path:  # `import oracles`
    sys.path.insert(0, str(TESTS))

try:
    from hypothesis import settings

    settings.register_profile("survscan", deadline=None, derandomize=True, print_blob=True)
    settings.load_profile("survscan")
except ImportError:  # pragma: no cover
    pass


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs CuPy and a CUDA device")
    config.addinivalue_line("markers", "slow: takes more than a few seconds")
    config.addinivalue_line("markers", "browser: drives the Panel app in a headless browser")


@pytest.fixture(scope="session")
def rossi() -> pd.DataFrame:
    df = pd.read_csv(ROOT / "sample_data" / "rossi.csv")
    assert df.shape == (432, 9)
    return df


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
