"""engine.impute: m completed versions of a data set whose covariates miss values, by
substantive-model-compatible draws for a Cox model (smcfcs.py, the default) or by chained
equations with the outcome as predictors (chained_equations.py); Imputations.fit analyses each
and pools them by Rubin's rules (pooling.py).
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..core.errors import Cancelled, CohortError, DataWarning
from ..data.cohort import Cohort
from ..data.validation import check_columns_exist, fail_rows
from ..regression.fit import fit
from . import smcfcs
from .chained_equations import chained_equations, model_frame
from .pooling import PooledResult, pool

# the parameters of Cohort.from_frame that Imputations.fit passes on (the rest go to fit)
_COHORT_ARGS = ("covariates", "strata", "id", "weights", "competing_risks", "formula")


@dataclass
class Imputations:
    """m completed versions of a data set (engine.impute).

    data : the data as given, its missing values in place
    imputed : {column: DataFrame m x (rows missing it)}, the values drawn for each data set,
        columns labelled by the rows' index labels
    model : the variables of the imputation model, in its order (``H_...``: cumulative hazard)
    time, event : the outcome's columns
    spec : what was asked: method, m, seed, columns, and mice's burn_in, skip and donors or
        smcfcs's iterations, rejection_limit, ties, strata, covariates (its Cox model's) and
        rejected (per column, the rows left with an unaccepted draw)
    """

    data: pd.DataFrame
    imputed: dict
    model: list
    time: str
    event: str
    spec: dict = field(default_factory=dict)

    @property
    def m(self) -> int:
        return int(self.spec["m"])

    def dataset(self, k: int) -> pd.DataFrame:
        """The k-th completed data set (0 <= k < m): a copy of ``data`` with the k-th draws."""
        if not 0 <= k < self.m:
            raise IndexError(f"there are {self.m} imputed data sets: k from 0 to {self.m - 1}")
        out = self.data.copy()
        for column, draws in self.imputed.items():
            rows = self.data[column].isna().to_numpy()
            out.loc[rows, column] = draws.iloc[k].to_numpy()
        return out

    @property
    def summary(self) -> pd.DataFrame:
        """Per imputed column: how many values are missing, the observed values' mean and SD,
        and the imputed values' mean and SD over all m data sets (a first check that the
        draws look like the data: mice's densityplot in numbers)."""
        rows = {}
        for column, draws in self.imputed.items():
            observed = self.data[column].dropna().astype(float)
            values = draws.to_numpy(float).ravel()
            rows[column] = {"missing": draws.shape[1], "missing %": 100 * draws.shape[1]
                            / len(self.data), "observed mean": observed.mean(),
                            "observed sd": observed.std(), "imputed mean": values.mean(),
                            "imputed sd": values.std(ddof=1) if values.size > 1 else np.nan}
        out = pd.DataFrame.from_dict(rows, orient="index")
        out.index.name = "column"
        return out

    def fit(self, df_complete=None, level: float = 0.95, progress=None, cancel=None,
            **options) -> PooledResult:
        """The model fitted to each completed data set and pooled by Rubin's rules.

        ``options``: Cohort.from_frame's covariates, strata, id, weights, competing_risks and
        formula, the rest engine.fit's (model, ties, variance, cluster, cut_points, ...; no
        penalty: Rubin's rules pool estimates with a variance).  ``df_complete``: the
        complete-data degrees of freedom for Barnard and Rubin's small-sample df (None: large
        samples, Rubin's df).  ``cause=k`` with a Cox model: the cause-specific Cox model of
        cause k (its events; the other causes censored), as SMC-FCS imputed for each cause.
        ``progress(done, m)`` after each fit; ``cancel`` (an Event) stops between fits with
        engine.Cancelled."""
        cohort_args = {k: options.pop(k) for k in _COHORT_ARGS if k in options}
        if "covariates" not in cohort_args and "formula" not in cohort_args \
                and "covariates" in self.spec:       # smcfcs: the model it imputed for
            cohort_args["covariates"] = self.spec["covariates"]
            if self.spec.get("strata") and "strata" not in cohort_args:
                cohort_args["strata"] = self.spec["strata"]
        cause = options.pop("cause") if options.get("model", "cox") == "cox" \
            and "cause" in options else None
        fits = []
        for k in range(self.m):
            data = self.dataset(k)
            if cause is not None:
                data[self.event] = (data[self.event] == cause).astype(int)
            cohort = Cohort.from_frame(data, time=self.time, event=self.event, **cohort_args)
            fits.append(fit(cohort, **options))
            if progress is not None:
                progress(k + 1, self.m)
            if cancel is not None and cancel.is_set():
                raise Cancelled(f"pooled fit cancelled after {k + 1} of {self.m} fits")
        return pool(fits, df_complete=df_complete, level=level)


def impute(data: pd.DataFrame, time: str, event: str, columns=None, method: str = "smcfcs",
           predictors=None, m: int = 20, seed=None, burn_in: int = 10, skip: int = 3,
           donors: int = 5, iterations: int = 10, rejection_limit: int = 1000,
           ties: str = "efron", strata=None, progress=None,
           cancel=None) -> Imputations:
    """Impute the missing values of ``columns`` m times.

    Parameters
    ----------
    data : DataFrame, one row per subject (impute before splitting follow-up into episodes)
    time, event : the outcome's columns, complete (event 0 censored, 1..k causes)
    columns : the numeric columns to impute; None: every numeric column but the outcome's
        that misses a value
    method : "smcfcs" (the default: draws compatible with the Cox model of ``columns`` and
        ``predictors``, smcfcs.py; with several causes one cause-specific Cox model each, as
        R's smcfcs "compet") | "mice" (chained equations with the
        event and the Nelson-Aalen hazard as predictors, module docstring; any predictors,
        competing causes; biases large hazard ratios toward 1)
    predictors : smcfcs: the Cox model's other covariates (numeric; None: every numeric
        column but the outcome's); mice: the other variables of the imputation model (None:
        every column but the outcome's, text ones as indicators of their levels but the
        first), the event indicator(s) and cumulative hazard(s) always added
    m : how many completed data sets (20 or more where much is missing: White, Royston and
        Wood 2011 suggest at least the percentage of incomplete cases)
    seed : for numpy.random.default_rng
    burn_in, skip, donors : mice: cycles before the first kept data set and between kept
        ones, and predictive mean matching's pool of nearest observed rows (mice's 5)
    iterations, rejection_limit, ties : smcfcs: cycles of each chain (R smcfcs's numit),
        tries of the rejection step a row, and the Cox fits' ties
    strata : smcfcs: column(s) of the Cox model's strata (a baseline hazard each, as
        R's smcfcs with strata() in its formula); ``Imputations.fit`` stratifies alike
    progress : callable(done, total) after each cycle of the imputation models
    cancel : threading.Event-like; once set, engine.Cancelled after the current cycle
    """
    if not isinstance(data, pd.DataFrame):
        raise CohortError(f"impute needs a pandas DataFrame, got {type(data).__name__}")
    if method not in ("smcfcs", "mice"):
        raise ValueError(f'method is "smcfcs" or "mice", got {method!r}')
    check_columns_exist(data.columns, [("time", time), ("event", event)])
    t, e = _outcome(data, time, event, data.index.to_numpy())
    by = [] if strata is None else [strata] if isinstance(strata, str) else list(strata)
    check_columns_exist(data.columns, [("strata", c) for c in by])
    if method == "mice" and by:
        raise ValueError("strata= is for method='smcfcs' (its Cox model's); with chained "
                         "equations name the strata columns among predictors=")
    if by and data[by].isna().any().any():
        raise CohortError(f"the strata columns {by} miss values; strata are not imputed: "
                          "give those rows a stratum or leave them out")
    others = [c for c in data.columns if c not in (time, event, *by)]
    columns = _columns(data, others, columns)
    for name, value in (("m", m), ("donors", donors), ("iterations", iterations),
                        ("rejection_limit", rejection_limit)):
        if int(value) != value or value < 1:
            raise ValueError(f"{name} must be a whole number >= 1, got {value!r}")
    if int(burn_in) != burn_in or burn_in < 0 or int(skip) != skip or skip < 0:
        raise ValueError(f"burn_in and skip are whole numbers >= 0, got {burn_in!r}, {skip!r}")
    rng = np.random.default_rng(seed)
    spec = {"method": method, "m": int(m), "seed": seed, "columns": columns}
    total = int(m) * int(iterations) if method == "smcfcs" else \
        int(burn_in) + int(m) * (int(skip) + 1)
    step = _stepper(total, progress, cancel)
    if method == "mice":
        predictors = others if predictors is None else list(predictors)
        check_columns_exist(data.columns, [("predictor", c) for c in predictors])
        frame = model_frame(data, columns, predictors, t, e)
        draws = chained_equations(frame, columns, int(m), int(burn_in), int(skip),
                                  int(donors), rng, step)
        spec.update(burn_in=int(burn_in), skip=int(skip), donors=int(donors))
        return Imputations(data=data, imputed=draws, model=list(frame.columns), time=time,
                           event=event, spec=spec)
    covariates = _cox_covariates(data, others, columns, predictors)
    X = data[covariates].astype(float)
    values, rejected = smcfcs.chains(X, t, e, columns, int(m), int(iterations),
                                     int(rejection_limit), ties, rng, step,
                                     data[by] if by else None)
    draws = {c: pd.DataFrame(values[c], columns=data.index[data[c].isna().to_numpy()])
             for c in columns if data[c].isna().any()}
    failed = {c: k for c, k in rejected.items() if k}
    if failed:
        warnings.warn(f"the rejection step kept an unaccepted draw {failed} time(s) (per column, "
                      f"over {int(m)} chains of {int(iterations)} cycles) after "
                      f"{int(rejection_limit)} tries; raise rejection_limit (R's smcfcs warns "
                      "alike)", DataWarning, stacklevel=2)
    spec.update(iterations=int(iterations), rejection_limit=int(rejection_limit), ties=ties,
                rejected=rejected, covariates=covariates, strata=by or None)
    return Imputations(data=data, imputed=draws, model=covariates, time=time, event=event,
                       spec=spec)


def _stepper(total, progress, cancel):
    """step(): one more cycle of ``total`` done, told to ``progress``; engine.Cancelled once
    ``cancel`` is set."""
    done = 0

    def step():
        nonlocal done
        done += 1
        if progress is not None:
            progress(done, total)
        if cancel is not None and cancel.is_set():
            raise Cancelled(f"imputation cancelled after {done} of {total} cycles")
    return step


def _cox_covariates(data, others, columns, predictors):
    """The Cox model's covariates for smcfcs, in the data's order: ``columns`` and
    ``predictors`` (None: every numeric column but the outcome's), each numeric, the
    predictors complete or among ``columns``."""
    if predictors is None:
        predictors = [c for c in others if pd.api.types.is_numeric_dtype(data[c])]
    check_columns_exist(data.columns, [("predictor", c) for c in predictors])
    wanted = set(columns) | set(predictors)
    covariates = [c for c in others if c in wanted]
    for c in covariates:
        if not (pd.api.types.is_numeric_dtype(data[c]) or pd.api.types.is_bool_dtype(data[c])):
            raise CohortError(f"covariate {c!r} is not numeric ({data[c].dtype}); the Cox "
                              "model of method='smcfcs' takes numbers: code it as 0/1 columns "
                              "of its levels but the first")
        if c not in columns and data[c].isna().any():
            raise CohortError(f"covariate {c!r} misses {int(data[c].isna().sum())} value(s) "
                              "but is not among the columns to impute: add it to columns= "
                              "or leave it out of predictors=")
    return covariates


def _outcome(data, time, event, labels):
    """The outcome's values, complete and valid: imputation fills covariates, not outcomes."""
    fix = ("Multiple imputation fills in covariates given the outcome; rows without a valid "
           "outcome cannot be analysed: correct them or leave them out of the data.")
    t = pd.to_numeric(data[time], errors="coerce").to_numpy(float)
    e = pd.to_numeric(data[event], errors="coerce").to_numpy(float)
    fail_rows(~np.isfinite(t), data[time].to_numpy(object), time, "time",
              "missing or non-numeric values", fix, labels)
    fail_rows(t <= 0, t, time, "time", "time <= 0", fix, labels)
    fail_rows(~np.isfinite(e), data[event].to_numpy(object), event, "event",
              "missing or non-numeric values", fix, labels)
    fail_rows((e < 0) | (e != np.round(e)), e, event, "event",
              "codes that are not 0 (censored) or a cause 1..k", fix, labels)
    if not (e > 0).any():
        raise CohortError(f"column {event!r} (event) has no events: with every row censored "
                          "the outcome says nothing to impute from.")
    return t, e.astype(np.int64)


def _columns(data, others, columns):
    """The columns to impute, checked: numeric, among the data's, not wholly missing."""
    if columns is None:
        columns = [c for c in others if pd.api.types.is_numeric_dtype(data[c])
                   and data[c].isna().any()]
        if not columns:
            raise CohortError("no numeric column but the outcome misses a value: there is "
                              "nothing to impute (text columns with missing values are "
                              "named by columns=, after coding them as numbers).")
    columns = list(dict.fromkeys(columns))
    check_columns_exist(data.columns, [("column to impute", c) for c in columns])
    for c in columns:
        if c not in others:
            raise CohortError(f"column {c!r} is the outcome's or a stratum's; impute "
                              "covariates only")
        if not (pd.api.types.is_numeric_dtype(data[c]) or pd.api.types.is_bool_dtype(data[c])):
            raise CohortError(
                f"column {c!r} is not numeric ({data[c].dtype}); imputation by predictive "
                "mean matching draws observed numbers: code it as numbers (a 0/1 column per "
                "level but the first for a categorical variable) and impute those.")
        if data[c].nunique() < 2:
            raise CohortError(f"column {c!r} has {int(data[c].nunique())} distinct observed "
                              "value(s); there is nothing to impute it from: leave it out of "
                              "the analysis.")
    return columns
