"""PosteriorResult: the draws of engine.sample with their summary, diagnostics and exports.

Diagnostics come from ArviZ (rank-normalised split R-hat, bulk and tail ESS, Monte Carlo
standard errors; Vehtari et al. 2021), not from hand-written code.
"""
from dataclasses import dataclass, field
from functools import cached_property
import warnings

import numpy as np
import pandas as pd

INTERVALS = {"q2.5": 0.025, "q5": 0.05, "median": 0.5, "q95": 0.95, "q97.5": 0.975}


def _arviz():
    """ArviZ, imported without its once-a-day FutureWarning about the coming 1.0 refactor."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        import arviz
    return arviz


@dataclass
class PosteriorResult:
    """Posterior draws of a horseshoe probit (or flat-prior probit) model.

    Attributes
    ----------
    draws : ndarray of float64, shape (chain, draw, coefficient)
        On the scale of the cohort's covariates (standardisation undone).
    names : list of str, length coefficient ("(intercept)" first when there is one).
    tau : ndarray, shape (chain, draw): the global scale (standardised scale).
    shrinkage : pandas Series: posterior mean of kappa_j per shrunk coefficient
        (0 = left alone, 1 = shrunk to 0); NaN for the intercept or with a flat prior.
    timings : dict, stage -> seconds ("prepare", "sampling" wall time, "chains" per chain).
    spec : dict: everything needed to rerun the call (model, draws, burn_in, chains, thin,
        seed, backend, standardize, intercept, prior sd of the intercept, center and scale).
    """

    draws: np.ndarray
    names: list
    tau: np.ndarray
    shrinkage: pd.Series
    timings: dict
    spec: dict = field(default_factory=dict)

    @property
    def n_draws(self):
        """Draws kept over all chains."""
        return self.draws.shape[0] * self.draws.shape[1]

    def to_inference_data(self):
        """The draws as an ArviZ InferenceData (posterior group: beta, tau)."""
        az = _arviz()
        idata = az.from_dict(posterior={"beta": self.draws, "tau": self.tau},
                             coords={"coefficient": list(self.names)},
                             dims={"beta": ["coefficient"]})
        idata.posterior.attrs.update({k: str(v) for k, v in self.spec.items()
                                      if np.ndim(v) == 0})
        return idata

    @cached_property
    def diagnostics(self):
        """DataFrame per coefficient: r_hat, ess_bulk, ess_tail, mcse_mean and the Monte Carlo
        standard errors of the 5% and 95% quantiles (ArviZ)."""
        az = _arviz()
        post = self.to_inference_data().posterior[["beta"]]
        columns = {"r_hat": az.rhat(post), "ess_bulk": az.ess(post, method="bulk"),
                   "ess_tail": az.ess(post, method="tail"),
                   "mcse_mean": az.mcse(post, method="mean"),
                   "mcse_q5": az.mcse(post, method="quantile", prob=0.05),
                   "mcse_q95": az.mcse(post, method="quantile", prob=0.95)}
        return pd.DataFrame({k: v["beta"].values for k, v in columns.items()},
                            index=pd.Index(self.names, name="coefficient"))

    @cached_property
    def summary(self):
        """DataFrame per coefficient: mean, sd, median, q5, q95, q2.5, q97.5, shrinkage,
        p_sign (posterior probability of the sign of the mean), shrunk (the 90% interval holds
        0, the paper's sec. 6.2 reading), r_hat, ess (bulk), ess_tail, mcse_mean, ess_per_s."""
        flat = self.draws.reshape(-1, self.draws.shape[2])
        q = np.quantile(flat, list(INTERVALS.values()), axis=0)
        table = pd.DataFrame({"mean": flat.mean(0), "sd": flat.std(0, ddof=1)},
                             index=pd.Index(self.names, name="coefficient"))
        for k, name in enumerate(INTERVALS):
            table[name] = q[k]
        table = table[["mean", "sd", "median", "q5", "q95", "q2.5", "q97.5"]]
        table["shrinkage"] = self.shrinkage.reindex(self.names).to_numpy()
        positive = (flat > 0).mean(0)
        table["p_sign"] = np.where(table["mean"] >= 0, positive, 1.0 - positive)
        table["shrunk"] = (table["q5"] <= 0) & (table["q95"] >= 0)
        diag = self.diagnostics
        table["r_hat"] = diag["r_hat"]
        table["ess"] = diag["ess_bulk"]
        table["ess_tail"] = diag["ess_tail"]
        table["mcse_mean"] = diag["mcse_mean"]
        table["ess_per_s"] = diag["ess_bulk"] / self.timings["sampling"]
        return table

    @property
    def ess_per_second(self):
        """Median bulk ESS per second of sampling wall time over the coefficients."""
        return float(self.summary["ess_per_s"].median())

    def to_csv(self, path):
        """Write the draws, one row per (chain, draw), one column per coefficient."""
        chains, draws, _ = self.draws.shape
        frame = pd.DataFrame(self.draws.reshape(chains * draws, -1), columns=self.names)
        frame.insert(0, "draw", np.tile(np.arange(draws), chains))
        frame.insert(0, "chain", np.repeat(np.arange(chains), draws))
        frame["tau"] = self.tau.ravel()
        frame.to_csv(path, index=False)

    def to_netcdf(self, path):
        """Write the InferenceData to NetCDF (``arviz.from_netcdf`` reads it back)."""
        return self.to_inference_data().to_netcdf(str(path))

    def __repr__(self):
        chains, draws, p = self.draws.shape
        return (f"PosteriorResult(model={self.spec.get('model')!r}, chains={chains}, "
                f"draws={draws}, coefficients={p}, sampling={self.timings['sampling']:.2f} s)")
