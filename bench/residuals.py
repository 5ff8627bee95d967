"""Residuals of an everyday cohort model: martingale, deviance, score and dfbeta of an
unpenalised Cox fit of N x p dense covariates (bench.dense_covariates' rows), by
engine.residuals and, up to 10^5 rows, by lifelines' CoxPHFitter.compute_residuals on the
same rows (its score and delta_beta residuals take minutes at 10^5).

    NUMPY_MADVISE_HUGEPAGE=0 NUMBA_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \\
        python -m bench.residuals [n] [p]

Prints the CPU model, the fit's seconds and each kind's seconds and peak memory over what was
resident before it (bench.adapters.measure: VmHWM), and engine.functional_form's of the first
covariate (its martingale residuals with R's lowess smooth), as JSON, with lifelines'
seconds and, for the martingale and deviance residuals, the largest difference from its
(Efron ties, both; lifelines' own fit, so the difference is both fits' tolerance).  Its score
and delta_beta residuals differ from survscan's, which equal R's and statsmodels' in
tests/engine/inference, so no difference is reported for them.
"""
import json
import sys
import time

import numpy as np

import engine
from bench.adapters import measure
from bench.dense_covariates import cohort_frame
from bench.spline_term import cpu_name

KINDS = ("martingale", "deviance", "score", "dfbeta")
LIFELINES = {"dfbeta": "delta_beta"}       # lifelines' names where they differ


def main(n=1_000_000, p=20):
    out = {"cpu": cpu_name(), "n": n, "p": p}
    frame, _ = cohort_frame(n, p)
    names = [f"x{j}" for j in range(p)]
    cohort = engine.Cohort.from_frame(frame, time="time", event="event", covariates=names)
    t0 = time.perf_counter()
    res = engine.fit(cohort, ties="efron")
    out["fit_s"] = time.perf_counter() - t0
    ours = {}
    for kind in KINDS:
        table, out[f"{kind}_s"], out[f"{kind}_peak_mb"] = measure(
            lambda: engine.residuals(res, kind))
        ours[kind] = np.asarray(table)
        del table
        print(json.dumps({kind: [out[f"{kind}_s"], out[f"{kind}_peak_mb"]]}), flush=True)
    # the functional form of the first covariate (an age): the martingale residuals and R's
    # lowess smooth of them on every row
    _, out["functional_form_s"], out["functional_form_peak_mb"] = measure(
        lambda: engine.functional_form(res, names[0]))
    print(json.dumps({"functional_form": out["functional_form_s"]}), flush=True)
    if n <= 100_000:
        from lifelines import CoxPHFitter
        data = frame[[*names, "time", "event"]]
        cph = CoxPHFitter().fit(data, duration_col="time", event_col="event")
        out["lifelines"] = {}
        for kind in KINDS:
            t0 = time.perf_counter()
            theirs = cph.compute_residuals(data, LIFELINES.get(kind, kind)).sort_index()
            seconds = time.perf_counter() - t0
            out["lifelines"][kind] = {"s": seconds}
            if kind in ("martingale", "deviance"):
                diff = np.max(np.abs(ours[kind] - theirs[kind].to_numpy()))
                out["lifelines"][kind]["max_abs_diff"] = float(diff)
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:]))
