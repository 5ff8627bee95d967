"""The GWAS page without a browser: its state and jobs (bundled toy data, files in the data
directory, simulated traits), the view's run, Cancel and bad input, and the exports (summary
statistics, the script that reruns the scan)."""

from __future__ import annotations

import asyncio
import io
import json
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("panel")

import engine  # noqa: E402
from app import main  # noqa: E402,F401  (hv.extension("bokeh"))
from app.gwas.state import ROW_LIMIT, SOURCES, TOY, GwasState, kept_threshold  # noqa: E402
from app.data.loading import DataLoadError  # noqa: E402
from app.gwas.view import GwasView  # noqa: E402
from engine import gwas  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def toy_run():
    """The page's default scan: bundled toy data, LOCO, every row kept."""
    return GwasState().job().run()


@pytest.fixture
def view():
    import panel as pn

    yield GwasView()
    pn.state.reset()


@pytest.mark.slow  # the toy scan (module fixture) and the engine scan again
def test_default_scan_is_gwas_scan_on_the_bundled_files(toy_run):
    direct = gwas.scan(bed=TOY / "toydata.5chrom", pheno=TOY / "toydata.phe",
                       covar=TOY / "toydata.cov", kinship="loco")
    pd.testing.assert_frame_equal(toy_run.result.frame, direct.frame, check_exact=True)
    top = toy_run.top_hits()
    best = direct.frame.loc[direct.frame.PValue.idxmin()]
    assert top.loc[0, "SNP"] == best.SNP and top.loc[0, "PValue"] == best.PValue
    table = toy_run.h2_table()
    assert list(table.Pheno) == ["toydata.phe"] and table.tests[0] == 10_000
    np.testing.assert_allclose(table.h2[0], direct.h2.loc["toydata.phe"].mean(), rtol=1e-15)
    assert toy_run.settings["threshold"] is None


def test_summary_statistics_columns_against_the_bim_and_definitions(toy_run):
    stats = pd.read_csv(io.StringIO(toy_run.sumstats_csv()))
    frame = toy_run.result.frame
    bim = pd.read_csv(TOY / "toydata.5chrom.bim", sep=r"\s+", header=None,
                      names=["chrom", "sid", "cm", "pos", "a1", "a2"], dtype={0: str})
    assert list(stats.columns) == ["PHENO", "CHROM", "GENPOS", "ID", "ALLELE0", "ALLELE1", "N",
                                   "TEST", "BETA", "SE", "T_STAT", "P", "LOG10P", "NULL_H2"]
    assert len(stats) == len(frame) == 10_000
    assert (stats.ID == bim.sid).all() and (stats.GENPOS == bim.pos).all()
    assert (stats.ALLELE1 == bim.a2).all() and (stats.ALLELE0 == bim.a1).all()  # count_A1=False
    assert (stats.N == 500).all() and (stats.TEST == "ADD").all()
    np.testing.assert_allclose(stats.P, frame.PValue, rtol=1e-12)  # CSV: 16 digits
    np.testing.assert_allclose(stats.BETA / stats.SE, stats.T_STAT, rtol=1e-12)
    np.testing.assert_allclose(stats.LOG10P, -np.log10(frame.PValue), rtol=1e-9)


@pytest.mark.slow
def test_generated_script_reruns_the_scan(toy_run, tmp_path):
    script = tmp_path / "gwas_scan.py"
    script.write_text(toy_run.python_script())
    env = {"PYTHONPATH": str(ROOT), "OPENBLAS_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    again = pd.read_csv(tmp_path / "gwas_sumstats.csv")
    ours = pd.read_csv(io.StringIO(toy_run.sumstats_csv()))
    pd.testing.assert_frame_equal(again, ours, check_exact=False, rtol=1e-12)
    spec = json.loads(toy_run.spec_json())
    assert spec["kinship"] == "loco" and spec["bed"].endswith("toydata.5chrom")


@pytest.mark.slow
def test_simulated_traits_many_rows_lower_the_threshold(view):
    s = view.state
    s.param.update(simulate=True, sim_traits=150, kinship="all", threshold=None)
    assert s.load_traits() == [f"trait_{j}" for j in range(150)]
    asyncio.run(view.run_scan())
    assert view.runner.last_outcome == "done"
    run = s.run
    tests = 150 * 10_000
    assert tests > ROW_LIMIT and run.settings["threshold"] == 0.1 == kept_threshold(tests, None)
    frame = run.result.frame
    assert len(frame) == int((frame.PValue <= 0.1).sum()) and frame.PValue.max() <= 0.1
    assert run.result.summary.hits.sum() == len(frame)
    pheno = gwas.simulate_traits(TOY / "toydata.5chrom", t=150, h2=0.5, causal=10, seed=0)
    direct = gwas.scan(bed=TOY / "toydata.5chrom", pheno=pheno, covar=TOY / "toydata.cov",
                       kinship="all", pvalue_threshold=0.1)
    pd.testing.assert_frame_equal(frame, direct.frame, check_exact=False, rtol=1e-12)
    heat = view.heatmap.object
    assert len(set(heat.dimension_values("trait"))) == 100          # HEATMAP_TRAITS
    assert "lambda_GC" in view.qq.object.opts.get().kwargs["title"]


def test_kept_threshold_brute_force():
    for tests, asked in [(10_000, None), (10_000, 0.5), (2_000_000, None), (10**7, None),
                         (10**8, 1e-5), (10**8, 0.5)]:
        got = kept_threshold(tests, asked)
        if tests <= ROW_LIMIT:
            assert got == asked
            continue
        powers = [10.0 ** -k for k in range(0, 12) if tests * 10.0 ** -k <= ROW_LIMIT]
        assert got == min(powers[0], asked if asked is not None else 1.0)


def test_data_directory_rules(monkeypatch, tmp_path):
    s = GwasState(source=SOURCES[1], bed="toydata.5chrom", pheno="toydata.phe")
    monkeypatch.delenv("SURVSCAN_DATA_DIRS", raising=False)
    with pytest.raises(DataLoadError, match="SURVSCAN_DATA_DIRS"):
        s.job()
    folder = tmp_path / "data"
    folder.mkdir()
    monkeypatch.setenv("SURVSCAN_DATA_DIRS", str(folder))
    s.bed = str(TOY / "toydata.5chrom")                # a real file outside the directories
    with pytest.raises(DataLoadError, match="outside the data directories"):
        s.job()
    for name in ("toydata.5chrom.bed", "toydata.5chrom.bim", "toydata.5chrom.fam",
                 "toydata.phe", "toydata.cov"):
        (folder / name).write_bytes((TOY / name).read_bytes())
    s.param.update(bed="toydata.5chrom", pheno="missing.phe")
    with pytest.raises(DataLoadError, match="no phenotype file at 'missing.phe'"):
        s.job()
    s.param.update(pheno="toydata.phe", covar="toydata.cov")
    assert s.load_traits() == ["toydata.phe"]
    run = s.job().run()
    pd.testing.assert_frame_equal(run.result.frame, GwasState().job().run().result.frame)


def test_bad_input_is_a_notification_and_earlier_results_stay(view, monkeypatch, tmp_path):
    asyncio.run(view.run_scan())
    first = view.state.run
    assert view.runner.last_outcome == "done" and first is not None
    folder = tmp_path / "data"
    folder.mkdir()
    monkeypatch.setenv("SURVSCAN_DATA_DIRS", str(folder))
    for name in ("toydata.5chrom.bed", "toydata.5chrom.bim", "toydata.5chrom.fam"):
        (folder / name).write_bytes((TOY / name).read_bytes())
    (folder / "strangers.csv").write_text("FID,IID,y\nnobody,nobody,1.0\nnoone,noone,2.0\n")
    view.state.param.update(source=SOURCES[1], bed="toydata.5chrom", pheno="strangers.csv")
    asyncio.run(view.run_scan())
    assert view.runner.last_outcome == "failed"
    assert "not in the .fam file" in view.status.object
    assert view.state.run is first and view.top.value.loc[0, "PValue"] == first.top_hits() \
        .loc[0, "PValue"]
    view.state.pheno = "absent.csv"
    asyncio.run(view.run_scan())
    assert view.runner.last_outcome == "failed" and "no phenotype file" in view.status.object
    assert view.state.run is first


@pytest.mark.slow  # a scan block by block
def test_progress_per_block_and_cancel():
    job = GwasState().job()
    seen = []
    job.run(progress=lambda k, total: seen.append((k, total)))
    assert seen[0] == (0, 5) and seen[-1] == (5, 5)                   # LOCO: 5 kinships
    assert [k for k, _ in seen] == sorted(k for k, _ in seen)
    cancel = threading.Event()

    def stop_after_two(k, total):
        if k == 2:
            cancel.set()

    with pytest.raises(engine.Cancelled, match="after 2 of 5 SNP blocks"):
        job.run(cancel=cancel, progress=stop_after_two)


@pytest.mark.slow  # two scans in the view
def test_cancel_in_the_view_keeps_earlier_results(view):
    asyncio.run(view.run_scan())
    first = view.state.run

    async def run_and_cancel():
        task = asyncio.ensure_future(view.run_scan())
        while not view.runner.running:
            await asyncio.sleep(0.01)
        view.runner.cancel()
        await task

    asyncio.run(run_and_cancel())
    assert view.runner.last_outcome == "cancelled" and view.state.run is first


def test_traits_with_missing_values_run_on_their_own_people(view, monkeypatch, tmp_path):
    folder = tmp_path / "data"
    folder.mkdir()
    monkeypatch.setenv("SURVSCAN_DATA_DIRS", str(folder))
    for name in ("toydata.5chrom.bed", "toydata.5chrom.bim", "toydata.5chrom.fam",
                 "toydata.cov"):
        (folder / name).write_bytes((TOY / name).read_bytes())
    phe = pd.read_csv(TOY / "toydata.phe", sep=r"\s+", header=None, dtype={0: str, 1: str})
    traits = pd.DataFrame({"FID": phe[0], "IID": phe[1], "y": phe[2],
                           "y_gappy": phe[2].where(np.arange(len(phe)) % 10 != 0)})
    traits.to_csv(folder / "gappy.csv", index=False)
    view.state.param.update(source=SOURCES[1], bed="toydata.5chrom", pheno="gappy.csv",
                            covar="toydata.cov", kinship="all")
    asyncio.run(view.run_scan())
    assert view.runner.last_outcome == "done", view.status.object
    table = view.h2.value.set_index("Pheno")
    assert table.loc["y", "n"] == 500 and table.loc["y_gappy", "n"] == 450
    alone = traits[["FID", "IID", "y_gappy"]].dropna()
    direct = gwas.scan(bed=TOY / "toydata.5chrom", pheno=alone, covar=TOY / "toydata.cov",
                       kinship="all", memory="512MB")
    mine = view.state.run.rows("y_gappy").reset_index(drop=True)
    np.testing.assert_allclose(mine.PValue, direct.frame.PValue, rtol=1e-12)


def test_trait_names_are_offered_as_text(view, monkeypatch, tmp_path):
    hostile = '<img src=x onerror="window.__pwned=1">'
    folder = tmp_path / "data"
    folder.mkdir()
    monkeypatch.setenv("SURVSCAN_DATA_DIRS", str(folder))
    for name in ("toydata.5chrom.bed", "toydata.5chrom.bim", "toydata.5chrom.fam"):
        (folder / name).write_bytes((TOY / name).read_bytes())
    phe = pd.read_csv(TOY / "toydata.phe", sep=r"\s+", header=None, dtype={0: str, 1: str})
    pd.DataFrame({"FID": phe[0], "IID": phe[1], hostile: phe[2]}).to_csv(folder / "h.csv",
                                                                         index=False)
    view.state.param.update(source=SOURCES[1], bed="toydata.5chrom", pheno="h.csv")
    asyncio.run(view._on_load())
    assert view.trait_choice.options == {"&lt;img src=x onerror=&quot;window.__pwned=1&quot;&gt;":
                                         hostile}
    view.trait_choice.value = [hostile]
    assert view.state.traits == [hostile]
