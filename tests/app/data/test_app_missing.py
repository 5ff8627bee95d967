"""Missing values in the app: R's lung (one missing ph.ecog among age, sex, ph.ecog) is refused
with the rows named and the way out, and fitted as a complete-case analysis that says how many
rows it dropped, with R's published coefficients (the oracle)."""

from __future__ import annotations

import pandas as pd
import pytest

pytest.importorskip("panel")

from app.analyses import analysis_file  # noqa: E402
from app.analyses.reopen import rebuild  # noqa: E402
from app.data.store import Store  # noqa: E402
from app.data.view import report_markdown  # noqa: E402
from app.omop.state import OmopState  # noqa: E402
from app.survival.results import ResultsView  # noqa: E402
from app.survival.state import Workbench  # noqa: E402

# R 4.x, survival: coxph(Surv(time, status) ~ age + sex + ph.ecog, data = lung), printed output
# ("n= 227, number of events= 164 (1 observation deleted due to missingness)")
R_COEF = {"age": 0.011067, "sex": -0.552612, "ph.ecog": 0.463728}
R_SE = {"age": 0.009267, "sex": 0.167739, "ph.ecog": 0.113577}


@pytest.fixture()
def lung() -> Store:
    s = Store()
    s.load_sample("lung")
    return s


def test_missing_values_are_counted_and_refused_with_the_way_out(lung):
    assert lung.missing == "drop"       # the sample opens as a complete-case analysis
    lung.missing = "stop"
    report = lung.validation_report()
    assert not report["ok"]
    assert "ph.ecog" in report["error"] and "complete-case analysis" in report["error"]
    assert "Data tab" in report["error"] and 'missing="drop"' not in report["error"]
    problems = report["problems"]
    assert "ph.ecog" in set(problems["column"])
    assert problems.loc[problems["column"] == "ph.ecog", "problem"].str.contains("missing").all()


def test_complete_case_analysis_drops_and_reports_the_rows(lung):
    bench = Workbench(store=lung)
    lung.missing = "drop"
    report = lung.validation_report()
    assert report["ok"] and report["n_dropped"] == 1 and report["dropped"] == {"ph.ecog": 1}
    assert "1 row(s) dropped" in report_markdown(report)
    kept = bench.fit_job("complete cases").run()
    res = kept.result
    assert (res.n, res.n_events) == (227, 164)
    for name, value in R_COEF.items():
        assert res.coef[name] == pytest.approx(value, abs=6e-7)
        assert res.se[name] == pytest.approx(R_SE[name], abs=6e-7)
    assert kept.row()["rows dropped (missing)"] == "1 (ph.ecog 1)"
    assert kept.spec["options"]["missing"] == "drop"


def test_the_script_and_the_reopened_analysis_drop_the_same_rows(lung):
    bench = Workbench(store=lung)
    lung.missing = "drop"
    kept = bench.fit_job("complete cases").run()
    bench.keep(kept)
    text = lung.python_script()
    assert 'missing="drop"' in text
    namespace: dict = {}
    exec(compile(text, "<survscan script>", "exec"), namespace)
    pd.testing.assert_series_equal(namespace["res"].coef, kept.result.coef)
    analysis = analysis_file.read(analysis_file.write(analysis_file.capture(
        lung, bench, OmopState(workbench=bench), "lung")))
    staged, staged_bench, _, differ = rebuild(analysis)
    assert differ == [] and staged.missing == "drop"
    assert staged_bench.fits[0].n_dropped == 1


def test_results_say_what_was_dropped_and_line_up_other_data_only_when_asked(lung):
    bench = Workbench(store=lung)
    view = ResultsView(store=lung, workbench=bench)
    lung.load_sample("rossi")
    bench.keep(bench.fit_job("rossi").run())
    lung.load_sample("lung")
    lung.missing = "drop"
    bench.keep(bench.fit_job("lung").run())
    assert "1 (ph.ecog 1) row(s) dropped for missing values" in view.fit_info.object
    assert list(view.compare_hr.value.columns) == ["covariate", "lung"]
    view.across_data.value = True
    assert list(view.compare_hr.value.columns) == ["covariate", "rossi", "lung"]


def test_results_name_the_variance_they_show():
    """Issue 31: a weighted analysis shows the robust (sandwich) standard errors and says so; an
    unweighted one says its SEs are model-based. The numbers are engine.fit's own."""
    import engine

    rossi = engine.datasets.load_rossi()
    store = Store()
    bench = Workbench(store=store)
    view = ResultsView(store=store, workbench=bench)
    store.load_sample("rossi")
    bench.keep(bench.fit_job("plain").run())
    assert "Standard errors: model-based SE (inverse information)" in view.fit_info.object
    weighted = rossi.assign(w=0.5 + (rossi.index.to_numpy() % 6) / 2.4)   # not all integers
    store.load_upload("weighted.csv", weighted.to_csv(index=False).encode())
    store.weights = "w"
    kept = bench.fit_job("weighted").run()
    bench.keep(kept)
    assert kept.result.variance == "robust"
    assert "Standard errors: robust SE (sandwich), each of 432 rows its own cluster" in \
        view.fit_info.object
    direct = engine.fit(engine.Cohort.from_frame(weighted, "week", "arrest", weights="w",
                                                 covariates=list(kept.result.coef.index)),
                        ties=kept.result.spec["ties"])
    pd.testing.assert_series_equal(kept.result.se, direct.se_robust, check_names=False)
