"""Programs written as plain NumPy, jitted as they are, against eager NumPy.

    python -m benchmarks.programs [--only NAME ...] [--budget S] [--out DIR]

The programs are those of `tests/programs.py` (the catalogue every backend is tested on:
solvers, stencils, simulations, training loops, as people write them, writing into
their arguments and into `np.empty` buffers), here at realistic sizes. jax.jit is not
in the table: these programs write into arrays, which JAX cannot run unmodified.

For each program: the first call (trace, optimize, compile, run) in this process with
an empty `JITLIB_CACHE_DIR` (jitlib imported and one unrelated function jitted first,
so imports are not counted), then the median of warm calls (`--budget` seconds, 3 to
50 calls; each call gets fresh copies of the arguments, copied outside the clock), the
same for eager NumPy, and the largest difference of the results relative to NumPy's
largest value. Writes `<out>/programs-cpu-<date>.json` and `.md`.
"""
import argparse
import copy
import datetime
import json
import os
import pathlib
import platform
import statistics
import sys
import tempfile
import time
import warnings

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _spd(rng, n):
    m = rng.standard_normal((n, n))
    return m @ m.T + n * np.eye(n)


def _kalman(rng, steps):
    F = np.eye(4) + np.eye(4, k=2)
    H = np.eye(2, 4)
    return (rng.standard_normal((steps, 2)), F, H, np.eye(4) * 0.01, np.eye(2) * 0.1,
            np.zeros(4), np.eye(4))


# name in tests/programs.py -> (make_args(rng) at a realistic size, what it is)
SIZES = {
    "conjugate_gradient_fixed_steps": (
        lambda r: (_spd(r, 400), r.standard_normal(400), 50), "400x400 f64, 50 steps"),
    "thomas_tridiagonal_solve": (
        lambda r: (r.random(10_000), 4 + r.random(10_000), r.random(10_000),
                   r.random(10_000)), "10,000 unknowns"),
    "game_of_life_rolls": (
        lambda r: ((r.random((256, 256)) < 0.3).astype(np.int8), 100), "256x256, 100 steps"),
    "lorenz_rk4_trajectory": (
        lambda r: (np.array([1.0, 1.0, 1.0]), 0.01, 2000), "2,000 RK4 steps"),
    "upwind_advection_periodic": (
        lambda r: (np.exp(-np.linspace(-3, 3, 4096) ** 2).astype(np.float32), 1.0, 0.03,
                   0.01, 1000), "4,096 f32 cells, 1,000 steps"),
    "sobel_edge_magnitude": (
        lambda r: (r.random((1024, 1024)).astype(np.float32),), "1024x1024 f32"),
    "kmeans_lloyd_in_place": (
        lambda r: (r.standard_normal((10_000, 2)), r.standard_normal((8, 2)), 20),
        "10,000 points, k=8, 20 iterations"),
    "minibatch_softmax_regression": (
        lambda r: (r.standard_normal((10_000, 50)), r.integers(0, 3, 10_000),
                   np.zeros((50, 3)), 0.1, 100), "10,000x50, batches of 100"),
    "power_method_with_deflation": (
        lambda r: (_spd(r, 200), 3, 100), "200x200, 3 pairs x 100 steps"),
    "implicit_heat_steps": (
        lambda r: (np.sin(np.linspace(0, np.pi, 200)), 0.5, 100), "200 points, 100 solves"),
    "bilinear_resize": (
        lambda r: (r.random((512, 512)), 1024, 1024), "512x512 -> 1024x1024"),
    "gauss_seidel_sweeps": (
        lambda r: (r.random((128, 128)), r.random((128, 128)), 0.01, 10),
        "128x128, 10 sweeps"),
    "gram_schmidt_qr": (
        lambda r: (r.standard_normal((200, 60)),), "200x60"),
    "mlp_training_epochs": (
        lambda r: (r.standard_normal((1000, 50)), r.standard_normal((1000, 5)),
                   r.standard_normal((50, 64)) * 0.1, r.standard_normal((64, 5)) * 0.1,
                   0.01, 100), "1000x50 -> 64 -> 5, 100 epochs"),
    "conv2d_sliding_windows": (
        lambda r: (r.standard_normal((8, 16, 64, 64)).astype(np.float32),
                   r.standard_normal((32, 16, 3, 3)).astype(np.float32)),
        "8x16x64x64 f32, 32 3x3 filters"),
    "sir_epidemic_history": (
        lambda r: (0.99, 0.01, 0.0, 0.3, 0.1, 0.1, 5000), "5,000 steps"),
    "particle_charge_deposit": (
        lambda r: (r.random(1_000_000) * 10.0, r.random(1_000_000), 1024, 10.0),
        "1e6 particles, 1,024 cells"),
    "rule30_automaton": (
        lambda r: ((r.random(1000) < 0.5).astype(np.uint8), 500), "1,000 cells, 500 steps"),
    "newton_on_a_2x2_system": (
        lambda r: (np.array([1.0, -1.5]), 50), "50 steps"),
    "lstm_over_a_sequence": (
        lambda r: (r.standard_normal((200, 64)), np.zeros(128), np.zeros(128),
                   r.standard_normal((64, 512)) * 0.1, r.standard_normal((128, 512)) * 0.1,
                   np.zeros(512)), "200 steps, 64 in, 128 hidden"),
    "value_iteration": (
        lambda r: (r.dirichlet(np.ones(200), size=(4, 200)), r.random((4, 200)), 0.95, 200),
        "4 actions x 200 states, 200 sweeps"),
    "floyd_warshall_paths": (
        lambda r: (np.where(r.random((200, 200)) < 0.1, r.random((200, 200)) * 10, 1e9),),
        "200 vertices"),
    "drawdown_statistics": (
        lambda r: (100 * np.exp(np.cumsum(r.standard_normal(1_000_000) * 0.001)),),
        "1e6 prices"),
    "matrix_exponential_taylor": (
        lambda r: (r.standard_normal((100, 100)) * 0.1, 6, 14), "100x100"),
    "rolling_window_max": (
        lambda r: (r.standard_normal(1_000_000), 16), "1e6 values, window 16"),
    "sgd_minibatch_epochs": (
        lambda r: (r.standard_normal((4096, 32)), r.standard_normal(4096), np.zeros(32),
                   0.01, 20, 64), "4096x32, 20 epochs of 64 minibatches"),
    "bubble_sort_swaps": (lambda r: (r.standard_normal(200),), "200 values"),
    "edit_distance_table": (
        lambda r: (r.integers(0, 4, 120), r.integers(0, 4, 150)), "120 x 150"),
    "cholesky_by_columns": (lambda r: (_spd(r, 120),), "120x120"),
    "random_walk_first_passage": (lambda r: (2000, 1000, 7), "2000 paths x 1000 steps"),
    "spectral_heat_steps": (
        lambda r: (np.sin(np.linspace(0, 2 * np.pi, 256, endpoint=False)), 0.1, 1e-3, 200),
        "256 modes, 200 steps"),
    "explicit_heat_double_buffer": (
        lambda r: (r.random(1000), np.zeros(1000), 0.2, 500), "1000 points, 500 steps"),
    "kalman_filter_track": (lambda r: _kalman(r, 500), "4 states, 500 measurements"),
    "histograms_per_frame": (lambda r: (r.random((50, 10000)), 32), "50 frames of 1e4, 32 bins"),
}


def load_catalogue():
    """tests/programs.py, or None where the tests directory is absent."""
    from benchmarks.fusion_vs_xla import load_catalogue as load
    return load()


def _median_time(fn, args, budget):
    times, spent = [], 0.0
    while len(times) < 3 or (spent < budget and len(times) < 50):
        fresh = copy.deepcopy(args)
        start = time.perf_counter()
        fn(*fresh)
        times.append(time.perf_counter() - start)
        spent += times[-1]
    return statistics.median(times)


def _difference(got, want):
    import jitlib
    worst = 0.0
    for g, w in zip(jitlib.tree.leaves(got), jitlib.tree.leaves(want)):
        g, w = np.asarray(g, np.float64), np.asarray(w, np.float64)
        scale = float(np.max(np.abs(w), initial=0.0)) or 1.0
        worst = max(worst, float(np.max(np.abs(g - w), initial=0.0)) / scale)
    return worst


def measure(program, make_args, budget):
    import jitlib
    rng = np.random.default_rng(0)
    args = make_args(rng)
    jitted = jitlib.jit(program.fn, static_argnums=program.static_argnums)
    fresh = copy.deepcopy(args)
    start = time.perf_counter()
    got = jitted(*fresh)
    first = time.perf_counter() - start
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = program.fn(*copy.deepcopy(args))
        numpy_s = _median_time(program.fn, args, budget)
    warm = _median_time(jitted, args, budget)
    return dict(first_ms=first * 1e3, warm_ms=warm * 1e3, numpy_ms=numpy_s * 1e3,
                speedup=numpy_s / warm, rel_diff=_difference(got, want))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", nargs="*", default=None)
    p.add_argument("--budget", type=float, default=1.0, help="seconds of calls per tool")
    p.add_argument("--out", default=str(ROOT / "benchmarks" / "results"))
    a = p.parse_args(argv)
    os.environ["JITLIB_CACHE_DIR"] = tempfile.mkdtemp(prefix="jitlib-bench-programs-")
    catalogue = load_catalogue()
    if catalogue is None:
        sys.exit("tests/programs.py not found: run from a checkout with its tests")
    by_name = {p.name: p for p in catalogue.PROGRAMS}
    import jitlib
    jitlib.jit(lambda x: np.sin(x) * 2.0)(np.ones(4))   # imports and the backend, first
    rows = []
    for name, (make_args, note) in SIZES.items():
        if a.only and name not in a.only:
            continue
        row = dict(name=name, size=note, **measure(by_name[name], make_args, a.budget))
        rows.append(row)
        print(f"{name:32s} first {row['first_ms']:7.0f} ms  warm {row['warm_ms']:9.3f} ms  "
              f"numpy {row['numpy_ms']:9.3f} ms  x{row['speedup']:6.1f}  "
              f"diff {row['rel_diff']:.0e}", flush=True)
    _write(rows, pathlib.Path(a.out))
    return rows


def _write(rows, out):
    import jitlib  # noqa: F401 - the versions below
    import llvmlite
    out.mkdir(parents=True, exist_ok=True)
    stamp = datetime.datetime.now().isoformat(timespec="seconds")
    host = f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs"
    try:
        with open("/proc/cpuinfo") as f:
            host = next(line.split(":", 1)[1].strip() for line in f
                        if line.startswith("model name")) + f", {os.cpu_count()} CPUs"
    except (OSError, StopIteration):
        pass
    meta = dict(host=host, when=stamp, numpy=np.__version__, llvmlite=llvmlite.__version__)
    base = out / f"programs-cpu-{datetime.date.today().isoformat()}"
    base.with_suffix(".json").write_text(json.dumps(dict(meta=meta, rows=rows), indent=1))
    lines = [
        "# Plain-NumPy programs: jitlib (cpu) against eager NumPy", "",
        f"Host: {host}; numpy {np.__version__}, llvmlite {llvmlite.__version__}; {stamp}", "",
        "First call = trace + compile + one run with an empty disk cache (imports done). "
        "Warm = median of calls with fresh argument copies. x NumPy > 1: jitlib faster.", "",
        "| program | size | first call ms | warm ms | NumPy ms | x NumPy | max rel diff |",
        "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['name']} | {r['size']} | {r['first_ms']:.0f} | {r['warm_ms']:.3f} "
                     f"| {r['numpy_ms']:.3f} | {r['speedup']:.1f} | {r['rel_diff']:.0e} |")
    base.with_suffix(".md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
