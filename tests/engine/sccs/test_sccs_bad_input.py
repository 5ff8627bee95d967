"""Issue 30's SCCS probe as tests: day numbers stay int64 (refused past +/-2**31 - 1), verbs
name the model an SccsData fits, and overlapping exposures of one drug count their union."""
import numpy as np
import pandas as pd
import pytest

import engine
from engine import SccsData
from sccs_oracles import day_by_day, read


def _itp(shift):
    df = read("itpdat")
    return df.assign(**{c: df[c].astype(np.int64) + shift for c in ("sta", "end", "itp", "mmr")})


def _itp_fit(df):
    sccs = SccsData.from_cases(df, case="case", obs_start="sta", obs_end="end",
                               event_times="itp", exposure_start="mmr",
                               risk_windows={"mmr": [(0, 42)]})
    return engine.fit(sccs, model="sccs")


def test_day_numbers_shifted_within_range_give_the_same_fit():
    """Shifting every day by 2**31 - 2e6 (inside the range) changes no era and no number."""
    base = _itp_fit(_itp(0))
    moved = _itp_fit(_itp(2**31 - 2_000_000))
    np.testing.assert_allclose(moved.coef.to_numpy(), base.coef.to_numpy(), rtol=1e-12)
    assert moved.loglik == pytest.approx(base.loglik, rel=1e-12)


@pytest.mark.parametrize("shift", [2**53, 2**31, -(2**40)])
def test_day_numbers_past_the_range_are_refused_by_name(shift):
    """The probe's 2**53 shift lost whole days in float64 (coef 1.5096 -> 1.3528): refused."""
    with pytest.raises(engine.CohortError, match=r"'sta' \(obs_start\).*beyond \+/-2,147,483,647"
                       r".*row 0 = .*nearer origin"):
        _itp_fit(_itp(shift))


def test_huge_float_days_are_refused_not_overflowed():
    df = pd.DataFrame({"id": [1, 1], "a": [0.0, 0.0], "b": [1e300, 1e300], "t": [5.0, 9.0],
                       "d": [3.0, 3.0]})
    with pytest.raises(engine.CohortError, match=r"'b' \(obs_end\).*beyond"):
        SccsData.from_cases(df, case="id", obs_start="a", obs_end="b", event_times="t",
                            exposure_start="d", risk_windows={"d": [(0, 4)]})


@pytest.mark.parametrize("column, role", [("d", "exposure_start"), ("e", "exposure_end")])
def test_huge_exposure_days_are_refused(column, role):
    df = pd.DataFrame({"id": [1, 1], "a": [0, 0], "b": [99, 99], "t": [5, 9], "d": [3, 3],
                       "e": [10, 10]})
    df[column] = 2**60
    with pytest.raises(engine.CohortError, match=rf"'{column}' \({role}\).*beyond"):
        SccsData.from_cases(df, case="id", obs_start="a", obs_end="b", event_times="t",
                            exposure_start="d", exposure_end={"d": "e"})


def test_eras_hold_int64_days_exactly_near_the_limit():
    top = 2**31 - 1
    df = pd.DataFrame({"id": [1], "a": [top - 99], "b": [top], "t": [top - 5], "d": [top - 10]})
    sccs = SccsData.from_cases(df, case="id", obs_start="a", obs_end="b", event_times="t",
                               exposure_start="d", risk_windows={"d": [(0, 6)]})
    f = sccs.to_frame()
    assert f["length"].sum() == 100
    assert f.loc[f["d[0,6]"] == 1, "length"].sum() == 7
    assert f.loc[f["d[0,6]"] == 1, "events"].sum() == 1


@pytest.mark.parametrize("model", ["cox", "fine_gray", "logistic"])
def test_fit_names_the_model_an_sccs_data_fits(model):
    sccs = SccsData.from_cases(read("itpdat"), case="case", obs_start="sta", obs_end="end",
                               event_times="itp", exposure_start="mmr",
                               risk_windows={"mmr": [(0, 42)]})
    pattern = rf"model='{model}' cannot fit an engine.SccsData.*model='sccs'"
    with pytest.raises(engine.CohortError, match=pattern):
        engine.fit(sccs, model=model)
    with pytest.raises(engine.CohortError, match=pattern):
        engine.cross_validate(sccs, model=model, penalty="l2")
    with pytest.raises(engine.CohortError, match=pattern):
        engine.loglik(sccs, np.zeros(sccs.p), model=model)


@pytest.mark.parametrize("verb", [lambda d: engine.sample(d, draws=5, burn_in=0, chains=1),
                                  engine.probit_mle], ids=["sample", "probit_mle"])
def test_probit_verbs_name_the_model_an_sccs_data_fits(verb):
    sccs = SccsData.from_cases(read("itpdat"), case="case", obs_start="sta", obs_end="end",
                               event_times="itp", exposure_start="mmr",
                               risk_windows={"mmr": [(0, 42)]})
    with pytest.raises(TypeError, match=r"needs an engine.Cohort with a 0/1 event.*got "
                       r"SccsData.*model='sccs'"):
        verb(sccs)


def _exposed_days(sccs, name):
    f = sccs.to_frame()
    return f.loc[f[name] == 1, "length"].sum()


@pytest.mark.parametrize("order", [[0, 1], [1, 0]])
def test_same_day_exposures_count_their_union_in_any_row_order(order):
    """Two exposures of one drug from day 20, one to day 25 and one to day 60: days 20-60
    are exposed (41 days), whichever row comes first (the probe lost the longer one's days)."""
    df = pd.DataFrame({"id": [1, 1], "a": [0, 0], "b": [99, 99], "t": [22, 50],
                       "s": [20, 20], "e": [25, 60]}).iloc[order]
    sccs = SccsData.from_cases(df, case="id", obs_start="a", obs_end="b", event_times="t",
                               exposure_start="s", exposure_end={"s": "e"})
    assert _exposed_days(sccs, "s[0,end]") == 41
    f = sccs.to_frame()
    assert f.loc[f["s[0,end]"] == 1, "events"].sum() == 2


def test_nested_and_chained_exposures_equal_the_day_by_day_union():
    """A nested exposure (30-35 inside 10-50), a chain (60-70, 65-80) and a lone one (90-92),
    with window (0, end+2): the eras equal the day-by-day definition over the union."""
    df = pd.DataFrame({"id": [1] * 5, "a": [0] * 5, "b": [120] * 5, "t": [12, 40, 75, 91, 100],
                       "s": [10, 30, 60, 65, 90], "e": [50, 35, 70, 80, 92]})
    sccs = SccsData.from_cases(df, case="id", obs_start="a", obs_end="b", event_times="t",
                               exposure_start="s", exposure_end={"s": "e"},
                               risk_windows={"s": [(0, "end+2")]})
    days = np.arange(0, 121)
    exposed = ((days >= 10) & (days <= 52)) | ((days >= 60) & (days <= 82)) \
        | ((days >= 90) & (days <= 94))
    assert _exposed_days(sccs, "s[0,end+2]") == exposed.sum()
    daily = day_by_day(df, "id", "a", "b", "t", {"s[0,end+2]": ("s", "e", 0, 2)})
    assert daily["s[0,end+2]"].sum() == exposed.sum()
