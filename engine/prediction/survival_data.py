"""The (time, event) arrays the predictive-performance metrics take, checked once."""
from __future__ import annotations

import numpy as np


def checked(time, event, name: str = "test") -> tuple[np.ndarray, np.ndarray]:
    """(time float64, event bool) of one data set; a clear ValueError for bad input."""
    time = np.asarray(time, float)
    event = np.asarray(event)
    if time.ndim != 1 or event.shape != time.shape:
        raise ValueError(f"the {name} times and events must be 1-d arrays of one length; got "
                         f"shapes {time.shape} and {event.shape}.")
    bad = np.flatnonzero(~np.isfinite(time))
    if bad.size:
        raise ValueError(f"the {name} times hold missing or infinite values at rows "
                         f"{(bad[:5] + 1).tolist()} (1-based); remove those rows.")
    codes = set(np.unique(event).tolist())
    if not codes <= {0, 1, False, True}:
        raise ValueError(f"the {name} events must be 0/1 (or bool); got codes {sorted(codes)}. "
                         "For competing risks, score one cause against the rest.")
    event = event.astype(bool)
    if not event.any():
        raise ValueError(f"the {name} data have no events: the metric is not defined.")
    return time, event


def train_or_test(train, time, event):
    """The (time, event) the censoring distribution is estimated from: ``train`` when given,
    else the test data themselves."""
    if train is None:
        return time, event
    if not (isinstance(train, tuple) and len(train) == 2):
        raise ValueError("train must be a (time, event) pair of arrays.")
    return checked(*train, name="train")


def checked_times(times, time) -> np.ndarray:
    """The metric's ``times`` as a 1-d float array, finite and within the test data's follow-up
    [min time, max time); a clear ValueError otherwise."""
    times = np.atleast_1d(np.asarray(times, float))
    if times.ndim != 1 or times.size == 0:
        raise ValueError(f"times must be a non-empty 1-d list of times, got shape {times.shape}.")
    bad = np.flatnonzero(~np.isfinite(times))
    if bad.size:
        raise ValueError(f"times must be finite numbers; got {times[bad[0]]} at position "
                         f"{bad[0]}.")
    if times.max() >= time.max() or times.min() < time.min():
        raise ValueError(f"times must lie in [{time.min():g}, {time.max():g}) (the test data's "
                         f"follow-up); got [{times.min():g}, {times.max():g}].")
    return times
