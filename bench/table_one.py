"""Table 1 at registry size: engine.table_one against the tableone package on the same rows.

    python -m bench.table_one [n] [repeats]

Resamples rossi (sample_data/rossi.csv) to n rows (seed 0) and describes race, wexp, mar, paro
(categorical), prio and week (continuous) by fin and by age, a 28-level column (378 pairs of
groups, each with its standardised differences), timing the best of ``repeats``.  tableone (Pollard et al. 2018, JAMIA Open) is
timed on the 2-level group up to 10^5 rows (its pairwise SMDs by age take minutes); the
tests check that the two agree (tests/engine/descriptive/test_table_one.py).  Prints JSON with
the CPU.
"""
import json
import sys
import timeit
from pathlib import Path

import pandas as pd

import engine
from bench.report import machine_info

COLUMNS = ["race", "wexp", "mar", "paro", "prio", "week"]
CATEGORICAL = ["race", "wexp", "mar", "paro"]


def best(fn, repeats):
    """Shortest wall time of ``repeats`` calls."""
    return min(timeit.repeat(fn, number=1, repeat=repeats))


def main(n=1_000_000, repeats=3):
    rossi = pd.read_csv(Path(__file__).resolve().parents[1] / "sample_data" / "rossi.csv")
    df = rossi.sample(n, replace=True, random_state=0).reset_index(drop=True)
    out = {"machine": machine_info(), "n": n, "age_levels": int(df["age"].nunique())}
    out["survscan_by_fin_s"] = best(lambda: engine.table_one(
        df, by="fin", columns=COLUMNS, categorical=CATEGORICAL), repeats)
    out["survscan_by_age_s"] = best(lambda: engine.table_one(
        df, by="age", columns=COLUMNS, categorical=CATEGORICAL), repeats)
    if n <= 100_000:
        from tableone import TableOne
        out["tableone_by_fin_s"] = best(lambda: TableOne(
            df, columns=COLUMNS, categorical=CATEGORICAL, groupby="fin", smd=True), repeats)
    print(json.dumps(out), flush=True)
    return out


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:]))
