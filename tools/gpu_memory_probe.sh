#!/usr/bin/env bash
# One device call that profiles the memory-bound rows (issue 5): the read-only ceiling and
# split-row logsumexp (tools/gpu_read_probe.py), a config sweep with the loop and index
# what-ifs (tools/gpu_tune_sweep.py), and Nsight Compute over jitlib's, torch.compile's and
# jax's kernels (tools/gpu_ncu_probe.py; torch.compile's generated code is logged too).
# Logs land in $OUT (default ./gpu-probe-out); each stage has its own time limit.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
OUT="${OUT:-$PWD/gpu-probe-out}"
mkdir -p "$OUT"
export OUT PYTHONPATH="$PWD" PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
stage() { printf '\n===== %s (%s) =====\n' "$1" "$(date -u +%H:%M:%S)"; }

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
ROWS="${ROWS:-ew_chain,gelu_tanh,softmax_rows,layernorm,logsumexp_rows}"
IFS=',' read -r -a bench_rows <<< "$ROWS"
tests_rc=0
if [ "${TESTS:-0}" = 1 ]; then
    stage "pytest -m gpu tests/backends/triton"
    timeout -s INT -k 10 "${TESTS_LIMIT_S:-120}" python -m pytest -m gpu -p no:cacheprovider \
        -q -rfE -x tests/backends/triton > "$OUT/pytest.log" 2>&1
    tests_rc=$?
    echo "pytest rc $tests_rc; passed: $(grep -o '[.]' "$OUT/pytest.log" | wc -l) dots"
    tail -n 15 "$OUT/pytest.log" | cut -c1-200
fi
if [ "${BENCH:-0}" = 1 ]; then
    stage "benchmark ${bench_rows[*]}"
    timeout -k 10 "${BENCH_LIMIT_S:-100}" python -m benchmarks.gpu --only "${bench_rows[@]}" \
        --budget-s "$(( ${BENCH_LIMIT_S:-100} - 15 ))" --out "$OUT/bench.json" \
        > "$OUT/bench.log" 2>&1
    grep -v "^\s*$" "$OUT/bench.log" | grep -v "^| mlp\|^| attention\|Warning\|warn" | tail -n 22 | cut -c1-400
fi
if [ "${READ:-1}" = 1 ]; then
    stage "read ceiling and split logsumexp"
    timeout -k 5 "${READ_LIMIT_S:-60}" python tools/gpu_read_probe.py ${READ_ARGS:-} \
        --out "$OUT/read_probe.json" > "$OUT/read_probe.log" 2>&1
    grep -v "^\s*$" "$OUT/read_probe.log" | tail -n 40
fi
if [ "${SWEEP:-1}" = 1 ]; then
    stage "sweep ${SWEEP_ROWS:-ew_chain,gelu_tanh,logsumexp_rows,layernorm}"
    IFS=',' read -r -a rows <<< "${SWEEP_ROWS:-ew_chain,gelu_tanh,logsumexp_rows,layernorm}"
    timeout -k 5 "${SWEEP_LIMIT_S:-90}" python tools/gpu_tune_sweep.py --rows "${rows[@]}" \
        --budget-s "$(( ${SWEEP_LIMIT_S:-90} - 10 ))" --out "$OUT/sweep.json" \
        > "$OUT/sweep.log" 2>&1
    grep -v "^  candidates\|^  heuristic" "$OUT/sweep.log" | cut -c1-150 | head -n 70
fi
if [ "${NCU:-1}" = 1 ]; then
    stage "ncu"
    TORCH_LOGS=output_code timeout -k 5 "${NCU_LIMIT_S:-130}" ncu --clock-control none \
        --profile-from-start off --target-processes application-only \
        --section SpeedOfLight --section Occupancy --section LaunchStats \
        --section WarpStateStats \
        --metrics sm__cycles_active.max,sm__cycles_active.min,dram__bytes_read.sum,dram__bytes_write.sum \
        -f -o "$OUT/probe" python3 tools/gpu_ncu_probe.py ${NCU_ARGS:-} \
        > "$OUT/ncu_app.log" 2> "$OUT/inductor_code.txt"
    echo "ncu rc $?"
    grep -v "^==PROF==" "$OUT/ncu_app.log" | tail -n 5
    ncu --import "$OUT/probe.ncu-rep" --csv --page details > "$OUT/ncu_details.csv" 2>&1
    python tools/gpu_ncu_probe.py --summarize "$OUT/ncu_details.csv"
    grep -n "XBLOCK\|RBLOCK\|R0_BLOCK\|num_warps\|def triton_" "$OUT/inductor_code.txt" \
        | cut -c1-160 | head -n 40
fi
stage "done"
exit "$tests_rc"
