"""bench gpu refuses cleanly where there is no CUDA device, and runs end to end on the emulator."""
import pytest

from bench.__main__ import main
from engine.core.device import device_count


@pytest.mark.skipif(device_count() > 0, reason="a CUDA device is present: the benchmark would run")
def test_refuses_without_a_device(tmp_path):
    with pytest.raises(SystemExit, match="no CUDA device"):
        main(["gpu", "--out", str(tmp_path)])
    assert not any(tmp_path.iterdir())


@pytest.mark.slow  # the GPU benchmark in the CUDA emulator
def test_runs_end_to_end_on_the_emulator(tmp_path):
    """The whole benchmark (both backends, graph and launch cycles, fits, the report) on tiny
    problems with the CPU emulator standing in for the device, so a lent GPU's time is not spent
    finding the benchmark's own bugs.  Its timings mean nothing; its numbers must agree."""
    from bench import gpu
    from cuda_emulator.cupy_on_cpu import installed
    with installed():
        record = gpu.run(sizes=(3000,), p=12, density=0.2, strata=(1, "N/2"), repeats=2,
                         out=str(tmp_path), cpu_ccd_max_n=2000)
    rows = record["rows"]
    assert [r["strata"] for r in rows] == [1, 1500]
    for r in rows:
        assert r["auto_max_abs_coef_diff"] < 1e-7
        assert r["cpu_ccd_fit_estimated"] and r["gpu_ccd_iter"] > 0
        assert r["cpu_ccd_fit_s"] == pytest.approx(r["cpu_cycle_s"] * r["gpu_ccd_iter"])
        assert r["gpu_cycle_s"] > 0 and r["gpu_launches_cycle_s"] > 0
    text = (tmp_path / "gpu_n3000_p12_d0.2.md").read_text()
    assert "CPU emulator" in text and "K = N/2 against K = 1" in text and "N=3,000:" in text


def test_gpu_only_rows_leave_the_cpu_columns_empty(tmp_path):
    """``--gpu-only`` (sizes whose CPU side would take the device's whole call): GPU cycles and
    fits measured, the CPU's left NaN in the JSON and the table, written after the row."""
    from bench import gpu
    from cuda_emulator.cupy_on_cpu import installed
    with installed():
        record = gpu.run(sizes=(2000,), p=8, density=0.3, strata=(1,), repeats=1,
                         out=str(tmp_path), cpu=False)
    (row,) = record["rows"]
    assert row["gpu_auto_fit_s"] > 0 and row["gpu_ccd_iter"] > 0
    assert row["cpu_cycle_s"] != row["cpu_cycle_s"] and row["cpu_auto_fit_s"] != row["cpu_auto_fit_s"]
    assert "| 2,000 | 1 | nan |" in (tmp_path / "gpu_n2000_p8_d0.3.md").read_text()
