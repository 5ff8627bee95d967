"""The Describe tab without a browser: its numbers against independent oracles (lifelines,
pandas, R's published cmprsk output) and its figures as valid PNG and SVG files that carry
the numbers they show."""

import io
import xml.etree.ElementTree as ET

import numpy as np
import pandas as pd
import pytest
from lifelines import KaplanMeierFitter
from lifelines.statistics import logrank_test
from PIL import Image

import engine
from app.describe import describing as d
from app.data.store import Store
from app.describe.view import ANY_EVENT, ATTAINED, DescribeView
from app.shell.figures import forest_figure, km_figure, save

SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture
def rossi_view():
    store = Store()
    store.load_sample("rossi")
    return store, DescribeView(store=store)


def svg_texts(svg: bytes | str) -> list[str]:
    root = ET.fromstring(svg if isinstance(svg, bytes) else svg.encode())
    return ["".join(t.itertext()) for t in root.iter(f"{SVG}text")]


def test_rossi_by_fin_against_lifelines(rossi_view):
    store, view = rossi_view
    assert view.group.value == "fin"                       # the treatment by default
    rossi = store.data
    a, b = rossi[rossi["fin"] == 0], rossi[rossi["fin"] == 1]
    oracle = logrank_test(a["week"], b["week"], a["arrest"], b["arrest"])
    assert view.test_text.object == (f"**Log-rank: chi-square = {oracle.test_statistic:.2f} on 1 "
                                     f"df, p = {oracle.p_value:.3g}**")
    assert "chi-square = 3.84" in view.test_text.object and "p = 0.0501" in view.test_text.object
    meds = view.medians.value
    assert meds["group"].tolist() == ["fin = 0", "fin = 1"]
    assert meds["n"].tolist() == [216, 216] and meds["events"].tolist() == [66, 48]
    assert meds["median"].tolist() == ["not reached", "not reached"]   # S stays above 0.5
    at = view.at_table.value
    for level, part in at.groupby("group"):
        rows = rossi[rossi["fin"] == int(level[-1])]
        kmf = KaplanMeierFitter().fit(rows["week"], rows["arrest"])
        np.testing.assert_allclose(part["survival"],
                                   kmf.survival_function_at_times(part["time"]), rtol=1e-12)


def test_incidence_rates_as_R_poisson_test(rossi_view):
    """Events per 1,000 person-weeks by fin with R's exact limits and exact rate ratio
    (poisson.test: tests/data/r_incidence_rates.Rout), rescaled when the unit changes."""
    _, view = rossi_view
    rates = view.rates.value.set_index("group")
    assert rates["events"].tolist() == [66, 48]
    assert rates["person-time"].tolist() == [9684, 10125]
    assert rates.loc["fin = 0", "rate per 1,000"] == pytest.approx(6.81536555142503, rel=1e-12)
    assert rates.loc["fin = 1", "lower 95%"] == pytest.approx(3.49544798256625, rel=1e-12)
    ratio = view.rate_comparisons.value.set_index("group").loc["fin = 1 vs fin = 0"]
    assert ratio["RR"] == pytest.approx(0.69559595959596, rel=1e-12)
    assert ratio["RR upper"] == pytest.approx(1.02426569618411, rel=1e-10)
    assert ratio["p"] == pytest.approx(0.060751020926971, rel=1e-10)
    assert "per 1,000 units of person-time (week); exact Poisson 95% limits" in \
        view.rates_caption.object
    view.per.value = 52000                          # per 1,000 person-years
    rates = view.rates.value.set_index("group")
    assert rates.loc["fin = 0", "rate per 52,000"] == pytest.approx(6.81536555142503 * 52,
                                                                    rel=1e-12)
    ratio = view.rate_comparisons.value.iloc[0]
    assert ratio["RR"] == pytest.approx(0.69559595959596, rel=1e-12)
    assert ratio["RD"] == pytest.approx((48 / 10125 - 66 / 9684) * 52000,
                                                     rel=1e-12)
    assert "incidence_rates.csv" in view.report_files()
    # by follow-up band, as poisson.test on survSplit's rows at weeks 20 and 40
    view.rate_breaks.value = "20, 40"
    rates = view.rates.value.set_index(["group", "follow-up"])
    assert rates.loc[("fin = 0", "(20, 40]"), "rate per 52,000"] == pytest.approx(
        7.73267053300193 * 52, rel=1e-12)
    ratio = view.rate_comparisons.value.set_index("follow-up").loc["> 40"]
    assert ratio["RR"] == pytest.approx(0.646666292827903, rel=1e-12)
    assert "split into bands" in view.rates_caption.object
    view.rate_breaks.value = "40, x"
    assert view.rates.value.empty and "'x' is not a number" in view.rates_caption.object
    view.rate_breaks.value = ""
    view.per.value = 0
    assert view.rates.value.empty and "positive number" in view.rates_caption.object
    view.per.value = 1000
    assert len(view.rates.value) == 2           # the page works again


def test_standardised_rates_by_age_band_as_R(rossi_view):
    """Standardise by age in the bands of tests/data/r_standardized_rates.R: R's Fay-Feuer
    limits, ratio of standardised rates and poisson.test SMRs on the page; a bad band or a
    column of too many values is said in the caption, and the other rates stay."""
    _, view = rossi_view
    assert view.std_rates.value.empty and view.std_caption.object == ""
    view.std_by.value = "age"
    assert view.std_rates.value.empty and "type the bands" in view.std_caption.object
    assert len(view.rates.value) == 2
    view.std_bands.value = "19, 22, 25, 30"
    rates = view.std_rates.value.set_index("group")
    assert rates["events"].tolist() == [66, 48]
    assert rates.loc["fin = 0", "standardised per 1,000"] == pytest.approx(6.77878727985206,
                                                                           rel=1e-12)
    assert rates.loc["fin = 1", "lower 95%"] == pytest.approx(3.56661054181450, rel=1e-12)
    assert rates.loc["fin = 1", "crude per 1,000"] == pytest.approx(4.74074074074074,
                                                                    rel=1e-12)
    ratio = view.std_comparisons.value.iloc[0]
    assert ratio["SRR"] == pytest.approx(0.713854138692136, rel=1e-12)
    assert ratio["SRR upper"] == pytest.approx(1.03605514862703, rel=1e-10)
    smr = view.smr.value.set_index("group")
    assert smr.loc["fin = 1", "SMR"] == pytest.approx(0.835130145090678, rel=1e-12)
    assert smr.loc["fin = 0", "p"] == pytest.approx(0.205863625394263, rel=1e-9)
    caption = view.std_caption.object
    assert "Directly standardised by age (5 strata)" in caption and "Fay and Feuer" in caption
    assert "left out" not in caption
    assert {"standardized_rates.csv", "smr.csv"} <= set(view.report_files())
    view.std_bands.value = "20, old"
    assert view.std_rates.value.empty and "'old' is not a number" in view.std_caption.object
    view.std_by.value = "(none)"
    assert view.std_caption.object == "" and "smr.csv" not in view.report_files()


def test_rows_without_a_stratum_are_left_out_and_counted(rossi_view):
    """Rows whose standardisation column is missing leave the standardised rates (counted in
    the caption), as the engine on the other rows gives them."""
    store, _ = rossi_view
    groups = d.groups_of(store, "fin")
    prio = store.data["prio"].astype(float).where(store.data["prio"] != 3)
    kept, strata, left_out = d.standard_rows(groups, prio, "prio", [1, 4])
    rates, ratios = d.standardized_by(kept, strata, 1000.0)
    assert left_out == int((store.data["prio"] == 3).sum()) > 0
    rows = store.data[store.data["prio"] != 3]
    band = pd.cut(rows["prio"], [-np.inf, 1, 4, np.inf]).astype(str).to_numpy()
    want = engine.standardized_rates(engine.Cohort.from_frame(rows, "week", "arrest",
                                                              covariates=[]),
                                     band, by=rows["fin"].to_numpy())
    np.testing.assert_allclose(rates.rates["rate"], want.rates["rate"], rtol=1e-12)
    caption = d.standardized_tables(rates, ratios, groups, "prio", left_out,
                                    "week")["std_caption"]
    assert f"{left_out} rows without prio left out" in caption


def test_standardised_by_attained_age_as_R(rossi_view):
    """Age at release growing by week / 52.18: the follow-up cut at ages 19.5 ... 30.5, as
    R's survSplit on the age scale (tests/data/r_standardized_rates.R) gives the rates."""
    _, view = rossi_view
    view.std_by.value = "age"
    view.std_bands.value = "19.5, 22.5, 25.5, 30.5"
    view.std_unit.value = 52.18
    view.std_attained.value = ATTAINED
    rates = view.std_rates.value.set_index("group")
    assert rates.loc["fin = 0", "standardised per 1,000"] == pytest.approx(6.80050147681462,
                                                                           rel=1e-11)
    assert rates.loc["fin = 1", "upper 95%"] == pytest.approx(6.52432464568138, rel=1e-11)
    smr = view.smr.value.set_index("group")
    assert smr.loc["fin = 1", "expected"] == pytest.approx(57.1875539525025, rel=1e-11)
    assert "by attained age (follow-up split" in view.std_caption.object
    view.std_bands.value = ""
    assert view.std_rates.value.empty and "band limits of attained age" in \
        view.std_caption.object


def test_standardised_to_the_who_standard_as_R(rossi_view):
    """The WHO 2000-2025 standard population: age at release in its groups, then attained
    age (a year of follow-up taken as four) cut at its limits, as R with the published
    weights (tests/data/r_standardized_rates.R); the band box is not read meanwhile, and the
    caption names the standard and its weights."""
    _, view = rossi_view
    view.std_by.value = "age"
    view.std_bands.value = "20, old"                    # not read for a standard population
    view.std_standard.value = "who2000"
    assert view.std_bands.disabled
    rates = view.std_rates.value.set_index("group")
    assert rates.loc["fin = 0", "standardised per 1,000"] == pytest.approx(7.04171844902782,
                                                                           rel=1e-12)
    assert rates.loc["fin = 1", "upper 95%"] == pytest.approx(6.43784722114377, rel=1e-12)
    assert view.std_comparisons.value.iloc[0]["SRR"] == pytest.approx(0.638842096217246,
                                                                      rel=1e-12)
    smr = view.smr.value.set_index("group")
    assert smr.loc["fin = 1", "SMR"] == pytest.approx(0.842579634935424, rel=1e-12)
    caption = view.std_caption.object
    assert "the WHO World Standard Population 2000-2025 (the 6 of its 21 age groups" in caption
    assert "15-19 0.1843" in caption
    view.std_unit.value = 13.045
    view.std_attained.value = ATTAINED
    rates = view.std_rates.value.set_index("group")
    assert rates.loc["fin = 1", "standardised per 1,000"] == pytest.approx(2.88199144629411,
                                                                           rel=1e-11)
    assert view.std_comparisons.value.iloc[0]["SRR lower"] == pytest.approx(
        0.268360399608891, rel=1e-10)
    view.std_standard.value = "cohort"                  # the band box is read again
    assert not view.std_bands.disabled
    assert view.std_rates.value.empty and "'old' is not a number" in view.std_caption.object
    assert len(view.rates.value) == 2
    groups = d.groups_of(view.store, "fin")
    text = pd.Series(np.where(view.store.data["age"] > 30, "old", "young"))
    with pytest.raises(d.DescribeError, match="'band' is not a number column"):
        d.standard_rows(groups, text, "band", [], standard="segi1960")


def test_smr_against_given_reference_rates_as_R(rossi_view):
    """A population's rates per WHO age group typed for the SMR (one for a group rossi lacks,
    left aside): R's poisson.test SMRs (tests/data/r_standardized_rates.R); a bad entry is
    said in the caption."""
    _, view = rossi_view
    view.std_by.value = "age"
    view.std_standard.value = "who2000"
    view.smr_rates.value = ("10-14: 20; 15-19: 11; 20-24: 8; 25-29: 5.5; 30-34: 4; 35-39: 3; "
                            "40-44: 2.5")
    smr = view.smr.value.set_index("group")
    assert smr.loc["fin = 1", "SMR"] == pytest.approx(0.679573850564542, rel=1e-12)
    assert smr.loc["fin = 0", "expected"] == pytest.approx(69.8855, rel=1e-12)
    assert smr.loc["fin = 1", "p"] == pytest.approx(0.00607254073516228, rel=1e-9)
    assert "expected at the given reference rates (per 1,000" in view.std_caption.object
    view.smr_rates.value = "15-19 11"
    assert view.smr.value.empty and "'15-19 11' is not 'stratum: rate'" in \
        view.std_caption.object
    view.std_standard.value = "cohort"
    view.std_bands.value = "19, 22, 25, 30"
    view.smr_rates.value = "<= 19: 12; (19, 22]: 9; (22, 25]: 6; (25, 30]: 4; > 30: 2.5"
    smr = view.smr.value.set_index("group")                     # R's, the same bands
    assert smr.loc["fin = 1", "SMR"] == pytest.approx(0.693150803621713, rel=1e-12)
    assert smr.loc["fin = 0", "p"] == pytest.approx(0.85592315733333679, rel=1e-9)


def test_conditional_on_event_free_at_week_20(rossi_view):
    """The landmark view: R's survfit(start.time = 20) at weeks 30 and 52
    (tests/data/r_km_start_time.Rout) and the log-rank test of the rows followed to week 20
    (lifelines on those rows); the incidence rates stay those of all follow-up."""
    store, view = rossi_view
    store.conf_type = "log"
    view.times.value = "30, 52"
    view.start_time.value = 20
    at = view.at_table.value.set_index(["group", "time"])
    assert at.loc[("fin = 0", 30.0), "survival"] == pytest.approx(0.913265306122449, rel=1e-12)
    assert at.loc[("fin = 1", 52.0), "lower 95%"] == pytest.approx(0.786146934013115,
                                                                   rel=1e-9)
    assert "conditional on being event-free at 20" in view.caption.object
    rossi = store.data[store.data["week"] >= 20]
    a, b = rossi[rossi["fin"] == 0], rossi[rossi["fin"] == 1]
    oracle = logrank_test(a["week"], b["week"], a["arrest"], b["arrest"])
    assert view.test_text.object == (f"**Log-rank (from 20): chi-square = "
                                     f"{oracle.test_statistic:.2f} on 1 df, "
                                     f"p = {oracle.p_value:.3g}**")
    assert view.rates.value["events"].tolist() == [66, 48]
    view.start_time.value = 60
    assert "no row is followed to start_time=60" in view.message.object
    view.start_time.value = None
    assert view.test_text.object.startswith("**Log-rank: chi-square = 3.84")


def test_weights_strata_and_trend(rossi_view):
    store, view = rossi_view
    view.weights.value = "Fleming-Harrington (p, q)"
    view.fh_p.value, view.fh_q.value = 0.0, 0.0
    assert "Fleming-Harrington (p = 0, q = 0): chi-square = 3.84" in view.test_text.object
    view.weights.value = "Peto-Peto (Gehan-Wilcoxon type, rho = 1)"
    rossi = store.data
    a, b = rossi[rossi["fin"] == 0], rossi[rossi["fin"] == 1]
    # lifelines' Fleming-Harrington p=1, q=0 is R's survdiff(rho=1)
    oracle = logrank_test(a["week"], b["week"], a["arrest"], b["arrest"],
                          weightings="fleming-harrington", p=1, q=0)
    assert f"chi-square = {oracle.test_statistic:.2f}" in view.test_text.object
    view.weights.value = "Gehan-Breslow (generalised Wilcoxon, n(t))"
    oracle = logrank_test(a["week"], b["week"], a["arrest"], b["arrest"], weightings="wilcoxon")
    assert (f"Gehan-Breslow: chi-square = {oracle.test_statistic:.2f}"
            in view.test_text.object)
    view.weights.value = "Log-rank"
    view.strata.value = "race"
    assert view.test_text.object.startswith("**Log-rank (stratified)")
    view.strata.value = "(none)"
    view.group.value = "prio"                                  # many values: quartiles
    assert view.medians.value["group"].str.startswith("prio Q").all()
    assert "Test for trend" in view.test_text.object and "on 3 df" in view.test_text.object


def test_table_one_against_pandas(rossi_view):
    store, view = rossi_view
    shown = view.t1_table.value.set_index(["variable", "level"])
    rossi = store.data
    for fin in (0, 1):
        age = rossi.loc[rossi["fin"] == fin, "age"]
        assert shown.loc[("age", ""), f"fin = {fin}"] == f"{age.mean():.1f} ({age.std():.1f})"
        race1 = (rossi.loc[rossi["fin"] == fin, "race"] == 1)
        assert shown.loc[("race", "1"), f"fin = {fin}"] == (f"{race1.sum()} "
                                                            f"({100 * race1.mean():.1f})")
    assert shown.loc[("n", ""), "Overall"] == "432"
    a0, a1 = (rossi.loc[rossi["fin"] == f, "age"] for f in (0, 1))
    smd = abs(a0.mean() - a1.mean()) / np.sqrt((a0.var() + a1.var()) / 2)   # Austin 2009
    assert shown.loc[("age", ""), "SMD 0 vs 1"] == f"{smd:.3f}"
    view.t1_nonnormal.value = ["age"]
    shown = view.t1_table.value.set_index(["variable", "level"])
    q1, med, q3 = rossi["age"].quantile([0.25, 0.5, 0.75])
    assert shown.loc[("age", ""), "Overall"] == f"{med:.1f} [{q1:.1f}, {q3:.1f}]"
    csv = view._t1_csv().decode()
    assert csv.splitlines()[0].startswith("variable,level,Missing,Overall")


def test_missing_group_values_are_left_out_and_counted():
    store = Store()
    df = pd.read_csv("sample_data/rossi.csv")
    df.loc[[3, 7, 11], "fin"] = np.nan
    store.load_frame(df, {"kind": "upload", "label": "rossi with gaps"})
    store.treatment = "fin"
    view = DescribeView(store=store)
    view.group.value = "fin"
    assert "3 row(s) without fin" in view.message.object
    assert view.medians.value["n"].sum() == 429
    assert "3 row(s) without a group value are left out" in view.t1_message.object


def test_competing_risks_show_incidence_with_grays_test():
    store = Store()
    store.load_sample("bmtcrr")
    view = DescribeView(store=store)
    assert view.outcome.visible and view.cause.options == {"1": 1, "2": 2}
    view.group.value = "D"
    # R: cmprsk::cuminc(bmtcrr$ftime, bmtcrr$Status, bmtcrr$D): 2.8623325, p 0.09067592
    assert view.test_text.object == ("**Gray's test for cause 1: chi-square = 2.86 on 1 df, "
                                     "p = 0.0907**")
    assert not view.km_section.visible                   # no Kaplan-Meier above the CIF
    texts = svg_texts(view.figure.object)
    assert "Cumulative incidence of cause 1 (Aalen-Johansen)" in texts
    assert not any("Kaplan-Meier" in t for t in texts)
    # cumulative incidence at chosen times, with R's SE and limits (the engine's,
    # tests/engine/descriptive/test_cumulative_incidence_r.py): survfit's D=ALL at month 10
    view.times.value = "10, 50"
    assert view.times.label.startswith("Cumulative incidence at times")
    at = view.at_table.value.set_index(["group", "time"])
    row = at.loc[("D = ALL", 10.0)]
    assert row["cumulative incidence"] == pytest.approx(0.3287671232876712, rel=1e-12)
    assert row["SE"] == pytest.approx(0.0549818527885887, rel=1e-9)
    assert row["lower 95%"] == pytest.approx(0.2368843890588074, rel=1e-9)
    assert len(at) == 4 and view.rmst.value.empty
    view.per.value = 12                   # months: per person-year (R's poisson.test)
    rates = view.rates.value.set_index("group")
    assert rates.loc["D = ALL", "rate per 12"] == pytest.approx(0.235556396828401, rel=1e-12)
    assert rates["events"].tolist() == [28, 28]
    view.cause.value = 2
    ratio = view.rate_comparisons.value.iloc[0]
    assert ratio["RR"] == pytest.approx(1.10718975987782, rel=1e-12)
    assert ratio["p"] == pytest.approx(0.724216364688546, rel=1e-10)
    assert "cause 2: chi-square = 0.45 on 1 df, p = 0.503" in view.test_text.object
    view.outcome.value = ANY_EVENT
    assert view.test_text.object.startswith("**Log-rank")
    assert view.km_section.visible


def test_weighted_competing_risks_give_R_incidence_without_grays_test():
    """Case weights reach the incidence curves (R's weighted survfit, robust variance:
    tests/data/r_cif_robust.Rout) and Gray's test, which has none, says why it is not shown."""
    bmtcrr = pd.read_csv("sample_data/bmtcrr.csv")
    store = Store()
    view = DescribeView(store=store)
    store.load_upload("bmtcrr_w.csv", bmtcrr.assign(
        w=0.5 + (np.arange(len(bmtcrr)) % 7) / 4).to_csv(index=False).encode())
    store.time, store.event, store.weights = "ftime", "Status", "w"
    view.group.value = "D"
    assert "Gray's test is not shown: it has no case weights" in view.test_text.object
    table = pd.read_csv(io.BytesIO(view.report_files()["cumulative_incidence.csv"]))
    all_ = table[(table["group"] == "D = ALL") & (table["time"] <= 10)].iloc[-1]
    # survfit(Surv(ftime, factor(Status)) ~ D, weights = w): D=ALL at month 10
    assert all_["cif"] == pytest.approx(0.3412698412698413, rel=1e-12)
    assert all_["std_err"] == pytest.approx(0.0597837817126684, rel=1e-9)
    assert all_["lower"] == pytest.approx(0.2420940398330501, rel=1e-9)


def test_figures_are_valid_png_and_svg_with_their_numbers(rossi_view):
    _, view = rossi_view
    png = view._figure("png")
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    image = Image.open(io.BytesIO(png))
    assert image.format == "PNG" and image.width > 1000 and image.height > 700
    texts = svg_texts(view._figure("svg"))
    assert "Log-rank: chi-square = 3.84 on 1 df, p = 0.0501" in texts
    assert {"fin = 0", "fin = 1", "216", "Number at risk"} <= set(texts)
    view.options.value = ["KMunicate table"]
    texts = svg_texts(view._figure("svg"))
    assert {"At risk", "Events", "Censored"} <= set(texts)
    files = view.report_files()
    assert {"kaplan_meier.png", "kaplan_meier.svg", "table_one.csv", "medians.csv",
            "logrank.csv", "survival_at.csv", "rmst.csv"} <= set(files)


def test_user_text_stays_text_in_the_svg():
    name = '<img src=x onerror="alert(1)">'
    table = pd.DataFrame({"time": [1.0, 2.0, 3.0], "group": [name] * 3, "survival": [0.9, 0.8, 0.7],
                          "lower": [0.8, 0.7, 0.6], "upper": [1.0, 0.9, 0.8],
                          "censored": [0, 1, 0]})
    svg = save(km_figure(table, None, time_label=name), "svg")
    assert b"<img" not in svg and name in svg_texts(svg)


def test_forest_figure_names_subdistribution_ratios():
    summary = pd.DataFrame({"hr": [0.7, 1.3], "hr_lower": [0.5, 1.1], "hr_upper": [0.98, 1.6]},
                           index=pd.Index(["fin", "prio"], name="covariate"))
    texts = svg_texts(save(forest_figure(summary, ratio="sHR",
                                         title="Subdistribution hazard ratios (95% CI)"), "svg"))
    assert {"fin", "prio", "0.70 (0.50, 0.98)", "sHR (95% CI)"} <= set(texts)
    assert "Subdistribution hazard ratios (95% CI)" in texts


def test_parse_times():
    assert d.parse_times("52, 26;26") == [26.0, 52.0]
    with pytest.raises(d.DescribeError, match="'x' is not a number"):
        d.parse_times("26, x")


def test_the_apps_tab_computes_once_shown():
    """A new session does not wait for Describe's numbers: the tab computes when opened (or
    when the report folder asks for them)."""
    import panel as pn

    from app import main

    app = main.build_app()
    view = app.describe
    assert view.lazy and view.medians.value.empty and view._fig is None
    assert "kaplan_meier.svg" in view.report_files()       # asking computes
    assert view.lazy and len(view.medians.value) == 2      # ... and the tab stays hidden
    app.store.load_sample("bmtcrr")                       # hidden: waits for the tab
    assert not view.outcome.visible
    app.tabs.active = main.TABS.index("Describe")         # shown: follows the data
    assert not view.lazy and view.outcome.visible
    app.store.load_sample("rossi")
    assert not view.outcome.visible
    app.tabs.active = main.TABS.index("Data")             # left: stops following
    app.store.load_sample("bmtcrr")
    assert view.lazy and not view.outcome.visible
    pn.state.reset()


def test_a_choice_the_data_cannot_answer_is_a_message():
    store = Store()
    df = pd.DataFrame({"time": np.arange(1.0, 21.0), "status": [1, 1, 0, 0] * 5,
                       "site": [f"s{k}" for k in range(20)], "arm": ["a", "b"] * 10})
    store.load_frame(df, {"kind": "upload", "label": "many sites"})
    store.param.update(time="time", event="status")
    view = DescribeView(store=store)
    view.group.value = "arm"
    assert len(view.medians.value) == 2
    view.group.value = "site"                 # 20 text levels: refused, nothing stale kept
    assert view.message.object.startswith("Not available: 'site' has 20 levels")
    assert view.medians.value.empty and view.figure.object is None
    assert "Table 1" in view.t1_message.object or not view.t1_table.value.empty


def test_kmunicate_counts_events_and_censored_so_far(rossi_view):
    """KMunicate's rows: events by each time counted from time 0 (lifelines' event table)."""
    store, view = rossi_view
    km = d.survival_by(d.groups_of(store, "fin"))
    groups = d.groups_of(store, "fin")
    counts = d.risk_counts(km, groups, [0.0, 10.0, 20.0, 52.0], so_far=True)
    rossi = store.data
    for fin in (0, 1):
        part = counts[counts["group"] == f"fin = {fin}"]
        rows = rossi[rossi["fin"] == fin]
        kmf = KaplanMeierFitter().fit(rows["week"], rows["arrest"]).event_table
        for t, events, censored in zip(part["time"], part["events"], part["censored"]):
            assert events == kmf.loc[kmf.index <= t, "observed"].sum()
            assert censored == kmf.loc[kmf.index <= t, "censored"].sum()


def test_hazard_ratio_by_subgroup_against_lifelines(rossi_view):
    from lifelines import CoxPHFitter

    store, view = rossi_view
    view.subgroups.value = ["race", "age"]
    ratios = view.subgroup_table.value.set_index("row")
    rossi = store.data

    def lifelines_hr(rows):
        cph = CoxPHFitter().fit(rows[["week", "arrest", "fin"]], "week", "arrest")
        return float(np.exp(cph.params_["fin"]))

    assert ratios.loc["All (fin = 1 vs fin = 0)", "hr"] == pytest.approx(lifelines_hr(rossi),
                                                                         rel=1e-6)
    for race in (0, 1):
        assert ratios.loc[f"   race = {race}", "hr"] == pytest.approx(
            lifelines_hr(rossi[rossi["race"] == race]), rel=1e-6)
    assert sum(ratios.index.str.startswith("   age Q")) == 4
    assert ratios.loc["   age Q1 (17, 20]", "n"] == (rossi["age"] <= 20).sum()
    # the interaction p of race: the Wald p of fin x race in one fit of all rows
    both = rossi[["week", "arrest", "fin", "race"]].assign(fin_race=rossi["fin"] * rossi["race"])
    p_race = CoxPHFitter().fit(both, "week", "arrest").summary.loc["fin_race", "p"]
    assert ratios.loc["race", "p_interaction"] == pytest.approx(p_race, rel=1e-4)
    assert 0 < ratios.loc["age", "p_interaction"] < 1 and np.isnan(
        ratios.loc["   race = 0", "p_interaction"])
    texts = {t.strip() for t in svg_texts(view.subgroup_figure.object)}
    assert {f"race (interaction p = {p_race:.3g})", "race = 0", "race = 1",
            "age Q4 (27, 44]"} <= texts
    assert {"forest_subgroups.png", "forest_subgroups.svg", "subgroups.csv"} <= set(
        view.report_files())



def test_one_confidence_transform_for_bands_and_tables_in_describe_and_results(rossi_view):
    """R's default log limits, or log-log (lifelines' band), chosen once for the Describe
    tab's bands, median and survival-at tables and the Results tab's curves."""
    from scipy.stats import norm

    from app.survival import results

    store, view = rossi_view
    view.times.value = "10, 30"
    rossi = store.data

    def limits_at(kmf, t):
        return kmf.confidence_interval_survival_function_.loc[:t].iloc[-1].to_numpy()

    for conf_type in ("log", "log-log"):
        store.conf_type = conf_type
        assert f"pointwise 95% CI ({conf_type})" in view.caption.object
        assert results.km_result(store, "fin").conf_type == conf_type
        for level, part in view.at_table.value.groupby("group"):
            rows = rossi[rossi["fin"] == int(level[-1])]
            kmf = KaplanMeierFitter().fit(rows["week"], rows["arrest"])
            events = kmf.event_table
            var = (events["observed"] / (events["at_risk"]
                                        * (events["at_risk"] - events["observed"]))).cumsum()
            for _, row in part.iterrows():
                if conf_type == "log":  # exp(log S -+ z se), Greenwood's se of log S, by hand
                    se = np.sqrt(var.loc[:row["time"]].iloc[-1])
                    expected = row["survival"] * np.exp(-norm.ppf(0.975) * se)
                else:                   # lifelines' exponential Greenwood band
                    expected = limits_at(kmf, row["time"])[0]
                np.testing.assert_allclose(row["lower 95%"], expected, rtol=1e-9)
    assert view.conf_type.value == "log-log"  # the widget shows the store's choice


def test_inverse_probability_weights_give_R_robust_limits():
    """Weights that are not whole numbers (IPTW): the bands and tables use R survfit's robust
    variance, and the caption says so; R's summary(survfit(Surv(week, arrest) ~ fin, weights =
    w), times = c(10, 52)) (tests/data/r_km_robust.Rout) prints these limits."""
    rossi = pd.read_csv("sample_data/rossi.csv")
    weighted = rossi.assign(w=0.5 + (np.arange(len(rossi)) % 7) / 4)
    store = Store()
    view = DescribeView(store=store)
    store.load_upload("weighted.csv", weighted.to_csv(index=False).encode())
    store.weights = "w"
    store.conf_type = "log"
    view.group.value = "fin"
    view.times.value = "10, 52"
    assert "pointwise 95% CI (log, robust (infinitesimal-jackknife) variance by row)" in \
        view.caption.object
    # R: coxph(Surv(week, arrest) ~ fin, weights = w, ties = "breslow"): robust score test
    assert view.test_text.object == ("**Log-rank (robust by row variance): chi-square = 1.40 "
                                     "on 1 df, p = 0.237**")     # 1.3954332, p 0.2374897
    # Table 1 of the weighted population (engine.table_one with weights), or as observed
    assert view.t1_weighted.visible and view.t1_weighted.value
    t1 = view.t1_table.value.set_index(["variable", "level"])
    oracle = engine.table_one(weighted, by="fin", weights="w",
                              columns=list(view.t1_columns.value)).table
    assert t1.loc[("age", ""), "fin = 0"] == oracle.loc[("age", ""), "0"]
    assert t1.loc[("n", ""), "fin = 0"] == f"{weighted.loc[weighted['fin'] == 0, 'w'].sum():.1f}"
    assert "Weighted by w" in view.t1_message.object
    view.t1_weighted.value = False
    assert view.t1_table.value.set_index(["variable", "level"]).loc[("n", ""), "fin = 0"] == "216"
    # the rates as a weighted Poisson model's, with the sandwich variance by row
    rates = view.rates.value.set_index("group")
    arm = weighted[weighted["fin"] == 0]
    assert rates.loc["fin = 0", "rate per 1,000"] == pytest.approx(
        1000 * (arm["w"] * arm["arrest"]).sum() / (arm["w"] * arm["week"]).sum(), rel=1e-12)
    assert "robust (sandwich) variance by row" in view.rates_caption.object
    view.tau.value = 52
    rmst = view.rmst.value.set_index("group")
    # R: the rows' influences on each arm's area (tests/data/r_km_robust.Rout, 0.9437578 and
    # 0.9373349 on the split rows by id, the same subjects); arms independent
    assert rmst.loc["fin = 0", "se"] == pytest.approx(0.943757809588432, rel=1e-9)
    difference = rmst.loc["difference: fin = 1 − fin = 0"]
    assert difference["se"] == pytest.approx(np.hypot(0.943757809588432, 0.937334914258853),
                                             rel=1e-9)
    assert difference["rmst"] == pytest.approx(46.242597899 - 45.091155235, rel=1e-8)
    at = view.at_table.value
    np.testing.assert_allclose(at["lower 95%"], [0.935348806645638, 0.639807708739261,
                                                 0.945781646635104, 0.697725873041750],
                               rtol=1e-9)
