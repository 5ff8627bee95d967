"""An analysis saved as one .survscan file and reopened: the same data, roles, settings and kept
fits, the refits' numbers equal to the saved ones bit for bit; hostile files refused."""

from __future__ import annotations

import io
import json
import zipfile

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("param")

from app.analyses import analysis_file  # noqa: E402
from app.analyses.analysis_file import AnalysisFileError  # noqa: E402
from app.analyses.named import NamedAnalyses, snapshot  # noqa: E402
from app.analyses.reopen import rebuild  # noqa: E402
from app.data.store import Store  # noqa: E402
from app.omop.state import OmopState  # noqa: E402
from app.survival.state import Workbench  # noqa: E402


def reopened(bench: Workbench, name: str = "mine", omop: OmopState | None = None):
    """The workbench's store (and its OMOP state) -> .survscan bytes -> (a staging store, its
    workbench with the fits refitted, the staging OMOP state)."""
    omop = omop or OmopState(workbench=bench)
    content = analysis_file.write(analysis_file.capture(bench.store, bench, omop, name))
    analysis = analysis_file.read(content, "mine.survscan")
    assert analysis.name == name
    staged, staged_bench, staged_omop, differ = rebuild(analysis)
    assert differ == []
    return staged, staged_bench, staged_omop


def assert_same_fits(a: Workbench, b: Workbench):
    assert [f.name for f in a.fits] == [f.name for f in b.fits]
    for x, y in zip(a.fits, b.fits):
        pd.testing.assert_frame_equal(x.summary, y.summary, check_exact=True)
        assert x.spec == y.spec and x.elapsed == y.elapsed and x.n_strata == y.n_strata
        assert x.result.loglik == y.result.loglik and x.result.n_iter == y.result.n_iter


def test_rossi_with_fits_cut_points_and_cross_validation_reopens_identically():
    s = Store()
    bench = Workbench(store=s)
    s.load_sample("rossi")
    bench.keep(bench.fit_job("efron").run())
    s.param.update(cut_points={"fin": [10.0]}, ties="breslow", strata=["race"],
                   covariates=["fin", "age", "wexp", "mar", "paro", "prio"])
    bench.keep(bench.fit_job("fin cut at 10").run())
    s.param.update(cut_points={}, penalty="L1")
    bench.param.update(cv_folds=4, cv_grid=5)
    omop = OmopState(workbench=bench, ps_strata=7)
    run, kept = bench.cv_job("cv L1").run()
    bench.cv = run
    bench.keep(kept)
    again, again_bench, again_omop = reopened(bench, omop=omop)
    assert again.spec() == s.spec() and again.source["name"] == "rossi"
    assert (again_bench.cv_folds, again_bench.cv_grid, again_omop.ps_strata) == (4, 5, 7)
    assert_same_fits(bench, again_bench)
    assert again_bench.cv.name == "cv L1" and again_bench.cv.chosen == run.chosen
    pd.testing.assert_frame_equal(again_bench.cv.result.curve, run.result.curve,
                                  check_exact=True)


def test_uploads_are_saved_with_the_file_even_after_other_data_were_opened(rossi):
    s = Store()
    bench = Workbench(store=s)
    s.load_upload("prisoners.csv", rossi.to_csv(index=False).encode())
    bench.keep(bench.fit_job("on the upload").run())
    s.load_sample("mgus2")
    bench.keep(bench.fit_job("on mgus2").run())
    content = analysis_file.write(analysis_file.capture(s, bench, OmopState(workbench=bench),
                                                        "two data sets"))
    names = zipfile.ZipFile(io.BytesIO(content)).namelist()
    assert names == ["analysis.json", "fits/0.csv", "data/0.parquet", "fits/1.csv"]
    again, again_bench, _ = reopened(bench)
    assert_same_fits(bench, again_bench)
    assert again_bench.fits[0].spec["data"]["label"] == "file: prisoners.csv"
    pd.testing.assert_frame_equal(again_bench.fits[0].frame, bench.fits[0].frame)
    assert again.source["name"] == "mgus2" and again.data.shape == s.data.shape


def test_a_simulated_cohort_and_a_fine_gray_fit_reopen_identically():
    s = Store()
    bench = Workbench(store=s)
    s.load_simulated(2_000, 6, density=0.3, n_strata=2, seed=4)
    s.covariates = ["x0", "x2", "x5"]
    bench.keep(bench.fit_job("sim").run())
    s.load_sample("bmtcrr")
    s.param.update(model="fine_gray", cause=2)
    bench.keep(bench.fit_job("death").run())
    again, again_bench, _ = reopened(bench)
    assert_same_fits(bench, again_bench)
    assert again.spec() == s.spec() and again.cause == 2


def test_poisson_fits_with_follow_up_bands_reopen_identically():
    s = Store()
    bench = Workbench(store=s)
    s.load_sample("rossi")
    s.model = "poisson"
    bench.keep(bench.fit_job("rates").run())
    s.bands = [20.0, 40.0]
    bench.keep(bench.fit_job("rates in bands").run())
    again, again_bench, _ = reopened(bench)
    assert_same_fits(bench, again_bench)
    assert again.spec() == s.spec() and again.bands == [20.0, 40.0]
    assert "follow-up > 40" in again_bench.fits[1].summary.index
    assert "follow-up > 40" not in again_bench.fits[0].summary.index


def test_a_changed_table_is_reported_as_a_difference():
    s = Store()
    bench = Workbench(store=s)
    s.load_sample("rossi")
    bench.keep(bench.fit_job("a").run())
    analysis = analysis_file.read(analysis_file.write(
        analysis_file.capture(s, bench, OmopState(workbench=bench), "x")))
    analysis.fits[0].table.loc["fin", "coef"] += 1e-12
    assert rebuild(analysis)[3] == ["a"]


def zipped(members: dict) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as z:
        for name, content in members.items():
            z.writestr(name, content)
    return buffer.getvalue()


def good_record() -> dict:
    s = Store()
    s.load_sample("rossi")
    bench = Workbench(store=s)
    content = analysis_file.write(analysis_file.capture(s, bench, OmopState(workbench=bench),
                                                        "x"))
    return json.loads(zipfile.ZipFile(io.BytesIO(content)).read("analysis.json"))


@pytest.mark.parametrize("content, message", [
    (b"not a zip", "is not a survscan analysis file"),
    (zipped({"analysis.json": "{}", "../evil.py": "x"}), "it holds \\['../evil.py'\\]"),
    (zipped({"data/0.parquet": b"x"}), "no analysis.json"),
    (zipped({"analysis.json": "{not json"}), "is damaged"),
    (zipped({"analysis.json": json.dumps({**good_record(), "survscan_file": 9})}), "format 1"),
    (zipped({"analysis.json": json.dumps({**good_record(), "spec": {"survscan": 1}})}),
     "lacks data, roles"),
    (zipped({"analysis.json": json.dumps({**good_record(), "cv": "nope"})}), "has no kept fit"),
])
def test_files_that_are_not_analyses_are_refused_with_the_reason(content, message):
    with pytest.raises(AnalysisFileError, match=message):
        analysis_file.read(content, "x.survscan")


def test_a_zip_bomb_is_refused_before_unpacking(monkeypatch):
    monkeypatch.setenv("SURVSCAN_MAX_UPLOAD_MB", "0.1")
    bomb = zipped({"analysis.json": json.dumps(good_record()), "data/0.parquet": b"0" * 10**6})
    assert len(bomb) < 10**5
    with pytest.raises(AnalysisFileError, match="unpacks to 1.0 MB, more than"):
        analysis_file.read(bomb, "bomb.survscan")


def test_named_analyses_save_switch_and_delete():
    s = Store()
    bench = Workbench(store=s)
    s.load_sample("rossi")
    named = NamedAnalyses(s, bench, OmopState(workbench=bench))
    bench.keep(bench.fit_job("rossi fit").run())
    named.save_as("rossi")
    s.load_sample("stanford_heart")
    bench.fits = []
    named.save_as("heart")
    assert named.names == ["rossi", "heart"] and named.current == "heart"
    rossi_fit = named.saved["rossi"]["workbench"]["fits"][0]
    version = s.data_version
    named.switch("rossi")
    assert s.source["name"] == "rossi" and bench.fits == [rossi_fit] and s.data_version > version
    assert s.time == "week" and s.covariates[0] == "fin"
    with pytest.raises(ValueError, match="on screen"):
        named.delete("rossi")
    named.delete("heart")
    assert named.names == ["rossi"]
    with pytest.raises(ValueError, match="no analysis named"):
        named.switch("heart")
    with pytest.raises(ValueError, match="type a name"):
        named.save_as("  ")


def test_a_reopened_file_joins_as_a_new_named_analysis():
    s = Store()
    bench = Workbench(store=s)
    s.load_sample("rossi")
    bench.keep(bench.fit_job("a").run())
    staged, staged_bench, staged_omop = reopened(bench, "copy")
    omop = OmopState(workbench=bench)
    named = NamedAnalyses(s, bench, omop)
    before = snapshot(s, bench, omop)
    assert named.add("copy", staged, staged_bench, staged_omop) == "copy"
    assert named.add("copy", staged, staged_bench, staged_omop) == "copy (2)"
    assert named.saved["analysis 1"]["workbench"]["fits"] is before["workbench"]["fits"]
    assert bench.fits is staged_bench.fits and s.spec() == staged.spec()


def test_the_analyses_box_and_its_export_tab_part():
    import asyncio

    from app import main

    app = main.build_app()
    box, s, bench = app.analyses_view, app.store, app.workbench
    bench.keep(bench.fit_job("a").run())
    box.name_input.value = "first"
    box.save.clicks += 1
    assert box.choice.options == ["first"] and box.download.filename == "first.survscan"
    content = box._file().getvalue()
    assert "analysis.json" in zipfile.ZipFile(io.BytesIO(content)).namelist()
    assert analysis_file.read(content).fits[0].name == "a"
    s.load_sample("mgus2")
    assert asyncio.run(box.open_bytes("first.survscan", content))
    assert app.analyses.current == "first (2)" and box.choice.value == "first (2)"
    assert s.source["name"] == "rossi" and [f.name for f in bench.fits] == ["a"]
    box.choice.value = "first"
    box.switch.clicks += 1
    assert app.analyses.current == "first" and s.source["name"] == "mgus2"
    assert not asyncio.run(box.open_bytes("bad.survscan", b"nope"))
    exported = box.download_copy.callback()  # the Export tab's copy of the button
    assert analysis_file.read(exported.getvalue()).spec == s.spec()
    assert box.download_copy.filename == "first.survscan"


@pytest.mark.slow
def test_an_omop_study_is_run_again_with_its_settings():
    s = Store()
    s.load_sample("rossi")
    bench = Workbench(store=s)
    omop = OmopState(workbench=bench, ps_strata=4)
    run = omop.job().run()
    omop.keep(run)
    _, again_bench, again_omop = reopened(bench, omop=omop)
    assert_same_fits(bench, again_bench)
    assert again_omop.study.settings == run.settings and again_omop.ps_strata == 4


def test_recode_steps_and_a_penalty_scaled_to_lambda_max_reopen_identically():
    s = Store()
    bench = Workbench(store=s)
    s.load_sample("rossi")
    s.apply_data_step({"op": "range", "column": "prio", "low": 0.0, "high": 10.0})
    s.apply_data_step({"op": "cut", "column": "age", "cuts": [20.0, 25.0], "name": "age_group"})
    s.param.update(covariates=["fin", "age_group", "prio", "wexp"], penalty="L1",
                   strength_as="fraction", strength_fraction=0.1)
    bench.keep(bench.fit_job("scaled").run())
    again, again_bench, _ = reopened(bench)
    assert again.data_steps == s.data_steps and len(again.data) == len(s.data)
    assert (again.strength_as, again.strength_fraction) == ("fraction", 0.1)
    assert_same_fits(bench, again_bench)
    again.undo_data_step()                       # the loaded table is still there to undo to
    assert again.data_steps == s.data_steps[:1]
