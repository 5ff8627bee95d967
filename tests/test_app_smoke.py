"""The app's page builds and renders without a server, for every bundled sample."""

import asyncio

import pandas as pd
import pytest

pytest.importorskip("panel")
pytest.importorskip("holoviews")

from app import main  # noqa: E402


@pytest.fixture
def page():
    import panel as pn

    yield main.build_page()
    pn.state.reset()


def test_page_renders_with_rossi_by_default(page):
    root = page.__panel__().get_root()
    assert root is not None
    assert page.sample == "rossi"
    assert len(page._preview.value) == 432
    assert len(page._km.object) == 2  # fin = 0 and fin = 1


@pytest.mark.parametrize("name", sorted(main.SAMPLES))
def test_every_sample_loads_and_plots(page, name):
    page.sample = name
    sample = main.SAMPLES[name]
    data = page._preview.value
    assert len(data) > 0
    assert set(sample.covariates) <= set(data.columns)
    assert len(page._km.object) == data[sample.group].nunique()
    for curve in page._km.object:
        survival = curve.dimension_values("survival")
        assert ((survival >= 0) & (survival <= 1)).all()
        assert (pd.Series(survival).diff().dropna() <= 1e-12).all()  # non-increasing


def test_failed_fit_becomes_a_message(page, monkeypatch):
    def broken(data, sample):
        raise ValueError("column 'week' has negative times")

    monkeypatch.setattr(main, "fit_cox", broken)
    asyncio.run(page._fit())
    assert page._status.object == "Fit failed: column 'week' has negative times"
    assert not page._result.visible
    assert not page._fit_button.loading


def test_fit_shows_the_engine_summary(page):
    asyncio.run(page._fit())
    assert page._result.visible, page._status.object
    assert page._result.value.loc["fin", "coef"] == pytest.approx(-0.3794222, abs=1e-6)
    assert page._status.object.startswith("Cox (Efron) on **rossi**: converged")
