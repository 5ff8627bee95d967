"""engine.per_sd: coefficients times their covariate's population SD, read from the sparse
columns (no dense copy) and equal to NumPy's std of the dense matrix."""
import numpy as np
import pandas as pd
import scipy.sparse as sp

import engine
from engine.inference.per_sd import column_sd


def test_sparse_sds_equal_numpys_dense_ones():
    rng = np.random.default_rng(2)
    dense = rng.normal(1e4, 3.0, (500, 4))          # a large mean over a small spread
    dense[:, 1] *= rng.random(500) < 0.1            # mostly zero
    dense[:, 2] = 0.0                               # empty
    dense[:, 3] = 7.0                               # constant
    np.testing.assert_allclose(column_sd(sp.csc_matrix(dense)), dense.std(axis=0),
                               rtol=1e-12, atol=1e-12)


def test_per_sd_scales_a_fits_coefficients(rossi):
    cohort = engine.Cohort.from_frame(rossi, "week", "arrest", covariates=["fin", "age", "prio"])
    coef = engine.fit(cohort).coef
    scaled = engine.per_sd(cohort, coef)
    want = coef * rossi[["fin", "age", "prio"]].to_numpy(float).std(axis=0)
    pd.testing.assert_series_equal(scaled, want, rtol=1e-12, check_names=False)
