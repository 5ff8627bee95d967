"""The Bayesian tab's convergence warning (R-hat > 1.01 or bulk/tail ESS < 400, Vehtari et al.
2021) and its MCSE on the estimates' scale, against the definitions written here."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("panel")

import engine  # noqa: E402
from app.bayes.state import BayesState, convergence_warning  # noqa: E402
from app.data.store import Store  # noqa: E402
from app.bayes.results import BayesResults  # noqa: E402


@pytest.fixture(scope="module")
def short_run():
    """40 draws of 2 chains: far too few for ESS 400."""
    state = BayesState(store=Store(), draws=40, burn_in=10, chains=2, seed=5)
    return state, state.job().run()


def test_short_chains_are_warned_about_with_the_worst_values(short_run):
    state, run = short_run
    s = run.summary
    ess = s[["ess", "ess_tail"]].min(axis=1)
    assert (ess < 400).any()   # the definition: bulk or tail ESS under 400
    text = convergence_warning(s)
    assert text.startswith("The chains have not converged")
    assert f"ESS as low as {ess.min():.0f} (< 400)" in text
    if (s["r_hat"] > 1.01).any():
        assert f"R-hat up to {s['r_hat'].max():.3f} (> 1.01)" in text
    view = BayesResults(state=state)
    state.run = run
    assert view.warning.object == f"**Warning:** {text}"


def test_the_thresholds_are_strict_and_a_nan_fails():
    ok = pd.DataFrame({"r_hat": [1.0, 1.01], "ess": [400.0, 900.0],
                       "ess_tail": [1000.0, 400.0]}, index=["a", "b"])
    assert convergence_warning(ok) == ""
    bad = ok.assign(r_hat=[1.089, np.nan], ess=[51.0, 900.0])
    text = convergence_warning(bad)
    assert "R-hat up to 1.089 (> 1.01) for a, b" in text
    assert "ESS as low as 51 (< 400) for a" in text


def test_mcse_is_per_sd_when_the_estimates_are(short_run):
    state, run = short_run
    state.per_sd = False
    unit = state.diagnostics(run).set_index("coefficient")
    assert "(intercept)" in unit.index
    state.per_sd = True
    per_sd = state.diagnostics(run).set_index("coefficient")
    # the intercept has no SD: its row stays, its MCSE on its own scale
    assert per_sd.loc["(intercept)", "mcse_mean"] == unit.loc["(intercept)", "mcse_mean"]
    sd = engine.datasets.load_breast_cancer()["mean radius"].std(ddof=0)
    assert per_sd.loc["mean radius", "mcse_mean"] == pytest.approx(
        unit.loc["mean radius", "mcse_mean"] * sd, rel=1e-12)
    assert per_sd.loc["mean radius", "r_hat"] == unit.loc["mean radius", "r_hat"]
    state.per_sd = False
