"""The generated script reproduces the Describe tab: the Export tab's script, run, gives the
numbers the page shows (Table 1, the curves at chosen times, the restricted mean, the
log-rank family or Gray's test, the incidence rates, the standardised rates and SMRs), for
rossi by fin, to the WHO standard by attained age, at a landmark with a stratified test, and
for bmtcrr's competing causes."""
import contextlib
import io

import numpy as np
import pytest

from app.data.store import Store
from app.describe.view import ATTAINED, DescribeView
from app.export.view import ExportView
from app.survival.state import Workbench


def view_of(sample: str):
    store = Store()
    store.load_sample(sample)
    view = DescribeView(store=store)
    export = ExportView(store=store, workbench=Workbench(store=store), describe=view)
    return store, view, export


def run(code: str) -> dict:
    namespace: dict = {}
    with contextlib.redirect_stdout(io.StringIO()):
        exec(compile(code, "<survscan script>", "exec"), namespace)
    return namespace


def column(frame, start: str) -> np.ndarray:
    return frame[next(c for c in frame.columns if c.startswith(start))].to_numpy(float)


def test_rossi_by_fin_as_the_page_shows_it():
    _, view, export = view_of("rossi")
    view.times.value = "10, 30"
    view.rate_breaks.value = "20, 40"
    view.std_by.value = "age"
    view.std_bands.value = "19, 22, 25, 30"
    code = export.script_code()
    assert "engine.kaplan_meier(described, by=by" in code and "standardized_rates(" in code
    ns = run(code)
    assert ns["res"].coef["fin"] == pytest.approx(-0.3794222, rel=1e-6)   # the model runs too
    table = ns["table_one"].table.reset_index().to_numpy()
    assert np.array_equal(table, view.frames["table_one"].to_numpy())
    np.testing.assert_allclose(ns["km"].at([10.0, 30.0])["survival"],
                               view.at_table.value["survival"], rtol=1e-12)
    np.testing.assert_allclose(ns["km"].rmst(view.tau.value)["rmst"],
                               view.rmst.value["rmst"].iloc[:2], rtol=1e-12)
    assert ns["rates"].rates["rate"].to_numpy() == pytest.approx(
        column(view.rates.value, "rate per"), rel=1e-12)
    assert ns["standardized"].rates["rate"].to_numpy() == pytest.approx(
        column(view.std_rates.value, "standardised per"), rel=1e-12)
    assert ns["test"].statistic == pytest.approx(3.83757, rel=1e-5)     # R's survdiff
    assert f"chi-square = {ns['test'].statistic:.2f} on 1 df" in view.test_text.object


def test_attained_age_to_the_who_standard_and_a_landmark():
    """Attained age cut at the WHO standard's limits (R's rate), SMRs against typed rates by
    its age groups, and the log-rank test of the rows followed to week 20, stratified by
    race, as the page shows them."""
    _, view, export = view_of("rossi")
    view.std_by.value = "age"
    view.std_standard.value = "who2000"
    view.std_unit.value = 13.045
    view.std_attained.value = ATTAINED
    view.strata.value = "race"
    view.start_time.value = 20
    view.smr_rates.value = "15-19: 11; 20-24: 8; 25-29: 5.5; 30-34: 4; 35-39: 3; 40-44: 2.5; " \
        "45-49: 2; 50-54: 1.5"
    code = export.script_code()
    assert "reference_rates={'15-19': 11.0" in code
    assert "followed = rows[rows[\"time\"] >= 20" in code and "strata=followed" in code
    ns = run(code)
    rates = ns["standardized"].rates
    assert rates.loc["1", "rate"] == pytest.approx(2.88199144629411, rel=1e-11)   # R's
    np.testing.assert_allclose(rates["rate"], column(view.std_rates.value, "standardised"),
                               rtol=1e-12)
    np.testing.assert_allclose(ns["smr"].ratios["smr"], view.smr.value["SMR"], rtol=1e-12)
    assert f"chi-square = {ns['test'].statistic:.2f} on 1 df" in view.test_text.object
    assert "stratified, from 20" in view.test_text.object


def test_competing_causes_of_bmtcrr():
    """Cumulative incidence of cause 1 by sex, Gray's test and the cause's rates."""
    _, view, export = view_of("bmtcrr")
    assert view.outcome.visible and view.cause.value == 1
    view.group.value = "Sex"
    code = export.script_code()
    assert "gray = engine.gray_test(rows, by=\"group\", cause=1" in code
    ns = run(code)
    shown = view.frames["cumulative_incidence"]
    assert np.array_equal(ns["cif"]["time"].to_numpy(), shown["time"].to_numpy())
    np.testing.assert_allclose(ns["cif"]["cif"], shown["cif"], rtol=1e-12)
    assert ns["gray"].table.loc[1, "statistic"] == pytest.approx(
        view.frames["gray_test"]["statistic"].iloc[0], rel=1e-12)
    np.testing.assert_allclose(ns["rates"].rates["rate"], column(view.rates.value, "rate per"),
                               rtol=1e-12)


def test_episodes_weights_and_quartiles():
    """(start, stop] rows by id with IPTW weights (the robust limits), a group cut into
    quartiles, the Peto-Peto test and calendar time in typed bands: the script's numbers are
    the page's."""
    store, view, export = view_of("stanford_heart")
    store.apply_data_step({"op": "psweight", "column": "surgery", "covariates": ["age", "year"],
                           "estimand": "ATE", "name": "iptw"})
    store.weights = "iptw"                     # not whole numbers: the robust limits
    view.group.value = "age"                   # more than 8 values: quartiles
    view.weights.value = "Peto-Peto (Gehan-Wilcoxon type, rho = 1)"
    view.times.value = "100, 300"
    view.std_by.value = "year"                 # calendar time, growing with follow-up
    view.std_bands.value = "2, 4"
    view.std_unit.value = 365.25
    view.std_attained.value = ATTAINED
    code = export.script_code()
    assert "pd.qcut(df['age'], 4" in code and "weights=\"weights\"" in code
    ns = run(code)
    np.testing.assert_allclose(ns["km"].at([100.0, 300.0])["upper"],
                               view.at_table.value["upper 95%"], rtol=1e-12)
    assert "rho=1.0, gamma=0.0" in code and ns["test"].spec["variance"] != "model"
    assert f"chi-square = {ns['test'].statistic:.2f} on 3 df" in view.test_text.object
    np.testing.assert_allclose(ns["standardized"].rates["rate"],
                               column(view.std_rates.value, "standardised"), rtol=1e-12)


def test_no_group_and_chosen_event_codes():
    """One curve for all rows, the event as the chosen codes: the script's median, rate and
    standardised rate (its own values as strata) are the page's."""
    store, view, export = view_of("bmtcrr")
    store.event_codes = [1]                     # relapse the event, death censoring
    view.group.value = "(none)"
    view.std_by.value = "Phase"
    code = export.script_code()
    assert "df['Status'].isin([1]).astype(int)" in code and "by = None" in code
    ns = run(code)
    assert "codes" not in ns["rows"]            # one event type: no competing causes
    np.testing.assert_allclose(ns["rates"].rates["rate"], column(view.rates.value, "rate per"),
                               rtol=1e-12)
    np.testing.assert_allclose(ns["standardized"].rates["rate"],
                               column(view.std_rates.value, "standardised"), rtol=1e-12)
    assert view.medians.value["events"].iloc[0] == ns["rows"]["event"].sum()
    view.rate_breaks.value = "20, soon"                # said in the script, not left out
    code = export.script_code()
    assert "# The Describe tab's analyses are not written: 'soon' is not a number" in code
    run(code)
