"""engine.sensitivity_study: every variant of a grid equals a separate engine.fit of it (1e-8),
the variant's cohort equals one built by hand (follow-up censoring, subgroup, strata), lifelines
agrees on a stratified truncated subgroup, failures get their row and the grid goes on, the
budget refuses before starting, serial = processes = Dask."""
import warnings

import numpy as np
import pandas as pd
import pytest

import engine


def _cohort(n=300, seed=3, entry=False):
    rng = np.random.default_rng(seed)
    treat = rng.integers(0, 2, n).astype(float)
    age = rng.normal(size=n)
    bmi = rng.normal(size=n) + 0.3 * age
    x3 = (rng.random(n) < 0.3).astype(float)
    X = np.column_stack([treat, age, bmi, x3])
    rate = np.exp(X @ np.array([0.5, 0.4, -0.3, 0.2]))
    t = rng.exponential(1.0 / rate)
    c = rng.exponential(1.2, n)
    time, event = np.round(np.minimum(t, c), 2) + 0.01, (t <= c).astype(int)  # ties
    start = None
    if entry:
        start = np.where(rng.random(n) < 0.3, time * rng.random(n) * 0.5, 0.0)
    cohort = engine.Cohort.from_arrays(time, event, X, names=["treat", "age", "bmi", "x3"],
                                       start=start, id=None if start is None else np.arange(n))
    return cohort, rng.integers(0, 3, n), age


def _assert_rows_equal_separate_fits(res, names=("treat",)):
    for v in res.table["variant"].unique():
        rows = res.table[res.table["variant"] == v].set_index("coefficient")
        assert (rows["error"] == "").all(), rows["error"].iloc[0]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            alone = res.refit(int(v))
        for name in rows.index:
            np.testing.assert_allclose(rows.loc[name, "estimate"], alone.coef[name], rtol=0,
                                       atol=1e-8, err_msg=f"variant {v} {name}")
            np.testing.assert_allclose(rows.loc[name, "se"], alone.se[name], rtol=1e-7,
                                       err_msg=f"variant {v} {name}")
            assert rows.loc[name, "n"] == alone.n
            assert rows.loc[name, "events"] == alone.n_events


@pytest.mark.slow
def test_every_variant_equals_its_own_fit():
    cohort, site, age = _cohort()
    res = engine.sensitivity_study(cohort, "treat", vary={
        "subgroup": {"all": None, "older": age > -0.5},
        "follow_up": [None, 1.0],
        "covariates": {"crude": ["treat"], "age": ["treat", "age"], "full": None},
        "penalty": [None, engine.L2(2.0), engine.L1(1.0)],
        "strata": {"none": None, "site": site},
        "ties": ["breslow", "efron"],
    }, base={"tol": 1e-12})
    t = res.table
    assert len(t) == 2 * 2 * 3 * 3 * 2 * 2
    assert set(t["subgroup"]) == {"all", "older"} and set(t["penalty"]) == {"none", "L2(2)",
                                                                             "L1(1)"}
    assert t["converged"].all() and (t["error"] == "").all()
    assert np.all(np.isfinite(t[["estimate", "se", "hr_lower", "hr_upper", "p"]].to_numpy()))
    np.testing.assert_allclose(t["hr"], np.exp(t["estimate"]), rtol=1e-14)
    _assert_rows_equal_separate_fits(res)


def test_cut_points_and_entry_times_equal_their_own_fits():
    cohort, site, _ = _cohort(entry=True, seed=8)
    res = engine.sensitivity_study(cohort, ["treat", "age"], vary={
        "cut_points": [None, {"treat": [0.4]}],
        "follow_up": [None, 0.8],
        "strata": {"none": None, "site": site},
        "penalty": [None, engine.L1(0.5)],
    }, base={"tol": 1e-12})
    t = res.table
    split = t[t["cut_points"] == "treat@0.4"]
    assert set(split["coefficient"]) == {"treat[0,0.4)", "treat[0.4,inf)", "age"}
    _assert_rows_equal_separate_fits(res)


def test_variant_cohort_is_the_hand_built_truncated_subgroup():
    """Censoring at t by hand (entries at or after t dropped), a subgroup and a strata design,
    fitted by engine.fit and by lifelines' CoxPHFitter (Efron ties, strata)."""
    lifelines = pytest.importorskip("lifelines")
    cohort, site, age = _cohort(entry=False, seed=4)
    mask = age < 0.8
    res = engine.sensitivity_study(cohort, "treat", vary={
        "subgroup": {"young": mask}, "follow_up": [0.9], "strata": {"site": site},
        "ties": ["efron"], "covariates": {"two": ["treat", "bmi"]}}, base={"tol": 1e-12})
    time = np.asarray(cohort.time)[mask]
    event = np.where(time <= 0.9, np.asarray(cohort.event)[mask], 0)
    time = np.minimum(time, 0.9)
    X = cohort.X.toarray()[mask][:, [0, 2]]
    by_hand = engine.fit(engine.Cohort.from_arrays(time, event, X, names=["treat", "bmi"],
                                                   strata=site[mask]),
                         ties="efron", tol=1e-12)
    row = res.table.iloc[0]
    np.testing.assert_allclose(row["estimate"], by_hand.coef["treat"], atol=1e-8)
    frame = pd.DataFrame({"T": time, "E": event, "treat": X[:, 0], "bmi": X[:, 1],
                          "site": site[mask]})
    cph = lifelines.CoxPHFitter().fit(frame, "T", "E", strata=["site"])
    np.testing.assert_allclose(row["estimate"], cph.params_["treat"], rtol=1e-6)
    np.testing.assert_allclose(row["se"], cph.standard_errors_["treat"], rtol=1e-5)
    assert row["n"] == mask.sum() and row["events"] == event.sum()


def test_failed_variants_get_their_reason_and_the_grid_finishes():
    cohort, _, age = _cohort(seed=5)
    treat = cohort.X[:, 0].toarray().ravel()
    no_events = np.asarray(cohort.event) == 0
    res = engine.sensitivity_study(cohort, "treat", vary={
        "subgroup": {"all": None, "censored only": no_events, "treated only": treat == 1},
        "cut_points": [None, {"treat": [50.0]}],
    })
    t = res.table.set_index(["subgroup", "cut_points"])
    assert "no events" in t.loc[("censored only", "none"), "error"]
    assert t.loc[("censored only", "none"), "n"] == no_events.sum()
    # treatment constant in the subgroup: not estimable, NaN by name, as engine.fit says
    one_level = t.loc[("treated only", "none")]
    assert one_level["error"] == "" and np.isnan(one_level["estimate"])
    assert "constant" in one_level["note"]
    with pytest.warns(engine.DataWarning, match="constant"):
        alone = res.refit(int(one_level["variant"]))
    assert np.isnan(alone.coef["treat"])
    beyond = t.xs("treat@50", level="cut_points")
    assert beyond["error"].str.contains("cut points").all()    # the cut is past every time
    assert np.isfinite(t.loc[("all", "none"), "estimate"])
    np.testing.assert_array_equal(np.isnan(res.table["evalue_point"]),
                                  np.isnan(res.table["hr"]))


def test_collinear_adjustment_set_is_named_and_matches_engine_fit():
    rng = np.random.default_rng(2)
    n = 200
    a, b = rng.normal(size=n), rng.normal(size=n)
    treat = rng.integers(0, 2, n).astype(float)
    X = np.column_stack([treat, a, b, a + b])
    cohort = engine.Cohort.from_arrays(rng.exponential(1, n), rng.integers(0, 2, n), X,
                                       names=["treat", "a", "b", "ab"])
    res = engine.sensitivity_study(cohort, "treat", vary={
        "covariates": {"ok": ["treat", "a"], "aliased": None}}, base={"tol": 1e-12})
    t = res.table.set_index("covariates")
    assert "'ab' is a linear combination of a, b" in t.loc["aliased", "note"]
    assert t.loc["ok", "note"] == ""
    _assert_rows_equal_separate_fits(res)


def test_refuses_a_grid_over_the_limits_before_starting():
    cohort, _, _ = _cohort()
    vary = {"penalty": [engine.L1(x) for x in (1.0, 2.0, 3.0)]}
    with pytest.raises(MemoryError, match="max_memory"):
        engine.sensitivity_study(cohort, "treat", vary=vary, max_memory=1000)
    with pytest.raises(TimeoutError, match="max_seconds"):
        engine.sensitivity_study(cohort, "treat", vary=vary, max_seconds=1e-9)
    ok = engine.sensitivity_study(cohort, "treat", vary=vary, max_memory=10**9, max_seconds=60)
    assert 0 < ok.cost["bytes"] < 10**9 and ok.cost["seconds"] > 0


def test_bad_input_names_the_argument():
    cohort, _, _ = _cohort()
    with pytest.raises(ValueError, match="unknown axes"):
        engine.sensitivity_study(cohort, "treat", vary={"outcome": [1]})
    with pytest.raises(ValueError, match="not covariates"):
        engine.sensitivity_study(cohort, "dose", vary={})
    with pytest.raises(ValueError, match=r"vary\['covariates'\]\['adj'\] leaves out"):
        engine.sensitivity_study(cohort, "treat", vary={"covariates": {"adj": ["age"]}})
    with pytest.raises(ValueError, match="boolean mask"):
        engine.sensitivity_study(cohort, "treat", vary={"subgroup": {"s": np.ones(3, bool)}})
    with pytest.raises(ValueError, match="positive finite time"):
        engine.sensitivity_study(cohort, "treat", vary={"follow_up": [-1.0]})
    strata = np.array([1.0] * (cohort.n - 1) + [np.nan])
    with pytest.raises(engine.CohortError, match=rf"rows \[{cohort.n}\]"):
        engine.sensitivity_study(cohort, "treat", vary={"strata": {"s": strata}})
    with pytest.raises(ValueError, match="base has unknown options"):
        engine.sensitivity_study(cohort, "treat", vary={}, base={"model": "logistic"})
    one = engine.sensitivity_study(cohort, "treat", vary={})
    assert len(one.table) == 1
    with pytest.raises(ValueError, match="variant 5 is not in this study; variants are 0 to 0"):
        one.refit(5)


def test_threads_give_the_serial_table_and_share_one_sorted_layout():
    """Threads fit on twins of one sorted layout (the same X arrays, weights of their own):
    the table equals the serial one, each variant its own fit."""
    cohort, site, age = _cohort(seed=6)
    vary = {"subgroup": {"all": None, "older": age > 0, "younger": age <= 0},
            "covariates": {"crude": ["treat"], "full": None},
            "penalty": [None, engine.L1(1.0), engine.L2(3.0)]}
    serial = engine.sensitivity_study(cohort, "treat", vary=vary, base={"tol": 1e-12})
    threads = engine.sensitivity_study(cohort, "treat", vary=vary, base={"tol": 1e-12},
                                       parallel="threads", n_jobs=2)
    cols = ["variant", "coefficient", "estimate", "se", "n", "events", "error"]
    pd.testing.assert_frame_equal(threads.table[cols], serial.table[cols], rtol=0, atol=1e-9)
    _assert_rows_equal_separate_fits(threads)
    again = engine.sensitivity_study(cohort, "treat", vary=vary, base={"tol": 1e-12},
                                     parallel="threads", n_jobs=2)
    pd.testing.assert_frame_equal(again.table[cols], threads.table[cols], rtol=0, atol=0)
    assert threads.cost["bytes"] < 2 * serial.cost["bytes"]     # one layout, not one a thread
    with pytest.raises(ValueError, match="parallel='threads' fits the variants side by side"):
        engine.sensitivity_study(cohort, "treat", vary=vary, parallel="threads",
                                 base={"backend": "gpu"})


@pytest.mark.parametrize("parallel", [None, "threads"])
def test_a_layout_is_freed_after_its_last_variant(parallel, monkeypatch):
    """Three strata designs, three layouts: each is built when first needed and let go after
    its last work item, so no earlier one is alive when the next is sorted (the budget counts
    one layout, plus each thread's row state)."""
    import gc
    import weakref

    from engine.sensitivity import layout as layout_module
    cohort, site, age = _cohort(seed=6)
    built, alive_at_build = [], []
    init = layout_module.Layout.__init__

    def counting_init(self, *args, **kwargs):
        gc.collect()
        alive_at_build.append(sum(ref() is not None for ref in built))
        init(self, *args, **kwargs)
        built.append(weakref.ref(self))

    monkeypatch.setattr(layout_module.Layout, "__init__", counting_init)
    vary = {"strata": {"none": None, "site": site, "age": (age > 0).astype(int)},
            "penalty": [None, engine.L1(1.0)]}
    engine.sensitivity_study(cohort, "treat", vary=vary, parallel=parallel, n_jobs=1)
    assert alive_at_build == [0, 0, 0]


@pytest.mark.slow
def test_serial_processes_and_dask_give_the_same_table(dask_client):
    cohort, site, age = _cohort(seed=6)
    vary = {"subgroup": {"all": None, "older": age > 0}, "strata": {"none": None, "site": site},
            "penalty": [None, engine.L1(1.0)]}
    serial = engine.sensitivity_study(cohort, "treat", vary=vary, base={"tol": 1e-12})
    cols = ["variant", "coefficient", "estimate", "se", "n", "events"]
    for parallel in ("processes", dask_client):
        other = engine.sensitivity_study(cohort, "treat", vary=vary, parallel=parallel,
                                         n_jobs=2, base={"tol": 1e-12})
        pd.testing.assert_frame_equal(other.table[cols], serial.table[cols], rtol=0, atol=1e-9)


def test_progress_per_group_and_cancel():
    import threading
    cohort, site, _ = _cohort(seed=9)
    vary = {"strata": {"none": None, "site": site}, "penalty": [None, engine.L2(1.0)]}
    seen = []
    engine.sensitivity_study(cohort, "treat", vary=vary, progress=lambda d, t: seen.append((d, t)))
    assert seen == [(1, 2), (2, 2)]                    # one layout group at a time
    stop = threading.Event()
    stop.set()
    with pytest.raises(engine.Cancelled):
        engine.sensitivity_study(cohort, "treat", vary=vary, cancel=stop)


def test_a_variant_whose_solve_fails_gets_its_row(monkeypatch):
    cohort, _, _ = _cohort(seed=10)
    solve = engine.Problem.solve

    def failing(self, lam1, lam2, *args, **kwargs):
        if np.max(lam1) == 3.0:
            raise FloatingPointError("overflow in the risk-set sums")
        return solve(self, lam1, lam2, *args, **kwargs)
    monkeypatch.setattr(engine.Problem, "solve", failing)
    res = engine.sensitivity_study(cohort, "treat", vary={
        "penalty": [engine.L1(1.0), engine.L1(3.0), engine.L1(2.0)]})
    t = res.table.set_index("penalty")
    assert t.loc["L1(3)", "error"] == "FloatingPointError: overflow in the risk-set sums"
    assert (t.loc[["L1(1)", "L1(2)"], "error"] == "").all()
    assert np.isfinite(t.loc[["L1(1)", "L1(2)"], "estimate"]).all()
    with pytest.raises(ValueError, match=r"base\['unpenalized'\] names \['zzz'\]"):
        engine.sensitivity_study(cohort, "treat", vary={}, base={"unpenalized": ["zzz"]})
