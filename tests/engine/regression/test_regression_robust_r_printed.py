"""Robust (Lin-Wei) standard errors against the values R's survival package prints for its own
help-page examples (tests/data/r_survival_robust.md): a marginal WLW model of bladder cancer
recurrences stratified by recurrence number with covariate x stratum interactions, and the
diabetic retinopathy eyes clustered by patient.  R prints 4-5 significant digits, so the
comparison is to half a unit of the last printed digit; the coefficients and model-based SEs
printed beside them are checked the same way."""
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import engine

DATA = Path(__file__).parents[2] / "data"

# coef, se(coef), robust se as printed by R (survival-Ex.Rout.save, coxph and diabetic examples)
BLADDER = {
    "rx": (-0.52598, 0.31583, 0.31524),
    "size": (0.06961, 0.10156, 0.08863),
    "number": (0.23818, 0.07588, 0.07459),
    "rx:enum=2": (-0.10633, 0.50424, 0.33396),
    "rx:enum=3": (-0.17251, 0.55780, 0.39868),
    "rx:enum=4": (-0.10945, 0.65730, 0.50636),
    "size:enum=2": (-0.14737, 0.16803, 0.11409),
    "size:enum=3": (-0.28345, 0.20894, 0.15220),
    "size:enum=4": (-0.27607, 0.25222, 0.18904),
    "number:enum=2": (-0.10125, 0.11904, 0.11759),
    "number:enum=3": (-0.06467, 0.12925, 0.12035),
    "number:enum=4": (0.09429, 0.14594, 0.11973),
}
DIABETIC = {"trt": (-0.77893, 0.16893, 0.14851), "juvenile": (-0.05388, 0.16211, 0.17864)}


def assert_printed(fit, printed):
    """Each of coef, model SE and robust SE within half a unit of R's last printed digit."""
    for name, (coef, se, robust) in printed.items():
        for ours, theirs in ((fit.coef[name], coef), (fit.se_model[name], se),
                             (fit.se_robust[name], robust)):
            assert ours == pytest.approx(theirs, abs=0.5e-5), name


def test_bladder_wlw_marginal_model_equals_r():
    d = pd.read_csv(DATA / "bladder.csv")
    d = d[d["enum"] < 5]
    X = d[["rx", "size", "number"]].astype(float)
    for k in (2, 3, 4):
        for col in ("rx", "size", "number"):
            X[f"{col}:enum={k}"] = d[col] * (d["enum"] == k)
    cohort = engine.Cohort.from_arrays(time=d["stop"].to_numpy(float),
                                       event=d["event"].to_numpy(), X=X.to_numpy(),
                                       names=list(X.columns), strata=d["enum"].to_numpy())
    fit = engine.fit(cohort, ties="efron", cluster=d["id"].to_numpy(), tol=1e-12)
    assert fit.variance == "robust" and fit.spec["n_clusters"] == 85
    assert (fit.n, fit.n_events) == (340, 112)
    assert_printed(fit, BLADDER)


def test_diabetic_eyes_clustered_by_patient_equals_r():
    d = pd.read_csv(DATA / "diabetic.csv")
    d["juvenile"] = (d["age"] < 20).astype(float)
    cohort = engine.Cohort.from_frame(d, time="time", event="status",
                                      covariates=["trt", "juvenile"])
    fit = engine.fit(cohort, ties="efron", cluster=d["id"].to_numpy(), tol=1e-12)
    assert fit.variance == "robust" and fit.spec["n_clusters"] == 197
    assert (fit.n, fit.n_events) == (394, 155)
    assert_printed(fit, DIABETIC)
    # R's z uses the robust SE: -5.245 and -0.302
    z = fit.coef / fit.se
    np.testing.assert_allclose(z.to_numpy(), [-5.245, -0.302], atol=0.5e-3)
