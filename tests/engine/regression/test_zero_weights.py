"""A row of weight zero is absent: cross-validation and the bootstrap rely on it."""
import numpy as np
import pytest

import engine

COLS = ["fin", "age", "race", "wexp", "mar", "paro", "prio"]


@pytest.mark.parametrize("ties", ["breslow", "efron"])
@pytest.mark.parametrize("strata", [None, "race"])
def test_zero_weight_rows_equal_dropped_rows(ties, strata):
    df = engine.datasets.load_rossi()
    w = np.ones(len(df))
    w[::3] = 0.0
    covs = [c for c in COLS if c != strata]
    weighted = engine.Cohort.from_frame(df.assign(w=w), time="week", event="arrest",
                                        covariates=covs, strata=strata, weights="w")
    dropped = engine.Cohort.from_frame(df[w > 0], time="week", event="arrest",
                                       covariates=covs, strata=strata)
    a, b = engine.fit(weighted, ties=ties), engine.fit(dropped, ties=ties)
    np.testing.assert_allclose(a.coef, b.coef, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(a.se, b.se, rtol=1e-10)
    assert a.loglik == pytest.approx(b.loglik, rel=1e-13)
