"""FitResult: plain data on a fitted model, with one summary table feeding print, app and export."""
from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import pandas as pd
import scipy.linalg as la
import scipy.sparse as sp
from scipy import stats

from ..core.errors import CohortError, ConvergenceWarning
from ..data import collinearity
from . import predict as prediction
from .baseline import baseline as cox_baseline
from .fine_gray_cif import predict_cif
from .predict_rates import predict_rates
from .models.logistic import INTERCEPT
from .profile import profile_confint
from .robust import robust_middle

_Z95 = stats.norm.ppf(0.975)
# A standard error at or below this is numerical noise of a singular information, not an
# estimate: reported as NaN by name.
SE_FLOOR = 1e-12
_LIKELIHOOD = {"cox": "log partial likelihood",
               "fine_gray": "log partial likelihood (subdistribution hazard)",
               "logistic": "log likelihood", "poisson": "log likelihood",
               "sccs": "log conditional likelihood"}
# exp(coef)'s column name by model; the hazard ratio "hr" otherwise
RATIO_NAMES = {"logistic": "or", "poisson": "irr", "sccs": "irr"}


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
        ``release()`` frees a kept GPU fit's device memory); beta : the coefficients as
        fitted (diverging ones still finite); penalty : engine.L1 / L2 / None, as fitted;
    formula : the cohort's formula (engine.data.formula.ModelFormula) when it was built from
        one: ``design_matrix(newdata)`` rebuilds the fit's columns from it
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
    problem: object = field(default=None, repr=False)    # engine.regression.problem.Problem, for refits
    beta: np.ndarray = field(default=None, repr=False)   # as fitted: diverging ones held finite
    penalty: object = field(default=None, repr=False)    # engine.L1 / L2 / None, as fitted
    formula: object = field(default=None, repr=False)    # the cohort's ModelFormula, or None

    @property
    def variance(self) -> str:
        """Which variance ``se``, ``cov`` and the summary show: "model" or "robust"."""
        return self.spec.get("variance", "model")

    @cached_property
    def cov_model(self) -> pd.DataFrame:
        """Model-based covariance I^-1 (p x p, named; NaN in the rows and columns of penalised,
        non-finite or aliased coefficients: the penalised ones are held fixed, their variance
        undefined).  Computed on first use, so a P = 10,000 penalised fit costs nothing
        extra."""
        return self._covariance("model")

    @cached_property
    def cov_robust(self) -> pd.DataFrame:
        """Robust (sandwich) covariance I^-1 (sum_c U_c U_c^T) I^-1 over the clusters of
        ``spec["cluster"]`` (engine.regression.variance); Fine-Gray: Fine and Gray's (1999)
        sandwich as cmprsk::crr reports it."""
        return self._covariance("robust")

    @property
    def cov(self) -> pd.DataFrame:
        """The covariance the fit reports (``variance`` names it): what joint Wald tests,
        effect curves and predictions read."""
        return self.cov_robust if self.variance == "robust" else self.cov_model

    @property
    def se(self) -> pd.Series:
        """Standard errors of the reported variance (``variance``: "model" or "robust")."""
        return self.se_robust if self.variance == "robust" else self.se_model

    @property
    def se_model(self) -> pd.Series:
        """Model-based standard errors, sqrt(diag(I^-1))."""
        return _diagonal_se(self.cov_model, "se_model")

    @property
    def se_robust(self) -> pd.Series:
        """Robust (sandwich) standard errors."""
        return _diagonal_se(self.cov_robust, "se_robust")

    def _covariance(self, kind: str) -> pd.DataFrame:
        t0 = time.perf_counter()
        out = np.full((len(self.coef), len(self.coef)), np.nan)
        cols, block = self._unpenalised_block(kind)
        out[np.ix_(cols, cols)] = block
        self.timings[f"cov_{kind}"] = time.perf_counter() - t0
        return pd.DataFrame(out, index=self.coef.index, columns=self.coef.index)

    def _unpenalised_block(self, kind: str):
        """(columns, covariance block over them): the unpenalised, finite coefficients whose
        variance is an estimate, the only ones with a covariance."""
        cols = np.flatnonzero(~self.penalized.to_numpy() & np.isfinite(self.coef.to_numpy()))
        block = np.zeros((0, 0))
        if cols.size and self.problem is not None:
            if kind == "robust" and self.spec.get("model") != "fine_gray":
                model_cov = self.cov_model.to_numpy()
                cols = cols[np.isfinite(np.diag(model_cov)[cols])]
                inv = model_cov[np.ix_(cols, cols)]
                block = inv @ robust_middle(self.problem, self.beta, cols) @ inv
            else:
                cols, block = self._information_inverse(cols, kind == "robust")
            names = self.coef.index[cols]
            tiny = np.flatnonzero(np.sqrt(np.abs(np.diag(block))) <= SE_FLOOR)
            if tiny.size:
                warnings.warn(f"the standard errors of {list(names[tiny])} came out at or below "
                              f"{SE_FLOOR:g}: the information is singular along them (aliased "
                              "columns the check before the fit did not catch), so they are not "
                              "estimates and are reported as NaN. Remove or merge those columns.",
                              ConvergenceWarning, stacklevel=5)
                keep = np.setdiff1d(np.arange(names.size), tiny)
                cols, block = cols[keep], block[np.ix_(keep, keep)]
        else:
            cols = cols[:0]
        return cols, block

    def _information_inverse(self, cols, sandwich: bool):
        """(columns kept, I^-1 over them), or Fine-Gray's sandwich I^-1 M I^-1 when
        ``sandwich``; columns along which the information is singular at the fit are dropped
        with a warning naming them."""
        model = self.problem.model
        model.set_beta(self.beta)
        if sandwich:
            info, middle = model.sandwich(cols)
        else:
            info, middle = model.information(cols)[2], None
        model.release_scratch()
        singular = [a for a, _ in collinearity.aliased_columns(info, model.scale[cols])]
        if singular:
            warnings.warn(f"the information matrix is singular along "
                          f"{list(self.coef.index[cols[singular]])} at the fit (aliased "
                          "columns the check before the fit did not catch): their standard "
                          "errors are not estimates and are reported as NaN. Remove or merge "
                          "those columns.", ConvergenceWarning, stacklevel=6)
            keep = np.setdiff1d(np.arange(cols.size), singular)
            cols, info = cols[keep], info[np.ix_(keep, keep)]
            middle = None if middle is None else middle[np.ix_(keep, keep)]
        inv = _inverse(info, self.coef.index[cols])
        return cols, (inv if middle is None else inv @ middle @ inv)

    def design_matrix(self, newdata):
        """The fit's covariate columns for ``newdata``: CSC (m, p) in ``coef`` order, built
        with the formula's fitted knots, levels and scalings (what predictions multiply by
        ``coef``; a logistic fit's intercept a column of ones).  Needs a fit of a cohort built
        from a formula, without cut points."""
        if self.formula is None:
            raise CohortError("this fit's cohort was not built from a formula, so it holds no "
                              "recipe for new data's columns. Build the cohort with "
                              "Cohort.from_frame(df, ..., formula='age + sex + ...').")
        if self.spec.get("cut_points") or self.spec.get("bands"):
            raise CohortError("this fit splits follow-up at cut points or bands (time-varying "
                              "effects, a rate per band); its columns depend on follow-up "
                              "time, so new rows have no single design. Refit without them.")
        names = list(self.coef.index)
        if INTERCEPT not in names or INTERCEPT in self.formula.names:
            return self.formula.design_matrix(newdata, names)
        at = names.index(INTERCEPT)
        X = self.formula.design_matrix(newdata, names[:at] + names[at + 1:])
        ones = sp.csc_matrix(np.ones((X.shape[0], 1)))
        return sp.hstack([X[:, :at], ones, X[:, at:]], format="csc")

    def confint(self, names=None, level: float = 0.95) -> pd.DataFrame:
        """Profile-likelihood confidence intervals of unpenalised coefficients (lower, upper).

        Each bound is where twice the drop of the profile log-likelihood (the others refitted,
        penalty kept) reaches the chi-square(1) quantile of ``level``; see engine.profile.
        """
        return profile_confint(self, names, level)

    def release(self) -> None:
        """Free what the fit holds on a device: its problem's backend and the baseline hazard
        computed there (which keeps the backend for Q's sums).  The numbers stay; the fit can
        no longer be re-solved, and a baseline asked for later is computed on the host."""
        self.__dict__.pop("baseline", None)
        self.problem.release()

    @cached_property
    def baseline(self):
        """The Breslow or Efron (as fitted) baseline hazard's pieces per stratum
        (engine.regression.baseline.Baseline), computed once from the fit's sorted rows (on
        the device for a fit on the GPU backend)."""
        prediction.cox_baseline_checked(self)
        problem = self.problem
        return cox_baseline(problem.cohort, problem.model.data, self.coef.to_numpy(float),
                            self.spec["ties"], backend=problem.model.backend)

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
        engine.regression.predict.predict for ``type`` and ``reference``.  A Poisson fit's
        (``type`` "lp", "rate" or "expected", with limits; R's ``predict.glm``):
        engine.regression.predict_rates."""
        if self.spec.get("model") == "poisson":
            return predict_rates(self, newdata, type)
        return prediction.predict(self, newdata, type, reference)

    def predict_survival(self, newdata, times=None, conf_type: str = "log",
                         level: float = 0.95) -> pd.DataFrame:
        """Predicted survival of each row of ``newdata`` at ``times`` with pointwise limits
        (R's ``survfit(fit, newdata)``; conf_type "log", "log-log" or "plain"); a long table,
        see engine.regression.predict.predict_survival."""
        return prediction.predict_survival(self, newdata, times, conf_type, level)

    def predict_cif(self, newdata, times=None) -> pd.DataFrame:
        """Fine-Gray fits: the predicted cumulative incidence of the fit's cause for each row
        of ``newdata`` (cmprsk's ``predict.crr``); see engine.regression.fine_gray_cif."""
        return predict_cif(self, newdata, times)

    @property
    def summary(self) -> pd.DataFrame:
        """coef, hr, se, hr_lower, hr_upper (95%), p, z, penalized; one row per covariate.
        The ratio is named by the model: ``irr`` (incidence-rate ratio) for SCCS fits, ``or``
        (odds ratio) for logistic ones.  ``se`` is of the reported variance, which the table's
        ``attrs["variance"]`` names ("model" or "robust", as ``variance_note``)."""
        return self._table(self.coef, self.se, self.penalized)

    def summary_of(self, names) -> pd.DataFrame:
        """``summary``'s rows of ``names``, without the p x p covariance: the model-based SE
        from the inverse information over the unpenalised columns only (their block of
        ``cov_model``; a penalised coefficient has none).  What a grid of variants reports for
        its coefficients of interest (800 MB of NaN per variant at p = 10,000 otherwise)."""
        if self.variance != "model":
            return self.summary.loc[list(names)]
        names = list(names)
        at = self.coef.index.get_indexer(names)
        if (at < 0).any():
            raise KeyError(f"no coefficients named {[n for n, a in zip(names, at) if a < 0]}")
        cols, block = self._unpenalised_block("model")
        se = np.full(len(self.coef), np.nan)
        se[cols] = np.sqrt(np.diag(block))
        coef = self.coef.iloc[at]      # by position: a grid calls this for every variant
        return self._table(coef, pd.Series(se[at], index=coef.index, name="se_model"),
                           self.penalized.iloc[at])

    def _table(self, coef: pd.Series, se: pd.Series, penalized: pd.Series) -> pd.DataFrame:
        z = coef / se
        ratio = RATIO_NAMES.get(self.spec.get("model"), "hr")
        out = pd.DataFrame({
            "coef": coef,
            ratio: np.exp(coef),
            "se": se,
            f"{ratio}_lower": np.exp(coef - _Z95 * se),
            f"{ratio}_upper": np.exp(coef + _Z95 * se),
            "p": 2.0 * stats.norm.sf(np.abs(z)),
            "z": z,
            "penalized": penalized,
        })
        out.index.name = "covariate"
        out.attrs["variance"] = self.variance
        out.attrs["variance_note"] = self.variance_note
        return out

    @property
    def variance_note(self) -> str:
        """One line naming the variance shown, e.g. "robust SE (sandwich), 432 clusters by id"."""
        s = self.spec
        if self.variance == "model":
            return "model-based SE (inverse information)"
        if s.get("model") == "fine_gray":
            return "robust SE (Fine-Gray sandwich, as cmprsk::crr)"
        k = s.get("n_clusters")
        by = {"row": f"each of {k} rows its own cluster", "id": f"{k} clusters by id",
              "cluster": f"{k} clusters as given"}[s.get("cluster")]
        return f"robust SE (sandwich), {by}"

    def __str__(self) -> str:
        s = self.spec
        ties = f"ties={s['ties']}, " if s["model"] in ("cox", "fine_gray") else ""
        head = [
            f"survscan {s['model']} fit: n={self.n}, events={self.n_events}, "
            f"strata={s.get('n_strata', 1)}, {ties}penalty={s['penalty']}",
            f"{_LIKELIHOOD[s['model']]} = {self.loglik:.6f}; converged={self.converged} "
            f"after {self.n_iter} iterations ({s['solver']}, {s['backend']})",
            self.variance_note,
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


def _diagonal_se(cov: pd.DataFrame, name: str) -> pd.Series:
    return pd.Series(np.sqrt(np.diag(cov.to_numpy())), index=cov.index, name=name)


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
