"""Every way a cohort can be rejected: each CohortError names the column, the rows and the fix."""
import duckdb
import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from engine.data.cohort import Cohort
from engine.core.errors import CohortError


@pytest.fixture
def df():
    """Ten subjects, two of them with two (start, stop] episodes."""
    return pd.DataFrame({
        "time": [5.0, 3.0, 8.0, 1.5, 9.0, 2.0, 7.0, 4.0, 6.0, 10.0],
        "entry": [0.0, 0.0, 5.0, 0.0, 0.0, 0.0, 4.0, 0.0, 0.0, 0.0],
        "status": [1, 0, 1, 1, 0, 1, 0, 1, 0, 1],
        "pid": [1, 2, 1, 3, 4, 5, 6, 6, 7, 8],
        "age": [61.0, 55.0, 70.0, 48.0, 66.0, 59.0, 52.0, 73.0, 45.0, 50.0],
        "prio": [1, 0, 3, 2, 5, 0, 1, 2, 4, 1],
        "sex": ["m", "f", "f", "m", "f", "m", "m", "f", "m", "f"],
        "w": [1.0, 2.0, 1.0, 0.5, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0],
        "site": [1, 1, 2, 2, 3, 3, 1, 2, 3, 1],
    })


def rejects(*fragments, build):
    """Call build() and check its CohortError message contains every fragment."""
    with pytest.raises(CohortError) as info:
        build()
    message = str(info.value)
    for fragment in fragments:
        assert fragment in message, f"{fragment!r} not in {message!r}"
    return message


def test_cohort_error_is_a_value_error():
    assert issubclass(CohortError, ValueError)


def test_missing_column_suggests_close_matches(df):
    rejects("'tiem' (time)", "Did you mean 'time'?", "existing column",
            build=lambda: Cohort.from_frame(df, time="tiem", event="status"))
    rejects("'ages' (covariate)", "'age'",
            build=lambda: Cohort.from_frame(df, time="time", event="status",
                                            covariates=["ages"]))
    rejects("'sites' (strata)", "'site'",
            build=lambda: Cohort.from_frame(df, time="time", event="status", strata=["sites"]))


def test_missing_time_lists_rows_and_more(df):
    df.loc[[1, 2, 3, 4, 5, 6, 7], "time"] = np.nan
    rejects("'time' (time)", "7 row(s) with missing or infinite values",
            "row 1 = nan, row 2 = nan", "(and 2 more)", "Remove or impute",
            build=lambda: Cohort.from_frame(df, time="time", event="status"))


@pytest.mark.parametrize("role,column", [("event", "status"), ("start", "entry"),
                                         ("weights", "w")])
def test_nan_and_inf_in_roles(df, role, column):
    df[column] = df[column].astype(float)
    df.loc[4, column] = np.inf
    df.loc[8, column] = np.nan
    rejects(f"'{column}' ({role})", "row 4 = inf", "row 8 = nan", "Remove or impute",
            build=lambda: Cohort.from_frame(df, time="time", event="status", start="entry",
                                            id="pid", weights="w", covariates=["age"]))


def test_missing_strata_and_id(df):
    df["group"] = ["a", None, "b", "a", "b", "a", "b", "a", "b", "a"]
    rejects("'group' (strata)", "row 1 = None", "missing values",
            build=lambda: Cohort.from_frame(df, time="time", event="status", strata="group",
                                            covariates=["age"]))
    df["site"] = df["site"].astype(float)
    df.loc[3, "site"] = np.inf
    rejects("'site' (strata)", "row 3 = inf",
            build=lambda: Cohort.from_frame(df, time="time", event="status", strata="site",
                                            covariates=["age"]))
    df["pid"] = df["pid"].astype(float)
    df.loc[5, "pid"] = np.nan
    rejects("'pid' (id)", "row 5 = nan", "missing values",
            build=lambda: Cohort.from_frame(df, time="time", event="status", id="pid",
                                            covariates=["age"]))


def test_missing_covariates_name_every_column(df):
    df.loc[[2, 6], "age"] = np.nan
    df["prio"] = df["prio"].astype(float)
    df.loc[9, "prio"] = -np.inf
    rejects("2 covariate column(s)", "'age' (2 row(s): row 2 = nan, row 6 = nan)",
            "'prio' (1 row(s): row 9 = -inf)", "Remove or impute",
            build=lambda: Cohort.from_frame(df, time="time", event="status",
                                            covariates=["age", "prio"]))


def test_missing_text_covariate(df):
    df.loc[7, "sex"] = None
    rejects("'sex' (covariate)", "row 7 = None", "missing values",
            build=lambda: Cohort.from_frame(df, time="time", event="status",
                                            covariates=["sex"]))


def test_rows_are_named_by_index_label(df):
    df.index = [f"subject{i}" for i in range(10)]
    df.loc["subject3", "time"] = 0.0
    rejects("row 'subject3' = 0.0",
            build=lambda: Cohort.from_frame(df, time="time", event="status",
                                            covariates=["age"]))


def test_time_not_positive(df):
    df.loc[2, "time"] = 0.0
    df.loc[5, "time"] = -1.0
    rejects("'time' (time)", "2 row(s) with time <= 0", "row 2 = 0.0, row 5 = -1.0",
            "must be positive",
            build=lambda: Cohort.from_frame(df, time="time", event="status",
                                            covariates=["age"]))


def test_negative_start(df):
    df.loc[3, "entry"] = -2.0
    rejects("'entry' (start)", "row 3 = -2.0", "must be >= 0",
            build=lambda: Cohort.from_frame(df, time="time", event="status", start="entry",
                                            id="pid", covariates=["age"]))


def test_start_not_before_stop(df):
    df.loc[2, "entry"] = 8.0
    rejects("'entry' (start)", "start >= stop ('time')", "row 2 = (8.0, 8.0]",
            "needs start < stop",
            build=lambda: Cohort.from_frame(df, time="time", event="status", start="entry",
                                            id="pid", covariates=["age"]))


def test_overlapping_episodes(df):
    df.loc[2, "entry"] = 4.0  # subject 1: (0, 5] then (4, 8]
    rejects("'pid' (id)", "1 overlapping episode(s)",
            "id 1: row 2 starts at 4.0 before row 0 ends at 5.0", "split or correct",
            build=lambda: Cohort.from_frame(df, time="time", event="status", start="entry",
                                            id="pid", covariates=["age"]))


def test_episodes_that_touch_are_fine(df):
    cohort = Cohort.from_frame(df, time="time", event="status", start="entry", id="pid",
                               covariates=["age"])
    assert cohort.start is not None and list(cohort.id) == list(df["pid"])


def test_start_without_id(df):
    rejects("start ('entry')", "without id", "pass id=",
            build=lambda: Cohort.from_frame(df, time="time", event="status", start="entry",
                                            covariates=["age"]))


def test_event_codes(df):
    def build(**options):
        return lambda: Cohort.from_frame(df, time="time", event="status", covariates=["age"],
                                         **options)

    df["status"] = df["status"].astype(float)
    df.loc[4, "status"] = 0.5
    rejects("'status' (event)", "row 4 = 0.5", "non-integer", "0 = censored",
            build=build())
    df.loc[4, "status"] = -1
    rejects("'status' (event)", "row 4 = -1.0", "negative codes", build=build())
    rejects("row 4 = -1.0", "negative codes", build=build(competing_risks=True))
    df.loc[4, "status"] = 2
    rejects("'status' (event)", "codes other than 0/1", "row 4 = 2.0",
            "competing_risks=True", build=build())
    assert Cohort.from_frame(df, time="time", event="status", covariates=["age"],
                             competing_risks=True).causes == (1, 2)


def test_event_text(df):
    df["status"] = df["status"].astype(str)
    df.loc[6, "status"] = "yes"
    rejects("'status' (event)", "text that is not a number", "row 6 = 'yes'",
            "pd.to_numeric",
            build=lambda: Cohort.from_frame(df, time="time", event="status",
                                            covariates=["age"]))


def test_all_censored(df):
    df["status"] = 0
    rejects("'status' (event)", "all rows are censored",
            build=lambda: Cohort.from_frame(df, time="time", event="status",
                                            covariates=["age"]))


def test_weights(df):
    df.loc[[1, 3], "w"] = -1.0
    rejects("'w' (weights)", "row 1 = -1.0, row 3 = -1.0", "must be >= 0",
            build=lambda: Cohort.from_frame(df, time="time", event="status", weights="w",
                                            covariates=["age"]))
    df["w"] = 0.0
    rejects("'w' (weights)", "zero in every row", "positive weight",
            build=lambda: Cohort.from_frame(df, time="time", event="status", weights="w",
                                            covariates=["age"]))


def test_numeric_looking_text(df):
    df["age"] = df["age"].astype(str)
    df.loc[3, "age"] = "48a"
    df.loc[8, "age"] = "unknown"
    rejects("'age' (covariate)", "2 row(s)", "row 3 = '48a', row 8 = 'unknown'",
            "cast the column to numbers", "pd.to_numeric(df['age']",
            build=lambda: Cohort.from_frame(df, time="time", event="status",
                                            covariates=["age"]))


def test_too_many_text_levels():
    n = 1500
    df = pd.DataFrame({"time": np.arange(1.0, n + 1), "status": 1,
                       "name": [f"patient {i}" for i in range(n)]})
    rejects("'name' (covariate)", "1500 distinct text values", "more than 1000",
            "row 0 = 'patient 0'", "leave it out of the covariates",
            build=lambda: Cohort.from_frame(df, time="time", event="status"))


def test_dates_must_be_numbers(df):
    df["diagnosed"] = pd.to_datetime("2020-01-01") + pd.to_timedelta(df["age"], unit="D")
    rejects("'diagnosed' (covariate)", "dates", ".dt.days",
            build=lambda: Cohort.from_frame(df, time="time", event="status",
                                            covariates=["diagnosed"]))


def test_column_with_two_roles(df):
    rejects("'time' is named both as time and as covariate", "one role",
            build=lambda: Cohort.from_frame(df, time="time", event="status",
                                            covariates=["age", "time"]))


def test_repeated_column_names(df):
    doubled = pd.concat([df, df[["age"]]], axis=1)
    rejects("several columns named ['age']", "unique",
            build=lambda: Cohort.from_frame(doubled, time="time", event="status"))


def test_empty_data(df):
    rejects("no rows", build=lambda: Cohort.from_frame(df.iloc[:0], time="time",
                                                       event="status"))
    rejects("no rows", build=lambda: Cohort.from_arrays([], [], np.zeros((0, 2))))


def test_not_a_dataframe(df):
    rejects("needs a pandas DataFrame", "from_arrays",
            build=lambda: Cohort.from_frame(df.to_numpy(), time="time", event="status"))


def test_from_arrays_length_mismatch():
    time, event, X = np.arange(1.0, 6.0), np.ones(5), np.eye(5)
    rejects("event array 'event' has shape (4,)", "5 rows",
            build=lambda: Cohort.from_arrays(time, event[:4], X))
    rejects("X has 4 rows but time has 5",
            build=lambda: Cohort.from_arrays(time, event, X[:4]))
    rejects("weights array 'weights' has shape (6,)",
            build=lambda: Cohort.from_arrays(time, event, X, weights=np.ones(6)))
    rejects("strata array 'strata1' has shape (3,)",
            build=lambda: Cohort.from_arrays(time, event, X,
                                             strata=[np.ones(5), np.ones(3)]))
    rejects("names has 2 entries but X has 5 columns",
            build=lambda: Cohort.from_arrays(time, event, X, names=["a", "b"]))
    rejects("names ['a'] appear more than once",
            build=lambda: Cohort.from_arrays(time, event, X, names=["a", "a", "b", "c", "d"]))
    rejects("2-d numeric array", build=lambda: Cohort.from_arrays(time, event, np.ones(5)))


def test_from_arrays_rows_are_positions():
    time, event = np.arange(1.0, 8.0), np.ones(7)
    X = sp.random(7, 3, density=0.6, format="csr", random_state=0)
    X.data[:] = 1.0
    X[4, 1] = np.nan
    X[6, 2] = np.inf
    rejects("'x1' (1 row(s): row 4 = nan)", "'x2' (1 row(s): row 6 = inf)",
            build=lambda: Cohort.from_arrays(time, event, X))
    time[5] = -3.0
    rejects("'time' (time)", "row 5 = -3.0",
            build=lambda: Cohort.from_arrays(time, event, np.eye(7)))


def test_duckdb_query_error():
    con = duckdb.connect()
    rejects("DuckDB query failed", "no_such_table", "Fix the SQL",
            build=lambda: Cohort.from_duckdb(con, "select * from no_such_table", time="time",
                                             event="status"))
