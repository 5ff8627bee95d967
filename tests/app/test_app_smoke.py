"""The app builds and renders without a server, for every bundled sample."""

import asyncio

import pandas as pd
import pytest

pytest.importorskip("panel")
pytest.importorskip("holoviews")

from app import main  # noqa: E402
from app.data.samples import SAMPLES  # noqa: E402
from app.survival import results  # noqa: E402


@pytest.fixture
def app():
    import panel as pn

    yield main.build_app()
    pn.state.reset()


def test_app_renders_with_rossi_by_default(app):
    root = app.template()
    assert root is not None
    assert app.tabs.get_root() is not None
    assert app.store.source["name"] == "rossi"
    assert len(app.data.glance.object) == 8 and not app.data.preview_box.objects
    app.data.browse.value = True  # the paged table, made when asked for
    assert len(app.data.preview.value) == 200 and app.data.preview_box.objects
    assert not app.data.glance.visible
    app.tabs.active = main.TABS.index("Results")   # drawn when shown
    app.results.open_section(results.CURVES)
    assert app.results.group.value == "fin"
    assert app.results.km.object is not None


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_every_sample_loads_validates_and_plots(app, name):
    app.tabs.active = main.TABS.index("Results")
    app.results.open_section(results.CURVES)
    app.data.sample.value = name
    app.data._open_sample()
    report = app.store.validation_report()
    assert report["ok"], report["error"]
    assert app.results.km.object is not None, app.results.km_message.object
    risk = app.results.risk_frame
    assert (risk["at risk"] >= 0).all() and len(risk) > 0


@pytest.mark.slow  # a fit of every bundled sample: about 6 s
@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_every_sample_fits(app, name):
    app.store.load_sample(name)
    asyncio.run(app.fit.run_fit())
    assert app.fit.runner.last_outcome == "done", app.fit.status.object
    assert len(app.results.hr.value) >= 2
    assert app.tabs.active == main.TABS.index("Results")


def test_failed_fit_becomes_a_message_and_keeps_data_and_fits(app, monkeypatch):
    asyncio.run(app.fit.run_fit())
    assert len(app.workbench.fits) == 1

    def broken(self, cancel=None, progress=None):
        raise ValueError("column 'week' has negative times")

    monkeypatch.setattr("app.survival.jobs.FitJob.run", broken)
    asyncio.run(app.fit.run_fit())
    assert app.fit.status.object == "Fit failed (fit 2): column 'week' has negative times"
    assert app.fit.runner.last_outcome == "failed"
    assert not app.fit.fit_button.disabled
    assert len(app.workbench.fits) == 1 and app.store.source["name"] == "rossi"
    assert isinstance(app.results.hr.value, pd.DataFrame) and len(app.results.hr.value) == 7


def test_header_shows_the_logo_from_assets():
    from app.main import LOGO, build_app

    assert LOGO.exists() and LOGO.read_text().lstrip().startswith("<svg")
    assert build_app(sample=None).template().logo == str(LOGO)
