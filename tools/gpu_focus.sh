#!/usr/bin/env bash
# A short GPU call for work on a few benchmark rows (fits one 330 s device call):
# the Triton backend's gpu tests, a config sweep of the rows' kernels, and the benchmark
# of those rows only. Logs and results land in $OUT (default ./gpu-focus-out).
#
#   ROWS="attention,logsumexp_rows,layernorm" bash tools/gpu_focus.sh
#   SWEEP_ROWS="attention,attention bf16" TESTS=0 bash tools/gpu_focus.sh   (comma-separated)
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
OUT="${OUT:-$PWD/gpu-focus-out}"
mkdir -p "$OUT"
export OUT PYTHONPATH="$PWD" PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
ROWS="${ROWS:-attention,logsumexp_rows,layernorm}"
IFS=',' read -r -a rows <<< "$ROWS"
IFS=',' read -r -a sweep_rows <<< "${SWEEP_ROWS:-$ROWS}"
stage() { printf '\n===== %s (%s) =====\n' "$1" "$(date -u +%H:%M:%S)"; }

tests_rc=0
if [ "${TESTS:-1}" = 1 ]; then
    stage "pytest -m gpu (triton backend, transforms)"
    timeout -s INT -k 10 "${TESTS_LIMIT_S:-80}" python -m pytest -m gpu -p no:cacheprovider \
        -q -rfE tests/backends/triton tests/transforms/test_transforms_gpu.py \
        > "$OUT/pytest.log" 2>&1
    tests_rc=$?
    tail -n 25 "$OUT/pytest.log"
fi
if [ "${SWEEP:-1}" = 1 ]; then
    stage "sweep ${sweep_rows[*]}"
    timeout -k 10 "${SWEEP_LIMIT_S:-110}" python tools/gpu_tune_sweep.py \
        --rows "${sweep_rows[@]}" --dot-grid candidates --budget-s "$(( ${SWEEP_LIMIT_S:-110} - 10 ))" \
        --out "$OUT/sweep.json" > "$OUT/sweep.log" 2>&1
    grep -v "^  top" "$OUT/sweep.log" | head -n 60
    grep -A4 "^attention" "$OUT/sweep.log" | grep "^  top" | head -n 12
fi
if [ "${BENCH:-1}" = 1 ]; then
    stage "benchmark ${rows[*]}"
    timeout -k 10 "${BENCH_LIMIT_S:-120}" python -m benchmarks.gpu --only "${rows[@]}" \
        --budget-s "$(( ${BENCH_LIMIT_S:-120} - 15 ))" --out "$OUT/bench.json" \
        > "$OUT/bench.log" 2>&1
    tail -n 40 "$OUT/bench.log"
fi
stage "done"
exit "$tests_rc"
