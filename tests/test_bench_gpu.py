"""bench gpu refuses cleanly where there is no CUDA device (it cannot run on CPU machines)."""
import pytest

from bench.__main__ import main
from engine.backends.gpu import device_count


@pytest.mark.skipif(device_count() > 0, reason="a CUDA device is present: the benchmark would run")
def test_refuses_without_a_device(tmp_path):
    with pytest.raises(SystemExit, match="no CUDA device"):
        main(["gpu", "--out", str(tmp_path)])
    assert not any(tmp_path.iterdir())
