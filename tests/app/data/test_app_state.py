"""What belongs to a data set stays with it: column roles and covariates, and the settings a new
data set resets (issue 29), checked on the session's Store as the Data and Design tabs drive it.
"""

from __future__ import annotations

import pandas as pd
import pytest

pytest.importorskip("param")

import engine  # noqa: E402
from app.data.loading import read_upload  # noqa: E402
from app.data.recode import apply_step, describe, step_code  # noqa: E402
from app.data.store import Store  # noqa: E402
from app.survival.state import Workbench  # noqa: E402

UPLOAD = b"time,died,age,sex,dose\n5,1,40,m,1\n7,0,50,f,2\n9,1,60,m,1\n11,0,55,f,3\n" \
         b"13,1,45,m,2\n15,0,65,f,1\n"


def uploaded() -> Store:
    s = Store()
    s.load_upload("cohort.csv", UPLOAD)
    return s


def test_an_upload_event_chosen_by_hand_leaves_the_covariates_and_comes_back():
    s = uploaded()
    # 'died' is no usual event name: the guess leaves it a covariate and no event is chosen
    assert s.event is None and "died" in s.covariates
    s.event = "died"                       # what the user picks in the Event box
    assert "died" not in s.covariates
    assert s.validation_report()["ok"]     # the fit no longer sees 'died' twice
    s.event = None                         # unchosen: it is a covariate again
    assert "died" in s.covariates


@pytest.mark.parametrize("role", ["time", "start", "id", "weights"])
def test_every_role_column_leaves_the_covariates_and_returns(role):
    s = uploaded()
    old = getattr(s, role)
    setattr(s, role, "dose")
    assert "dose" not in s.covariates
    setattr(s, role, old)
    assert "dose" in s.covariates


def test_a_removed_stratum_is_given_back_as_a_covariate():
    s = Store()
    s.load_sample("rossi")
    s.unpenalized = ["race"]
    s.strata = ["race"]
    assert "race" not in s.covariates and "race" not in s.unpenalized
    s.strata = []
    assert s.covariates == ["fin", "age", "race", "wexp", "mar", "paro", "prio"]  # its place
    assert engine.fit(s.build_cohort()).summary.index.tolist() == s.covariates


def test_a_column_that_never_was_a_covariate_does_not_become_one():
    s = Store()
    s.load_sample("stanford_heart")
    s.start = None   # 'start' was chosen by the sample, never a covariate
    assert "start" not in s.covariates


def test_fine_gray_does_not_follow_the_data_to_the_next_set():
    s = Store()
    s.load_sample("bmtcrr")
    s.param.update(model="fine_gray", cause=2)
    s.load_sample("rossi")
    assert s.model == "cox" and s.cause == 1 and s.effective_ties == "efron"
    assert s.reset_note == "New data: model back to Cox (was fine_gray)."


def test_a_cross_validated_lambda_is_not_reused_on_new_data():
    s = Store()
    s.load_sample("rossi")
    s.penalty = "L1"
    s.note_lambda_max(s.penalty_key(), 10.0)
    s.strength_fraction = 0.25
    s.strength = 2.4937  # the CV-chosen absolute lambda, exactly, as the Fit tab sets it
    assert s.strength_as == "lambda"
    s.load_sample("mgus2")
    assert s.strength_as == "fraction" and s.chosen_lambda() is None  # from mgus2's lambda_max
    assert "penalty back to 0.25 x lambda_max of the new data (was lambda 2.494)" in s.reset_note
    job = Workbench(store=s).fit_job()
    assert job.scale["fraction"] == 0.25 and job.scale["key"] == s.penalty_key()


def test_strata_and_cut_points_are_reset_and_said():
    s = Store()
    s.load_sample("rossi")
    s.param.update(strata=["race"], cut_points={"fin": [10.0]})
    s.load_upload("cohort.csv", UPLOAD)
    assert s.strata == [] and s.cut_points == {}
    assert s.reset_note == ("New data: strata cleared (were race); cut points cleared "
                            "(on fin).")
    s.apply_data_step({"op": "range", "column": "age", "low": 0, "high": 100})
    assert s.reset_note == ""   # a recode step is the same data: nothing was reset


def test_engine_messages_count_rows_from_one():
    """R's row 3 is the third data row of the file; the engine names rows by label."""
    s = Store()
    s.load_upload("bad.csv", b"time,event,age\n5,1,40\n7,0,50\n-2,1,60\n")
    report = s.validation_report()
    assert not report["ok"]
    assert "row 3 = -2" in report["error"]
    # a filter keeps the numbering of the table on screen: first row is row 1
    s.apply_data_step({"op": "range", "column": "age", "low": 45, "high": 100})
    assert "row 2 = -2" in s.validation_report()["error"]


def test_convert_to_number_makes_text_missing():
    df = read_upload("t.csv", b"time,event,age\n5,1,40\n7,0,unknown\n9,1,60\n")
    assert not pd.api.types.is_numeric_dtype(df["age"])
    step = {"op": "number", "column": "age"}
    out = apply_step(df, step)
    assert out["age"].tolist()[0] == 40 and pd.isna(out["age"].tolist()[1])
    assert pd.api.types.is_numeric_dtype(out["age"])
    assert describe(step) == "age converted to numbers (text became missing)"
    # the exported script's line does the same on the same table
    scope = {"pd": pd, "df": df.copy()}
    exec("\n".join(step_code(step)), scope)
    pd.testing.assert_frame_equal(scope["df"], out)
    s = Store()
    s.load_frame(df, {"kind": "csv", "name": "t.csv", "label": "file: t.csv"})
    s.apply_data_step(step)
    s.param.update(covariates=["age"], missing="drop")
    report = s.validation_report()
    assert report["ok"] and report["n_dropped"] == 1


def test_table_one_on_start_stop_data_counts_subjects_at_entry():
    """stanford_heart: 172 (start, stop] episodes of 103 subjects; Table 1 counts the 103 as
    the Kaplan-Meier curves do, with each subject's values at entry (transplant = 0 for all:
    nobody enters transplanted)."""
    from app.describe import describing as d

    s = Store()
    s.load_sample("stanford_heart")
    assert s.n_rows == 172
    t1, left_out = d.baseline_table(s, None, ["age", "transplant"])
    raw = s.data
    first = raw.loc[raw.groupby("id")["start"].idxmin()]  # the definition, by pandas
    assert len(first) == 103 and left_out == 0
    assert t1.table.loc[("n", ""), "Overall"] == "103"
    assert (first["transplant"] == 0).all()
    age = t1.summary.set_index(["variable", "group"]).loc[("age", "Overall")]
    assert age["n"] == 103
    assert age["mean"] == pytest.approx(first["age"].mean(), rel=1e-12)


def test_every_toast_closes_by_itself(monkeypatch):
    """An error once stayed until dismissed (duration 0) and toasts piled up over the page."""
    import panel as pn
    from panel.io.notifications import NotificationArea

    from app.shell.widgets import LONGEST_TOAST_MS, notify

    area = NotificationArea()
    monkeypatch.setattr(type(pn.state), "notifications", property(lambda self: area))
    notify("error", "Fit failed: <b>x</b>", duration=0)
    notify("success", "done", duration=3000)
    notify("warning", "slow", duration=10 ** 7)
    durations = [n.duration for n in area.notifications]
    assert durations == [LONGEST_TOAST_MS, 3000, LONGEST_TOAST_MS]
    assert all(0 < d <= 20_000 for d in durations)
    assert area.notifications[0].message == "Fit failed: &lt;b&gt;x&lt;/b&gt;"
