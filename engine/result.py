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
from .prediction import predict as prediction
from .prediction.baseline import baseline as cox_baseline
from .prediction.fine_gray import predict_cif
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
        return pd.Series(np.sqrt(np.diag(self.cov.to_numpy())), index=self.coef.index)

    @cached_property
    def cov(self) -> pd.DataFrame:
        """The covariance matrix of the coefficients behind ``se`` (p x p; NaN in the rows
        and columns of penalised or non-finite ones): what predictions' standard errors use."""
        return pd.DataFrame(self._covariance(self.spec.get("variance", "model"), "se"),
                            index=self.coef.index, columns=self.coef.index)

    @cached_property
    def se_model(self) -> pd.Series:
        """Model-based standard errors, sqrt(diag(I^-1)); equal to ``se`` for Cox fits."""
        return pd.Series(np.sqrt(np.diag(self._covariance("model", "se_model"))),
                         index=self.coef.index)

    def _covariance(self, kind: str, stage: str) -> np.ndarray:
        t0 = time.perf_counter()
        out = np.full((len(self.coef), len(self.coef)), np.nan)
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
            out[np.ix_(cols, cols)] = cov
        self.timings[stage] = time.perf_counter() - t0
        return out

    def confint(self, names=None, level: float = 0.95) -> pd.DataFrame:
        """Profile-likelihood confidence intervals of unpenalised coefficients (lower, upper).

        Each bound is where twice the drop of the profile log-likelihood (the others refitted,
        penalty kept) reaches the chi-square(1) quantile of ``level``; see engine.profile.
        """
        return profile_confint(self, names, level)

    @cached_property
    def baseline(self):
        """The Breslow or Efron (as fitted) baseline hazard's pieces per stratum
        (engine.prediction.baseline.Baseline), computed once from the fit's sorted rows."""
        prediction.cox_baseline_checked(self)
        problem = self.problem
        return cox_baseline(problem.cohort, problem.model.data, self.coef.to_numpy(float),
                            self.spec["ties"])

    def baseline_hazard(self, centered: bool = True) -> pd.DataFrame:
        """The baseline hazard as R's ``basehaz``: stratum (stratified fits), time, n_risk,
        n_event, hazard, cumhaz, survival at each event time.  ``centered=True`` (R's default)
        is the hazard of a subject at the weighted column means (R's ``fit$means``);
        ``centered=False`` at x = 0."""
        return prediction.cox_baseline(self).table(centered)

    def baseline_survival(self, centered: bool = True) -> pd.DataFrame:
        """exp(-cumulative baseline hazard): stratum (stratified fits), time, survival; see
        ``baseline_hazard`` for the centring."""
        table = self.baseline_hazard(centered)
        return table[[c for c in ("stratum", "time", "survival") if c in table]]

    def predict(self, newdata=None, type: str = "lp", reference: str = "strata") -> pd.DataFrame:
        """fit and se of each row of ``newdata`` (a DataFrame with the fit's covariate columns;
        default the fitted rows), as R's ``predict.coxph(se.fit=TRUE)``; see
        engine.prediction.predict.predict for ``type`` and ``reference``."""
        return prediction.predict(self, newdata, type, reference)

    def predict_survival(self, newdata, times=None, conf_type: str = "log",
                         level: float = 0.95) -> pd.DataFrame:
        """Predicted survival of each row of ``newdata`` at ``times`` with pointwise limits
        (R's ``survfit(fit, newdata)``; conf_type "log", "log-log" or "plain"); a long table,
        see engine.prediction.predict.predict_survival."""
        return prediction.predict_survival(self, newdata, times, conf_type, level)

    def predict_cif(self, newdata, times=None) -> pd.DataFrame:
        """Fine-Gray fits: the predicted cumulative incidence of the fit's cause for each row
        of ``newdata`` (cmprsk's ``predict.crr``); see engine.prediction.fine_gray."""
        return predict_cif(self, newdata, times)

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
        if self.diverged:
            head.append("diverging (infinite) coefficients: " + ", ".join(self.diverged))
        return "\n".join(head) + "\n" + self.summary.to_string(float_format=lambda v: f"{v:.6g}")


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
