#!/usr/bin/env bash
# The GPU checks of the project on a lent CUDA machine, in one call (device time is scarce).
#
# Here, once:   make device-wheels            (wheels the device image lacks -> .device-wheels/)
# There:        the device tool's run with carry [".device-wheels"] and the command
#               bash bench/on_device.sh [quick]
# It installs the carried wheels into a folder beside the image's own packages (no network
# there), prints the device, runs every gpu-marked test (GPU = CPU to 1e-8) and the CPU-vs-GPU
# benchmark (bench/gpu.py; "quick": N = 100,000 only), one 10^6 fit's profile (bench/gpu_profile.py),
# the baseline hazard and predictions after a fit on the device (bench/prediction.py),
# cross-validation at 10^6 under cProfile, the robust variance at 10^7 and 10^6 rows (bench/robust.py),
# the sensitivity grid on the device (bench/sensitivity.py), the horseshoe probit sampler at the
# paper's size (bench/bayes.py run_gpu), the paper's largest
# multi-trait GWAS (bench/gwas_largest.py; `gwas` or GWAS_SHAPE), and
# leaves the logs and results in $OUT, with everything also packed into
# $OUT/device_results.tar.gz (the device tool returns at most 8 files).
# `bash bench/on_device.sh gwas` runs the GWAS step alone (it needs most of a call's 10 minutes).
# Each step has its own time limit (TEST_LIMIT, BENCH_LIMIT, PROFILE_LIMIT, PRED_LIMIT, CV_LIMIT,
# ROBUST_LIMIT, SENS_LIMIT, BAYES_LIMIT, GWAS_LIMIT; 0 skips a step other than the tests; the
# prediction, CV, robust-variance, grid and GWAS steps run only when asked: PRED_LIMIT=60,
# CV_LIMIT=150, ROBUST_LIMIT=100, SENS_LIMIT=150, `gwas`) so that the default call
# ends (about 9 minutes at most), and returns its files, inside the
# device tool's 10 minutes; test modules the image cannot import (the app's, Panel is absent)
# are reported and passed over rather than stopping the gpu-marked tests of the others; -v names
# each test as it ends, so a failure is named in the log even when the time limit cuts pytest off.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-bench/results/device}
mkdir -p "$OUT"
SITE=$(mktemp -d)
python3 -m pip install --quiet --no-index --no-deps --target "$SITE" .device-wheels/*.whl
export PYTHONPATH="$PWD:$SITE${PYTHONPATH:+:$PYTHONPATH}"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$OUT/device.txt"
python3 -c "import cupy, numpy, numba; print('cupy', cupy.__version__, 'cuda runtime', cupy.cuda.runtime.runtimeGetVersion(), 'numpy', numpy.__version__, 'numba', numba.__version__)" | tee -a "$OUT/device.txt"
python3 -c "import pyarrow; print('pyarrow', pyarrow.__version__)" 2>&1 | tail -1 | tee -a "$OUT/device.txt"
if [ "${1:-}" != gwas ]; then
timeout "${TEST_LIMIT:-200}" python3 -m pytest -v -m gpu -n "${TEST_WORKERS:-8}" -p no:cacheprovider -p no:benchmark \
    --continue-on-collection-errors -rfE ${TEST_PATHS:-tests/} 2>&1 | tee "$OUT/gpu_tests.log" | tail -40
tests=${PIPESTATUS[0]}
sizes=(${BENCH_ARGS:-})          # e.g. BENCH_ARGS="--sizes 1000000 --gpu-strata 1,N/2"
[ "${1:-}" = quick ] && sizes=(--sizes 100000)
[ "${BENCH_LIMIT:-200}" != 0 ] && timeout "${BENCH_LIMIT:-200}" python3 -m bench gpu \
    --out "$OUT" "${sizes[@]}" 2>&1 | tee "$OUT/bench_gpu.log" | tail -25
# one 10^6 fit end to end, three times, and where its time goes (target < 1 s); PROFILE_N
# names other sizes (e.g. "1000000 10000000": the 10^7 fit, target < 8 s, without the exact
# CCD fit that bench gpu times first)
for n in ${PROFILE_N:-1000000}; do
[ "${PROFILE_LIMIT:-60}" != 0 ] && timeout "${PROFILE_LIMIT:-60}" \
    python3 -m bench.gpu_profile "$n" "$OUT" 2>&1 | head -45
done
# the baseline hazard, Q's sums (predictions' standard errors) and adjusted curves after a
# 10^6 x 1,000 fit on the device, against the host's code on the same fit; asked for by
# PRED_LIMIT=60
[ "${PRED_LIMIT:-0}" != 0 ] && [ "${1:-}" != quick ] && timeout "$PRED_LIMIT" \
    python3 -m bench.prediction 1000000 --density 0.01 --backend gpu 2>&1 \
    | tee "$OUT/prediction_gpu.json" | tail -3
# 10-fold x 10-point cross-validation at 10^6 x 1,000 (target < 60 s); asked for by CV_LIMIT=150
# (under cProfile: its 30 costliest functions by own time go to cv_profile.txt)
[ "${CV_LIMIT:-0}" != 0 ] && [ "${1:-}" != quick ] && timeout "${CV_LIMIT}" \
    python3 -m cProfile -o /tmp/cv.prof -m bench cv --n 1000000 --p 1000 --parallel gpu \
    --out "$OUT" 2>&1 | tail -12 && python3 -c "import pstats, sys; pstats.Stats('/tmp/cv.prof', \
    stream=sys.stdout).sort_stats('tottime').print_stats(30)" > "$OUT/cv_profile.txt"
# the robust (sandwich) variance on the device: the SE of the unpenalised column at 10^7 rows
# (target < 2 s) and the whole 1,000 x 1,000 robust covariance at 10^6; asked for by
# ROBUST_LIMIT=100 (the limit of each of the two runs)
if [ "${ROBUST_LIMIT:-0}" != 0 ] && [ "${1:-}" != quick ]; then
timeout "${ROBUST_LIMIT}" python3 -m bench robust --backend gpu --sizes 10000000 \
    --no-all-columns --out "$OUT" 2>&1 | tail -4
timeout "${ROBUST_LIMIT}" python3 -m bench robust --backend gpu --sizes 1000000 \
    --out "$OUT" 2>&1 | tail -4
fi
# the sensitivity grid on the device: SENS_MASKS subgroups x 4 adjustment sets x 5 L1 penalties
# at 10^6 x 1,000 (default 10: 200 variants, target < 10 s) and a sample of the one-by-one
# engine.fit loop; asked for by SENS_LIMIT=150; under cProfile (sens_profile.txt) with
# SENS_PROFILE=1, which slows its many small launches; SENS_ARGS adds options (e.g.
# "--grid-parallel processes --n-jobs 4": the grid again in worker processes sharing the GPU)
if [ "${SENS_LIMIT:-0}" != 0 ] && [ "${1:-}" != quick ]; then
sens=(-m bench sensitivity --n 1000000 --p 1000 --backend gpu --masks "${SENS_MASKS:-10}" --out "$OUT"
      ${SENS_ARGS:-})
if [ "${SENS_PROFILE:-0}" = 1 ]; then
timeout "$SENS_LIMIT" python3 -m cProfile -o /tmp/sens.prof "${sens[@]}" 2>&1 | tail -14 && \
    python3 -c "import pstats, sys; s = pstats.Stats('/tmp/sens.prof', stream=sys.stdout); \
    s.sort_stats('tottime').print_stats(35); s.sort_stats('cumulative').print_stats(45); \
    s.print_callees('fit_one|quadratic_step|prox_newton.py.*run|summary_of')" \
    > "$OUT/sens_profile.txt"
else
timeout "$SENS_LIMIT" python3 "${sens[@]}" 2>&1 | tail -14
fi
fi
# the horseshoe probit Gibbs sampler at Terenin2019's size (target: < 30 s on an H100)
bayes=()
[ "${1:-}" = quick ] && bayes=(--n 100000 --iterations 2000)
[ "${BAYES_LIMIT:-90}" != 0 ] && timeout "${BAYES_LIMIT:-90}" python3 -m bench.bayes gpu --out "$OUT" "${bayes[@]}" 2>&1 \
    | tee "$OUT/bench_bayes_gpu.log" | tail -5
else
tests=0
fi
# the largest GWAS problem of FabregatTraver2014 (n = 1,000, m = 10^6, t = 10^5; target < 15 min on
# an H100): hits (p <= 1e-6) and per-trait summaries streamed to Parquet, time per SNP block;
# GWAS_SHAPE=M:T runs a slice (extrapolated to m = 10^6); "quick": 100,000 SNPs x 10,000 traits
shape=${GWAS_SHAPE:-1000000:100000}
[ "${1:-}" = quick ] && shape=100000:10000
limit=${GWAS_LIMIT:-540}
[ "${1:-}" = quick ] && limit=${GWAS_LIMIT:-120}
if [ "${1:-}" = gwas ] || [ "${1:-}" = quick ] || [ -n "${GWAS_SHAPE:-}" ]; then
timeout "$limit" python3 -m bench gwas --sizes "" --largest "$shape" --backend gpu \
    --out "$OUT" --name gwas_largest_gpu 2>&1 | tee "$OUT/bench_gwas_gpu.log" | tail -5
fi
tar -czf /tmp/device_results.tar.gz -C "$OUT" . && mv /tmp/device_results.tar.gz "$OUT/"
exit "$tests"
