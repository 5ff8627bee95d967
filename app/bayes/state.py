"""The Bayesian page's state: a binary outcome and its predictors (the bundled breast-cancer
data, or the event column of the data loaded in the Data tab, read from the Store), the
sampler's settings, the last run, and what the page exports (summary CSV, draws NetCDF, JSON
spec, the Python script that reproduces the run).

No Panel widgets and no numerics here: a run is engine.sample beside engine.probit_mle, and the
tables the plots draw are the engine's numbers (engine.per_sd, engine.autocorrelation) reshaped.
"""

from __future__ import annotations

import json
import tempfile
import threading
import time
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd
import param

import engine

from ..data.loading import DataLoadError
from ..data.script import jsonable
from ..data.store import Store
from ..shell.caught_warnings import collected
from ..shell.choices import available_backends
from .script import python_script

BREAST, LOADED = "breast_cancer", "loaded"
BREAST_OUTCOME = "target_benign"
MAX_LAG = 40
COEF_COLUMNS = ["mean", "sd", "q5", "q95", "q2.5", "q97.5"]  # on the coefficients' scale
DIAGNOSTICS = ["r_hat", "ess", "ess_tail", "mcse_mean", "ess_per_s"]
# Vehtari, Gelman, Simpson, Carpenter & Buerkner (2021), "Rank-normalization, folding, and
# localization: an improved R-hat for assessing convergence of MCMC": use the draws when
# R-hat < 1.01 and bulk and tail ESS > 400 (100 per chain for four chains)
R_HAT_MAX = 1.01
ESS_MIN = 400


def convergence_warning(summary: pd.DataFrame) -> str:
    """One line naming the coefficients whose R-hat exceeds 1.01 or whose bulk or tail ESS is
    under 400, with the worst values; "" when every coefficient passes."""
    r_hat = summary["r_hat"]
    ess = summary[["ess", "ess_tail"]].min(axis=1)
    bad_r, bad_ess = r_hat[~(r_hat <= R_HAT_MAX)], ess[~(ess >= ESS_MIN)]
    if bad_r.empty and bad_ess.empty:
        return ""
    parts = []
    if len(bad_r):
        parts.append(f"R-hat up to {bad_r.max():.3f} (> {R_HAT_MAX}) for {_names(bad_r)}")
    if len(bad_ess):
        parts.append(f"ESS as low as {ess.min():.0f} (< {ESS_MIN}) for {_names(bad_ess)}")
    return ("The chains have not converged: " + "; ".join(parts) + ". Do not read these "
            "estimates yet: run more draws (or chains) until R-hat <= 1.01 and ESS >= 400 "
            "(Vehtari et al. 2021).")


def _names(values: pd.Series, shown: int = 4) -> str:
    names = [str(n) for n in values.index[:shown]]
    more = len(values) - shown
    return ", ".join(names) + (f" and {more} more" if more > 0 else "")


@dataclass
class BayesRun:
    """One finished run: the posterior, its summary (computed in the worker: ArviZ is slow),
    the probit MLE beside it (or why there is none), and the spec that reproduces it."""

    posterior: engine.PosteriorResult
    summary: pd.DataFrame
    mle: engine.ProbitMLE | None
    mle_note: str
    cohort: engine.Cohort
    spec: dict
    elapsed: float
    warnings: list = field(default_factory=list)


@dataclass
class BayesJob:
    """A snapshot of the page's settings with its validated cohort, run in a worker thread."""

    cohort: engine.Cohort
    settings: dict   # keyword arguments of engine.sample
    spec: dict
    warnings: list

    def run(self, cancel: threading.Event | None = None, progress=None) -> BayesRun:
        """engine.probit_mle, then engine.sample; engine.Cancelled when ``cancel`` is set."""
        t0 = time.perf_counter()
        with collected() as caught:
            try:
                mle, note = engine.probit_mle(self.cohort), ""
            except engine.CohortError as exc:   # separation, too few rows: the posterior exists
                mle, note = None, str(exc)
            post = engine.sample(self.cohort, progress=progress, cancel=cancel, **self.settings)
            summary = post.summary
        return BayesRun(post, summary, mle, note, self.cohort, self.spec,
                        time.perf_counter() - t0, list(dict.fromkeys([*self.warnings, *caught])))


@lru_cache(maxsize=1)
def breast_cancer_columns() -> tuple[str, ...]:
    return tuple(c for c in engine.datasets.load_breast_cancer().columns if c != BREAST_OUTCOME)


class BayesState(param.Parameterized):
    """Outcome, predictors and sampler settings of the Bayesian page, and its last run."""

    store = param.ClassSelector(class_=Store, doc="The session's Store, read only.")
    source = param.Selector(objects=[BREAST, LOADED], default=BREAST)
    predictors = param.List(default=[])
    model = param.Selector(objects=list(engine.bayes.MODELS), default="horseshoe_probit")
    chains = param.Integer(default=4, bounds=(1, 16))
    draws = param.Integer(default=1000, bounds=(1, None), doc="kept per chain")
    burn_in = param.Integer(default=500, bounds=(0, None))
    thin = param.Integer(default=1, bounds=(1, None))
    seed = param.Integer(default=0, bounds=(0, None))
    backend = param.Selector(objects=available_backends(), default="cpu")
    standardize = param.Boolean(default=True, doc="sample on standardised predictors")
    per_sd = param.Boolean(default=True, doc="show coefficients per SD of the covariate")
    run = param.Parameter(default=None, doc="The last BayesRun.")

    def __init__(self, **params):
        super().__init__(**params)
        if not self.predictors:
            self.predictors = self.default_predictors()
        self.param.watch(self._on_source, ["source"])

    def _on_source(self, event=None) -> None:
        self.predictors = self.default_predictors()

    # ------------------------------------------------------------------------------------
    # outcome and predictors
    def outcome(self) -> str | None:
        return BREAST_OUTCOME if self.source == BREAST else self.store.event

    def predictor_options(self) -> list[str]:
        if self.source == BREAST:
            return list(breast_cancer_columns())
        s = self.store
        return [c for c in s.columns if c != s.event] if s.loaded else []

    def default_predictors(self) -> list[str]:
        """Breast cancer: the ten "mean ..." features (the probit MLE exists for them; all 30
        separate the outcome). Loaded data: the Design tab's covariates."""
        if self.source == BREAST:
            return [c for c in breast_cancer_columns() if c.startswith("mean ")]
        return [c for c in self.store.covariates if c in self.predictor_options()]

    def data_source(self) -> dict:
        """Where the data comes from, for the spec and the script."""
        if self.source == BREAST:
            return {"kind": "sample", "name": "breast_cancer", "label": "sample: breast_cancer"}
        return {k: jsonable(v) for k, v in self.store.source.items() if k != "about"}

    def event_codes(self) -> list:
        return [] if self.source == BREAST else [jsonable(c) for c in self.store.event_codes]

    def frame(self) -> pd.DataFrame:
        """The outcome (recoded to 0/1 when the Data tab set event codes) and the predictors."""
        if self.source == BREAST:
            return engine.datasets.load_breast_cancer()[[*self.predictors, BREAST_OUTCOME]]
        s = self.store
        if not s.loaded or s.event is None:
            raise DataLoadError("load data and choose its event column first (Data tab), or "
                                "use the bundled breast-cancer data")
        missing = [c for c in self.predictors if c not in self.predictor_options()]
        if missing:
            raise DataLoadError(f"predictor(s) {missing} are not columns of the loaded data")
        outcome = s.column(s.event)
        if s.event_codes:
            outcome = outcome.isin(s.event_codes).astype(int)
        return pd.DataFrame({**{c: s.column(c) for c in self.predictors}, s.event: outcome})

    def settings(self) -> dict:
        """engine.sample's keywords. Chains run one after another: a job slot is one core,
        and the progress then counts iterations (processes would report whole chains)."""
        return {"model": self.model, "draws": int(self.draws), "burn_in": int(self.burn_in),
                "chains": int(self.chains), "thin": int(self.thin), "seed": int(self.seed),
                "backend": self.backend, "standardize": bool(self.standardize),
                "parallel": None}

    def spec(self) -> dict:
        return {"survscan_bayes": 1, "data": self.data_source(), "outcome": self.outcome(),
                "event_codes": self.event_codes(), "predictors": list(self.predictors),
                "sample": self.settings()}

    def job(self) -> BayesJob:
        """The run as asked; a DataLoadError or engine.CohortError (shown as a message) when
        the outcome is not 0/1, a predictor is missing or there are none."""
        if not self.predictors:
            raise DataLoadError("choose at least one predictor")
        frame = self.frame()
        with collected() as caught:   # a constant predictor is dropped with a DataWarning
            cohort = engine.Cohort.from_frame(frame, time=None, event=self.outcome(),
                                              covariates=list(self.predictors))
        if not cohort.names:
            raise DataLoadError("no usable predictor is left (each is constant or redundant)")
        return BayesJob(cohort, self.settings(), self.spec(), list(dict.fromkeys(caught)))

    # ------------------------------------------------------------------------------------
    # tables the plots draw (the engine's numbers, reshaped)
    def _coef_scale(self, run: BayesRun, table):
        return engine.per_sd(run.cohort, table) if self.per_sd else table

    def scale_label(self) -> str:
        return "per SD of the covariate" if self.per_sd else "per unit of the covariate"

    def intervals(self, run: BayesRun) -> pd.DataFrame:
        """Posterior mean and 90%/95% intervals of every slope (the caterpillar plot)."""
        table = self._coef_scale(run, run.summary[COEF_COLUMNS])
        return table.drop(index=[n for n in table.index if n not in run.cohort.names])

    def comparison(self, run: BayesRun) -> pd.DataFrame:
        """Posterior beside the probit MLE, per coefficient (the intercept on the per-unit
        scale only)."""
        post = self._coef_scale(run, run.summary[["mean", "q5", "q95"]])
        out = post.rename(columns={"mean": "posterior mean", "q5": "5%", "q95": "95%"})
        if run.mle is not None:
            mle = self._coef_scale(run, pd.DataFrame({"MLE": run.mle.coef, "MLE se": run.mle.se}))
            out = out.join(mle)
        out["shrinkage"] = run.summary["shrinkage"].reindex(out.index)
        out["P(sign)"] = run.summary["p_sign"].reindex(out.index)
        # what the posterior says, not a rounding: a mean of -1.69 whose 90% interval reaches
        # 0 is uncertain, not "shrunk to 0"
        out["90% interval holds 0"] = run.summary["shrunk"].reindex(out.index)
        return out.reset_index()

    def diagnostics(self, run: BayesRun) -> pd.DataFrame:
        """R-hat, bulk/tail ESS, MCSE of the mean (on the estimates' scale: per SD when they
        are; the intercept, which has no SD, on its own) and ESS per second of sampling, for
        every coefficient the sampler drew."""
        table = run.summary[DIAGNOSTICS]
        if self.per_sd:
            mcse = self._coef_scale(run, table[["mcse_mean"]])["mcse_mean"]
            table = table.assign(mcse_mean=mcse.reindex(table.index).fillna(table["mcse_mean"]))
        return table.reset_index()

    def coefficient_options(self, run: BayesRun) -> list[str]:
        names = list(run.posterior.names)
        return [n for n in names if n in run.cohort.names] if self.per_sd else names

    def traces(self, run: BayesRun, names: list[str]) -> pd.DataFrame:
        """Long table chain, iteration, coefficient, value for the trace plots."""
        post = run.posterior
        chains, draws, _ = post.draws.shape
        idx = [post.names.index(n) for n in names]
        wide = pd.DataFrame(post.draws[:, :, idx].reshape(chains * draws, -1).T, index=names)
        wide = self._coef_scale(run, wide)
        long = wide.T.assign(chain=np.repeat(np.arange(chains), draws),
                             iteration=np.tile(np.arange(draws) * post.spec["thin"], chains))
        return long.melt(id_vars=["chain", "iteration"], var_name="coefficient")

    def autocorrelations(self, run: BayesRun, names: list[str]) -> pd.DataFrame:
        """Long table lag, coefficient, autocorrelation (mean over chains, engine)."""
        post = run.posterior
        idx = [post.names.index(n) for n in names]
        r = engine.autocorrelation(post.draws[:, :, idx], max_lag=MAX_LAG)
        wide = pd.DataFrame(r, columns=names).rename_axis("lag").reset_index()
        return wide.melt(id_vars=["lag"], var_name="coefficient", value_name="autocorrelation")

    def shrinkage(self, run: BayesRun) -> pd.DataFrame:
        """Per slope: posterior mean, MLE (when it exists) and the shrinkage factor kappa."""
        table = self.comparison(run).set_index("coefficient")
        table = table.drop(index=[n for n in table.index if n not in run.cohort.names])
        return table.reset_index()

    # ------------------------------------------------------------------------------------
    # exports
    @staticmethod
    def summary_csv(run: BayesRun) -> str:
        table = run.summary.copy()
        if run.mle is not None:
            table = table.join(run.mle.summary.add_prefix("mle_"))
        return table.to_csv()

    @staticmethod
    def netcdf(run: BayesRun) -> bytes:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "draws.nc"
            run.posterior.to_netcdf(path)
            return path.read_bytes()

    @staticmethod
    def spec_json(run: BayesRun) -> str:
        engine_spec = {k: (np.asarray(v).tolist() if isinstance(v, np.ndarray) else jsonable(v))
                       for k, v in run.posterior.spec.items()}
        return json.dumps({**run.spec, "engine_spec": engine_spec,
                           "timings": {"sampling_s": run.posterior.timings["sampling"],
                                       "elapsed_s": run.elapsed}}, indent=2)

    @staticmethod
    def python_script(spec: dict) -> str:
        return python_script(spec)
