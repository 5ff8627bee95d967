"""CLI: python -m bench {quick,cox,tv,cv,fg,sweep,gpu,gwas,sccs,bayes} [--n N --p P --density D
--penalty l1|l2|none --ratio R --strata K --peers survscan-ccd,lifelines,coxnet,skglm
--repeats 1 --out bench/results]
[--folds 10 --grid 10 --parallel serial,processes,dask --n-jobs 2] [--over n|strata --values ...].

quick / cox: survscan against the peers on one simulated problem.  tv: the cost of one cut
point (time-varying coefficient) against the plain fit of the same subjects.  cv: k-fold x
grid cross-validation serially, over a process pool and on a Dask LocalCluster.  fg: Fine-Gray
against Cox on the same subjects, and the sandwich variance at N=10,000, P=10.  sweep: every
tool over N (Yang2022 Fig. 4, the scaling chart) or over K strata (Yang2024 Fig. 2), with a
log-log PNG; the survscan-ccd peer is the papers' exact CCD.  gpu: CPU against GPU per CCD cycle
and per fit at N = 100,000 and 1,000,000, K = 1, 10, 50,000 and N/2 strata (needs a CUDA device).
gwas: multi-trait GWAS against FaST-LMM and a naive GLS (its own options: python -m bench gwas -h).
sccs: SCCS against statsmodels' ConditionalPoisson at growing N (--peer-sizes), then one L1 fit
at N = 1,000,000 cases x P = 1,500 drugs (about 20 million eras).
bayes: the horseshoe probit Gibbs sampler against NumPyro NUTS on Terenin2019's synthetic design
(N = 10,000, p = 1,000, 10,000 iterations; --iterations, --nuts-warmup, --nuts-samples,
--peers nuts or empty).
profile: the cost model of one L1 Cox fit (docs/cost_model.md): every kernel's calls and
seconds, the plain proximal-Newton step against the plane correction, the sort and the layout's
bytes per row (--ratios, --ties, --repeats).
cvsteps: serial cross-validation with the plain and the plane steps, A/B in one process.
cvprofile: one serial cross-validation pass by pass (outer steps, row and X passes per grid point).
dense: the nearly unpenalised L1 fit (lam = 1, default N=1,000,000) with the column-wise inner
solve against the dense working set's Gram matrix, A/B; with --penalty none the unpenalised fit
and its standard errors, end to end.
app: the served app in Chromium, click to drawn (first page, each tab's first opening, open
rossi + Fit + Results drawn, fresh and after every tab was visited; python -m bench app -h).
ties: the plain fit against day-resolution ties (Breslow and Efron), --strata K strata (default
100 here) and entry times, on the same subjects.
sensitivity: a grid of 200 variants (10 subgroups x 4 adjustment sets x 5 L1 penalties) by
engine.sensitivity_study against sequential engine.fit calls (a sample, extrapolated).
robust: the robust (sandwich) variance against one more fit, at each of --sizes (default
100,000 and 1,000,000 rows): the unpenalised column's robust SE of an L1 fit and the whole P x P
robust covariance (--no-all-columns leaves the latter out)."""
import argparse
import sys

from bench import (bayes, cost_model, cross_validation, cv_profile, cv_steps, dense_inner,
                   fine_gray, gpu, robust, sccs, sensitivity, sweep, ties_strata, time_varying)
from bench.adapters import ADAPTERS, run_tool
from bench.problems import PENALTIES, make_problem
from bench.report import markdown, summarise, write

DEFAULT_SIZES = {"quick": (20_000, 200), "cox": (100_000, 1_000), "tv": (100_000, 1_000),
                 "cv": (100_000, 1_000), "fg": (100_000, 1_000), "sweep": (100_000, 1_000),
                 "gpu": (100_000, 1_000), "sccs": (1_000_000, 1_500), "bayes": (10_000, 1_000),
                 "profile": (100_000, 1_000), "ties": (200_000, 1_000),
                 "cvsteps": (100_000, 1_000), "cvprofile": (100_000, 1_000),
                 "dense": (1_000_000, 1_000), "sensitivity": (1_000_000, 1_000),
                 "robust": (1_000_000, 1_000)}


def parse(argv):
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("command", choices=DEFAULT_SIZES,
                        help="quick: N=20,000, P=200; cox, tv, cv, fg: N=100,000, P=1,000 "
                             "(overridable)")
    parser.add_argument("--n", type=int, help="patients (rows)")
    parser.add_argument("--p", type=int, help="covariates (columns)")
    parser.add_argument("--density", type=float, default=0.05)
    parser.add_argument("--penalty", choices=PENALTIES, default="l1")
    parser.add_argument("--ratio", type=float, default=0.1, help="lambda / lambda_max")
    parser.add_argument("--strata", type=int, default=1, help="number of strata K")
    parser.add_argument("--peers", default="lifelines,coxnet,skglm",
                        help="comma-separated subset of survscan-ccd,lifelines,coxnet,skglm "
                             "(or empty)")
    parser.add_argument("--repeats", type=int, default=1, help="timed fits per tool (best kept)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tol", type=float, default=1e-9, help="survscan tolerance")
    parser.add_argument("--peer-tol", type=float, default=1e-9,
                        help="Coxnet and skglm tolerance (on their per-patient scale)")
    parser.add_argument("--lifelines-max-np2", type=float, default=2.5e7,
                        help="skip lifelines above this N*P^2 (its cost per Newton step)")
    parser.add_argument("--coxnet-max-bytes", type=float, default=6e9,
                        help="skip Coxnet when its dense X would exceed this")
    parser.add_argument("--folds", type=int, default=10, help="cv: folds")
    parser.add_argument("--grid", type=int, default=10, help="cv: points of the lambda grid")
    parser.add_argument("--parallel", default="serial,processes,dask",
                        help="cv: comma-separated subset of serial,processes,dask,gpu")
    parser.add_argument("--n-jobs", type=int, default=2, help="cv: workers (processes, dask)")
    parser.add_argument("--over", choices=("n", "strata"), default="n",
                        help="sweep: what varies")
    parser.add_argument("--values", default="10000,30000,100000,300000,1000000",
                        help="sweep: comma-separated values of N or K")
    parser.add_argument("--sizes", default="100000,1000000",
                        help="gpu: comma-separated values of N")
    parser.add_argument("--gpu-strata", default="1,10,50000,N/2",
                        help="gpu: comma-separated strata counts K (N/2: half the rows)")
    parser.add_argument("--gpu-only", action="store_true",
                        help="gpu: time the GPU alone (sizes whose CPU side takes too long)")
    parser.add_argument("--peer-sizes", default="1000,3000,10000,30000",
                        help="sccs: comma-separated numbers of cases for the statsmodels rows")
    parser.add_argument("--iterations", type=int, default=10_000, help="bayes: Gibbs iterations")
    parser.add_argument("--nuts-warmup", type=int, default=500, help="bayes: NUTS warm-up")
    parser.add_argument("--nuts-samples", type=int, default=500, help="bayes: NUTS draws")
    parser.add_argument("--precision", choices=("float64", "float32"), default="float64",
                        help="bayes: the Gibbs sampler's precision")
    parser.add_argument("--ratios", default="0.1,0.002",
                        help="profile: comma-separated lambda / lambda_max")
    parser.add_argument("--lambdas", default="",
                        help="profile: comma-separated absolute L1 strengths (1: nearly "
                             "unpenalised)")
    parser.add_argument("--steps", default="plain,plane",
                        help="profile: plain and/or plane (the proximal-Newton step)")
    parser.add_argument("--ties", choices=("breslow", "efron"), default="breslow",
                        help="profile: ties")
    parser.add_argument("--no-all-columns", action="store_true",
                        help="robust: skip the whole P x P robust covariance")
    parser.add_argument("--backend", choices=("cpu", "gpu"), default="cpu",
                        help="robust, sensitivity: where the fits (and variances) run")
    parser.add_argument("--grid-parallel", choices=("serial", "threads", "processes", "dask"),
                        help="sensitivity: also time the grid with these workers (--n-jobs; "
                             "threads: the usable cores; default threads on the CPU backend, "
                             "serial on the GPU one, whose grid runs on the device alone)")
    parser.add_argument("--masks", type=int, default=10,
                        help="sensitivity: subgroups (the grid is masks x 4 sets x 5 penalties)")
    parser.add_argument("--out", default="bench/results")
    args = parser.parse_args(argv)
    n, p = DEFAULT_SIZES[args.command]
    args.n = args.n or n
    args.p = args.p or p
    args.peers = [t for t in args.peers.split(",") if t]
    if args.command == "bayes":   # NUTS unless --peers names other tools (or none)
        args.peers = ([t for t in args.peers if t == "nuts"]
                      if any(a.startswith("--peers") for a in argv) else ["nuts"])
        return args
    unknown = set(args.peers) - (set(ADAPTERS) - {"survscan"})
    if unknown:
        parser.error(f"unknown peers {sorted(unknown)}; "
                     "choose from survscan-ccd, lifelines, coxnet, skglm")
    args.parallel = [m for m in args.parallel.split(",") if m]
    if not args.parallel or set(args.parallel) - {*cross_validation.MODES, "gpu"}:
        parser.error(f"--parallel {args.parallel}: choose from serial, processes, dask, gpu")
    return args


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["gwas"]:
        from bench import gwas
        return gwas.main(argv[1:])
    if argv[:1] == ["serve"]:  # many users on one served app: python -m bench serve -h
        from bench import serve
        return serve.main(argv[1:])
    if argv[:1] == ["app"]:  # one user's clicks in the served app: python -m bench app -h
        from bench import app
        return app.main(argv[1:])
    args = parse(argv)
    if args.command == "bayes":
        return bayes.run(args.n, args.p, args.iterations, seed=args.seed,
                         nuts_warmup=args.nuts_warmup, nuts_samples=args.nuts_samples,
                         peers=args.peers, out=args.out, precision=args.precision)
    if args.command == "profile":
        ratios = tuple(float(v) for v in args.ratios.split(",") if v)
        lambdas = tuple(float(v) for v in args.lambdas.split(",") if v)
        steps = tuple(v for v in args.steps.split(",") if v)
        return cost_model.run(args.n, args.p, args.density, ratios, args.ties, args.repeats,
                              args.seed, args.tol, lambdas, steps, out=args.out)
    if args.command == "cvsteps":
        steps = tuple(v for v in args.steps.split(",") if v)
        return cv_steps.run(args.n, args.p, args.density, args.folds, args.grid, args.seed,
                            steps[::-1], out=args.out)
    if args.command == "dense":
        return dense_inner.run(args.n, args.p, args.density, args.penalty,
                               repeats=args.repeats, seed=args.seed, tol=args.tol, out=args.out)
    if args.command == "cvprofile":
        return cv_profile.run(args.n, args.p, args.density, args.folds, args.grid, args.seed,
                              out=args.out)
    if args.command == "ties":
        return ties_strata.run(args.n, args.p, args.density, args.strata if args.strata > 1
                               else 100, args.ratio, args.repeats, args.seed, out=args.out)
    if args.command == "sensitivity":
        return sensitivity.run(args.n, args.p, args.density, masks=args.masks, seed=args.seed,
                               out=args.out, backend=args.backend,
                               parallel=args.grid_parallel, n_jobs=args.n_jobs, tol=args.tol)
    if args.command == "tv":
        return time_varying.run(args.n, args.p, args.density, args.ratio, args.seed, out=args.out)
    if args.command == "gpu":
        sizes = tuple(int(float(v)) for v in args.sizes.split(","))
        strata = tuple(k if k == "N/2" else int(k) for k in args.gpu_strata.split(","))
        return gpu.run(sizes=sizes, p=args.p, density=args.density, strata=strata,
                       ratio=args.ratio, seed=args.seed, repeats=args.repeats, out=args.out,
                       cpu=not args.gpu_only)
    if args.command == "sccs":
        sizes = tuple(int(float(v)) for v in args.peer_sizes.split(",") if v)
        return sccs.run(sizes=sizes, n=args.n, p=args.p, ratio=args.ratio, seed=args.seed,
                        out=args.out)
    if args.command == "robust":
        sizes = tuple(int(float(v)) for v in args.sizes.split(","))
        return robust.run(sizes, args.p, args.density, args.ratio, args.seed, out=args.out,
                          all_columns=not args.no_all_columns, backend=args.backend)
    if args.command == "fg":
        return fine_gray.run(args.n, args.p, args.density, args.ratio, args.seed, out=args.out)
    if args.command == "sweep":
        options = {"tol": args.tol, "peer_tol": args.peer_tol,
                   "lifelines_max_np2": args.lifelines_max_np2,
                   "coxnet_max_bytes": args.coxnet_max_bytes}
        values = [int(float(v)) for v in args.values.split(",")]
        return sweep.run(args.over, values, args.n, args.p, args.density, args.penalty,
                         args.ratio, args.seed, ["survscan"] + args.peers, options, args.out)
    if args.command == "cv":
        return cross_validation.run(args.n, args.p, args.density, args.folds, args.grid,
                                    args.parallel, args.n_jobs, args.seed, out=args.out)
    options = {"tol": args.tol, "peer_tol": args.peer_tol,
               "lifelines_max_np2": args.lifelines_max_np2,
               "coxnet_max_bytes": args.coxnet_max_bytes}
    tools = ["survscan"] + args.peers
    print(f"simulating N={args.n:,} P={args.p:,} density={args.density} strata={args.strata}",
          flush=True)
    problem = make_problem(args.n, args.p, args.density, args.strata, args.penalty, args.ratio,
                           args.seed)
    warmup = make_problem(200, 5, 0.2, min(args.strata, 2), args.penalty, 0.5, args.seed)
    runs = []
    for tool in tools:
        run_tool(tool, warmup, **options)
        best = None
        for _ in range(args.repeats):
            print(f"fitting {tool} ...", flush=True)
            run = run_tool(tool, problem, **options)
            if best is None or (run.status == "ok" and run.wall_s < best.wall_s):
                best = run
            if run.status != "ok":
                break
        print(f"  {best.status} {best.reason} " +
              ("" if best.wall_s is None else f"{best.wall_s:.3f} s"), flush=True)
        runs.append(best)
    record = summarise(problem, runs, {**options, "repeats": args.repeats, "peers": args.peers})
    json_path, md_path = write(record, args.out)
    print(markdown(record))
    print(f"wrote {json_path} and {md_path}")
    return record


if __name__ == "__main__":
    main()
