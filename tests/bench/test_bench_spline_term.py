"""bench.spline_term: a tiny run fits the four designs, each as often and in as many
iterations whatever place the rotation gives it."""
from bench.spline_term import main


def test_spline_term_tiny_end_to_end(capsys):
    out = main(3000, 20, 0.1, 4)
    kinds = ("plain", "linear_unpenalised", "spline_penalised", "spline_unpenalised")
    assert all(len(out[k]) == 4 and all(r["converged"] for r in out[k]) for k in kinds)
    assert all(len({r["iterations"] for r in out[k]}) == 1 for k in kinds)
    assert len(out["paired_extra_cpu_s"]) == 4 and out["formula_build_s"] > 0
    assert set(out["added_cpu_fraction"]) == set(kinds[1:])
    assert capsys.readouterr().out.count("\n") == 5     # a line a repeat, then the summary
