"""Measuring a kernel's candidate configs on the GPU at its first call, once per signature:
opt-in (JITLIB_AUTOTUNE=1). Tuning compiles every candidate of every big dot and
reduction, which made the 4-layer GPT-2 forward's first call 19.8 s on the H200 against
2.7 s untuned, for warm times within noise of the heuristic configs (the H200 sweeps
chose them); users get the heuristic, benchmarks and long jobs may opt in.

Sizes are static, so one measurement per generated source and GPU holds for every later
call; the winner goes to the tuned-config cache (configs.record: JSON beside the generated
sources), which the next compile, in this process or a later one, reads instead of timing
again. Only dot and reduction kernels big enough for the choice to matter are timed (a
small kernel's time is its launch), each within a wall-clock budget that includes
compiling the candidates.
"""
import logging
import os
import time

from jitlib.backends.triton import configs

log = logging.getLogger("jitlib")

BUDGET_S = 3.0           # per kernel, compiles included: later candidates are skipped
                         # (half of it let only the first candidate compile)
MIN_DOT_FLOPS = 1 << 25  # 2*M*N*K below this: the heuristic tile is as good as any
MIN_REDUCED = 1 << 20    # elements a reduction kernel reads
TIMED_S = 2e-3           # each candidate is run for about this long, per round
ROUNDS = 3               # the candidates are timed in turn this many times (median kept),
                         # so a slow spell of the GPU or host does not land on one alone
MARGIN = 0.03            # a candidate replaces the heuristic only when this much faster:
                         # noisy picks ran layernorm and logsumexp 7-13% slower than
                         # the heuristic, which the sweeps found best for both


def wanted(kernel):
    """Whether `kernel` is worth measuring (and JITLIB_AUTOTUNE is "1")."""
    if os.environ.get("JITLIB_AUTOTUNE", "0") != "1":
        return False
    p = kernel.problem
    if kernel.kind == "dot":
        return 2 * p["B"] * p["M"] * p["N"] * p["K"] >= MIN_DOT_FLOPS
    if kernel.kind == "attention":
        return 2 * p["B"] * p["M"] * p["N"] * (p["D"] + p["DV"]) >= MIN_DOT_FLOPS
    if kernel.kind == "reduction":
        return p["rows"] * p["row_len"] >= MIN_REDUCED
    return False


def _seconds_per_run(launch, buffers, device):
    """Wall time of one launch, from a batch long enough that launch overhead is noise."""
    device.synchronize()
    t0 = time.perf_counter()
    launch(buffers)
    device.synchronize()
    once = time.perf_counter() - t0
    reps = max(3, min(50, int(TIMED_S / max(once, 1e-6))))
    t0 = time.perf_counter()
    for _ in range(reps):
        launch(buffers)
    device.synchronize()
    return (time.perf_counter() - t0) / reps


def tune(kernel, buffers, device, make_launch):
    """The fastest of `configs.candidates(kernel)` on `buffers` (inputs then outputs),
    recorded in the tuned-config cache; `make_launch(config)` builds a launcher."""
    from jitlib.backends.triton import compiler
    start = time.perf_counter()
    ready = []                       # (config, launch), compiled and run once
    for config in configs.candidates(kernel):
        if ready and time.perf_counter() - start > BUDGET_S:
            break
        try:
            launch = make_launch(config)
            launch(buffers)          # compiles; the first run is not timed
            ready.append((config, launch))
        except Exception as e:       # noqa: BLE001 - e.g. out of shared memory: skip it
            log.debug("autotune %s: %s failed: %s", kernel.name, config, e)
    if not ready:
        return kernel.config, None
    runs = [[] for _ in ready]
    for _ in range(ROUNDS):
        for times, (_, launch) in zip(runs, ready):
            times.append(_seconds_per_run(launch, buffers, device))
    medians = [sorted(times)[len(times) // 2] for times in runs]
    pick = min(range(len(ready)), key=medians.__getitem__)
    if ready[0][0] == kernel.config and medians[pick] > (1 - MARGIN) * medians[0]:
        pick = 0                     # within noise of the heuristic: keep it
    best, launch = ready[pick]
    log.info("autotune %s: %s at %.1f us (%d tried, %.2f s)", kernel.name, best,
             medians[pick] * 1e6, len(ready), time.perf_counter() - start)
    configs.record(kernel, compiler.cache_dir(), device.name, best)
    return best, launch
