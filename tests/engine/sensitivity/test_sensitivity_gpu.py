"""The sensitivity grid on the GPU backend (the device, or its kernels in the CUDA emulator)
equals the same grid on the CPU backend to 1e-8: subgroups and follow-up ends as weight
vectors on one sorted layout held on the device, adjustment sets as fixed columns, L1 and L2
penalties, strata, Efron ties."""
import numpy as np

import engine


def _grid(backend):
    # 400 rows: one tile of the scans, as the 800 rows were (half the emulator's time)
    cohort = engine.simulate(400, 12, density=0.3, seed=7)
    rng = np.random.default_rng(7)
    site = rng.integers(0, 3, cohort.n)
    top = float(np.max(np.abs(engine.gradient(cohort, np.zeros(cohort.p))[1:])))
    return engine.sensitivity_study(cohort, "x0", vary={
        "subgroup": {"all": None, "random 70%": rng.random(cohort.n) < 0.7},
        "follow_up": [None, float(np.median(cohort.time))],
        "covariates": {"first 4": cohort.names[:4], "all": None},
        "penalty": [engine.L1(0.3 * top), engine.L2(5.0)],
        "strata": {"none": None, "site": site},
    }, base={"backend": backend, "tol": 1e-12, "ties": "efron"})


def test_gpu_grid_equals_cpu_grid(where):
    cpu = _grid("cpu").table
    gpu = _grid("gpu").table
    assert len(gpu) == len(cpu) == 32
    assert (gpu["error"] == "").all(), gpu["error"][gpu["error"] != ""].iloc[0]
    for column in ("estimate", "se", "p"):
        np.testing.assert_allclose(gpu[column], cpu[column], rtol=1e-8, atol=1e-10,
                                   err_msg=column)
    assert (gpu[["n", "events"]].to_numpy() == cpu[["n", "events"]].to_numpy()).all()
