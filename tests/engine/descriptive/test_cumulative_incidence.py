"""Cumulative incidence: equal to lifelines' Aalen-Johansen and to a plain tie-aware oracle (the
standard errors and limits against R: test_cumulative_incidence_r.py)."""
import warnings

import numpy as np
import pandas as pd
import pytest
from lifelines import AalenJohansenFitter

import engine


def _aalen_johansen(t, e, cause, w=None):
    """CIF(u) = sum_{v <= u} S(v-) d_k(v) / Y(v) at 0 and every distinct time, ties together."""
    w = np.ones(t.size) if w is None else w
    S, F, out = 1.0, 0.0, {0.0: 0.0}
    for u in np.unique(t):
        at_risk = w[t >= u].sum()
        F += S * w[(t == u) & (e == cause)].sum() / at_risk
        S *= 1.0 - w[(t == u) & (e > 0)].sum() / at_risk
        out[u] = F
    return out


def _mgus2():
    df = engine.datasets.load_mgus2()
    df["etime"] = np.where(df.pstat == 1, df.ptime, df.futime).astype(float)
    df["event"] = np.where(df.pstat == 1, 1, 2 * df.death)
    return df


def _lifelines(t, e, cause):
    """lifelines on data whose ties between causes are broken by moving the events of the
    cause of interest (not, as the engine does, the competing ones) earlier."""
    code = np.where(e == cause, 1, np.where(e > 0, 2, 0))
    mixed = np.intersect1d(t[code == 1], t[code == 2])
    shifted = np.where((code == 1) & np.isin(t, mixed), t - 1e-3, t)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        aj = AalenJohansenFitter().fit(shifted, code, event_of_interest=1)
    return aj.cumulative_density_.iloc[:, 0]


DATA = {
    "bmtcrr": lambda: (engine.datasets.load_bmtcrr(), "ftime", "Status", None),
    "mgus2": lambda: (_mgus2(), "etime", "event", "sex"),
}


@pytest.mark.parametrize("name", DATA)
@pytest.mark.parametrize("cause", [1, 2])
def test_equals_lifelines_aalen_johansen_and_the_oracle(name, cause):
    df, time_col, event_col, by = DATA[name]()
    out = engine.cumulative_incidence(df, cause=cause, by=by, time=time_col, event=event_col)
    assert list(out.columns) == ["group", "time", "cif", "std_err", "lower", "upper"]
    groups = [("all", df)] if by is None else list(df.groupby(by))
    assert sorted(out.group.unique()) == sorted(g for g, _ in groups)
    for label, part in groups:
        mine = out[out.group == label]
        t = part[time_col].to_numpy(float)
        e = part[event_col].to_numpy()
        ref = _aalen_johansen(t, e, cause)
        assert list(mine.time) == sorted(ref)
        np.testing.assert_allclose(mine.cif, [ref[u] for u in mine.time], atol=1e-13)
        ll = _lifelines(t, e, cause)
        np.testing.assert_allclose(mine.cif, ll.reindex(mine.time.to_numpy()), atol=1e-13)
        defined = mine.lower.notna() & mine.upper.notna()      # lifelines' NaN at the end
        assert defined.mean() > 0.9
        lo, cif, hi = (mine[c][defined] for c in ("lower", "cif", "upper"))
        assert np.all((0 <= lo) & (lo <= cif) & (cif <= hi) & (hi <= 1))


def test_without_ties_equals_lifelines():
    df = engine.datasets.load_bmtcrr()
    df = df[~df.ftime.duplicated(keep=False)]
    out = engine.cumulative_incidence(df, cause=1, time="ftime", event="Status")
    aj = AalenJohansenFitter(alpha=0.05).fit(df.ftime, df.Status, event_of_interest=1)
    np.testing.assert_allclose(out.time, aj.cumulative_density_.index)
    np.testing.assert_allclose(out.cif, aj.cumulative_density_.iloc[:, 0], atol=1e-14)
    started = out.cif.to_numpy() > 0                  # before the first event: 0, not NaN
    assert np.all(out.lower[~started] == 0) and np.all(out.upper[~started] == 0)


def test_cohort_input_by_strata_and_by_covariate_and_weights():
    df = _mgus2()
    df["male"] = (df.sex == "M").astype(float)
    cohort = engine.Cohort.from_frame(df, time="etime", event="event", covariates=["male"],
                                      strata="sex", competing_risks=True)
    by_strata = engine.cumulative_incidence(cohort, cause=1, by="sex")
    from_frame = engine.cumulative_incidence(df, cause=1, by="sex", time="etime",
                                             event="event")
    pd.testing.assert_frame_equal(by_strata, from_frame)
    by_cov = engine.cumulative_incidence(cohort, cause=1, by="male")
    assert set(by_cov.group) == {0.0, 1.0}
    np.testing.assert_allclose(by_cov[by_cov.group == 1.0].cif,
                               from_frame[from_frame.group == "M"].cif)
    df["w"] = 2.0
    doubled = engine.cumulative_incidence(df, cause=1, time="etime", event="event", weights="w")
    plain = engine.cumulative_incidence(df, cause=1, time="etime", event="event")
    np.testing.assert_allclose(doubled.cif, plain.cif, atol=1e-14)


def test_errors_name_the_problem():
    df = _mgus2()
    with pytest.raises(ValueError, match="time= and event="):
        engine.cumulative_incidence(df, cause=1)
    with pytest.raises(engine.CohortError, match="cause=7"):
        engine.cumulative_incidence(df, cause=7, time="etime", event="event")
