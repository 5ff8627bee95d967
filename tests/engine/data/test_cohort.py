"""Cohort construction: encoding, strata, sparse inputs, file and database readers."""
import warnings

import duckdb
import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

import engine
from engine.data.cohort import Cohort
from engine.core.errors import DataWarning



@pytest.fixture
def rossi():
    return engine.datasets.load_rossi()


@pytest.fixture
def small():
    """Eight subjects with numeric, boolean, text and categorical covariates."""
    return pd.DataFrame({
        "time": [5.0, 3.0, 8.0, 1.5, 9.0, 2.0, 7.0, 4.0],
        "status": [1, 0, 1, 1, 0, 1, 0, 1],
        "age": [61.0, 55.0, 70.0, 48.0, 66.0, 59.0, 52.0, 73.0],
        "smoker": [True, False, True, False, False, True, False, True],
        "sex": ["male", "female", "female", "male", "female", "male", "male", "female"],
        "race": ["white", "black", "asian", "white", "black", "white", "asian", "white"],
        "stage": pd.Categorical(["II", "I", "III", "I", "II", "III", "I", "II"],
                                categories=["III", "II", "I", "IV"]),
        "site": [1, 1, 2, 2, 3, 3, 3, 1],
    })


def assert_same_cohort(a, b):
    """Two cohorts hold the same data (provenance may differ)."""
    np.testing.assert_array_equal(a.time, b.time)
    np.testing.assert_array_equal(a.event, b.event)
    for name in ("start", "strata", "weights", "id"):
        left, right = getattr(a, name), getattr(b, name)
        assert (left is None) == (right is None), name
        if left is not None:
            np.testing.assert_array_equal(left, right)
    assert a.names == b.names
    assert (a.X != b.X).nnz == 0
    np.testing.assert_array_equal(a.binary, b.binary)
    assert a.strata_labels == b.strata_labels
    assert a.reference_levels == b.reference_levels
    assert a.excluded == b.excluded


def test_rossi_attributes(rossi):
    cohort = Cohort.from_frame(rossi, time="week", event="arrest")
    assert cohort.names == ["fin", "age", "race", "wexp", "mar", "paro", "prio"]
    assert (cohort.n, cohort.p, cohort.n_events, cohort.n_strata) == (432, 7, 114, 1)
    assert cohort.time.dtype == np.float64 and cohort.event.dtype == np.int64
    assert isinstance(cohort.X, sp.csc_matrix) and cohort.X.dtype == np.float64
    assert cohort.X.has_sorted_indices and np.all(cohort.X.data != 0)
    np.testing.assert_array_equal(cohort.binary, [True, False, True, True, True, True, False])
    np.testing.assert_array_equal(cohort.X.toarray(), rossi[cohort.names].to_numpy(float))
    assert cohort.start is None and cohort.strata is None and cohort.weights is None
    assert cohort.excluded == {} and cohort.reference_levels == {}
    assert cohort.source["time"] == "week" and cohort.source["covariates"] == cohort.names
    assert cohort.causes == (1,) and not cohort.competing_risks
    assert repr(cohort) == "Cohort(n=432, p=7, events=114, strata=1)"


def test_arrays_are_read_only_copies(rossi):
    cohort = Cohort.from_frame(rossi, time="week", event="arrest")
    assert not cohort.time.flags.writeable and not cohort.event.flags.writeable
    rossi.loc[0, "week"] = 99
    assert cohort.time[0] == 20


def test_rows_keep_caller_order(small):
    shuffled = small.iloc[[3, 0, 7, 1, 6, 2, 5, 4]].reset_index(drop=True)
    cohort = Cohort.from_frame(shuffled, time="time", event="status", covariates=["age"])
    np.testing.assert_array_equal(cohort.time, shuffled["time"])
    np.testing.assert_array_equal(cohort.X.toarray()[:, 0], shuffled["age"])


def test_one_hot_encoding_and_reference_levels(small):
    cohort = Cohort.from_frame(small, time="time", event="status")
    assert cohort.names == ["age", "smoker", "sex[male]", "race[black]", "race[white]",
                            "stage[II]", "stage[I]", "site"]
    assert cohort.reference_levels == {"sex": "female", "race": "asian", "stage": "III"}
    dense = cohort.to_frame()
    np.testing.assert_array_equal(dense["sex[male]"], (small["sex"] == "male").astype(float))
    np.testing.assert_array_equal(dense["race[white]"], (small["race"] == "white").astype(float))
    np.testing.assert_array_equal(dense["stage[I]"], (small["stage"] == "I").astype(float))
    np.testing.assert_array_equal(dense["smoker"], small["smoker"].astype(float))
    np.testing.assert_array_equal(cohort.binary, [False, True, True, True, True, True, True,
                                                  False])


def test_numeric_text_is_a_factor(small):
    small["site"] = small["site"].astype(str)
    cohort = Cohort.from_frame(small, time="time", event="status", covariates=["site"])
    assert cohort.names == ["site[2]", "site[3]"]
    assert cohort.reference_levels == {"site": "1"}


def test_single_level_text_column_is_excluded(small):
    small["country"] = "NL"
    with pytest.warns(DataWarning, match="'country' \\(constant\\)"):
        cohort = Cohort.from_frame(small, time="time", event="status",
                                   covariates=["age", "country"])
    assert cohort.names == ["age"]
    assert cohort.excluded == {"country": "constant"}


def test_constant_and_duplicate_columns_excluded_with_one_warning(small):
    small["one"] = 1.0
    small["zero"] = 0
    small["age_again"] = small["age"]
    with pytest.warns(DataWarning) as record:
        cohort = Cohort.from_frame(small, time="time", event="status",
                                   covariates=["age", "one", "zero", "age_again", "site"])
    assert len(record) == 1
    message = str(record[0].message)
    assert "'one' (constant)" in message and "'age_again' (duplicate of age)" in message
    assert cohort.names == ["age", "site"]
    assert cohort.excluded == {"one": "constant", "zero": "constant",
                               "age_again": "duplicate of age"}
    assert cohort.X.shape == (8, 2)


def test_sparse_all_zero_and_duplicate_columns_excluded():
    X = sp.random(200, 6, density=0.3, format="csc", random_state=1)
    X = sp.hstack([X, sp.csc_matrix((200, 1)), X[:, [2]]], format="csc")
    time = np.arange(1.0, 201.0)
    with pytest.warns(DataWarning):
        cohort = Cohort.from_arrays(time, np.ones(200), X)
    assert cohort.excluded == {"x6": "constant", "x7": "duplicate of x2"}
    assert cohort.names == [f"x{j}" for j in range(6)]


def test_no_warning_without_exclusions(rossi):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Cohort.from_frame(rossi, time="week", event="arrest")


def test_binary_flag():
    X = np.column_stack([[0, 1, 1, 0], [0, 2, 2, 0], [0.5, 1, 0, 1], [1, 1, 0, 1]])
    cohort = Cohort.from_arrays([1.0, 2.0, 3.0, 4.0], [1, 0, 1, 1], X)
    np.testing.assert_array_equal(cohort.binary, [True, False, False, True])


def test_single_stratum_column(rossi):
    cohort = Cohort.from_frame(rossi, time="week", event="arrest", strata="race")
    assert cohort.names == ["fin", "age", "wexp", "mar", "paro", "prio"]
    assert cohort.strata_labels == ["0", "1"] and cohort.strata_columns == ("race",)
    assert cohort.n_strata == 2 and cohort.strata.dtype == np.int64
    np.testing.assert_array_equal(cohort.strata, rossi["race"])


def test_strata_combinations(small):
    small["sex_code"] = (small["sex"] == "male").astype(int)
    cohort = Cohort.from_frame(small, time="time", event="status", covariates=["age"],
                               strata=["sex_code", "site"])
    expected = sorted({(s, t) for s, t in zip(small["sex_code"], small["site"])})
    assert cohort.strata_labels == [f"sex_code={s}, site={t}" for s, t in expected]
    for row, (s, t) in enumerate(zip(small["sex_code"], small["site"])):
        assert cohort.strata_labels[cohort.strata[row]] == f"sex_code={s}, site={t}"
    assert cohort.strata_columns == ("sex_code", "site")


def test_text_and_float_strata_labels(small):
    small["site"] = small["site"].astype(float)
    cohort = Cohort.from_frame(small, time="time", event="status", covariates=["age"],
                               strata=["race", "site"])
    assert cohort.strata_labels[0] == "race=asian, site=2"
    assert "race=white, site=1" in cohort.strata_labels


def test_from_arrays_strata_list_matches_frame(small):
    frame = Cohort.from_frame(small, time="time", event="status", covariates=["age"],
                              strata=["sex", "site"])
    arrays = Cohort.from_arrays(small["time"].to_numpy(), small["status"].to_numpy(),
                                small[["age"]].to_numpy(), names=["age"],
                                strata=[small["sex"].to_numpy(), small["site"].to_numpy()])
    np.testing.assert_array_equal(frame.strata, arrays.strata)
    assert arrays.strata_labels[0] == "strata0=female, strata1=1"
    single = Cohort.from_arrays(small["time"], small["status"], small[["age"]].to_numpy(),
                                strata=small["site"].to_numpy())
    assert single.strata_labels == ["1", "2", "3"]


def test_from_arrays_formats_give_same_csc():
    rng = np.random.default_rng(0)
    dense = rng.normal(size=(50, 8)) * (rng.random((50, 8)) < 0.3)
    time, event = rng.exponential(size=50) + 0.1, rng.integers(0, 2, 50)
    event[0] = 1
    reference = Cohort.from_arrays(time, event, dense).X
    assert reference.has_sorted_indices and np.all(reference.data != 0)
    # a COO with duplicate entries that sum to the value and explicit zeros
    coo = sp.coo_matrix(dense)
    rows = np.concatenate([coo.row, coo.row, [3, 4]])
    cols = np.concatenate([coo.col, coo.col, [0, 1]])
    data = np.concatenate([coo.data / 2, coo.data / 2, [0.0, 0.0]])
    messy = sp.coo_matrix((data, (rows, cols)), shape=dense.shape)
    for X in (sp.csr_matrix(dense), sp.csc_matrix(dense), sp.csr_array(dense), messy,
              np.asfortranarray(dense)):
        cohort = Cohort.from_arrays(time, event, X)
        np.testing.assert_array_equal(cohort.X.indptr, reference.indptr)
        np.testing.assert_array_equal(cohort.X.indices, reference.indices)
        np.testing.assert_allclose(cohort.X.data, reference.data, rtol=1e-15)
    assert messy.nnz == len(data)  # the caller's matrix is left as it was
    assert Cohort.from_arrays(time, event, dense).names == [f"x{j}" for j in range(8)]


@pytest.mark.slow
def test_from_arrays_large_sparse_design():
    """1,000,000 x 1,000 at ~5% density (49M non-zeros) without densifying."""
    rng = np.random.default_rng(0)
    n, p, per_column = 1_000_000, 1_000, 49_000
    gaps = rng.integers(1, 40, size=(p, per_column), dtype=np.int32)
    rows = (np.cumsum(gaps, axis=1, dtype=np.int32) - 1).ravel()  # sorted, distinct, < 1e6
    X = sp.csc_matrix((np.ones(p * per_column), rows, np.arange(p + 1) * per_column),
                      shape=(n, p))
    del gaps, rows
    cohort = Cohort.from_arrays(rng.exponential(size=n) + 0.01, rng.integers(0, 2, n), X)
    assert (cohort.n, cohort.p) == (n, p)
    assert cohort.binary.all() and cohort.excluded == {}


def test_stanford_heart_counting_process():
    heart = engine.datasets.load_stanford_heart()
    cohort = Cohort.from_frame(heart, time="stop", event="event", start="start", id="id")
    assert (cohort.n, cohort.n_events) == (172, 75)
    assert cohort.names == ["age", "year", "surgery", "transplant"]
    assert np.all(cohort.start < cohort.time)
    assert "counting process" in repr(cohort)


def test_weights_and_competing_risks(small):
    small["w"] = np.linspace(0.5, 2.0, 8)
    small["cause"] = [1, 0, 2, 1, 0, 2, 0, 1]
    cohort = Cohort.from_frame(small, time="time", event="cause", covariates=["age"],
                               weights="w", competing_risks=True)
    assert cohort.causes == (1, 2) and cohort.competing_risks and cohort.n_events == 5
    np.testing.assert_array_equal(cohort.weights, small["w"])
    assert "competing risks (1, 2)" in repr(cohort)


def test_boolean_event(small):
    small["status"] = small["status"].astype(bool)
    cohort = Cohort.from_frame(small, time="time", event="status", covariates=["age"])
    np.testing.assert_array_equal(cohort.event, [1, 0, 1, 1, 0, 1, 0, 1])


def test_to_frame_round_trip(small):
    small["w"] = 1.0
    small["start"] = 0.0
    small["pid"] = np.arange(8)
    cohort = Cohort.from_frame(small, time="time", event="status", strata="site",
                               start="start", id="pid", weights="w",
                               covariates=["age", "sex"])
    frame = cohort.to_frame()
    assert list(frame.columns) == ["time", "start", "event", "strata", "id", "weights", "age",
                                   "sex[male]"]
    again = Cohort.from_frame(frame, time="time", event="event", strata="strata",
                              start="start", id="id", weights="weights",
                              covariates=["age", "sex[male]"])
    np.testing.assert_array_equal(again.X.toarray(), cohort.X.toarray())
    np.testing.assert_array_equal(again.strata, cohort.strata)


def test_from_parquet_matches_frame(small, tmp_path):
    path = tmp_path / "cohort.parquet"
    small.to_parquet(path)
    frame = Cohort.from_frame(small, time="time", event="status", strata="site")
    assert_same_cohort(Cohort.from_parquet(path, time="time", event="status", strata="site"),
                       frame)
    subset = Cohort.from_parquet(path, time="time", event="status", covariates=["age", "sex"])
    assert_same_cohort(subset, Cohort.from_frame(small, time="time", event="status",
                                                 covariates=["age", "sex"]))
    assert subset.source["origin"] == "parquet" and subset.source["path"] == str(path)


def test_from_duckdb_matches_frame(rossi, tmp_path):
    frame = Cohort.from_frame(rossi, time="week", event="arrest", strata="race")
    con = duckdb.connect()
    con.register("rossi_view", rossi)
    in_memory = Cohort.from_duckdb(con, "select * from rossi_view", time="week",
                                   event="arrest", strata="race")
    assert_same_cohort(in_memory, frame)
    assert in_memory.source["sql"] == "select * from rossi_view"
    path = tmp_path / "cohort.duckdb"
    with duckdb.connect(str(path)) as writer:
        writer.register("source", rossi)
        writer.execute("create table rossi as select * from source")
    from_file = Cohort.from_duckdb(path, "select * from rossi", time="week", event="arrest",
                                   strata="race")
    assert_same_cohort(from_file, frame)


def test_categorical_and_mixed_type_strata(small):
    small["stage_mixed"] = ["x", 1, "x", 1, 2, 2, "x", 1]
    cohort = Cohort.from_frame(small, time="time", event="status", covariates=["age"],
                               strata=["stage", "stage_mixed"])
    assert cohort.strata_labels[0].startswith("stage=III, ")
    assert cohort.strata_labels[cohort.strata[0]] == "stage=II, stage_mixed=x"
    assert cohort.strata_columns == ("stage", "stage_mixed")


def test_unsorted_csc_input_is_not_changed():
    X = sp.csc_matrix((np.array([2.0, 1.0, 0.0], dtype=np.float32), np.array([2, 0, 1]),
                       np.array([0, 3])), shape=(3, 1))
    cohort = Cohort.from_arrays([1.0, 2.0, 3.0], [1, 1, 0], X)
    np.testing.assert_array_equal(X.indices, [2, 0, 1])
    np.testing.assert_array_equal(cohort.X.indices, [0, 2])
    np.testing.assert_array_equal(cohort.X.data, [1.0, 2.0])
