"""The served app compiles the engine's kernels before its first user needs them.

Numba compiles a kernel on its first call and caches it on disk (``cache=True``); on a fresh
install the first Cox fit took 13.4 s and the first Residuals page 5.2 s (Intel Xeon, the rossi
sample), every later one a fraction of a second, and even with the cache on disk a new server
process loads the kernels (0.3 s) and imports the engine (2.7 s) at its first session.  So the
server runs the first steps of an analysis once, on the bundled rossi sample, in a background
thread as it starts: the fits a user runs (Cox with Efron and Breslow ties, L1), their tests,
the Describe tab's curves and Table 1, the PH check, the residuals and their smooth, adjusted
curves, the prediction metrics, and one figure (matplotlib's font cache): 24.7 s on a fresh
install, 3 s with the kernels cached; the first fit then takes 0.01 s.  Then the other pages'
kernels, on samples a few rows long: a formula's spline, Fine-Gray, the SCCS likelihood, the
Gibbs sampler with its ArviZ summary, and a GWAS scan of the toy PLINK set (on a fresh
install their first runs took 0.1, 1.1, 1.5, 7.0 and 2.3 s longer than later ones).  A user
who clicks meanwhile waits only for what is still being compiled.
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path

log = logging.getLogger("survscan.app")

TOY_GWAS = Path(__file__).resolve().parents[2] / "sample_data" / "gwas" / "toydata"


def first_steps() -> float:
    """Run the first steps of an analysis on rossi once; the seconds it took."""
    t0 = time.perf_counter()
    import engine                                   # the imports themselves, off the first page
    from engine import datasets

    from .figures import km_figure, svg_markup

    rossi = datasets.load_rossi()
    cohort = engine.Cohort.from_frame(rossi, "week", "arrest",
                                      covariates=["fin", "age", "prio"])
    res = engine.fit(cohort, ties="efron")
    engine.fit(cohort, ties="breslow")
    engine.fit(cohort, penalty=engine.L1(1.0))
    engine.global_tests(res)
    engine.concordance(res)
    engine.ph_check(res)
    engine.functional_form(res, "age")
    engine.residuals(res, "dfbeta", columns=["fin"])
    engine.residuals(res, "deviance")
    engine.adjusted_curves(res, "fin", times=[20.0, 40.0])
    engine.predictive_performance(res, times=[20.0, 40.0])
    engine.table_one(rossi, by="fin", columns=["age", "prio"])
    everyone = engine.Cohort.from_frame(rossi, "week", "arrest", covariates=[])
    km = engine.kaplan_meier(everyone, by=rossi["fin"].to_numpy())
    engine.logrank_test(everyone, by=rossi["fin"].to_numpy())
    svg_markup(km_figure(km.table, None, title="warm-up"))
    return time.perf_counter() - t0


def other_analyses() -> float:
    """Compile the kernels of the pages past survival (the formula front door, Fine-Gray,
    Poisson, SCCS, the Bayesian and GWAS pages) on small samples; the seconds it took."""
    t0 = time.perf_counter()
    import engine
    from engine import datasets, gwas

    rossi = datasets.load_rossi()
    formula = engine.Cohort.from_frame(rossi, "week", "arrest",
                                       formula="fin + ns(age, df=3) + prio")
    engine.fit(formula)
    engine.fit(formula, model="poisson")
    bmt = engine.Cohort.from_frame(datasets.load_bmtcrr(), "ftime", "Status",
                                   covariates=["Age"], competing_risks=True)
    engine.fit(bmt, model="fine_gray", cause=1)
    engine.fit(engine.simulate_sccs(50, 5, seed=0), model="sccs")
    breast = datasets.load_breast_cancer()
    binary = engine.Cohort.from_frame(breast, time=None, event="target_benign",
                                      covariates=list(breast.columns[:3]))
    engine.probit_mle(binary)
    engine.sample(binary, draws=20, burn_in=10, chains=2, parallel=None).summary
    gwas.scan(bed=TOY_GWAS / "toydata.5chrom", pheno=TOY_GWAS / "toydata.phe",
              covar=TOY_GWAS / "toydata.cov", kinship="loco")
    return time.perf_counter() - t0


def warm_up() -> threading.Thread:
    """first_steps in a daemon thread (started; a failure is logged, never raised: the app
    works without it, only its first clicks are slower)."""
    def run():
        try:
            log.info("warm-up: the engine's kernels ready in %.1f s", first_steps())
            log.info("warm-up: the other pages' kernels ready in %.1f s", other_analyses())
        except Exception:   # never stop the server for it
            log.exception("warm-up failed (the first fits compile on their first use)")

    thread = threading.Thread(target=run, name="survscan-warm-up", daemon=True)
    thread.start()
    return thread
