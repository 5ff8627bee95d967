"""The null model's h2 and sigma2 (engine/gwas/heritability.py) on both backends: the CPU's
one-pass Numba sums against the likelihood written here from its definition (and its slope
against the complex-step derivative of that likelihood), and the array-module path on the GPU
(the device, or the CUDA emulator: the ``where`` fixture) equal to the CPU to 1e-10, for
``estimate`` directly and inside ``gwas.scan`` (REML and ML)."""
import numpy as np
import pandas as pd
import pytest

from engine import gwas
from engine.gwas import heritability
from gwas_oracles import random_bed, random_traits, standardized


def eigen_problem(n=90, t=300, seed=5):
    """S (n,) of a random kinship and rotated traits UY (n x t) drawn with h2 over [0, 1],
    plus traits at the ends: pure noise (h2 0), all kinship (h2 1), and a zero-free mix."""
    rng = np.random.default_rng(seed)
    G = rng.standard_normal((n, 3 * n))
    S = np.linalg.eigvalsh(G @ G.T * (n / np.trace(G @ G.T)))
    h2 = np.concatenate([rng.uniform(0, 1, t - 3), [0.0, 1.0, 0.5]])
    UY = np.sqrt(np.outer(S, h2) + (1 - h2)) * rng.standard_normal((n, t))
    return S, UY


def nll_definition(h2, S, UY, n_eff):
    """Per trait: 1/2 [sum_k log d_k + n_eff (log(2 pi r / n_eff) + 1)], r = sum UY^2 / d,
    d = h2 S + 1 - h2; complex h2 allowed (for the complex-step derivative)."""
    d = np.outer(S, h2) + (1 - h2)
    r = (UY * UY / d).sum(axis=0)
    return 0.5 * (np.log(d).sum(axis=0) + n_eff * (np.log(2 * np.pi * r / n_eff) + 1))


def test_cpu_likelihood_and_slope_equal_their_definitions():
    S, UY = eigen_problem()
    n_eff = len(S) - 1
    h2 = np.random.default_rng(6).uniform(0, 0.99999, UY.shape[1])     # two halves of traits
    Y2 = (UY * UY).T.copy()                                            # trait-major
    np.testing.assert_allclose(heritability.negative_loglik(h2, S, Y2, n_eff),
                               nll_definition(h2, S, UY, n_eff), rtol=1e-12)
    step = 1e-30
    derivative = nll_definition(h2 + 1j * step, S, UY, n_eff).imag / step
    np.testing.assert_allclose(heritability.slope(h2, S, Y2, n_eff), derivative,
                               rtol=1e-10, atol=1e-10 * np.abs(derivative).max())


def test_estimate_on_the_gpu_equals_the_cpu(where):
    import cupy

    S, UY = eigen_problem()
    h2, sigma2 = heritability.estimate(S, UY, len(S) - 1)
    on_gpu = heritability.estimate(S, UY, len(S) - 1, xp=cupy)
    assert all(type(a) is np.ndarray for a in on_gpu)
    np.testing.assert_allclose(on_gpu[0], h2, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(on_gpu[1], sigma2, rtol=1e-10)
    assert (h2 == 0).any() and (h2 == heritability.H2_MAX).any()       # both ends reached
    assert ((h2 > 0.05) & (h2 < 0.95)).sum() > 100


@pytest.fixture(scope="module")
def scan_problem(tmp_path_factory):
    prefix, values = random_bed(tmp_path_factory.mktemp("gwas_h2"), n=70, m=40, seed=41)
    pheno, covar = random_traits(standardized(values), t=8, seed=42)
    return prefix, pheno, covar


@pytest.mark.parametrize("method", ["reml", "ml"])
def test_scan_null_model_on_the_gpu_equals_the_cpu(scan_problem, where, method):
    prefix, pheno, covar = scan_problem
    runs = [gwas.scan(bed=prefix, pheno=pheno, covar=covar, kinship="loco", backend=backend,
                      h2_method=method) for backend in ("cpu", "gpu")]
    cpu, gpu = runs
    assert cpu.h2.shape == (8, 2) and cpu.h2.to_numpy().std() > 0.05
    pd.testing.assert_frame_equal(gpu.h2, cpu.h2, check_exact=False, rtol=1e-10, atol=1e-12)
    pd.testing.assert_frame_equal(gpu.sigma2, cpu.sigma2, check_exact=False, rtol=1e-10)


def test_a_traits_h2_does_not_depend_on_the_others_and_uy_is_left_alone():
    S, UY = eigen_problem()
    before = UY.copy()
    h2, sigma2 = heritability.estimate(S, UY, len(S) - 1)
    for j in (5, 297):
        column = UY[:, [j]]                # C- and F-contiguous at once
        alone = heritability.estimate(S, column, len(S) - 1)
        np.testing.assert_allclose([a[0] for a in alone], [h2[j], sigma2[j]], rtol=1e-12,
                                   atol=1e-14)
        np.testing.assert_array_equal(column, before[:, [j]])
    np.testing.assert_array_equal(UY, before)
