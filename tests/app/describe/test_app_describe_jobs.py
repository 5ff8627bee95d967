"""The Describe tab in the served app on more than INLINE_ROWS rows: its sections computed by
the page's job runner in a worker thread (app/describe/sections.py), the same numbers as
computed at once (as for fewer rows, and in a script); a newer choice
made while a job runs wins, numbers of data replaced meanwhile are not shown, Cancel keeps the
page, an export computes what waits at once.  ``served`` is patched true: outside a server
Panel runs the runner's coroutine to its end at once, so each change is done when it returns.
"""

from __future__ import annotations

import pandas as pd
import pytest

from app.data.store import Store
from app.describe import sections
from app.describe import view as describe_view
from app.describe.view import DescribeView


def rossi_view() -> DescribeView:
    store = Store()
    store.load_sample("rossi")
    return DescribeView(store=store)


@pytest.fixture
def in_jobs(monkeypatch):
    """A rossi view computing in jobs, as the served app does for more than INLINE_ROWS
    rows (views made before it compute at once: they did)."""
    monkeypatch.setattr(describe_view, "served", lambda: True)
    monkeypatch.setattr(describe_view, "INLINE_ROWS", 0)
    return rossi_view()


def page_numbers(view) -> dict:
    return {"test": view.test_text.object, "caption": view.caption.object,
            "table_one": view.t1_table.value, "medians": view.medians.value,
            "at": view.at_table.value, "rmst": view.rmst.value,
            "subgroups": view.subgroup_table.value}


def assert_same_page(a: dict, b: dict) -> None:
    assert a["test"] == b["test"] and a["caption"] == b["caption"]
    for key in ("table_one", "medians", "at", "rmst", "subgroups"):
        pd.testing.assert_frame_equal(a[key], b[key])


def choose(view, group="race", subgroups=("wexp",)):
    view.group.value = group
    view.times.value = "10, 30"
    view.tau.value = 40.0
    view.subgroups.value = list(subgroups)


def test_the_job_runner_shows_the_numbers_computed_at_once(request):
    at_once = rossi_view()
    choose(at_once)
    assert at_once.status.object == ""                   # no job outside a served app
    in_jobs = request.getfixturevalue("in_jobs")
    choose(in_jobs)
    assert "chi-square" in in_jobs.test_text.object
    assert len(in_jobs.subgroup_table.value) == 4        # all, the heading, 2 levels of wexp
    assert_same_page(page_numbers(in_jobs), page_numbers(at_once))
    assert in_jobs.status.object.startswith("Computed in")
    assert in_jobs.runner.last_outcome == "done" and not in_jobs.runner.cancel_button.visible


def test_the_curves_are_reused_while_only_the_tables_or_the_figure_change(in_jobs,
                                                                          monkeypatch):
    view = in_jobs
    estimated = []
    survival_by = sections.d.survival_by
    monkeypatch.setattr(sections.d, "survival_by",
                        lambda *a, **k: estimated.append(1) or survival_by(*a, **k))
    view.group.value = "race"
    assert len(estimated) == 1
    view.options.value = ["Risk table"]
    view.weights.value = "Peto-Peto (Gehan-Wilcoxon type, rho = 1)"
    view.times.value = "5, 20"
    view.tau.value = 30.0
    assert len(estimated) == 1                          # Kaplan-Meier once
    assert view.at_table.value["time"].tolist() == [5.0, 20.0, 5.0, 20.0]
    assert view.rmst.value["tau"].tolist() == [30.0, 30.0, 30.0]   # two groups, difference
    assert view.test_text.object.startswith("**Peto-Peto")
    view.store.conf_type = "log-log"
    assert len(estimated) == 2                          # other limits: estimated again


def test_a_choice_made_while_a_job_runs_wins(request, monkeypatch):
    at_once = rossi_view()
    at_once.group.value = "fin"
    view = request.getfixturevalue("in_jobs")
    survival = sections.survival
    computed = []

    def survival_then_choose(store, choice, curves=None):
        computed.append(choice.by)
        out = survival(store, choice, curves)
        if len(computed) == 1:
            view.group.value = "fin"     # the user's next choice, while the job runs
        return out

    monkeypatch.setattr(sections, "survival", survival_then_choose)
    shown = []
    show = view._show_survival
    monkeypatch.setattr(view, "_show_survival", lambda n: shown.append(n) or show(n))
    view.group.value = "race"
    assert computed == ["race", "fin"]
    assert len(shown) == 1                               # race's numbers were never shown
    assert_same_page(page_numbers(view), page_numbers(at_once))


def test_numbers_of_replaced_data_are_not_shown(in_jobs, monkeypatch):
    view = in_jobs
    table_one = sections.table_one
    replaced = []

    def table_one_then_load(store, by, columns, nonnormal, weights=None):
        out = table_one(store, by, columns, nonnormal, weights)
        if not replaced:
            replaced.append(1)
            store.load_sample("lung")                    # another file, while the job runs
        return out

    monkeypatch.setattr(sections, "table_one", table_one_then_load)
    shown_tables = []
    show = view._show_table_one
    monkeypatch.setattr(view, "_show_table_one", lambda n: shown_tables.append(n) or show(n))
    view.t1_columns.value = ["age", "prio"]
    assert view.store.source["name"] == "lung"
    assert len(shown_tables) == 1                        # rossi's age and prio never shown
    shown = set(view.t1_table.value["variable"])
    assert "prio" not in shown and "ph.ecog" in shown    # lung's Table 1, not rossi's


def test_cancel_keeps_the_earlier_numbers(in_jobs, monkeypatch):
    view = in_jobs
    before = page_numbers(view)

    def cancelled_meanwhile(store, by, columns, nonnormal, weights=None):
        view.runner.cancel()                             # the Cancel button, pressed now
        return {"error": "never shown"}

    monkeypatch.setattr(sections, "table_one", cancelled_meanwhile)
    view.t1_columns.value = ["age"]
    assert view.runner.last_outcome == "cancelled"
    assert view.status.object.startswith("Cancelled")
    assert_same_page(page_numbers(view), before)
    assert "never shown" not in view.t1_message.object


def test_an_export_computes_what_waits_at_once(request):
    at_once = rossi_view()
    at_once.store.conf_type = "plain"
    expected = at_once.report_files()
    view = request.getfixturevalue("in_jobs")
    view.lazy = True                                     # the tab left: changes wait
    view.store.conf_type = "plain"
    assert "(plain)" not in view.caption.object
    files = view.report_files()
    assert "pointwise 95% CI (plain)" in view.caption.object
    assert set(files) == set(expected)
    for name in ("table_one.csv", "medians.csv", "survival_at.csv", "rmst.csv", "logrank.csv"):
        assert files[name] == expected[name], name


def test_an_export_while_a_job_runs_shows_the_last_choice(request, monkeypatch):
    at_once = rossi_view()
    at_once.group.value = "fin"
    view = request.getfixturevalue("in_jobs")
    survival = sections.survival
    exported = []

    def survival_then_export(store, choice, curves=None):
        out = survival(store, choice, curves)
        if not exported:
            view.group.value = "fin"                     # waits for the running job ...
            exported.append(view.report_files())         # ... an export computes it now
        return out                                       # race's, asked for before: dropped

    monkeypatch.setattr(sections, "survival", survival_then_export)
    view.group.value = "race"
    assert exported[0]["logrank.csv"] == at_once.report_files()["logrank.csv"]
    assert_same_page(page_numbers(view), page_numbers(at_once))


def test_small_data_is_described_at_once_in_the_served_app(monkeypatch):
    monkeypatch.setattr(describe_view, "served", lambda: True)
    view = rossi_view()                                   # 432 rows <= INLINE_ROWS
    view.group.value = "race"
    assert view.status.object == "" and view.runner.last_outcome == ""
    assert "chi-square = 0.58" in view.test_text.object
