"""Views follow an analysis restored by switching named analyses or by reopening a .survscan
file: the OMOP tab shows the restored study (or none), the Data tab's source pickers show the
restored data source; and the Timing tab names a failing lifelines fit instead of hiding it."""
from __future__ import annotations

import asyncio
import threading

import numpy as np
import pandas as pd
import pytest

from app import main  # noqa: F401  (the app's Panel and HoloViews extensions)
from app.analyses import analysis_file
from app.analyses.named import NamedAnalyses
from app.analyses.view import AnalysesView
from app.data.store import Store, duckdb_source, upload_source
from app.data.view import DataView
from app.omop.state import OmopState
from app.omop.view import OmopView
from app.survival.state import Workbench
from app.timing import view as timing


def shown_hr(view: OmopView) -> pd.Series:
    return view.hr.value.set_index("analysis")["hr"]


@pytest.mark.slow
def test_omop_and_data_tabs_follow_switched_and_reopened_analyses():
    s = Store()
    s.load_sample("rossi")
    bench = Workbench(store=s)
    state = OmopState(workbench=bench)
    named = NamedAnalyses(s, bench, state)
    omop, data = OmopView(state=state), DataView(store=s)
    box = AnalysesView(store=s, analyses=named)
    s.load_sample("mgus2")
    named.save_as("mgus")                      # no study in this one
    s.load_sample("rossi")
    asyncio.run(omop.run_study())
    assert omop.runner.last_outcome == "done"
    expected = state.study.result.hazard_ratios.set_index("analysis")["hr"]
    named.save_as("study")
    file = analysis_file.write(analysis_file.capture(s, bench, state, "study"))

    named.switch("mgus")
    assert state.study is None and not omop.results.visible
    assert omop.status.object == "No study yet: press **Run study**."
    assert data.sample.value == "mgus2" and data.sources.active == 0

    named.switch("study")
    assert omop.results.visible
    pd.testing.assert_series_equal(shown_hr(omop), expected, check_exact=True)
    assert "The study of this analysis" in omop.status.object
    assert data.sample.value == "rossi"

    named.switch("mgus")
    assert asyncio.run(box.open_bytes("study.survscan", file))  # refits, reruns the study
    assert named.current == "study (2)" and state.study is not None
    assert omop.results.visible
    pd.testing.assert_series_equal(shown_hr(omop), expected, check_exact=True)
    assert data.sample.value == "rossi"
    later = OmopView(state=state)                # a tab built after the restore shows it too
    assert later.results.visible
    pd.testing.assert_series_equal(shown_hr(later), expected, check_exact=True)


def test_data_tab_shows_a_switched_query_and_simulation():
    s = Store()
    s.load_sample("rossi")
    bench = Workbench(store=s)
    named = NamedAnalyses(s, bench, OmopState(workbench=bench))
    data = DataView(store=s)
    sql = "SELECT * FROM rossi WHERE age > 20"
    s.load_frame(s.data.query("age > 20"), duckdb_source("", sql))
    named.save_as("query")
    s.load_simulated(500, 4, 0.5, 2, 3)
    named.save_as("simulated")
    data.sql.value, data.sim_n.value = "SELECT 1", 10_000   # the user types, then switches
    named.switch("query")
    assert (data.db_path.value, data.sql.value, data.sources.active) == ("", sql, 2)
    named.switch("simulated")
    assert (data.sim_n.value, data.sim_p.value, data.sim_density.value, data.sim_strata.value,
            data.sim_seed.value, data.sources.active) == (500, 4, 0.5, 2, 3, 3)
    named.switch("query")
    later = DataView(store=s)                  # a tab built after the switch
    assert (later.sql.value, later.sources.active) == (sql, 2)


def collinear_rossi(rossi) -> Store:
    """rossi with age2 = 2 age: the engine fits (and warns), lifelines stops on a singular
    matrix."""
    s = Store()
    df = rossi.assign(age2=2 * rossi["age"])
    s.load_frame(df, upload_source("rossi_age2.csv"))
    s.param.update(time="week", event="arrest", treatment=None,
                   covariates=["fin", "age", "age2", "prio"])
    return s


def lifelines_error(store: Store, n: int) -> str:
    """The reason lifelines gives, called directly on the subsample the Timing tab uses."""
    from engine.regression.peers import lifelines_fit

    with pytest.raises(Exception) as info:
        lifelines_fit(store.subsample_factory(n)())
    return f"{type(info.value).__name__}: {str(info.value).splitlines()[0]}"


def test_timing_tab_names_a_failing_lifelines_fit(rossi):
    s = collinear_rossi(rossi)
    reason = lifelines_error(s, 432)
    assert reason.startswith("ConvergenceError: Convergence halted due to matrix inversion")
    df = timing.run_timings(s.subsample_factory(1_000), s.fit_options(), threading.Event(),
                            lambda m: None).set_index("method")
    note = df.loc["lifelines CoxPHFitter", "note"]
    assert note.endswith(" …") and f"failed: {reason}".startswith(note[:-2])
    assert pd.isna(df.loc["lifelines CoxPHFitter", "seconds"])

    view = timing.TimingView(store=s)
    view.max_rows.value = 300
    asyncio.run(view.run())
    scaling = view.scaling_results
    failed = scaling[scaling["method"] == "lifelines fit"]
    assert list(failed["N"]) == [250, 300] and failed["seconds"].isna().all()
    assert failed["note"].str.startswith("failed: ConvergenceError: ").all()
    notes = view.scale_notes.object
    assert notes.startswith("Not on the scaling chart:")
    assert "- **lifelines fit** at N = 250: failed: ConvergenceError: Convergence halted" in notes
    assert "- **lifelines fit** at N = 300: failed: ConvergenceError:" in notes
    assert view.scale.object is not None   # the engine's points are still drawn


def test_timing_row_says_what_lifelines_warned(rossi):
    """A column of tiny variance: lifelines fits but warns; the row says what it warned."""
    import warnings

    from lifelines import CoxPHFitter

    df = rossi[["week", "arrest", "fin", "age"]].assign(
        tiny=np.random.default_rng(0).normal(size=len(rossi)) * 5e-3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        CoxPHFitter().fit(df, duration_col="week", event_col="arrest")
    said = str(caught[0].message).splitlines()[0]
    assert said.startswith("Column(s) ['tiny'] have very low variance")
    s = Store()
    s.load_frame(df, upload_source("tiny.csv"))
    s.param.update(time="week", event="arrest", covariates=["fin", "age", "tiny"])
    df = timing.run_timings(s.subsample_factory(1_000), s.fit_options(), threading.Event(),
                            lambda m: None).set_index("method")
    assert df.loc["lifelines CoxPHFitter", "seconds"] > 0
    note = df.loc["lifelines CoxPHFitter", "note"]
    assert note.startswith("lifelines uses Efron ties, unpenalised; it warned: Column(s) "
                           "['tiny'] have very low variance") and note.endswith(" …")
    assert said.startswith(note.split("it warned: ")[1][:-2])
