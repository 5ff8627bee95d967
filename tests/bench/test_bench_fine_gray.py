"""bench fg: a tiny end-to-end run writes the JSON and Markdown reports."""
import json
from pathlib import Path

import numpy as np

from bench.__main__ import main
from bench.fine_gray import simulate_competing


def test_fg_tiny_end_to_end(tmp_path):
    main(["fg", "--n", "2000", "--p", "20", "--out", str(tmp_path)])
    record = json.loads(next(Path(tmp_path).glob("fine_gray_*.json")).read_text())
    md = next(Path(tmp_path).glob("fine_gray_*.md")).read_text()
    assert set(record["fits"]) == {"cox (cause 1)", "fine_gray (cause 1)"}
    assert all(f["converged"] and f["wall_s"] > 0 for f in record["fits"].values())
    sandwich = record["sandwich"]
    assert sandwich["n"] == 10_000 and np.all(np.isfinite(sandwich["se"]))
    assert "| fine_gray (cause 1) |" in md and "Sandwich variance" in md


def test_simulated_competing_fraction():
    cohort = simulate_competing(20_000, 5, competing=0.4, censoring=0.2, seed=1)
    assert cohort.causes == (1, 2)
    share = np.mean(cohort.event == 2) / np.mean(cohort.event > 0)
    assert 0.3 < share < 0.5
