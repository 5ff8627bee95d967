"""Multiple imputation by chained equations with the outcome as predictors (engine.impute's
method="mice").

Each incomplete covariate is imputed from the other variables of the imputation model by a
linear model with predictive mean matching (statsmodels' MICEData: the model's coefficients
drawn from their approximate posterior, then each missing value replaced by the observed value
of one of the ``donors`` rows whose predicted means are nearest), one column after another (the
fewest missing first), ``burn_in`` cycles and then ``skip + 1`` cycles between kept data sets,
as statsmodels' MICE.fit draws them.  The outcome enters every imputation model as White and
Royston recommend (Imputing missing covariate values for the Cox model, Statistics in Medicine
2009): the event indicator and the Nelson-Aalen cumulative hazard at the row's time, not the
time itself; with competing causes one indicator and one cause-specific cumulative hazard per
cause.  Linear in those, the imputation model only approximates the Cox model's conditional:
a large hazard ratio is biased toward 1 (smcfcs.py does not approximate).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..core.errors import CohortError
from ..data.risk_set import RiskSets


def nelson_aalen_at(time, event, cause=None) -> np.ndarray:
    """The Nelson-Aalen cumulative hazard at each row's own time: the sum over event times
    t <= time_i of d(t) / n(t), n(t) the rows with time >= t, d(t) their events (of ``cause``
    when given, of any cause otherwise)."""
    time = np.asarray(time, float)
    died = (event > 0) if cause is None else (event == cause)
    times, at = np.unique(time, return_inverse=True)
    n_at_risk = RiskSets(np.zeros(time.size), time, times).sums(np.ones(time.size))
    deaths = np.bincount(at, weights=died.astype(float), minlength=times.size)
    return np.cumsum(deaths / n_at_risk)[at]


def model_frame(data, columns, predictors, t, e) -> pd.DataFrame:
    """The imputation model's variables, named as the data's: the columns to impute and the
    predictors in the data's column order (complete text columns as level indicators), then
    the event indicator(s) and Nelson-Aalen cumulative hazard(s)."""
    wanted = set(columns) | set(predictors)
    parts = {}
    for c in data.columns:
        if c not in wanted or c in parts:
            continue
        values = data[c]
        if c in columns or pd.api.types.is_numeric_dtype(values) \
                or pd.api.types.is_bool_dtype(values):
            parts[c] = values.astype(float).to_numpy()
            continue
        if values.isna().any():
            raise CohortError(
                f"predictor {c!r} is text with missing values: code it as numbers and name it "
                "in columns= to impute it, or leave it out of predictors=.")
        levels = pd.Categorical(values).categories
        for level in levels[1:]:
            parts[f"{c}[{level}]"] = (values == level).to_numpy(float)
    causes = np.unique(e[e > 0])
    for k in causes:
        name = "" if causes.size == 1 else f" {k}"
        parts[f"event{name}"] = (e == k).astype(float)
        parts[f"H_{'event' if causes.size == 1 else f'cause {k}'}"] = nelson_aalen_at(
            t, e, None if causes.size == 1 else k)
    return pd.DataFrame(parts, index=data.index)


def chained_equations(frame, columns, m, burn_in, skip, donors, rng, step=None) -> dict:
    """The m kept draws of each column's missing values: statsmodels' MICEData over the
    frame (its variables renamed v0, v1, ... for its formulas), one cycle at a time (the
    draws of update_all(k): it cycles k times), ``step()`` after each."""
    from statsmodels.imputation.mice import MICEData

    safe = frame.set_axis([f"v{j}" for j in range(frame.shape[1])], axis=1)
    chain = MICEData(safe.reset_index(drop=True), k_pmm=donors, rng=rng)
    name = dict(zip(frame.columns, safe.columns))
    missing = {c: frame[c].isna().to_numpy() for c in columns}
    draws = {c: [] for c in columns}
    for _ in range(burn_in):
        chain.update_all(1)
        if step is not None:
            step()
    for _ in range(m):
        for _ in range(skip + 1):
            chain.update_all(1)
            if step is not None:
                step()
        for c in columns:
            draws[c].append(chain.data[name[c]].to_numpy()[missing[c]])
    return {c: pd.DataFrame(np.vstack(draws[c]), columns=frame.index[missing[c]])
            for c in columns if missing[c].any()}
