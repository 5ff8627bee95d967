"""bench robust: a tiny end-to-end run writes the JSON and Markdown reports."""
import json
from pathlib import Path

import numpy as np

from bench.__main__ import main


def test_robust_tiny_end_to_end(tmp_path):
    main(["robust", "--sizes", "2000", "--p", "20", "--out", str(tmp_path)])
    record = json.loads((Path(tmp_path) / "robust_variance_p20_n2000.json").read_text())
    md = (Path(tmp_path) / "robust_variance_p20_n2000.md").read_text()
    row = record["rows"][0]
    assert row["n"] == 2000 and row["fit_s"] > 0 and row["robust_all_s"] > 0
    assert np.isfinite(row["se_robust_x0"]) and row["se_robust_x0"] > 0
    assert "| 2,000 |" in md and record["machine"]["cpu"] in md
