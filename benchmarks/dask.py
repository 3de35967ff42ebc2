"""Jitted functions over a Dask array on a LocalCluster, against dask.array's own NumPy blocks.

    python -m benchmarks.dask                    # 8 GiB of float32, ~10 minutes on 2 cores
    python -m benchmarks.dask --gib 0.25 --reps 2          # a quick look
    python -m benchmarks.dask --only layernorm --out /tmp/x

The array is made by Dask (`standard_normal`, chunks of whole rows, 128 MiB
as Dask's `array.chunk-size` makes them) and persisted across
the workers of `LocalCluster(n_workers=2, threads_per_worker=1, processes=True)`: no
process ever holds it whole. Each workload is the same NumPy code run two ways: the
function jitted (`jitlib.jit(f)(x)`: one compiled program per block, shipped to the
workers as data) and the function called on the Dask array itself (dask.array's
`__array_function__`: NumPy per operation per block). A timed compute reads every block
and, for the row-wise workloads, writes every block of the result; only one row of each
output block (copied, so that the block itself is let go) goes back to the client, which checks those rows
against eager NumPy on the same rows of x. The global sum of squares is checked against
a float64 sum of the persisted blocks within the bound of its summation order.

Figures per workload: the first compute (jitlib: trace, optimize, compile on the client,
ship), the median of the timed computes, the ratio to dask.array, GB/s moved per
worker (bytes read plus written, over the workers) and its % of a triad run on every
worker at once just before, and how many programs each worker compiled (the target is
none: they map the client's object code). Results: benchmarks/results/dask-cpu-<date>.md
and .json.
"""
import argparse
import datetime
import json
import os
import pathlib
import platform
import statistics
import subprocess
import time

import numpy as np

WORKERS = 2


def layernorm(x, g, b):
    mu = x.mean(axis=-1, keepdims=True)
    var = np.var(x, axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-5) * g + b


def softmax_rows(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def sum_of_squares(x):
    return (x * x).sum()


# name: (function, row-wise (result the shape of x), bytes moved per element of x)
WORKLOADS = {
    "layernorm": (layernorm, True, 8),
    "softmax_rows": (softmax_rows, True, 8),
    "sum_of_squares": (sum_of_squares, False, 4),
}


def _worker_triad(start_at, n=1 << 24, reps=25):
    """GB/s of a = b + s*c on this worker (float32, 64 MiB arrays, the median run): one
    pass on one thread with numba (benchmarks/run.py's ceiling), else NumPy's two passes
    counted as the one pass's 3 arrays (a lower ceiling). Timing starts at wall-clock
    `start_at` on every worker, after its compile, so that the workers share the memory
    bus as they do in the workloads."""
    b = np.random.default_rng(0).random(n, np.float32)
    c, a, s = b[::-1].copy(), np.empty_like(b), np.float32(3.0)
    try:
        import numba

        @numba.njit(cache=False)
        def triad(a, b, c, s):
            for i in range(a.shape[0]):
                a[i] = b[i] + s * c[i]
    except ImportError:
        def triad(a, b, c, s):
            np.multiply(c, s, out=a)
            np.add(a, b, out=a)
    triad(a, b, c, s)
    time.sleep(max(0.0, start_at - time.time()))
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        triad(a, b, c, s)
        times.append(time.perf_counter() - t0)
    return 3 * 4 * n / statistics.median(times) / 1e9


def _compiled_on_workers(client):
    import jitlib.dask
    info = client.run(jitlib.dask.worker_info)
    return {addr: sum(i["compiled"].values()) for addr, i in info.items()}


def _timed(compute, reps):
    t0 = time.perf_counter()
    first_value = compute()
    first = time.perf_counter() - t0
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        compute()
        times.append(time.perf_counter() - t0)
    return first, statistics.median(times), first_value


def run(args):
    import dask
    import dask.array as da
    from dask.distributed import Client, LocalCluster, wait

    import jitlib
    import jitlib.dask

    cols = args.cols
    chunk_rows = max(1, int(args.chunk_mib * 2 ** 20 // (4 * cols)))
    rows = max(chunk_rows, int(args.gib * 2 ** 30 // (4 * cols)) // chunk_rows * chunk_rows)
    os.environ["JITLIB_NUM_THREADS"] = "1"   # one worker a core: no pool inside a worker
    # room for a worker's share of x twice over, so that nothing spills to disk (Dask
    # starts spilling at 60% of the limit)
    memory = f"{max(2.0, 2 * args.gib / WORKERS + 1):.1f}GiB"
    out = dict(host=_host(), rows=rows, cols=cols, chunk_rows=chunk_rows,
               gib=rows * cols * 4 / 2 ** 30, workers=WORKERS, reps=args.reps, rows_out=[])
    with LocalCluster(n_workers=WORKERS, threads_per_worker=1, processes=True,
                      memory_limit=memory, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        x = da.random.default_rng(0).standard_normal((rows, cols), chunks=(chunk_rows, cols),
                                                     dtype=np.float32)
        t0 = time.perf_counter()
        x = x.persist()
        wait(x)
        out["generate_s"] = time.perf_counter() - t0
        triads = client.run(_worker_triad, time.time() + 5.0)
        out["triad_before_gbs"] = statistics.median(triads.values())
        print(f"{out['gib']:.2f} GiB ({rows} x {cols} float32, {rows // chunk_rows} chunks) "
              f"made in {out['generate_s']:.1f} s; triad per worker "
              f"{', '.join(f'{v:.1f}' for v in triads.values())} GB/s", flush=True)
        g = np.random.default_rng(1).random(cols, np.float32) + 0.5
        b = np.random.default_rng(2).random(cols, np.float32) - 0.5
        sample = _first_rows(x).compute()
        for name in args.only or WORKLOADS:
            f, rowwise, per_element = WORKLOADS[name]
            fargs = (x, g, b) if f is layernorm else (x,)
            jitted = jitlib.jit(f)
            row = dict(workload=name)
            def target_of(result, rowwise=rowwise):
                return _first_rows(result) if rowwise else result
            for tool, fn in (("jitlib", jitted), ("dask", f)):
                target = target_of(fn(*fargs))
                first, median, value = _timed(lambda: target.compute(), args.reps)
                row[f"{tool}_first_s"], row[f"{tool}_s"] = first, median
                row[f"{tool}_value"] = value
            row["jitlib_busy_pct"] = _busy(lambda: target_of(jitted(*fargs)).compute())
            moved = rows * cols * per_element
            row["ratio"] = row["dask_s"] / row["jitlib_s"]
            row["jitlib_gbs_per_worker"] = moved / row["jitlib_s"] / WORKERS / 1e9
            row["dask_gbs_per_worker"] = moved / row["dask_s"] / WORKERS / 1e9
            row["compiled_on_workers"] = _compiled_on_workers(client)
            row.update(_check(name, f, rowwise, row.pop("jitlib_value"),
                              row.pop("dask_value"), sample, g, b, x))
            print(f"{name}: jitlib {row['jitlib_s'] * 1e3:.0f} ms (first "
                  f"{row['jitlib_first_s'] * 1e3:.0f}), dask.array {row['dask_s'] * 1e3:.0f}"
                  f" ms: {row['ratio']:.1f}x; {row['jitlib_gbs_per_worker']:.2f} GB/s a "
                  f"worker; workers busy "
                  f"{row['jitlib_busy_pct']:.0f}% of the time; compiled on workers "
                  f"{row['compiled_on_workers']}; {row['check']}", flush=True)
            out["rows_out"].append(row)
        # the host's bandwidth drifts between minutes on a shared VM: the triad before and
        # after, and the higher of the two as the ceiling
        after = client.run(_worker_triad, time.time() + 5.0)
        out["triad_after_gbs"] = statistics.median(after.values())
        out["triad_gbs"] = max(out["triad_before_gbs"], out["triad_after_gbs"])
        for row in out["rows_out"]:
            row["pct_triad"] = 100 * row["jitlib_gbs_per_worker"] / out["triad_gbs"]
        print(f"triad per worker after: {', '.join(f'{v:.1f}' for v in after.values())} GB/s; "
              + ", ".join(f"{r['workload']} {r['pct_triad']:.0f}% of the higher"
                          for r in out["rows_out"]), flush=True)
    return out


def _first_row(block):
    return block[:1].copy()


def _first_rows(y):
    """The first row of each block, copied: a view (`y[::chunk_rows]`) would keep every
    block of y alive on its worker until the compute ends, as a pipeline that consumes
    its blocks (writes them out, reduces them) does not."""
    return y.map_blocks(_first_row, chunks=((1,) * y.numblocks[0], y.chunks[1]))


def _busy(compute):
    """% of one compute's wall time the workers spent running tasks (Dask's task stream):
    the rest is the scheduler's and the transfers' share."""
    from dask.distributed import get_task_stream
    with get_task_stream() as stream:
        t0 = time.perf_counter()
        compute()
        wall = time.perf_counter() - t0
    running = sum(s["stop"] - s["start"] for task in stream.data
                  for s in task["startstops"] if s["action"] == "compute")
    return 100 * running / (wall * WORKERS)


def _check(name, f, rowwise, got, got_dask, sample, g, b, x):
    """The sampled rows against eager NumPy on the same rows of x, or the global sum
    against a float64 one."""
    if rowwise:
        want = f(sample, g, b) if f is layernorm else f(sample)
        err = float(np.max(np.abs(got - want)))
        ok = bool(np.allclose(got, want, rtol=1e-5, atol=1e-5))
        return dict(check=f"rows equal eager NumPy's: {ok} (max abs diff {err:.1e})",
                    ok=ok, max_abs_diff=err)
    exact = float(x.astype(np.float64).map_blocks(lambda v: v * v).sum().compute())
    # float32 sums of n terms, in blocks then a tree: |error| <= (log2 n + 2) eps sum
    bound = (np.log2(x.size) + 2) * np.finfo(np.float32).eps * exact
    err = abs(float(got) - exact)
    ok = err <= bound
    return dict(check=f"sum within the order-of-summation bound: {ok} (rel err "
                      f"{err / exact:.1e}, bound {bound / exact:.1e}; dask.array's "
                      f"{abs(float(got_dask) - exact) / exact:.1e})",
                ok=bool(ok), rel_err=err / exact)


def _host():
    info = dict(python=platform.python_version(), numpy=np.__version__,
                date=datetime.datetime.now().isoformat(timespec="seconds"),
                cores=os.cpu_count())
    try:
        lscpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        fields = dict(line.split(":", 1) for line in lscpu.splitlines() if ":" in line)
        info["cpu"] = fields.get("Model name", "?").strip()
    except (OSError, ValueError):
        info["cpu"] = platform.processor() or "?"
    import dask
    import distributed
    info["dask"], info["distributed"] = dask.__version__, distributed.__version__
    return info


def markdown(out):
    h = out["host"]
    lines = [
        "# Dask: jitlib over dask.array vs dask.array's NumPy blocks", "",
        f"Host: {h['cpu']}, {h['cores']} cores; numpy {h['numpy']}, dask {h['dask']}; "
        f"{h['date']}", "",
        f"`LocalCluster(n_workers={out['workers']}, threads_per_worker=1, processes=True)`; "
        f"x: {out['rows']} x {out['cols']} float32 ({out['gib']:.2f} GiB, chunks of "
        f"{out['chunk_rows']} rows), made by Dask and persisted on the workers in "
        f"{out['generate_s']:.1f} s. Triad per worker (all at once), before the workloads "
        f"{out['triad_before_gbs']:.1f} GB/s, after {out['triad_after_gbs']:.1f}: % triad is of "
        f"the higher. Times: median of {out['reps']} computes after the "
        "first; GB/s: bytes read plus written, per worker; busy: % of one jitlib compute's "
        "wall time the workers spent in tasks (Dask's task stream; the rest is scheduling "
        "and transfers).", "",
        "| workload | jitlib ms | jitlib first ms | dask.array ms | dask first ms | "
        "dask / jitlib | jitlib GB/s a worker | % triad | busy % | dask GB/s a worker | "
        "compiled on workers | check |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in out["rows_out"]:
        lines.append(
            f"| {r['workload']} | {r['jitlib_s'] * 1e3:.0f} | {r['jitlib_first_s'] * 1e3:.0f}"
            f" | {r['dask_s'] * 1e3:.0f} | {r['dask_first_s'] * 1e3:.0f} | {r['ratio']:.1f}x"
            f" | {r['jitlib_gbs_per_worker']:.2f} | {r['pct_triad']:.0f} | "
            f"{r['jitlib_busy_pct']:.0f} | "
            f"{r['dask_gbs_per_worker']:.2f} | {sum(r['compiled_on_workers'].values())} | "
            f"{r['check']} |")
    lines += ["", "## Targets (issue 27)", "", "| workload | target | figure | met |",
              "|---|---|---|---|"]
    for r in out["rows_out"]:
        lines.append(f"| {r['workload']} | at least 5x dask.array | {r['ratio']:.1f}x | "
                     f"{'met' if r['ratio'] >= 5 else '**not met**'} |")
        if WORKLOADS[r["workload"]][1]:
            lines.append(f"| {r['workload']} | at least 70% of the triad per worker | "
                         f"{r['pct_triad']:.0f}% | "
                         f"{'met' if r['pct_triad'] >= 70 else '**not met**'} |")
        n = sum(r["compiled_on_workers"].values())
        lines.append(f"| {r['workload']} | no compiles on workers | {n} | "
                     f"{'met' if n == 0 else '**not met**'} |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--gib", type=float, default=8.0, help="size of x in GiB (float32)")
    p.add_argument("--cols", type=int, default=1024)
    p.add_argument("--chunk-mib", type=float, default=128.0,
                   help="chunk size (default: Dask's own, array.chunk-size)")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--only", nargs="*", choices=sorted(WORKLOADS))
    p.add_argument("--out", default="benchmarks/results")
    args = p.parse_args(argv)
    out = run(args)
    stem = pathlib.Path(args.out) / f"dask-cpu-{datetime.date.today().isoformat()}"
    stem.parent.mkdir(parents=True, exist_ok=True)
    stem.with_suffix(".json").write_text(json.dumps(out, indent=1, default=str))
    stem.with_suffix(".md").write_text(markdown(out))
    print(f"wrote {stem}.json and {stem}.md")


if __name__ == "__main__":
    main()
