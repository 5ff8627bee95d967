"""Phenotype and covariate tables matched to the genotypes by (FID, IID).

Accepted sources: a pandas DataFrame (columns FID and IID, or a two-level index), a Parquet file,
a CSV file with a header naming FID and IID, or a PLINK / FaST-LMM whitespace text file (FID,
IID, then one column per trait; a header line starting ``FID IID`` names them, otherwise they are
named after the file, as FaST-LMM does).  ``NA``/``NaN`` are missing (``scan`` tests a trait on
the individuals who have it, ``missing``; covariates must be complete).  Ids must be unique; every
phenotyped individual must be genotyped and have covariates; the analysis keeps the phenotyped
individuals in .fam order.  A trait must vary, hold finite values (infinities are not
missing) and lie on a scale float64 sums of squares can carry (standard deviation within
1e-100 .. 1e100): anything else raises CohortError naming the trait or ids and the fix.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ..core.errors import CohortError

_ID = ["FID", "IID"]
SCALE = (1e-100, 1e100)    # trait standard deviations whose squares, summed, float64 holds


def read_table(source, what: str) -> pd.DataFrame:
    """``source`` as a float DataFrame indexed by (FID, IID) strings, one column per variable."""
    if isinstance(source, pd.DataFrame):
        frame = source.reset_index() if list(source.index.names) == _ID else source.copy()
        frame = _named_ids(frame, what)
    else:
        path = Path(str(source))
        if not path.exists():
            raise CohortError(f"{what}: {path} not found; give a file (PLINK/FaST-LMM text, CSV, "
                              "Parquet) or a DataFrame with FID and IID columns.")
        if path.suffix.lower() in (".parquet", ".pq"):
            frame = _named_ids(pd.read_parquet(path), what)
        elif path.suffix.lower() == ".csv":
            frame = _named_ids(pd.read_csv(path, dtype={0: str, 1: str}), what)
        else:
            frame = _read_plink_text(path)
    frame["FID"], frame["IID"] = frame["FID"].astype(str), frame["IID"].astype(str)
    frame = frame.set_index(_ID)
    if frame.shape[1] == 0:
        raise CohortError(f"{what}: no value columns beside FID and IID.")
    duplicated = frame.index[frame.index.duplicated()].unique()
    if len(duplicated):
        raise CohortError(f"{what}: {len(duplicated)} (FID, IID) appear more than once, e.g. "
                          f"{list(duplicated[:5])}; keep one row per individual.")
    try:
        return frame.astype("float64")
    except (TypeError, ValueError) as exc:
        bad = [c for c in frame if pd.to_numeric(frame[c], errors="coerce").isna().any()
               and not frame[c].isna().all()]
        raise CohortError(f"{what}: column(s) {bad[:5]} are not numeric ({exc}); "
                          "code them as numbers.") from None


def _named_ids(frame: pd.DataFrame, what: str) -> pd.DataFrame:
    upper = {c: str(c).upper() for c in frame.columns}
    frame = frame.rename(columns={c: u for c, u in upper.items() if u in _ID})
    missing = [c for c in _ID if c not in frame.columns]
    if missing:
        raise CohortError(f"{what}: no {' and '.join(missing)} column; name the family and "
                          "individual id columns FID and IID.")
    return frame


def _read_plink_text(path: Path) -> pd.DataFrame:
    first = path.read_text().split("\n", 1)[0].split()
    header = [t.upper() for t in first[:2]] == _ID
    frame = pd.read_csv(path, sep=r"\s+", header=0 if header else None, dtype={0: str, 1: str},
                        na_values=["NA", "NaN", "nan"])
    if header:
        frame.columns = _ID + list(frame.columns[2:])
    else:
        names = [path.name] if frame.shape[1] == 3 else [f"{path.name}_{i}"
                                                         for i in range(frame.shape[1] - 2)]
        frame.columns = _ID + names
    frame["FID"], frame["IID"] = frame["FID"].astype(str), frame["IID"].astype(str)
    return frame


def match(fam: pd.MultiIndex, pheno: pd.DataFrame, covar: pd.DataFrame | None):
    """(.fam rows, Y n x t, C n x c) for the phenotyped individuals in .fam order (``pheno``
    without missing values: ``scan`` splits traits by missingness pattern first)."""
    position = pd.Series(np.arange(len(fam)), index=fam)
    if fam.duplicated().any():
        raise CohortError(f"bed: (FID, IID) {list(fam[fam.duplicated()][:5])} appear twice in "
                          "the .fam file; make the ids unique.")
    unknown = pheno.index.difference(fam, sort=False)
    if len(unknown):
        raise CohortError(f"pheno: {len(unknown)} individuals are not in the .fam file, e.g. "
                          f"{list(unknown[:5])}; match FID and IID to the genotypes or drop them.")
    rows = np.sort(position[pheno.index].to_numpy())
    ids = fam[rows]
    Y = pheno.loc[ids].to_numpy()
    if covar is None:
        return rows, Y, np.empty((len(rows), 0))
    absent = ids.difference(covar.index, sort=False)
    if len(absent):
        raise CohortError(f"covar: {len(absent)} phenotyped individuals have no covariates, "
                          f"e.g. {list(absent[:5])}; add their rows or drop them from pheno.")
    covar = covar.loc[ids]
    _no_missing(covar, "covar")
    return rows, Y, covar.to_numpy()


def _no_missing(frame: pd.DataFrame, what: str) -> None:
    bad = frame.isna()
    if bad.to_numpy().any():
        column = bad.any().idxmax()
        ids = list(frame.index[bad[column]][:5])
        raise CohortError(f"{what}: column {column!r} is missing for {ids} (first rows); a "
                          "covariate needs a value for every analysed individual: impute or "
                          "drop them.")


def check_values(frame: pd.DataFrame, what: str) -> None:
    """Every column finite where present; for ``what == "pheno"`` each trait also varies, on
    a scale within SCALE (a constant trait has nothing to test: its p-values would be
    round-off; at 1e200 the squares overflow and every p-value reads 1)."""
    for column in frame.columns:
        values = frame[column].to_numpy(dtype=np.float64)
        infinite = np.isinf(values)
        if infinite.any():
            ids = list(frame.index[infinite][:5])
            raise CohortError(f"{what}: column {column!r} holds {int(infinite.sum())} infinite "
                              f"value(s), e.g. for {ids}; give finite numbers (NA for "
                              "missing).")
        if what != "pheno":
            continue
        present = values[~np.isnan(values)]
        if present.size == 0:
            continue                         # a trait nobody has: missing.patterns names it
        largest = float(np.abs(present).max())
        spread = largest * float(np.std(present / largest)) if largest > 0 else 0.0
        if present.size < 2 or spread <= 1e-12 * largest:
            value = float(present[0])
            raise CohortError(f"pheno: trait {column!r} is constant ({value:g} for all "
                              f"{present.size} individuals who have it): there is nothing to "
                              "test; drop the trait.")
        if not SCALE[0] <= spread <= SCALE[1]:
            raise CohortError(f"pheno: trait {column!r} has standard deviation {spread:.3g}, "
                              f"outside {SCALE[0]:g} .. {SCALE[1]:g}, where float64 sums of "
                              "squares lose it; rescale the trait (e.g. divide it by "
                              f"1e{int(np.floor(np.log10(spread)))}): the p-values do not "
                              "change, the effects scale with it.")
