"""Work that would exhaust the server is refused before it starts, with the numbers: an upload
over the limit at its first chunk, a fit, a file or a simulated cohort bigger than a session's
memory."""

from __future__ import annotations

import re
from types import SimpleNamespace

import pytest

pytest.importorskip("panel")

import engine  # noqa: E402

from app.data import memory  # noqa: E402
from app.data.loading import DataLoadError  # noqa: E402
from app.data.store import Store  # noqa: E402
from app.shell.bounded_dropper import BoundedFileDropper  # noqa: E402
from app.survival.state import Workbench  # noqa: E402


def chunk(name, k, total, data):
    return SimpleNamespace(event_name="upload_event",
                           data={"name": name, "chunk": k, "total_chunks": total,
                                 "data": data, "type": "application/octet-stream"})


def test_an_oversize_upload_is_refused_at_its_first_chunk():
    dropper = BoundedFileDropper(limit_mb=1, chunk_size=400_000)
    dropper._process_event(chunk("big.csv", 1, 4, b"x" * 400_000))  # >= 1.2 MB in all
    assert "'big.csv' is more than 1 MB, over this server's upload limit of 1 MB" in \
        dropper.refused
    assert dropper._file_buffer == {}
    for k in (2, 3, 4):  # the rest of its chunks are dropped, never joined
        dropper._process_event(chunk("big.csv", k, 4, b"x" * 400_000))
    assert dropper._file_buffer == {} and dropper.value == {}
    dropper._process_event(chunk("small.csv", 1, 2, b"a" * 400_000))
    dropper._process_event(chunk("small.csv", 2, 2, b"b" * 10))
    assert len(dropper.value["small.csv"]) == 400_010


def test_a_client_that_understates_the_chunks_is_cut_off_when_it_holds_too_much():
    dropper = BoundedFileDropper(limit_mb=1, chunk_size=400_000)
    dropper._process_event(chunk("liar.csv", 1, 2, b"x" * 700_000))
    dropper._process_event(chunk("liar.csv", 2, 2, b"x" * 700_000))
    assert "'liar.csv' is more than 1 MB" in dropper.refused and dropper.value == {}
    assert dropper.max_file_size == "1MB"  # the browser checks too


def test_a_fit_bigger_than_the_session_budget_is_refused_with_the_numbers(monkeypatch):
    s = Store()
    s.load_simulated(20_000, 50, density=0.5, seed=1)
    needed = memory.fit_shape(s)
    assert needed[:2] == (20_000, 50) and 0.45 < needed[2] < 0.55
    monkeypatch.setenv("SURVSCAN_SESSION_MEMORY_MB", "30")
    message = re.escape("this fit needs about 52 MB; the server has 30 MB free for this "
                        "session; use a subsample, fewer covariates or the command line")
    bench = Workbench(store=s)
    with pytest.raises(DataLoadError, match=message):
        bench.fit_job()
    s.penalty = "L2"
    with pytest.raises(DataLoadError, match=message):
        bench.cv_job()
    s.covariates = ["x0", "x1"]
    assert bench.fit_job().name == "fit 1"  # a smaller fit goes ahead


def test_text_covariates_count_their_levels():
    s = Store()
    s.load_sample("bmtcrr")  # Sex (2 levels) and Source (2 levels) are text
    assert memory.fit_shape(s) == (177, 3, pytest.approx(1.0))


def test_spline_forms_and_interactions_count_their_columns():
    """The estimate counts the columns the fit builds: rossi's 7 covariates with age as a
    4-df natural spline, prio as a 4-knot restricted cubic spline and fin:wexp are
    5 + 4 + 3 + 1 columns, the same as the engine's cohort."""
    s = Store()
    s.load_sample("rossi")
    s.apply_formula("fin + ns(age, df=4) + race + wexp + mar + paro + rcs(prio, 4) + fin:wexp")
    rows, cols, density = memory.fit_shape(s)
    assert (rows, cols) == (432, len(s.build_cohort().names)) == (432, 13)
    assert 0 < density <= 1


def test_polynomial_categorical_and_their_interactions_count_their_columns():
    """poly(age, 3) is 3 columns, C(prio) one per value but the first (16), an interaction
    the product of its sides' columns: C(prio):fin 16, poly(age, 3):race 3; the columns the
    formula builds (the cohort then leaves out constant ones)."""
    s = Store()
    s.load_sample("rossi")
    s.apply_formula("fin + poly(age, 3) + C(prio) + race + C(prio):fin + poly(age, 3):race")
    built = s.build_cohort().formula.names
    assert memory.fit_shape(s)[:2] == (432, len(built)) == (432, 40)


def test_uploads_and_simulations_beyond_the_budget_are_refused(monkeypatch):
    monkeypatch.setenv("SURVSCAN_SESSION_MEMORY_MB", "100")
    memory.check_upload("ok.csv", 20_000_000)
    with pytest.raises(DataLoadError, match=r"reading 'big.csv' needs about 120 MB; the "
                                            r"server has 100 MB free"):
        memory.check_upload("big.csv", 30_000_000)
    with pytest.raises(DataLoadError, match=r"reading 'big.parquet' needs about 200 MB"):
        memory.check_upload("big.parquet", 20_000_000)
    with pytest.raises(DataLoadError, match=r"a simulated cohort of 1,000,000 x 500 needs "
                                            r"about 1.1 GB"):
        memory.check_simulation(1_000_000, 500, 0.05)
    assert memory.allowed_bytes() <= 100e6 and engine.available_memory() > 0


def test_a_reopened_analysis_asking_for_a_huge_simulation_is_refused(monkeypatch):
    from app.analyses import analysis_file
    from app.analyses.reopen import rebuild
    from app.omop.state import OmopState

    s = Store()
    s.load_simulated(1_000, 5, seed=1)
    bench = Workbench(store=s)
    analysis = analysis_file.capture(s, bench, OmopState(workbench=bench), "x")
    analysis.spec["data"].update(n=10**9, p=10**5)  # a hostile or mistaken file
    with pytest.raises(DataLoadError, match="a simulated cohort of 1,000,000,000 x 100,000"):
        rebuild(analysis)
