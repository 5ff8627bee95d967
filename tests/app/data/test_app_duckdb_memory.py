"""Issue 30's DuckDB probe: one query took about 1.9 GB at a 1 GB limit, three at once 5.7 GB.
Each case runs in a fresh process and measures its peak resident memory above the process's own
baseline: the kernel's high-water mark of the process's memory (VmHWM), reset after the
warm-up. Not ru_maxrss: a child started by fork and exec reports its parent's peak there (a
pytest worker's 829 MB in a fresh-clone run), which hid every query's peak: the budget tests
passed on nothing. The query budget must hold within 10%."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("duckdb")
pytest.importorskip("panel")

ROOT = Path(__file__).resolve().parents[3]
BUDGET_MB = 200
# sorts 2M rows and returns 285,714: about 116 MB above the baseline without a budget, so a
# 60 MB budget must make DuckDB spill (6M rows at 200 MB showed the same, at three times the
# suite's time)
HEAVY = ("SELECT i, h FROM (SELECT i, hash(i) AS h, row_number() OVER (ORDER BY hash(i)) AS r "
         "FROM range(2000000) t(i)) WHERE r % 7 = 0")
HEAVY_BUDGET_MB = 60

SCRIPT = textwrap.dedent("""
    import json, sys, threading
    from app.data import loading
    def peak():
        with open("/proc/self/status") as status:
            return next(int(line.split()[1]) * 1024 for line in status
                        if line.startswith("VmHWM:"))
    loading.query_duckdb("", "SELECT * FROM rossi")          # warm: imports, the samples
    with open("/proc/self/clear_refs", "w") as refs:         # the peak counts from here on
        refs.write("5")
    base = peak()
    sql, copies = sys.argv[1], int(sys.argv[2])
    out = []
    def run():
        try:
            out.append(len(loading.query_duckdb("", sql)))
        except loading.DataLoadError as exc:
            out.append(str(exc))
    threads = [threading.Thread(target=run) for _ in range(copies)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    print(json.dumps({"base": base, "peak": peak(), "out": out}))
""")


def _measure(sql, copies=1, **env):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SURVSCAN_QUERY_MEMORY": f"{BUDGET_MB}MB",
           "SURVSCAN_QUERY_ROWS": "1000000", "SURVSCAN_QUERY_SECONDS": "120", **env}
    done = subprocess.run([sys.executable, "-c", SCRIPT, sql, str(copies)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    report = re.findall(r'\{"base".*\}', done.stdout)   # DuckDB's progress bar prints too
    assert report, done.stdout[-2000:]
    return json.loads(report[-1])


@pytest.mark.slow
def test_a_heavy_query_stays_within_its_budget():
    r = _measure(HEAVY, SURVSCAN_QUERY_MEMORY=f"{HEAVY_BUDGET_MB}MB")
    assert r["out"] == [285_714]
    assert r["peak"] - r["base"] <= 1.1 * HEAVY_BUDGET_MB * 1e6, r


@pytest.mark.slow
def test_three_heavy_queries_at_once_share_one_budget():
    r = _measure(HEAVY, copies=3, SURVSCAN_QUERY_MEMORY=f"{HEAVY_BUDGET_MB}MB")
    assert r["out"] == [285_714] * 3
    assert r["peak"] - r["base"] <= 1.1 * HEAVY_BUDGET_MB * 1e6, r


def test_the_heavy_query_needs_more_than_its_budget():
    """Without the budget the heavy query takes more than 1.5 times its budget (about 116 MB
    for 60): the two tests above test the budget, not a query that fits anyway."""
    r = _measure(HEAVY, SURVSCAN_QUERY_MEMORY="8GB")
    assert r["out"] == [285_714]
    assert r["peak"] - r["base"] > 1.5 * HEAVY_BUDGET_MB * 1e6, r


def test_a_result_over_its_share_is_refused_by_size():
    r = _measure("SELECT i, repeat('x', 200) AS s FROM range(500000) t(i)")
    assert r["out"] == ["the query's result is more than 40 MB, this server's share of its "
                        "query memory for results; select fewer columns or rows, or "
                        "aggregate in SQL"]
