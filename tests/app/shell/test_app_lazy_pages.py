"""A session builds its first page only; the other pages are built when first opened, and then
show what the store already holds (a reopened analysis, its fits and cross-validation)."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("panel")

from app import main  # noqa: E402
from app.analyses import analysis_file  # noqa: E402
from app.data.store import Store  # noqa: E402
from app.omop.state import OmopState  # noqa: E402
from app.survival.state import Workbench  # noqa: E402

LATER = ("Design", "Describe", "Fit", "Results", "SCCS", "Bayesian", "GWAS", "Timing", "Export")


@pytest.fixture
def app():
    import panel as pn

    yield main.build_app()
    pn.state.reset()


def open_page(app, name):
    app.tabs.active = main.TABS.index(name)


def test_a_new_session_builds_the_data_page_only(app):
    assert app.pages.built("Data") and "Ready to fit." in app.data.report.object
    assert not any(app.pages.built(name) for name in main.TABS[1:])
    for view in ("design", "describe", "fit", "results", "omop", "sccs", "timing", "export",
                 "bayes", "gwas"):
        assert view not in vars(app), view  # not even constructed
    open_page(app, "Design")
    assert app.pages.built("Design") and "design" in vars(app)
    page = app.pages.slots["Design"].objects[0]
    open_page(app, "Data")
    open_page(app, "Design")  # built once, kept
    assert app.pages.slots["Design"].objects == [page]


def test_pages_opened_after_an_analysis_was_reopened_show_its_fits_and_cv(app):
    saved = Store()
    saved.load_sample("rossi")
    bench = Workbench(store=saved)
    bench.keep(bench.fit_job("efron").run())
    saved.penalty = "L2"
    bench.param.update(cv_folds=3, cv_grid=4)
    run, kept = bench.cv_job("cv L2").run()
    bench.cv = run
    bench.keep(kept)
    content = analysis_file.write(analysis_file.capture(saved, bench,
                                                        OmopState(workbench=bench), "mine"))

    open_page(app, "SCCS")  # the user is elsewhere; opening the file builds no other page
    assert asyncio.run(app.analyses_view.open_bytes("mine.survscan", content))
    assert app.analyses.current == "mine" and len(app.workbench.fits) == 2
    # a new fit opens Results: it is built now, from the store as it is
    assert app.tabs.active == main.TABS.index("Results") and app.pages.built("Results")
    assert not any(app.pages.built(name) for name in ("Design", "Describe", "Fit", "Export"))
    results = app.results
    assert results.fit_select.options == ["efron", "cv L2"]
    assert results.fit_select.value == "cv L2" and len(results.hr.value) == 7
    assert results.cv_section.visible and results.cv.object is not None
    assert len(results.compare.value) == 2

    open_page(app, "Fit")
    assert list(app.fit.fits_table.value["fit"]) == ["efron", "cv L2"]
    assert app.fit.name_input.placeholder == app.workbench.next_fit_name()
    open_page(app, "Export")
    assert "cv L2" in app.export.comparison_text().getvalue()

    app.analyses.switch("analysis 1")  # back to the fresh rossi analysis: no fits
    # Results is hidden: it redraws when shown, before its page is put back in the browser
    assert results.fit_select.options == ["efron", "cv L2"]
    open_page(app, "Results")
    assert results.fit_select.options == [] and not results.cv_section.visible
    assert len(app.fit.fits_table.value) == 0
