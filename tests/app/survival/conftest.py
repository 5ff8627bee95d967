"""The Results view of a kept rossi fit (the app's default design: Efron, fin the treatment),
for the tests of its sections."""
import pytest


@pytest.fixture
def rossi_results():
    pytest.importorskip("panel")
    import holoviews as hv
    import panel as pn

    from app.data.store import Store
    from app.survival.results import ResultsView
    from app.survival.state import Workbench

    hv.extension("bokeh")
    store = Store()
    bench = Workbench(store=store)
    store.load_sample("rossi")
    results = ResultsView(store=store, workbench=bench)
    bench.keep(bench.fit_job().run())
    yield store, results
    pn.state.reset()
