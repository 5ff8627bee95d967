"""engine.split_lexis: follow-up cut along attained age, against R's survSplit on the age scale
(tests/data/r_standardized_rates.R, R 4.2.2 / survival 3.5-3), with the standardised rates and
SMRs of the split rows; and the split's own invariants (person-time and events kept, each piece
inside its band) on (start, stop] rows."""
import numpy as np
import pandas as pd
import pytest

import engine
from r_printed import data_frame, sections

R = sections("r_standardized_rates.Rout")
WEEKS_PER_YEAR = 52.18
BREAKS = [19.5, 22.5, 25.5, 30.5]
BANDS = ["<= 19.5", "(19.5, 22.5]", "(22.5, 25.5]", "(25.5, 30.5]", "> 30.5"]


@pytest.fixture(scope="module")
def split(rossi):
    return engine.split_lexis(rossi, "week", "arrest", "age", BREAKS, unit=WEEKS_PER_YEAR)


def test_attained_age_cells_as_R_survsplit(rossi, split):
    assert len(split) == data_frame(R["rossi attained age pieces"])["rows"].iloc[0]   # 531
    want = data_frame(R["rossi attained age cells"])
    got = (split.assign(pt=split["week"] - split["start"])
           .groupby(["fin", "band"], sort=False)[["arrest", "pt"]].sum())
    for _, row in want.iterrows():
        cell = got.loc[(row["fin"], BANDS[int(row["band"]) - 1])]      # R: the band's number
        assert cell["arrest"] == row["events"]
        assert cell["pt"] == pytest.approx(row["person_time"], rel=1e-12)
    # a subject's pieces keep its index label and add up to its follow-up and event
    back = split.assign(pt=split["week"] - split["start"]).groupby(level=0)
    np.testing.assert_allclose(back["pt"].sum(), rossi["week"], rtol=1e-13)
    assert back["arrest"].sum().equals(rossi["arrest"])


def test_standardised_by_attained_age_as_R(split):
    cohort = engine.Cohort.from_frame(split.reset_index(), "week", "arrest", covariates=[],
                                      start="start", id="index")
    band, fin = split["band"].to_numpy(), split["fin"].to_numpy()
    rates = engine.standardized_rates(cohort, band, by=fin)
    want = data_frame(R["rossi fin by attained age rates"])
    for column in ("events", "person_time", "rate", "lower", "upper"):
        np.testing.assert_allclose(rates.rates[column], want[column], rtol=1e-11)
    ratio = data_frame(R["rossi fin by attained age ratios"])
    np.testing.assert_allclose(rates.comparisons["rr_upper"], ratio["rr_upper"], rtol=1e-10)
    smr = engine.smr(cohort, band, by=fin).ratios
    want = data_frame(R["rossi fin by attained age smr"])
    for column in ("observed", "expected", "smr", "lower", "upper", "p"):
        np.testing.assert_allclose(smr[column], want[column], rtol=1e-10)


def test_entry_rows_and_pieces_inside_their_bands():
    """(start, stop] rows in days, ages at the origin in years: every piece lies in its band
    of attained age, the event stays on the last piece of its row, and a stop on a limit ends
    in the band below it (an event at a cut belongs to the earlier piece)."""
    rng = np.random.default_rng(3)
    n = 400
    start = rng.uniform(0, 2000, n)
    frame = pd.DataFrame({"entry": start, "exit": start + rng.uniform(1, 4000, n),
                          "dead": rng.integers(0, 2, n), "age0": rng.uniform(30, 70, n)},
                         index=[f"p{i}" for i in range(n)])
    frame.loc["p0", ["entry", "exit", "age0", "dead"]] = [0.0, 3652.5, 40.0, 1]  # dies at 50
    pieces = engine.split_lexis(frame, "exit", "dead", "age0", [40, 50, 60], unit=365.25,
                                start="entry")
    age_lo = pieces["age0"] + pieces["entry"] / 365.25
    age_hi = pieces["age0"] + pieces["exit"] / 365.25
    bounds = {"<= 40": (-np.inf, 40), "(40, 50]": (40, 50), "(50, 60]": (50, 60),
              "> 60": (60, np.inf)}
    lo = pieces["band"].map(lambda b: bounds[b][0])
    hi = pieces["band"].map(lambda b: bounds[b][1])
    assert (age_lo >= lo - 1e-9).all() and (age_hi <= hi + 1e-9).all()
    assert (pieces["exit"] > pieces["entry"]).all()
    last = pieces.groupby(level=0)["exit"].transform("max") == pieces["exit"]
    assert (pieces.loc[~last, "dead"] == 0).all()
    assert pieces.groupby(level=0)["dead"].sum()[frame.index].equals(frame["dead"])
    assert pieces.loc[["p0"], "band"].tolist() == ["(40, 50]"]                   # 40 -> 50
    lived = (pieces["exit"] - pieces["entry"]).groupby(level=0).sum()[frame.index]
    np.testing.assert_allclose(lived, frame["exit"] - frame["entry"], rtol=1e-12)


def test_bad_input_is_named(rossi):
    bad = rossi.assign(age=rossi["age"].astype(float))
    bad.loc[bad.index[3], "age"] = np.nan
    with pytest.raises(engine.CohortError, match=r"column 'age' \(scale\) has 1 row"):
        engine.split_lexis(bad, "week", "arrest", "age", BREAKS)
    with pytest.raises(engine.CohortError, match="'agee'"):
        engine.split_lexis(rossi, "week", "arrest", "agee", BREAKS)
    with pytest.raises(ValueError, match="increasing finite band limits"):
        engine.split_lexis(rossi, "week", "arrest", "age", [30, 20])
    with pytest.raises(ValueError, match="unit must be a positive number"):
        engine.split_lexis(rossi, "week", "arrest", "age", BREAKS, unit=0)
    with pytest.raises(engine.CohortError, match="'fin'; pass another name"):
        engine.split_lexis(rossi, "week", "arrest", "age", BREAKS, band="fin")
    zero = rossi.assign(week=rossi["week"].where(rossi.index != rossi.index[0], 0))
    with pytest.raises(engine.CohortError, match="time <= 0"):
        engine.split_lexis(zero, "week", "arrest", "age", BREAKS)
