"""The bundled samples load as published: shapes, columns, dtypes and missing values."""

import numpy as np
import pandas as pd
import pytest

from engine import datasets

EXPECTED = {
    "load_rossi": (
        (432, 9),
        ["week", "arrest", "fin", "age", "race", "wexp", "mar", "paro", "prio"],
    ),
    "load_stanford_heart": (
        (172, 8),
        ["start", "stop", "event", "age", "year", "surgery", "transplant", "id"],
    ),
    "load_jasa1": (
        (170, 8),
        ["id", "start", "stop", "event", "transplant", "age", "year", "surgery"],
    ),
    "load_mgus2": (
        (1384, 11),
        ["id", "age", "sex", "dxyr", "hgb", "creat", "mspike", "ptime", "pstat", "futime",
         "death"],
    ),
    "load_bmtcrr": ((177, 7), ["Sex", "D", "Phase", "Age", "Status", "Source", "ftime"]),
}


@pytest.mark.parametrize("loader", sorted(EXPECTED))
def test_shape_and_columns(loader):
    df = getattr(datasets, loader)()
    shape, columns = EXPECTED[loader]
    assert isinstance(df, pd.DataFrame)
    assert df.shape == shape
    assert list(df.columns) == columns


@pytest.mark.parametrize("loader", sorted(EXPECTED))
def test_missing_values_only_where_published(loader):
    df = getattr(datasets, loader)()
    missing = df.isna().sum()
    expected = {"hgb": 13, "creat": 30, "mspike": 11} if loader == "load_mgus2" else {}
    assert missing[missing > 0].to_dict() == expected


@pytest.mark.parametrize("loader", sorted(EXPECTED))
def test_each_call_returns_a_fresh_frame(loader):
    first = getattr(datasets, loader)()
    first.iloc[:, 0] = 0
    assert not getattr(datasets, loader)().iloc[:, 0].eq(0).all()


def test_rossi_outcome():
    df = datasets.load_rossi()
    assert (df.dtypes == np.int64).all()
    assert df["arrest"].sum() == 114
    assert df["week"].between(1, 52).all()


@pytest.mark.parametrize("loader", ["load_stanford_heart", "load_jasa1"])
def test_heart_counting_process(loader):
    df = getattr(datasets, loader)()
    assert (df["stop"] > df["start"]).all()
    assert df["id"].nunique() == 103
    assert df["event"].sum() == 75
    assert df["transplant"].dtype == np.int64
    # at most one event per subject, on its last episode
    last = df.sort_values(["id", "stop"]).groupby("id").tail(1)
    assert last["event"].sum() == 75


def test_mgus2_competing_events():
    df = datasets.load_mgus2()
    assert set(df["sex"]) == {"F", "M"}
    assert df["pstat"].sum() == 115
    assert ((df["pstat"] == 0) & (df["death"] == 1)).sum() == 860


def test_bmtcrr_status():
    df = datasets.load_bmtcrr()
    assert df["Status"].value_counts().to_dict() == {0: 46, 1: 56, 2: 75}
    assert (df["ftime"] > 0).all()


def test_sample_data_dir_holds_licences():
    folder = datasets.sample_data_dir()
    assert (folder / "README.md").is_file()
    assert len(list(folder.glob("LICENSE_*.txt"))) == 5


def test_load_breast_cancer():
    df = datasets.load_breast_cancer()
    assert df.shape == (569, 31) and df["target_benign"].sum() == 357
    assert df.columns[0] == "mean radius" and df.notna().all().all()
