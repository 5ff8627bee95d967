"""Checks of engine.fit's arguments that the data layer cannot make: what is fitted (a cohort,
not a DataFrame; events that weigh something), the starting point against the data, and the
iteration budget (for FitOptions).  Each raises a clear error naming the argument (and the covariate) and the
fix, before any kernel runs.
"""
from __future__ import annotations

import functools
import inspect
import numbers

import numpy as np

from .errors import CohortError

MAX_ETA_SPREAD = 700.0   # exp(-700) is near float64's smallest normal: risk sums would vanish


def check_fit_arguments(cohort, init=None) -> None:
    """Both checks below, in the order fit needs them."""
    check_cohort(cohort)
    check_init(init, cohort)


def check_cohort(cohort) -> None:
    """Refuse what is not a prepared cohort, and a cohort whose every event weighs 0."""
    if cohort is None or not all(hasattr(cohort, a) for a in ("X", "names", "event", "n")):
        hint = (" Build one first: engine.Cohort.from_frame(df, time=..., event=..., "
                "covariates=[...])." if hasattr(cohort, "columns") or cohort is None else "")
        raise TypeError(f"engine.fit needs an engine.Cohort, got {type(cohort).__name__}."
                        f"{hint}")
    weights = getattr(cohort, "weights", None)
    if weights is not None:
        events = np.asarray(cohort.event) > 0
        if events.any() and not (np.asarray(weights)[events] > 0).any():
            column = (getattr(cohort, "source", {}) or {}).get("weights") or "weights"
            raise CohortError(f"column {column!r} (weights) is 0 on all {int(events.sum())} "
                              "event rows: no event counts, so the likelihood is flat and "
                              "every coefficient would be reported as 0. Give the events "
                              "positive weights.")


def renamed(**old):
    """Refuse an argument's old spelling with a TypeError naming the new one (survscan 0.x
    keeps no silent aliases): ``@renamed(group="by")`` makes ``f(..., group=x)`` say to pass
    ``by=``.  Each value is the new name, optionally followed by how the value changes."""
    def wrap(function):
        @functools.wraps(function)
        def call(*args, **kwargs):
            for name, new in old.items():
                if name in kwargs:
                    raise TypeError(f"{function.__name__}() no longer takes {name}=; pass "
                                    f"{new} (renamed in survscan 0.x, one name across the "
                                    "engine).")
            return function(*args, **kwargs)
        return call
    return wrap


def check_progress(progress) -> None:
    """progress: None or a callable taking (done, total), the one signature of every verb;
    refuses the single-argument progress(state) that engine.fit took before survscan 0.x."""
    if progress is None:
        return
    if not callable(progress):
        raise TypeError(f"progress must be a callable(done, total), got "
                        f"{type(progress).__name__}.")
    try:
        inspect.signature(progress).bind(0, 1)
    except TypeError:
        raise TypeError("progress is called as progress(done, total) by every verb (engine.fit "
                        "once called progress(state)); give it two arguments, e.g. "
                        "lambda done, total: ...") from None
    except ValueError:      # a callable without a readable signature: trusted
        pass


def check_level(level) -> None:
    """level: the coverage of a confidence interval, a number in (0, 1)."""
    if not (isinstance(level, numbers.Real) and not isinstance(level, bool) and 0 < level < 1):
        raise ValueError(f"level must be a number in (0, 1) (the coverage, e.g. 0.95), got "
                         f"{level!r}")


def check_flag(name: str, value) -> None:
    """A yes/no argument: True or False (numpy's too), never a text whose truth is its length
    ("no" is true)."""
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be True or False, got {value!r}")


def check_binary_cohort(data, verb) -> None:
    """Refuse what is not an engine.Cohort with a 0/1 event (the response of a probit or
    logistic model), naming the verb and the model that fits what was given."""
    if callable(getattr(data, "check_binary_outcome", None)):
        data.check_binary_outcome(verb)
        return
    fits = (" An engine.SccsData is fitted with engine.fit(data, model='sccs')."
            if type(data).__name__ == "SccsData" else "")
    raise TypeError(f"{verb} needs an engine.Cohort with a 0/1 event (Cohort.from_frame(df, "
                    f"time=None, event=...)), got {type(data).__name__}.{fits}")


def check_max_iter(max_iter) -> None:
    """max_iter: a whole number >= 1 (FitOptions' check)."""
    if isinstance(max_iter, bool) or not isinstance(max_iter, numbers.Integral) or max_iter < 1:
        raise ValueError(f"max_iter must be a whole number >= 1, got {max_iter!r}.")


def check_init(init, cohort) -> None:
    """init: finite numbers, and a linear predictor X @ init whose spread exp() can carry.

    Only an init of one value per cohort column is checked against the data (logistic fits
    take one more, the intercept, which shifts every row alike)."""
    if init is None:
        return
    values = np.asarray(init, dtype=np.float64)
    names = list(cohort.names)
    label = (lambda j: repr(names[j])) if values.shape == (len(names),) else (lambda j: str(j))
    bad = np.flatnonzero(~np.isfinite(values.ravel()))
    if bad.size:
        listing = ", ".join(f"{label(j)} = {values.ravel()[j]}" for j in bad[:5])
        raise ValueError(f"init holds non-finite values ({listing}). Give finite starting "
                         "values, or leave init=None to start from zeros.")
    if values.shape != (len(names),):
        return
    eta = cohort.X @ values
    spread = float(eta.max() - eta.min()) if eta.size else 0.0
    if spread > MAX_ETA_SPREAD:
        X = cohort.X.tocsc()
        ranges = np.array([np.ptp(X[:, j].toarray()) if X[:, j].nnz else 0.0
                           for j in np.flatnonzero(values)])
        contribution = np.abs(values[np.flatnonzero(values)]) * ranges
        worst = np.flatnonzero(values)[np.argsort(-contribution)[:3]]
        listing = ", ".join(f"{names[j]!r} (init {values[j]:g})" for j in worst)
        raise ValueError(f"init makes the linear predictor X @ init span {spread:.3g}, more "
                         f"than exp() can carry ({MAX_ETA_SPREAD:g}); largest contributions: "
                         f"{listing}. Start nearer zero (init=None starts from zeros).")
