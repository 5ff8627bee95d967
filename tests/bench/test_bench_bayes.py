"""python -m bench bayes: a tiny end-to-end run (survscan only, then with NUTS) writes the JSON
and Markdown reports, and the design is the paper's."""
import json
from pathlib import Path

import numpy as np
import pytest

from bench.__main__ import main
from bench.bayes import PAPER_BETA, paper_design


def test_paper_design():
    X, y, beta = paper_design(500, 10, seed=0)
    assert X.shape == (500, 10) and set(np.unique(y)) == {0, 1}
    np.testing.assert_array_equal(beta, [*PAPER_BETA, 0, 0, 0, 0])


def _record(out):
    (path,) = Path(out).glob("*.json")
    return json.loads(path.read_text()), path.with_suffix(".md").read_text()


def test_bench_bayes_survscan_only(tmp_path):
    main(["bayes", "--n", "300", "--p", "8", "--iterations", "200", "--peers", "",
          "--out", str(tmp_path)])
    record, md = _record(tmp_path)
    gibbs = record["tools"]["survscan-gibbs-cpu-float64"]
    assert list(record["tools"]) == ["survscan-gibbs-cpu-float64"] and "agree" not in record
    assert gibbs["iterations"] == 200 and gibbs["iterations_per_s"] > 0
    assert gibbs["ess_per_s_median"] == pytest.approx(gibbs["ess_median"] / gibbs["seconds"])
    assert "survscan-gibbs-cpu-float64" in md and "ESS/s" in md


@pytest.mark.slow   # JAX compiles the NUTS kernel: about 10 s
def test_bench_bayes_with_nuts(tmp_path):
    main(["bayes", "--n", "300", "--p", "8", "--iterations", "600", "--nuts-warmup", "100",
          "--nuts-samples", "100", "--out", str(tmp_path)])
    record, md = _record(tmp_path)
    assert list(record["tools"]) == ["survscan-gibbs-cpu-float64", "numpyro-nuts-cpu"]
    assert isinstance(record["agree"], bool)
    assert ("ess_per_s_ratio_median" in record) == record["agree"]
    assert ("DISAGREE" in md) != record["agree"]
