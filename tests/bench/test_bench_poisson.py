"""bench.poisson: a tiny run fits the same coefficients as statsmodels, scikit-learn and,
where Rscript is installed, R's glm."""
from bench.poisson import main


def test_poisson_tiny_end_to_end():
    out = main(3000, 4, 1, sparse_p=20)
    assert out["sparse_l1"]["poisson"]["seconds"] > 0
    assert out["survscan"]["seconds"] > 0 and out["events"] > 0
    assert out["statsmodels"]["coef_diff"] < 1e-8
    assert out["scikit-learn"]["coef_diff"] < 1e-6
    assert "skipped" in out["R glm"] or out["R glm"]["coef_diff"] < 1e-8
