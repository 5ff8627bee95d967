"""FitResult: plain data on a fitted model, with one summary table feeding print, app and export."""
from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import pandas as pd
import scipy.linalg as la
from scipy import stats

from .errors import ConvergenceWarning
from .profile import profile_confint

_Z95 = stats.norm.ppf(0.975)
_LIKELIHOOD = {"cox": "log partial likelihood",
               "fine_gray": "log partial likelihood (subdistribution hazard)",
               "logistic": "log likelihood",
               "sccs": "log conditional likelihood"}
_RATIO = {"logistic": "or", "sccs": "irr"}  # exp(coef) by model; hazard ratio otherwise


@dataclass
class FitResult:
    """What ``engine.fit`` returns.

    Attributes
    ----------
    coef : pandas.Series, covariate name -> beta (+/-inf for a diverging coefficient)
    loglik : float, the maximised log likelihood (partial for Cox and Fine-Gray, conditional
        for SCCS), penalty not included
    converged : bool; n_iter : int, CCD cycles plus Newton steps
    timings : dict, stage -> seconds (prepare, solve, se when asked)
    penalized : pandas.Series of bool, which coefficients carry a penalty
    diverged : list of names whose likelihood is monotone (infinite estimate)
    spec : dict, the analysis as asked (model, ties, penalty, strata, ...) for provenance
    problem : the prepared Problem the fit came from (profile intervals refit it;
        ``problem.release()`` frees a kept GPU fit's device memory); beta : the coefficients as
        fitted (diverging ones still finite); penalty : engine.L1 / L2 / None, as fitted
    """

    coef: pd.Series
    loglik: float
    converged: bool
    n_iter: int
    timings: dict
    penalized: pd.Series
    diverged: list
    spec: dict
    n: int
    n_events: int
    history: list = field(default_factory=list, repr=False)
    problem: object = field(default=None, repr=False)    # engine.problem.Problem, for refits
    beta: np.ndarray = field(default=None, repr=False)   # as fitted: diverging ones held finite
    penalty: object = field(default=None, repr=False)    # engine.L1 / L2 / None, as fitted

    @cached_property
    def se(self) -> pd.Series:
        """Standard errors of the unpenalised, finite coefficients.

        From the observed information, or, where the spec says ``variance="sandwich"``
        (Fine-Gray), from Fine & Gray's (1999) sandwich I^-1 (sum_i u_i u_i^T) I^-1 as
        cmprsk::crr reports it.  The penalised coefficients are held fixed (their SE is NaN:
        the penalty makes it undefined); computed on first use, so a P = 10,000 penalised fit
        costs nothing extra.
        """
        return self._standard_errors(self.spec.get("variance", "model"), "se")

    @cached_property
    def se_model(self) -> pd.Series:
        """Model-based standard errors, sqrt(diag(I^-1)); equal to ``se`` for Cox fits."""
        return self._standard_errors("model", "se_model")

    def _standard_errors(self, kind: str, stage: str) -> pd.Series:
        t0 = time.perf_counter()
        se = pd.Series(np.nan, index=self.coef.index)
        cols = np.flatnonzero(~self.penalized.to_numpy() & np.isfinite(self.coef.to_numpy()))
        if cols.size and self.problem is not None:
            model = self.problem.model
            model.set_beta(self.beta)
            names = self.coef.index[cols]
            if kind == "sandwich":
                info, middle = model.sandwich(cols)
                inv = _inverse(info, names)
                cov = inv @ middle @ inv
            else:
                cov = _inverse(model.information(cols)[2], names)
            se.iloc[cols] = np.sqrt(np.diag(cov))
        self.timings[stage] = time.perf_counter() - t0
        return se

    def confint(self, names=None, level: float = 0.95) -> pd.DataFrame:
        """Profile-likelihood confidence intervals of unpenalised coefficients (lower, upper).

        Each bound is where twice the drop of the profile log-likelihood (the others refitted,
        penalty kept) reaches the chi-square(1) quantile of ``level``; see engine.profile.
        """
        return profile_confint(self, names, level)

    @property
    def summary(self) -> pd.DataFrame:
        """coef, hr, se, hr_lower, hr_upper (95%), p, z, penalized; one row per covariate.
        The ratio is named by the model: ``irr`` (incidence-rate ratio) for SCCS fits, ``or``
        (odds ratio) for logistic ones."""
        se = self.se
        z = self.coef / se
        ratio = _RATIO.get(self.spec.get("model"), "hr")
        out = pd.DataFrame({
            "coef": self.coef,
            ratio: np.exp(self.coef),
            "se": se,
            f"{ratio}_lower": np.exp(self.coef - _Z95 * se),
            f"{ratio}_upper": np.exp(self.coef + _Z95 * se),
            "p": 2.0 * stats.norm.sf(np.abs(z)),
            "z": z,
            "penalized": self.penalized,
        })
        out.index.name = "covariate"
        return out

    def __str__(self) -> str:
        s = self.spec
        ties = f"ties={s['ties']}, " if s["model"] in ("cox", "fine_gray") else ""
        head = [
            f"survscan {s['model']} fit: n={self.n}, events={self.n_events}, "
            f"strata={s.get('n_strata', 1)}, {ties}penalty={s['penalty']}",
            f"{_LIKELIHOOD[s['model']]} = {self.loglik:.6f}; converged={self.converged} "
            f"after {self.n_iter} iterations ({s['solver']}, {s['backend']})",
        ]
        if s["model"] == "fine_gray":
            head.append(f"censoring weights: {s.get('censoring_ties', 'crr')} tie rule ("
                        + _CENSORING_TIES[s.get("censoring_ties", "crr")] + ")")
        if self.diverged:
            head.append("diverging (infinite) coefficients: " + ", ".join(self.diverged))
        return "\n".join(head) + "\n" + self.summary.to_string(float_format=lambda v: f"{v:.6g}")


_CENSORING_TIES = {
    "crr": "cmprsk::crr: an event at t is at risk for a censoring at t",
    "finegray": "R survival finegray(), Geskus 2011: an event at t is not at risk for a "
                "censoring at t",
}


def _inverse(info: np.ndarray, names) -> np.ndarray:
    """Inverse of the information; a singular one (collinear columns) is named, not hidden."""
    try:
        L_inv = la.solve_triangular(la.cholesky(info, lower=True), np.eye(len(info)), lower=True)
        return L_inv.T @ L_inv
    except la.LinAlgError:
        warnings.warn("the information matrix is singular: some of "
                      f"{list(names)} are collinear; their standard errors are unreliable",
                      ConvergenceWarning, stacklevel=3)
        return np.linalg.pinv(info)
