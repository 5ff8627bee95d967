"""How well it predicts, inside Results (app/views/prediction_view.py): the numbers on the page
are engine.predictive_performance's and engine.calibration_table's for the kept fit (those are
checked against scikit-survival in tests/engine/prediction); bad times and (start, stop] fits
are messages."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("panel")

import engine  # noqa: E402
from app.store import Store  # noqa: E402
from app.views.results import ResultsView  # noqa: E402


@pytest.fixture
def results():
    import holoviews as hv
    import panel as pn

    hv.extension("bokeh")
    store = Store()
    store.load_sample("rossi")
    view = ResultsView(store=store)
    store.keep(store.fit_job().run())
    yield store, view
    pn.state.reset()


def test_metrics_on_the_page_are_the_engines(results):
    store, view = results
    p = view.prediction
    assert not p.compute.disabled
    res = store.fits[-1].result
    event_times = np.asarray(res.problem.cohort.time)[np.asarray(res.problem.cohort.event) > 0]
    assert p.times.value == ", ".join(
        f"{v:g}" for v in np.unique(np.quantile(event_times, [0.25, 0.5, 0.75])))
    p.times.value = "10, 30, 50"
    p._compute()
    want = engine.predictive_performance(res, times=[10.0, 30.0, 50.0])
    pd.testing.assert_frame_equal(p.by_time.value, want.by_time)
    assert f"Uno's C (up to 50) = **{want.summary['uno_c']:.3f}**" in p.summary.object
    pd.testing.assert_frame_equal(p.calibration.value, engine.calibration_table(res, 50.0))


def test_bad_times_and_start_stop_fits_are_messages(results):
    store, view = results
    p = view.prediction
    p.times.value = "10, soon"
    p._compute()                                   # a notification, the page unchanged
    assert p.by_time.value.empty and p.summary.object == ""
    heart = Store()
    heart.load_sample("stanford_heart")
    other = ResultsView(store=heart)
    heart.keep(heart.fit_job().run())
    assert other.prediction.compute.disabled
    assert "(start, stop] rows" in other.prediction.info.object
