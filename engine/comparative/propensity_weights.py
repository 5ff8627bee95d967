"""Propensity-score weights on any cohort: the PS model, the weights of an estimand, balance
before and after, effective sample sizes, and the weights put onto a Cohort for a weighted Cox
or Fine-Gray fit.

The PS is a logistic regression of the 0/1 treatment on the covariates with an unpenalised
intercept, fitted by engine.fit(model="logistic") (maximum likelihood, or L1 / L2, or L1 with
its strength by cross-validation as Cyclops does); the weights are engine.comparative.weighting's
(WeightIt's definitions) and the balance table engine.comparative.mean_differences' (cobalt's).
A PS model that separates the arms perfectly, whose weights would be infinite, is refused with
the covariates that separate; a person carrying a large share of an arm's weight is named in a
warning with the remedies (trim, truncate, the overlap estimand).
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
import scipy.sparse as sp
from scipy.special import expit

from ..data import validation as v
from ..data.cohort import Cohort
from ..regression.drivers.cross_validation import cross_validate
from ..core.arguments import check_flag
from ..core.errors import CohortError, DataWarning, MonotoneLikelihoodWarning
from ..regression.fit import fit
from ..regression.priors import L1, L2
from . import weighting
from .mean_differences import mean_differences

# A person holding more than this share of an arm's total weight is named in a warning.
EXTREME_SHARE = 0.1
PS_NAME = "(propensity score)"


@dataclass
class PropensityWeights:
    """What ``propensity_weights`` returns; arrays are in the rows' order of the data given.

    weights : (n,) final weights (case weights multiplied in; 0 for trimmed persons and, with
        missing="drop", for rows missing a value)
    ps : (n,) P(treatment = 1 | covariates) (NaN for dropped rows); treatment : (n,) 0/1 (-1
        for dropped rows)
    estimand : "ATE" | "ATT" | "ATC" | "ATO" | "ATM"
    balance : cobalt-style table, one row per PS-model column and the PS itself (see
        engine.comparative.mean_differences)
    ess : Kish's effective sample size per arm (columns control, treated) before (case
        weights only) and after weighting (rows)
    fit : the PS model's FitResult; trimmed : (n,) bool, persons given weight 0 by ``trim``
    ids : (n,) subject ids when the data gave ``id=`` (weights then go onto episodes by id)
    """

    weights: np.ndarray
    ps: np.ndarray
    treatment: np.ndarray
    estimand: str
    balance: pd.DataFrame
    ess: pd.DataFrame
    fit: object
    trimmed: np.ndarray
    ids: np.ndarray | None = None
    case_weighted: bool = False

    def weighted(self, cohort: Cohort) -> Cohort:
        """``cohort`` with these weights as its case weights, ready for engine.fit: by subject
        id when both carry ids (every (start, stop] episode takes its subject's weight), else
        row by row (the cohort must then have the rows the weights were computed on)."""
        if cohort.weights is not None and not self.case_weighted:
            raise CohortError("the cohort already carries case weights, which the propensity "
                              "model did not use: pass them to propensity_weights (weights= for "
                              "a frame, or the weighted cohort) so both are multiplied.")
        label = f"propensity score weights ({self.estimand})"
        if self.ids is not None and cohort.id is not None:
            by_id = pd.Series(self.weights, index=self.ids)
            mapped = pd.Series(cohort.id).map(by_id)
            missing = mapped.isna().to_numpy()
            if missing.any():
                v.fail_rows(missing, np.asarray(cohort.id, dtype=object), "id", "id",
                            "no propensity weight", "Compute the weights on data holding "
                            "every subject of the cohort.", np.arange(1, cohort.n + 1))
            return cohort.with_weights(mapped.to_numpy(np.float64), label)
        if cohort.n != self.weights.size:
            raise CohortError(f"the cohort has {cohort.n} rows but the weights were computed "
                              f"on {self.weights.size}; pass id= to propensity_weights and "
                              "build the cohort with id= to put them on by subject.")
        return cohort.with_weights(self.weights, label)

    def to_frame(self) -> pd.DataFrame:
        """ps, weight, treatment and trimmed per row (and id when given)."""
        out = pd.DataFrame({"treatment": self.treatment, "ps": self.ps,
                            "weight": self.weights, "trimmed": self.trimmed})
        if self.ids is not None:
            out.insert(0, "id", self.ids)
        return out


def propensity_weights(data, treatment: str, covariates=None, estimand: str = "ATE",
                       stabilize: bool = False, trim: float | None = None,
                       truncate: float | None = None, penalty=None, weights: str | None = None,
                       id: str | None = None, missing: str = "raise", binary: str = "raw",
                       folds: int = 10, seed: int = 0, tol: float = 1e-10) -> PropensityWeights:
    """Propensity-score weights of ``estimand`` for the 0/1 ``treatment``.

    data : pandas.DataFrame (one row per subject; text columns are one-hot encoded as
        engine.Cohort does) or engine.Cohort (``treatment`` one of its covariates; one row per
        subject, its case weights used as sampling weights)
    covariates : the PS model's columns (a frame: required; a Cohort: default all others)
    estimand : "ATE" (IPTW) | "ATT" | "ATC" | "ATO" (overlap) | "ATM" (matching weights)
    stabilize : multiply each arm's weights by its share of the sample
    trim : alpha: persons with PS outside [alpha, 1 - alpha] get weight 0 (Crump et al. 2009)
    truncate : q in (0.5, 1): weights above their q-th quantile (among the persons kept) set
        to it (WeightIt's trim).  Order: weights, stabilised, trimmed, truncated, times the
        case weights.
    penalty : None (maximum likelihood) | engine.L1(lam) | engine.L2(lam) | "cv" (L1, its
        strength by ``folds``-fold cross-validation)
    weights, id : a frame's case-weight and subject-id columns
    missing : "raise" | "drop" (rows missing a value get weight 0 and PS NaN)
    binary : balance of 0/1 covariates as "raw" differences of proportions or "std"
    """
    if estimand not in weighting.ESTIMANDS:
        raise ValueError(f"estimand must be one of {list(weighting.ESTIMANDS)}, got "
                         f"{estimand!r}")
    check_flag("stabilize", stabilize)
    cohort, rows, ids, labels = _design(data, treatment, covariates, weights, id, missing)
    n = rows.size
    t = np.asarray(cohort.event, np.int64)
    case = cohort.weights
    res = _ps_model(cohort, penalty, folds, seed, tol)
    coef = res.coef.fillna(0.0)                    # aliased columns: not estimated, no effect
    logit = coef.iloc[0] + cohort.X @ coef[cohort.names].to_numpy()
    ps = expit(logit)
    if trim is None:
        _check_overlap(ps, labels)
        trimmed = np.zeros(ps.size, bool)
    else:                                          # a PS of 0 or 1 is trimmed with the rest
        trimmed = weighting.outside_overlap(ps, trim)
    with np.errstate(divide="ignore", invalid="ignore"):
        w = weighting.balancing_weights(ps, t, estimand)
    if stabilize:
        w = weighting.stabilize(w, t, case)
    w = np.where(trimmed, 0.0, w)
    if truncate is not None:                       # the quantile of the persons kept
        w[~trimmed] = weighting.truncate(w[~trimmed], t[~trimmed], estimand, truncate)
    if case is not None:
        w = w * case
    for arm in (0, 1):
        if not (w[t == arm] > 0).any():
            raise CohortError(f"no person with {treatment!r} = {arm} keeps a positive weight "
                              f"after trim={trim}: loosen the trim.")
    _warn_extreme(w, t, labels, treatment)
    X = sp.hstack([sp.csc_matrix(ps[:, None]), cohort.X], format="csc")
    balance = mean_differences(X, [PS_NAME, *cohort.names], t, w, estimand, case, binary)
    balance.loc[0, "type"] = "distance"
    before = np.ones(t.size) if case is None else case
    ess = pd.DataFrame({arm: [weighting.effective_sample_size(before[t == code]),
                              weighting.effective_sample_size(w[t == code])]
                        for arm, code in (("control", 0), ("treated", 1))},
                       index=pd.Index(["before", "after"], name="weights"))
    return PropensityWeights(
        weights=_spread(w, rows, n, 0.0), ps=_spread(ps, rows, n, np.nan),
        treatment=_spread(t, rows, n, -1).astype(np.int64), estimand=estimand,
        balance=balance, ess=ess, fit=res, trimmed=_spread(trimmed, rows, n, False),
        ids=ids, case_weighted=case is not None)


def _design(data, treatment, covariates, weights, id, missing):
    """The PS model's cohort (time=None, event = treatment), the mask of the data's rows it
    holds, the data's ids (or None) and the labels of the rows held (a frame's index; a
    Cohort's rows numbered from 1)."""
    if isinstance(data, Cohort):
        if weights is not None or id is not None or missing != "raise":
            raise ValueError("weights=, id= and missing= name a frame's columns; a Cohort "
                             "carries its own case weights and ids.")
        if data.start is not None or (
                data.id is not None and pd.Series(data.id).duplicated().any()):
            raise CohortError("propensity weights need one row per subject at baseline; this "
                              "cohort has (start, stop] episodes or repeated ids. Compute "
                              "them on the baseline frame (one row per id, id=) and put them "
                              "on the episodes with PropensityWeights.weighted(cohort).")
        names = list(data.names)
        if treatment not in names:
            raise CohortError(f"treatment {treatment!r} is not a covariate of the cohort "
                              f"(it has {names[:20]}). Build the cohort with the treatment "
                              "among its covariates.")
        covariates = [c for c in names if c != treatment] if covariates is None else covariates
        _check_some(covariates)
        unknown = [c for c in covariates if c not in names or c == treatment]
        if unknown:
            raise CohortError(f"covariates {unknown} are not covariates of the cohort (other "
                              "than the treatment). Name columns of cohort.names.")
        X = data.X.tocsc()
        t = X[:, names.index(treatment)].toarray().ravel()
        _check_treatment(t, treatment, np.arange(1, data.n + 1))
        cohort = Cohort.from_arrays(time=None, event=t.astype(np.int64),
                                    X=X[:, [names.index(c) for c in covariates]],
                                    names=covariates, weights=data.weights)
        ids = None if data.id is None else np.asarray(data.id)
        return cohort, np.ones(data.n, bool), ids, np.arange(1, data.n + 1)
    if not isinstance(data, pd.DataFrame):
        raise CohortError(f"propensity_weights takes a pandas DataFrame or an engine.Cohort, "
                          f"got {type(data).__name__}.")
    if covariates is None:
        raise ValueError("name the PS model's covariates (covariates=[...]): in a frame every "
                         "other column could be an outcome or a follow-up time.")
    covariates = [covariates] if isinstance(covariates, str) else list(covariates)
    _check_some(covariates)
    v.check_columns_exist(data.columns, [("treatment", treatment)]
                          + [("covariate", c) for c in covariates]
                          + [(role, c) for role, c in (("weights", weights), ("id", id))
                             if c is not None])
    roles = [treatment, *covariates, *[c for c in (weights, id) if c is not None]]
    rows = np.ones(len(data), bool)
    if missing == "drop":
        rows = data[roles].notna().all(axis=1).to_numpy()
    elif missing != "raise":
        raise ValueError(f'missing must be "raise" or "drop", got {missing!r}')
    kept = data[rows]
    labels = data.index.to_numpy()[rows]
    t = pd.to_numeric(kept[treatment], errors="coerce").to_numpy(np.float64)
    _check_treatment(t, treatment, labels, kept[treatment].to_numpy(dtype=object))
    ids = None
    if id is not None:
        v.check_no_missing(kept[id], id, "id", labels)
        repeated = kept[id].duplicated().to_numpy()
        v.fail_rows(repeated, kept[id].to_numpy(dtype=object), id, "id", "a repeated id",
                    "Propensity weights need one row per subject at baseline: keep each "
                    "subject's first row.", labels)
        ids = data[id].to_numpy()
    frame = kept[[*covariates, *[c for c in (weights,) if c is not None]]].assign(
        **{"(treatment)": t.astype(np.int64)})
    cohort = Cohort.from_frame(frame, time=None, event="(treatment)", covariates=covariates,
                               weights=weights)
    return cohort, rows, ids, labels


def _check_some(covariates):
    if not len(covariates):
        raise ValueError("the propensity model has no covariates: every person would get the "
                         "same PS and the weights would adjust for nothing. Name the "
                         "confounders (covariates=[...]).")


def _check_treatment(t, name, labels, shown=None):
    shown = t if shown is None else shown
    v.fail_rows(~np.isin(t, (0.0, 1.0)), shown, name, "treatment", "values other than 0/1",
                "Code the treatment 1 (treated) / 0 (comparator), e.g. (df[col] == 'drug A')"
                ".astype(int); rows missing it can be dropped with missing='drop'.", labels)
    for arm in (0, 1):
        if not (t == arm).any():
            raise CohortError(f"column {name!r} (treatment) is {1 - arm} in every row; a "
                              "propensity score needs treated (1) and comparator (0) persons.")


def _ps_model(cohort, penalty, folds, seed, tol):
    """The logistic PS fit; a diverging (separating) covariate is refused, named."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MonotoneLikelihoodWarning)
        if isinstance(penalty, str) and penalty == "cv":
            res = cross_validate(cohort, model="logistic", penalty="l1", folds=folds,
                                 seed=seed, tol=tol).fit
        elif penalty is None or isinstance(penalty, L1 | L2):
            res = fit(cohort, model="logistic", penalty=penalty, tol=tol)
        else:
            raise ValueError(f"penalty must be None, engine.L1(lam), engine.L2(lam) or 'cv', "
                             f"got {penalty!r}")
    if res.diverged:
        raise CohortError(f"the propensity model separates the arms perfectly: the coefficients "
                          f"of {res.diverged} diverge, so some persons have PS 0 or 1 and "
                          "infinite weights. Remove those covariates (or the persons they "
                          "single out), or add a penalty (penalty=engine.L2(1.0)).")
    return res


def _check_overlap(ps, labels):
    """PS exactly 0 or 1 in floating point: infinite weights."""
    bad = (ps <= 0.0) | (ps >= 1.0)
    if bad.any():
        v.fail_rows(bad, ps, "(propensity score)", "propensity score", "a PS of 0 or 1 (no "
                    "overlap)", "These persons have no counterpart in the other arm: trim "
                    "them from the data, or add a penalty (penalty=engine.L2(1.0)).",
                    labels)


def _warn_extreme(w, t, labels, treatment):
    for arm in (0, 1):
        on = np.flatnonzero(t == arm)
        share = w[on] / w[on].sum()
        heavy = on[share > EXTREME_SHARE]
        if heavy.size:
            warnings.warn(f"extreme weights: {heavy.size} person(s) with {treatment!r} = {arm} "
                          f"(rows {labels[heavy][:5].tolist()}) carry up to "
                          f"{share.max():.0%} of the arm's weight (effective sample size "
                          f"{weighting.effective_sample_size(w[on]):.1f} of {on.size}). Trim "
                          "the PS (trim=0.05), truncate the weights (truncate=0.99) or target "
                          "the overlap population (estimand='ATO').", DataWarning, stacklevel=3)


def _spread(values, rows, n, fill):
    """``values`` of the kept rows back onto all n rows of the data, ``fill`` elsewhere."""
    out = np.full(n, fill, dtype=np.result_type(np.asarray(values), fill))
    out[rows] = values
    return out
