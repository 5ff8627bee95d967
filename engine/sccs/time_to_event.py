"""Time from exposure to event in raw case histories: an SCCS diagnostic (Schuemie et al.'s
SCCS diagnostics; the same table engine.cdm.sccs_study reports for a CDM).

For every distinct event day of a case (R SCCS's ``formatdata`` counts an event day once) and
every exposure column, the days since the latest exposure start of that column on or before
the event day (NaN when the case had none).  Events piling up just after exposure starts
support a risk window there; a pile just before them points to event-dependent exposure.
One sort and an as-of merge per column, no loop over cases.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..data import validation as v
from ..core.errors import CohortError
from .eras import check_day_range, whole_days


def sccs_time_to_event(df: pd.DataFrame, case: str, event_times: str,
                       exposure_start) -> pd.DataFrame:
    """Days from the latest exposure start to each event, per exposure column.

    Parameters
    ----------
    df : DataFrame of raw case histories (one row per event or per exposure, as R SCCS)
    case, event_times : columns of the case id and the event day
    exposure_start : column(s) of exposure start days (NaN: no exposure on that row)

    Returns
    -------
    DataFrame with columns case, day, drug, days_from_exposure (NaN: no exposure start on or
    before the event), one row per distinct (case, event day) and exposure column, sorted by
    drug, case and day.
    """
    if not isinstance(df, pd.DataFrame):
        raise CohortError(f"sccs_time_to_event needs a pandas DataFrame, got "
                          f"{type(df).__name__}.")
    drugs = [exposure_start] if isinstance(exposure_start, str) else list(exposure_start)
    if not drugs:
        raise CohortError("name at least one exposure start column (exposure_start).")
    v.check_columns_exist(df.columns, [("case", case), ("event_times", event_times)]
                          + [("exposure_start", d) for d in drugs])
    labels = df.index.to_numpy()
    v.check_no_missing(df[case], case, "case", labels)
    day = whole_days(df[event_times], event_times, "event_times", labels)
    codes, ids = pd.factorize(df[case], sort=True)
    events = pd.DataFrame({"c": codes, "day": day}).drop_duplicates()
    events = events.sort_values("day", kind="stable")
    parts = []
    for d in drugs:
        if not pd.api.types.is_numeric_dtype(df[d]):
            raise CohortError(f"column {d!r} (exposure_start) is not numeric (dtype "
                              f"{df[d].dtype}); give exposure days as numbers, NaN where a "
                              "row has no exposure.")
        start = df[d].to_numpy(dtype=np.float64, na_value=np.nan)
        has = np.isfinite(start)
        v.fail_rows(has & (start != np.round(start)), start, d, "exposure_start",
                    "fractions of a day", "Round exposure days to whole days.", labels)
        check_day_range(start, d, "exposure_start", labels)
        starts = pd.DataFrame({"c": codes[has],
                               "start": start[has].astype(np.int64)}).drop_duplicates()
        out = pd.merge_asof(events, starts.sort_values("start", kind="stable"),
                            left_on="day", right_on="start", by="c", direction="backward")
        parts.append(pd.DataFrame({"c": out["c"].to_numpy(), "day": out["day"].to_numpy(),
                                   "drug": str(d),
                                   "days_from_exposure": (out["day"] - out["start"]).to_numpy()}))
    table = pd.concat(parts, ignore_index=True).sort_values(["drug", "c", "day"],
                                                            kind="stable", ignore_index=True)
    table.insert(0, "case", np.asarray(ids)[table.pop("c").to_numpy()])
    return table
