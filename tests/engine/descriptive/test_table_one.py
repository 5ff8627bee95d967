"""engine.table_one against the tableone package (Pollard et al., "tableone: An open source
Python package for producing summary statistics for research papers", JAMIA Open 2018) and a
hand computation."""
import numpy as np
import pandas as pd
import pytest
from lifelines.datasets import load_lung
from tableone import TableOne

import engine

COLUMNS = ["age", "sex", "ph.ecog", "wt.loss", "meal.cal"]


def _label(value):
    """tableone's group and level values as table_one prints them (1.0 -> "1")."""
    number = pd.to_numeric(pd.Series([value]), errors="coerce").iloc[0]
    return str(int(number)) if pd.notna(number) and number == int(number) else str(value)


@pytest.fixture(scope="module")
def lung():
    d = load_lung()
    return d.assign(sex=d["sex"].map({1: "male", 2: "female"}))


@pytest.mark.parametrize("by", ["status", "ph.ecog"])
def test_against_tableone(lung, by):
    data = lung.dropna(subset=[by])
    columns = [c for c in COLUMNS if c != by]
    mine = engine.table_one(data, by=by, columns=columns, nonnormal=["meal.cal"])
    theirs = TableOne(data, columns=columns, categorical=[c for c in ("sex", "ph.ecog")
                                                         if c != by],
                      groupby=by, nonnormal=["meal.cal"], smd=True, include_null=False)
    s = mine.summary
    cont = theirs.cont_describe
    for column in ("age", "wt.loss", "meal.cal"):
        for group in cont["mean"].columns:
            row = s[(s["variable"] == column) & (s["group"] == _label(group))].iloc[0]
            for mine_name, their_name in (("mean", "mean"), ("sd", "std"), ("median", "median"),
                                          ("q1", "q25"), ("q3", "q75")):
                if mine_name == "sd" and cont["count"][group][column] < 2:
                    assert np.isnan(row["sd"])     # tableone prints 0 for one value
                    continue
                assert row[mine_name] == pytest.approx(cont[their_name][group][column],
                                                       rel=1e-12)
            assert row["n"] - row["missing"] == cont["count"][group][column]
    cat = theirs.cat_describe
    for (column, level), values in cat["percent"].iterrows():
        for group in cat["percent"].columns:
            row = s[(s["variable"] == column) & (s["level"] == _label(level))
                    & (s["group"] == _label(group))].iloc[0]
            assert row["percent"] == pytest.approx(values[group], rel=1e-12)
            assert row["count"] == cat["freq"][group][(column, level)]
    their_smd = theirs.smd_table.astype(float)
    sizes = data[by].value_counts()
    assert len(mine.smd.columns) == len(their_smd.columns)
    for their_pair in their_smd.columns:
        a, b = (_label(v) for v in their_pair[len("SMD ("):-1].split(","))
        if min(sizes[sizes.index.map(_label) == g].iloc[0] for g in (a, b)) < 2:
            continue                    # no SD from one subject: NaN here
        # tableone signs some continuous SMDs; the SMD is the absolute difference
        np.testing.assert_allclose(mine.smd[f"{a} vs {b}"].loc[their_smd.index],
                                   their_smd[their_pair].abs(), rtol=1e-10)


def test_by_hand():
    df = pd.DataFrame({"arm": ["a", "a", "a", "b", "b", "b"],
                       "x": [1.0, 2.0, 3.0, 2.0, 4.0, np.nan],
                       "smoker": ["y", "n", "y", "n", "n", None]})
    t = engine.table_one(df, by="arm", categorical=["smoker"])
    x = t.summary[t.summary["variable"] == "x"].set_index("group")
    assert x.loc["a", "mean"] == 2.0 and x.loc["a", "sd"] == 1.0
    assert x.loc["b", "mean"] == 3.0 and x.loc["b", "sd"] == pytest.approx(np.sqrt(2))
    assert x.loc["b", "missing"] == 1 and x.loc["Overall", "missing"] == 1
    assert t.smd.loc["x", "a vs b"] == pytest.approx(1.0 / np.sqrt(1.5), rel=1e-12)
    smoker = t.summary[t.summary["variable"] == "smoker"].set_index(["group", "level"])
    assert smoker.loc[("a", "y"), "count"] == 2
    assert smoker.loc[("b", "n"), "percent"] == 100.0          # among the non-missing
    # binary SMD: |p_a - p_b| / sqrt((p_a (1 - p_a) + p_b (1 - p_b)) / 2), p = share of "y"
    assert t.smd.loc["smoker", "a vs b"] == pytest.approx(
        abs(1 / 3 - 1) / np.sqrt((1 / 3 * 2 / 3 + 0) / 2), rel=1e-12)
    assert t.table.loc[("x", ""), "a"] == "2.0 (1.0)"
    assert t.table.loc[("smoker", "y"), "a"] == "2 (66.7)"
    assert t.table.loc[("n", ""), "Overall"] == "6"


def test_all_missing_column_is_counted_not_a_crash(lung):
    t = engine.table_one(lung.assign(empty=np.nan), by="status", columns=["empty"])
    row = t.summary.set_index("group").loc["Overall"]
    assert row["missing"] == len(lung) and np.isnan(row["mean"])
    assert t.table.loc[("empty", ""), "Missing"] == str(len(lung))


def test_refusals(lung):
    with pytest.raises(engine.CohortError, match="'nope'"):
        engine.table_one(lung, by="nope")
    with pytest.raises(engine.CohortError, match="missing values"):
        engine.table_one(lung, by="ph.ecog", columns=["age"])
    with pytest.raises(engine.CohortError, match="text"):
        engine.table_one(lung, by="status", columns=["sex"], categorical=[])


def test_weighted_table_against_statsmodels_and_the_definitions():
    """With case weights: sums of weights, DescrStatsW's weighted mean and quantiles, survey's
    svyvar (the weighted variance times m / (m - 1)), weighted shares, and SMDs of those."""
    from statsmodels.stats.weightstats import DescrStatsW

    rossi = engine.datasets.load_rossi()
    rossi["w"] = 0.5 + (np.arange(len(rossi)) % 7) / 4
    rossi.loc[3, "age"] = np.nan
    out = engine.table_one(rossi, by="fin", columns=["age", "race", "w"], weights="w",
                           nonnormal=["age"])
    s = out.summary.set_index(["variable", "level", "group"])
    moments = {}
    for fin in (0, 1):
        part = rossi[rossi["fin"] == fin]
        assert s.loc[("age", "", str(fin)), "n"] == pytest.approx(part["w"].sum(), rel=1e-14)
        known = part.dropna(subset=["age"])
        d = DescrStatsW(known["age"].to_numpy(), weights=known["w"].to_numpy())
        m = len(known)
        var = d.var * m / (m - 1)       # DescrStatsW.var: sum w (x - mean)^2 / sum w
        row = s.loc[("age", "", str(fin))]
        assert row["mean"] == pytest.approx(d.mean, rel=1e-12)
        assert row["sd"] == pytest.approx(np.sqrt(var), rel=1e-12)
        q = d.quantile([0.25, 0.5, 0.75], return_pandas=False)
        assert [row["q1"], row["median"], row["q3"]] == pytest.approx(list(q), rel=1e-12)
        race = part.groupby("race")["w"].sum() / part["w"].sum()
        assert s.loc[("race", "1", str(fin)), "percent"] == pytest.approx(100 * race[1],
                                                                          rel=1e-12)
        assert s.loc[("race", "1", str(fin)), "count"] == pytest.approx(
            part.loc[part["race"] == 1, "w"].sum(), rel=1e-12)
        moments[fin] = (d.mean, var, race[1])
    (m0, v0, p0), (m1, v1, p1) = moments[0], moments[1]
    assert out.smd.loc["age", "0 vs 1"] == pytest.approx(abs(m0 - m1) / np.sqrt((v0 + v1) / 2),
                                                         rel=1e-12)
    assert out.smd.loc["race", "0 vs 1"] == pytest.approx(
        abs(p0 - p1) / np.sqrt((p0 * (1 - p0) + p1 * (1 - p1)) / 2), rel=1e-12)
    assert "w" not in out.smd.index                   # the weights are not a row
    assert out.table.loc[("n", ""), "0"] == f"{rossi.loc[rossi['fin'] == 0, 'w'].sum():.1f}"
    assert out.table.loc[("age", ""), "Missing"] == "1"


def test_weights_must_be_numbers_at_least_zero():
    frame = pd.DataFrame({"x": [1.0, 2.0, 3.0], "w": [1.0, -1.0, np.nan]})
    with pytest.raises(engine.CohortError, match=r"'w' \(weights\) has 2 row"):
        engine.table_one(frame, columns=["x"], weights="w")


def test_weighted_quartiles_equal_statsmodels_on_ties_and_exact_hits():
    from statsmodels.stats.weightstats import DescrStatsW

    rng = np.random.default_rng(1)
    for _ in range(200):
        n = int(rng.integers(1, 15))
        x = rng.integers(0, 6, n).astype(float)
        w = rng.integers(1, 4, n) * rng.choice([1.0, 0.5, 0.25])
        frame = pd.DataFrame({"x": x + 0.5, "w": w})    # x + 0.5: never read as categorical
        row = engine.table_one(frame, columns=["x"], weights="w").summary.iloc[0]
        expected = DescrStatsW(x + 0.5, weights=w).quantile([0.25, 0.5, 0.75],
                                                            return_pandas=False)
        np.testing.assert_allclose([row["q1"], row["median"], row["q3"]], expected,
                                   rtol=1e-14)
