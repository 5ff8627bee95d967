"""engine.sccs_time_to_event against the definition written out event by event, on R SCCS's
itpdat (one MMR dose) and gidat (repeat NSAID exposures, one row per exposure)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import engine


def by_definition(df, case, event, drug):
    """For each case and distinct event day: day minus the latest start on or before it."""
    rows = []
    for c, g in df.groupby(case):
        starts = g[drug].dropna().unique()
        for day in sorted(g[event].unique()):
            before = starts[starts <= day]
            rows.append((c, float(day), day - before.max() if before.size else np.nan))
    return pd.DataFrame(rows, columns=["case", "day", "days_from_exposure"])


@pytest.mark.parametrize("name, event, drug", [("itpdat", "itp", "mmr"),
                                               ("gidat", "bleed", "ns")])
def test_equals_the_definition(name, event, drug):
    df = engine.datasets.load_sccs(name)
    got = engine.sccs_time_to_event(df, "case", event, drug)
    assert (got["drug"] == drug).all()
    want = by_definition(df, "case", event, drug)
    pd.testing.assert_frame_equal(got.drop(columns="drug"), want, check_dtype=False)


def test_several_drugs_and_row_order():
    df = engine.datasets.load_sccs("itpdat").assign(later=lambda d: d["mmr"] + 30)
    shuffled = df.sample(frac=1.0, random_state=3)
    got = engine.sccs_time_to_event(shuffled, "case", "itp", ["mmr", "later"])
    for drug in ("mmr", "later"):
        part = got[got["drug"] == drug].drop(columns="drug").reset_index(drop=True)
        pd.testing.assert_frame_equal(part, by_definition(df, "case", "itp", drug),
                                      check_dtype=False)


def test_bad_input_names_the_column():
    df = engine.datasets.load_sccs("itpdat")
    with pytest.raises(engine.CohortError, match="'vaccine'"):
        engine.sccs_time_to_event(df, "case", "itp", "vaccine")
    with pytest.raises(engine.CohortError, match=r"'mmr' \(exposure_start\) is not numeric"):
        engine.sccs_time_to_event(df.assign(mmr=df["mmr"].astype(str)), "case", "itp", "mmr")
    with pytest.raises(engine.CohortError, match="fractions of a day"):
        engine.sccs_time_to_event(df.assign(itp=df["itp"] + 0.5), "case", "itp", "mmr")
