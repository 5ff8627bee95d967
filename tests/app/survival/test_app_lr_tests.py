"""The Results tab's likelihood-ratio tests of nested kept fits: each pair in which one fit nests
the other (more covariates, or a covariate split at cut points) is engine.lr_test's, and
fits that are not nested, or penalised, or of other data get no row."""

from __future__ import annotations

import pytest

pytest.importorskip("panel")

import engine  # noqa: E402
from app import main  # noqa: E402
from app.survival.jobs import nested_lr_tests  # noqa: E402


@pytest.fixture
def app():
    import panel as pn

    yield main.build_app()
    pn.state.reset()


def keep(app, name, **roles):
    app.store.param.update(**roles)
    app.workbench.keep(app.workbench.fit_job(name).run())


def test_nested_pairs_are_engine_lr_tests_and_the_rest_have_none(app):
    s = app.store
    every = list(s.covariates)
    keep(app, "no prio", covariates=[c for c in every if c != "prio"])
    keep(app, "all", covariates=every)
    keep(app, "fin cut at 10", cut_points={"fin": [10.0]})
    keep(app, "no age", cut_points={}, covariates=[c for c in every if c != "age"])
    fits = {f.name: f.result for f in app.workbench.fits}
    table = nested_lr_tests(app.workbench.fits)
    pairs = list(zip(table["smaller fit"], table["larger fit"]))
    # "no age" and "no prio" nest neither each other; "all" nests both; the cut-point fit all
    assert sorted(pairs) == sorted([("no prio", "all"), ("no prio", "fin cut at 10"),
                                    ("all", "fin cut at 10"), ("no age", "all"),
                                    ("no age", "fin cut at 10")])
    for _, row in table.iterrows():
        test = engine.lr_test(fits[row["smaller fit"]], fits[row["larger fit"]])
        assert row["LR statistic"] == test.statistic and row["df"] == test.df
        assert row["p"] == test.p
    assert table.set_index(["smaller fit", "larger fit"]).loc[("all", "fin cut at 10"), "df"] == 1
    app.tabs.active = main.TABS.index("Results")
    results = app.results
    assert len(results.lr_tests.value) == 5 and "as R's `anova" in results.lr_note.object


def test_penalised_fits_and_one_fit_get_no_test(app):
    s = app.store
    keep(app, "plain")
    assert nested_lr_tests(app.workbench.fits).empty
    s.param.update(penalty="L2")
    keep(app, "ridge", covariates=[c for c in s.covariates if c != "prio"])
    assert nested_lr_tests(app.workbench.fits).empty
    app.tabs.active = main.TABS.index("Results")
    assert "None yet" in app.results.lr_note.object and app.results.lr_tests.value.empty
