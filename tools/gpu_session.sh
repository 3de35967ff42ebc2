#!/usr/bin/env bash
# One GPU session in one call (fits in 9.5 minutes): versions, the `gpu` tests (~1 minute on the
# H200, limit 200 s), the GPU benchmark at scale large (budget 290 s, killed at 335 s).
#
#   bash tools/gpu_session.sh            # from the repository root; OUT=dir keeps the logs
#   QUICK=1 bash tools/gpu_session.sh    # the benchmark's --quick mode
#   TESTS_LIMIT_S=150 BENCH_BUDGET_S=200 bash tools/gpu_session.sh   # a shorter session
#   FUZZ_MINUTES=3 BENCH=0 bash tools/gpu_session.sh   # tests, then the differential fuzzer
#                                                      # with the gpu variant, no benchmark
#   TESTS=0 bash tools/gpu_session.sh                  # the benchmark only
#   ROWS="attention,layernorm" SWEEP=1 bash tools/gpu_session.sh   # a few rows only, with a
#                                      # config sweep of their kernels (tools/gpu_tune_sweep.py)
#
# Everything printed also lands in $OUT (default ./gpu-session-out): session.log,
# versions.txt, pytest-gpu.log, pytest-gpu.xml, sweep.log/.json, benchmark.log,
# gpu-<date>.json and .md.
# Each stage has its own time limit, so a hang in one still leaves the others' results;
# the exit status is the tests' (0: all gpu tests passed).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

OUT="${OUT:-$PWD/gpu-session-out}"
mkdir -p "$OUT"
export OUT
export XLA_PYTHON_CLIENT_PREALLOCATE=false   # JAX, torch and jitlib share the GPU
export PYTHONUNBUFFERED=1
exec > >(tee -a "$OUT/session.log") 2>&1

stage() { printf '\n===== %s (%s) =====\n' "$1" "$(date -u +%H:%M:%S)"; }

stage "versions"
{
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv \
        || echo "nvidia-smi failed"
    nvidia-smi | head -15
    python --version
    python - <<'EOF'
import importlib, importlib.metadata as md
for dist in ("numpy", "ml_dtypes", "torch", "triton", "jax", "jaxlib", "jax-cuda13-plugin",
             "cupy-cuda13x", "cuda-bindings", "cuda-core", "cuda-python", "pytest",
             "hypothesis", "llvmlite"):
    try:
        print(f"{dist:20s} {md.version(dist)}")
    except md.PackageNotFoundError:
        print(f"{dist:20s} not installed")
try:
    import jitlib
    from jitlib.backends import default_backend_name
    from jitlib.backends.triton.device import get_device
    d = get_device()
    print(f"jitlib device: {d.name} ({d}), stream {d.stream}; default backend: "
          f"{default_backend_name()}")
except Exception as e:
    print(f"jitlib device: FAILED {type(e).__name__}: {e}")
try:
    import jax
    print("jax devices:", jax.devices())
except Exception as e:
    print(f"jax devices: FAILED {type(e).__name__}: {e}")
EOF
} | tee "$OUT/versions.txt"

if [ "${TESTS:-1}" = 1 ]; then
stage "pytest -m gpu"
# the runtime's own tests first (the kernels' tests compile a lot); SIGINT at the limit
# still lets pytest print its summary and write the junit file
PYTEST_ARGS=(-m gpu -p no:cacheprovider -rfEs --durations=15 --continue-on-collection-errors
             --junitxml="$OUT/pytest-gpu.xml"
             tests/backends/triton/test_device.py tests/test_array_gpu.py tests)
# tests/conftest.py only sets hypothesis profiles; without hypothesis, run without it
python -c "import hypothesis" 2>/dev/null || PYTEST_ARGS+=(--noconftest)
timeout -s INT -k 15 "${TESTS_LIMIT_S:-200}" python -m pytest "${PYTEST_ARGS[@]}" 2>&1 | tee "$OUT/pytest-gpu.log"
tests_rc=${PIPESTATUS[0]}
echo "pytest exit status: $tests_rc"
else
tests_rc=0
fi

if [ "${FUZZ_MINUTES:-0}" != 0 ]; then
    stage "fuzz (gpu variant included)"
    # findings are saved under $OUT/fuzz as IR text + inputs, to replay here
    timeout -k 10 "$(( ${FUZZ_MINUTES} * 60 + 90 ))" python -m tests.fuzz \
        --minutes "${FUZZ_MINUTES}" --save-dir "$OUT/fuzz" 2>&1 | tee "$OUT/fuzz.log"
    echo "fuzz exit status: ${PIPESTATUS[0]}"
fi

IFS=',' read -r -a rows <<< "${ROWS:-}"
if [ "${SWEEP:-0}" = 1 ]; then
    stage "config sweep ${rows[*]:-(default rows)}"
    SWEEP_ARGS=(--dot-grid candidates --budget-s "$(( ${SWEEP_LIMIT_S:-110} - 10 ))"
                --out "$OUT/sweep.json")
    [ ${#rows[@]} -gt 0 ] && SWEEP_ARGS+=(--rows "${rows[@]}")
    PYTHONPATH="$PWD" timeout -k 10 "${SWEEP_LIMIT_S:-110}" python tools/gpu_tune_sweep.py \
        "${SWEEP_ARGS[@]}" 2>&1 | tee "$OUT/sweep.log"
fi

[ "${BENCH:-1}" = 1 ] || { stage "done"; ls -l "$OUT"; exit "$tests_rc"; }
stage "benchmark"
# the budget skips the tools not yet measured once spent; the full run (scale large) needs
# ~2-4 minutes, most of it first-call compiles of four tools
BENCH_ARGS=(--budget-s "${BENCH_BUDGET_S:-290}")
[ "${QUICK:-0}" = 1 ] && BENCH_ARGS+=(--quick)
[ ${#rows[@]} -gt 0 ] && BENCH_ARGS+=(--only "${rows[@]}")
timeout -k 10 "$(( ${BENCH_BUDGET_S:-290} + 45 ))" python -m benchmarks.gpu "${BENCH_ARGS[@]}" 2>&1 | tee "$OUT/benchmark.log"
echo "benchmark exit status: ${PIPESTATUS[0]}"

stage "done"
ls -l "$OUT"
exit "$tests_rc"
