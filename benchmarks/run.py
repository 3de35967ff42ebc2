"""CPU side-by-side timing of the anchor workloads: jitlib next to NumPy, JAX, numexpr, numba.

    python -m benchmarks [--scale small|large] [--out PATH] [--budget SECONDS]

For each workload of `benchmarks/workloads.py`:

- jitlib: `jitlib.jit(lambda *a: fn(np, *a), backend="cpu")`. "compile ms" is the first call
  (trace + optimize + LLVM compile + one run); the steady figure is the median of timed calls.
- NumPy eager; `jax.jit(lambda *a: fn(jnp, *a))` on CPU (x64 off: jitlib's jax backend, which
  turns x64 on, is never imported), "jax 1st ms" is its first call (trace + XLA compile + run);
  numexpr and numba (2 threads, `parallel=True`) for ew_chain and gelu_tanh when installed.
- Each tool is warmed up once after its first call, then called until `--budget` seconds or
  `--max-reps` calls (at least `--min-reps`); the median is reported.
- Bandwidth ceiling: a STREAM-like triad `a = b + s*c` on float32 arrays of 2^24 elements,
  counted as 3 arrays moved (STREAM's convention: no write-allocate traffic). numba's version
  is one parallel pass (2 threads); NumPy's (`np.multiply(c, s, out=a); np.add(a, b, out=a)`)
  is two single-threaded passes, so it understates the machine. Measured once at the start
  (best of 20 of each), and again beside every timed call of a memory-bound workload: the
  calls alternate triad, call, triad, call, ... (numba's triad; NumPy's without numba), and
  "% triad" is the median over the pairs of (call GB/s) / (triad GB/s measured just
  before it). A shared VM's bandwidth drifts by tens of percent within minutes, so a
  ceiling taken once at the start judges later rows against another machine.
  "% best triad" is the strict figure: the median call against the best triad seen
  anywhere in the run (start or beside any call).
- GB/s is `workloads.min_bytes(inputs, output) / median`: what one perfect kernel moves, so
  a tool that makes extra passes gets no credit for them. GFLOP/s (mlp, attention, mse_loss)
  counts 2*M*N*K per matmul only.
- `tiny` measures per-call dispatch in microseconds (mean of a batch of calls, median of batches).
- sort_values, fft_c64, cholesky_solve, histogram_256 (issue 23's coverage rows): jax runs
  them in a child process with a time limit (`--peer-timeout`), because jax.jit's batched
  cholesky + solve on the CPU hangs in `block_until_ready` (0% CPU) in about half of the
  runs (jax 0.10.2, 2-vCPU VM; `--xla_cpu_multi_thread_eigen=false` did not help). A tool
  that does not finish is reported as "hung", and the run goes on.

Writes the figures and machine info as JSON to `--out` (default
`benchmarks/results/cpu-<date>.json`) and the markdown table next to it (`.md`).
"""
import argparse
import collections
import datetime
import json
import math
import os
import pathlib
import platform
import statistics
import subprocess
import sys
import time
import zlib

import numpy as np

from benchmarks import workloads as W

MEMORY_BOUND = ("ew_chain", "ew_chain_kept", "gelu_tanh", "softmax_rows", "layernorm",
                "logsumexp_rows")
# Rows timed while the caller keeps results: name -> (workload, results kept). A solver
# replacing its state each step holds the last two; each call's 64 MB result is then new
# memory unless the allocator reuses blocks freed earlier (issue 24 part 5).
KEPT_RESULTS = {"ew_chain_kept": ("ew_chain", 2)}
ISOLATED = ("sort_values", "fft_c64", "cholesky_solve", "histogram_256")   # jax: in a child
# Gap between the triad and the call timed after it: numba's OpenMP threads spin-wait
# for a while after a parallel loop and take a core from the call (gelu's best of 20
# right after the triad 5.87 ms, 3.77 ms after a 1 ms pause, on a busy machine). The gap
# is a busy wait, not a sleep: a vCPU of this VM that idles for 10 ms wakes slowly
# (logsumexp's median after a 10 ms sleep 2.96 ms, after 10 ms of spinning 2.39, back to
# back 2.10 - the last one partly served from the 32 MiB L3, which the triad flushes).
TRIAD_GAP_S = 0.01
COMPUTE = ("mlp", "attention", "mse_loss")


def _busy_wait(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


# ---------------------------------------------------------------------------- helpers

def _block(out):
    if hasattr(out, "block_until_ready"):
        out.block_until_ready()
    return out


def time_calls(f, args, budget, min_reps, max_reps, beside=None, keep=0):
    """Seconds of each timed call of f(*args), after one warm-up call; with `beside` (a
    no-argument callable, the triad), it runs and is timed just before every call:
    returns (call times, beside times), the second empty without `beside`. `budget`
    counts the calls' own time only. Between `beside` and the call: TRIAD_GAP_S.
    `keep`: each result is held until `keep` calls later, as a loop keeping its last
    states does (otherwise it is dropped before the next call)."""
    kept = collections.deque([_block(f(*args))], maxlen=keep or 1)
    if not keep:
        kept.clear()
    times, beside_times = [], []
    spent = 0.0
    while len(times) < max_reps and (len(times) < min_reps or spent < budget):
        if beside is not None:
            t0 = time.perf_counter()
            beside()
            beside_times.append(time.perf_counter() - t0)
            _busy_wait(TRIAD_GAP_S)
        t0 = time.perf_counter()
        out = _block(f(*args))
        times.append(time.perf_counter() - t0)
        if keep:
            kept.append(out)
        del out
        spent += times[-1]
    return times, beside_times


def paired_fraction(times, beside_times, nbytes, beside_bytes):
    """Median over the pairs of (nbytes / time) / (beside_bytes / beside_time): each call's
    bandwidth against the triad's measured just before it."""
    return statistics.median((nbytes / t) / (beside_bytes / b)
                             for t, b in zip(times, beside_times))


def _max_rel_err(out, ref):
    out = np.asarray(out)
    wide = np.complex128 if np.iscomplexobj(out) else np.float64
    return float(np.max(np.abs(out.astype(wide) - ref)) / max(1e-30, float(np.max(np.abs(ref)))))


def _add_timing(rec, times, min_bytes):
    """A tool's record gains the median of its timed calls (returned, in s), the count
    and the GB/s of the minimal traffic."""
    med = statistics.median(times)
    rec.update(median_ms=med * 1e3, reps=len(times), gbs=min_bytes / med / 1e9)
    return med


def _row_arrays(name, scale):
    base, _ = KEPT_RESULTS.get(name, (name, 0))
    return W.inputs(base, np.random.default_rng(zlib.crc32(base.encode())), scale)


def jax_child(name, scale, budget, min_reps, max_reps):
    """`--jax-child`: jax's first call and timed calls of one row, as one JSON line."""
    import jax
    import jax.numpy as jnp
    jax.config.update("jax_platforms", "cpu")
    arrays = _row_arrays(name, scale)
    fn = W.WORKLOADS[KEPT_RESULTS.get(name, (name, 0))[0]]
    f = jax.jit(lambda *a: fn(jnp, *a))
    t_first, out = first_call(f, arrays)
    times, _ = time_calls(f, arrays, budget, min_reps, max_reps)
    print(json.dumps(dict(first_ms=t_first * 1e3, dtype=str(np.asarray(out).dtype),
                          max_rel_err=_max_rel_err(out, fn(np, *arrays)),
                          times=times)), flush=True)


def jax_in_child(name, args):
    """The jax record of row `name`, measured by `jax_child` in a fresh process; None
    (and the reason) when it fails or passes `args.peer_timeout`."""
    cmd = [sys.executable, "-m", "benchmarks", "--jax-child", name, "--scale", args.scale,
           "--budget", str(args.budget), "--min-reps", str(args.min_reps),
           "--max-reps", str(args.max_reps)]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=args.peer_timeout)
    except subprocess.TimeoutExpired:
        return None, f"hung (no result in {args.peer_timeout:.0f} s)"
    if done.returncode != 0 or not done.stdout.strip():
        return None, f"failed: {done.stderr.strip().splitlines()[-1:]}"
    return json.loads(done.stdout.strip().splitlines()[-1]), None


def first_call(f, args):
    t0 = time.perf_counter()
    out = _block(f(*args))
    return time.perf_counter() - t0, out


def dispatch_us(f, args, batch=2000, batches=7):
    _block(f(*args))
    means = []
    for _ in range(batches):
        t0 = time.perf_counter()
        for _ in range(batch):
            out = f(*args)
        _block(out)
        means.append((time.perf_counter() - t0) / batch)
    return statistics.median(means) * 1e6


def matmul_flops(name, arrays):
    if name == "mlp":
        x, w1, _, w2, _ = arrays
        m, k = x.shape
        h = w1.shape[1]
        return 2 * m * k * h + 2 * m * h * w2.shape[1]
    if name == "attention":
        q, k, v = arrays
        b, s, d = q.shape
        return 2 * b * s * s * d + 2 * b * s * s * v.shape[-1]
    if name == "mse_loss":
        w1, w2, x, _ = arrays
        n, f = x.shape
        h = w1.shape[1]
        return 2 * n * f * h + 2 * n * h * w2.shape[1]
    return None


def machine_info():
    cpu = platform.processor() or "?"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    info = dict(cpu=cpu, cores=os.cpu_count(), python=platform.python_version(),
                platform=platform.platform(), numpy=np.__version__,
                date=datetime.datetime.now().isoformat(timespec="seconds"))
    for mod in ("jax", "jaxlib", "llvmlite", "numexpr", "numba"):
        try:
            info[mod] = __import__(mod).__version__
        except Exception:
            info[mod] = None
    return info


# ---------------------------------------------------------------------------- peers

def make_numexpr():
    try:
        import numexpr as ne
    except ImportError:
        return None
    ne.set_num_threads(os.cpu_count() or 1)
    exprs = {
        "ew_chain": ("where((a + b) * c > 0, (a + b) * c, 0)", ("a", "b", "c")),
        "gelu_tanh": ("h * x * (one + tanh(k0 * (x + k1 * x * x * x)))", ("x",)),
    }
    # numexpr makes Python float literals float64 (the result would be float64); float32
    # 0-d constants keep it in float32 like the other tools
    consts = dict(h=np.float32(0.5), one=np.float32(1.0), k0=np.float32(0.7978845608),
                  k1=np.float32(0.044715))
    out = {}
    for name, (expr, names) in exprs.items():
        def f(*arrays, expr=expr, names=names):
            return ne.evaluate(expr, local_dict=dict(consts, **dict(zip(names, arrays))))
        out[name] = f
    return out


def make_numba():
    try:
        import numba
    except ImportError:
        return None, None
    numba.set_num_threads(min(2, numba.config.NUMBA_NUM_THREADS))
    prange = numba.prange
    f32 = np.float32

    @numba.njit(parallel=True, cache=False)
    def ew_chain(a, b, c):
        out = np.empty_like(a)
        for i in prange(a.shape[0]):
            t = (a[i] + b[i]) * c[i]
            out[i] = t if t > f32(0.0) else f32(0.0)
        return out

    @numba.njit(parallel=True, cache=False)
    def gelu_tanh(x):
        out = np.empty_like(x)
        for i in prange(x.shape[0]):
            v = x[i]
            out[i] = f32(0.5) * v * (f32(1.0) + np.tanh(
                f32(0.7978845608) * (v + f32(0.044715) * v * v * v)))
        return out

    @numba.njit(parallel=True, cache=False)
    def triad(a, b, c, s):
        for i in prange(a.shape[0]):
            a[i] = b[i] + s * c[i]

    return {"ew_chain": ew_chain, "gelu_tanh": gelu_tanh}, triad


class Triad:
    """`a = b + s*c` on float32 arrays of `n` elements: `parallel` is numba's one pass on
    2 threads (None without numba), `numpy` NumPy's two single-threaded passes; `beside`
    is the form timed next to the workloads' calls (numba's where there is one)."""

    def __init__(self, numba_triad, n=1 << 24):
        rng = np.random.default_rng(1)
        self.b = rng.standard_normal(n, dtype=np.float32)
        self.c = rng.standard_normal(n, dtype=np.float32)
        self.a = np.empty_like(self.b)
        self.s = np.float32(3.0)
        self.bytes = 3 * n * 4
        self.parallel = None
        if numba_triad is not None:
            self.parallel = lambda: numba_triad(self.a, self.b, self.c, self.s)
        self.beside = self.parallel or self.numpy

    def numpy(self):
        np.multiply(self.c, self.s, out=self.a)
        np.add(self.a, self.b, out=self.a)

    def check(self):
        assert np.allclose(self.a, self.b + self.s * self.c)


def measure_triad(triad, reps=20):
    """Best and median of `reps` runs of each form of the triad, and the best GB/s."""
    res = {}
    forms = [("numpy_out", triad.numpy)]
    if triad.parallel is not None:
        import numba
        forms.append(("numba_parallel", triad.parallel))
    for key, run in forms:
        run()
        ts = []
        for _ in range(reps):
            t0 = time.perf_counter(); run(); ts.append(time.perf_counter() - t0)
        triad.check()
        res[key] = dict(best_ms=min(ts) * 1e3, median_ms=statistics.median(ts) * 1e3,
                        gbs_best=triad.bytes / min(ts) / 1e9)
        if key == "numba_parallel":
            res[key]["threads"] = numba.get_num_threads()
    res["bytes"] = triad.bytes
    res["ceiling_gbs"] = max(r["gbs_best"] for k, r in res.items() if isinstance(r, dict))
    return res


# ---------------------------------------------------------------------------- main

def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.split("\n")[0])
    p.add_argument("--scale", default="large", choices=("small", "large"))
    p.add_argument("--out", default=None)
    p.add_argument("--budget", type=float, default=1.5, help="seconds of timed calls per tool")
    p.add_argument("--min-reps", type=int, default=3)
    p.add_argument("--max-reps", type=int, default=50)
    p.add_argument("--only", nargs="*", default=None, help="workload names")
    p.add_argument("--peer-timeout", type=float, default=300.0,
                   help="seconds jax may take on a row it runs in a child process")
    p.add_argument("--jax-child", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.jax_child:
        return jax_child(args.jax_child, args.scale, args.budget, args.min_reps,
                         args.max_reps)

    out_path = pathlib.Path(args.out or
                            f"benchmarks/results/cpu-{datetime.date.today().isoformat()}.json")

    try:
        import jax
        import jax.numpy as jnp
        jax.config.update("jax_platforms", "cpu")
    except ImportError:
        jax = jnp = None
    import jitlib

    numexpr_fns = make_numexpr()
    numba_fns, numba_triad = make_numba()
    notes = []
    if numexpr_fns is None:
        notes.append("numexpr not installed: its column is empty")
    if numba_fns is None:
        notes.append("numba not installed: its column is empty, triad from NumPy only")
    if jax is None:
        notes.append("jax not installed: its column is empty")

    print(f"triad: a = b + s*c, float32, 2^24 elements ...", flush=True)
    triad_arrays = Triad(numba_triad)
    triad = measure_triad(triad_arrays)
    best_triad_s = triad_arrays.bytes / triad["ceiling_gbs"] / 1e9   # updated beside calls
    for k in ("numba_parallel", "numpy_out"):
        if k in triad:
            print(f"  {k}: {triad[k]['gbs_best']:.1f} GB/s (best of 20, {triad[k]['best_ms']:.2f} ms)")

    tools = ["jitlib", "numpy", "jax", "numexpr", "numba"]
    rows = {}
    names = args.only or [n for w in W.WORKLOADS for n in
                          [w] + [k for k, (base, _) in KEPT_RESULTS.items() if base == w]]
    for name in names:
        base, keep = KEPT_RESULTS.get(name, (name, 0))
        fn = W.WORKLOADS[base]
        arrays = _row_arrays(name, args.scale)
        print(f"{name}: {', '.join(str(a.shape) for a in arrays)}", flush=True)
        row = dict(shapes=[list(a.shape) for a in arrays], tools={})
        ref = fn(np, *arrays)
        row["min_bytes"] = W.min_bytes(arrays, ref)
        flops = matmul_flops(name, arrays)
        row["matmul_flops"] = flops

        callables = {}
        jitted = jitlib.jit(lambda *a, fn=fn: fn(np, *a), backend="cpu")
        callables["jitlib"] = jitted
        callables["numpy"] = lambda *a, fn=fn: fn(np, *a)
        if jax is not None and name not in ISOLATED:
            callables["jax"] = jax.jit(lambda *a, fn=fn: fn(jnp, *a))
        if numexpr_fns and name in numexpr_fns:
            callables["numexpr"] = numexpr_fns[name]
        if numba_fns and name in numba_fns:
            callables["numba"] = numba_fns[name]

        for tool, f in callables.items():
            t_first, out = first_call(f, arrays)
            out = np.asarray(out)
            err = _max_rel_err(out, ref)
            rec = dict(first_ms=t_first * 1e3, dtype=str(out.dtype), max_rel_err=err)
            if name == "tiny":
                rec["dispatch_us"] = dispatch_us(f, arrays)
                rec["median_ms"] = rec["dispatch_us"] / 1e3
            else:
                beside = triad_arrays.beside if name in MEMORY_BOUND else None
                times, triads = time_calls(f, arrays, args.budget, args.min_reps,
                                           args.max_reps, beside, keep)
                med = _add_timing(rec, times, row["min_bytes"])
                if triads:
                    best_triad_s = min(best_triad_s, min(triads))
                    rec.update(triad_beside_median_ms=statistics.median(triads) * 1e3,
                               triad_beside_best_ms=min(triads) * 1e3,
                               pct_triad=100 * paired_fraction(times, triads, row["min_bytes"],
                                                               triad_arrays.bytes))
                if flops:
                    rec["gflops"] = flops / med / 1e9
            row["tools"][tool] = rec
            extra = f"{rec.get('dispatch_us', 0):.1f} us/call" if name == "tiny" else \
                f"{rec['median_ms']:.2f} ms (x{rec['reps']})"
            if "pct_triad" in rec:
                extra += (f"  {rec['pct_triad']:.0f}% of the triad beside it "
                          f"(triad median {rec['triad_beside_median_ms']:.2f} ms)")
            print(f"  {tool:8s} first {rec['first_ms']:9.1f} ms  {extra}  "
                  f"err {err:.1e} {rec['dtype']}", flush=True)

        if jax is not None and name in ISOLATED:
            rec, why = jax_in_child(name, args)
            if rec is None:
                notes.append(f"jax on {name}: {why}")
                print(f"  jax      {why}", flush=True)
            else:
                _add_timing(rec, rec.pop("times"), row["min_bytes"])
                row["tools"]["jax"] = rec
                print(f"  jax      first {rec['first_ms']:9.1f} ms  {rec['median_ms']:.2f} ms "
                      f"(x{rec['reps']}, own process)  err {rec['max_rel_err']:.1e} "
                      f"{rec['dtype']}", flush=True)

        entries = [jitted._cache.get(k) for k in jitted._cache.keys()]
        fallbacks = {}
        for entry in entries:
            fallbacks.update(getattr(entry.executable, "fallbacks", {}) or {})
        row["jitlib_fallbacks"] = fallbacks
        row["jitlib_native"] = [n for e in entries
                                for n in getattr(e.executable, "native", [])]
        if fallbacks:
            print(f"  jitlib interpreter fallbacks: {fallbacks}")
        jt = row["tools"]["jitlib"]["median_ms"]
        row["ratio_vs_jitlib"] = {t: r["median_ms"] / jt for t, r in row["tools"].items()
                                  if t != "jitlib"}
        rows[name] = row

    # the strict figure: every median against the best triad of the whole run
    triad["best_in_run_gbs"] = triad_arrays.bytes / best_triad_s / 1e9
    for row in rows.values():
        for rec in row["tools"].values():
            if "gbs" in rec:
                rec["pct_best_triad"] = 100 * rec["gbs"] / triad["best_in_run_gbs"]

    mb = [n for n in MEMORY_BOUND if n in rows]
    geo = None
    if mb:
        geo = math.exp(sum(math.log(rows[n]["ratio_vs_jitlib"]["numpy"]) for n in mb) / len(mb))
    if jax is not None:
        notes.append(f"jax_enable_x64 = {bool(jax.config.jax_enable_x64)} at end of run; "
                     "jitlib.backends.jax imported: "
                     f"{'jitlib.backends.jax' in sys.modules}")
    from jitlib.backends.llvm import blas_library, parallel
    notes.append(f"jitlib cpu backend: {parallel.num_threads()} threads for kernels over 1 MiB; "
                 "jax/XLA, numexpr, numba (2 threads) and NumPy's BLAS may use both cores too")
    notes.append(f"jitlib's float products: {blas_library.describe()}")

    md = render(rows, triad, geo, machine_info(), notes, args.scale)
    print()
    print(md)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    result = dict(machine=machine_info(), scale=args.scale, budget_s=args.budget,
                  triad=triad, workloads=rows, geomean_speedup_vs_numpy_memory_bound=geo,
                  memory_bound=list(mb), notes=notes)
    out_path.write_text(json.dumps(result, indent=2))
    out_path.with_suffix(".md").write_text(md + "\n")
    print(f"wrote {out_path} and {out_path.with_suffix('.md')}")


def _f(v, fmt):
    return "-" if v is None else format(v, fmt)


def _fallbacks(fallbacks):
    """Kernels the interpreter runs: each reason once, with its kernel or kernel count."""
    by_reason = collections.defaultdict(list)
    for name, why in fallbacks.items():
        by_reason[why].append(name)
    return "; ".join(f"{names[0]}: {why}" if len(names) == 1 else
                     f"{len(names)} kernels: {why}" for why, names in by_reason.items()) or "none"


def render(rows, triad, geo, info, notes, scale):
    tools = ["jitlib", "numpy", "jax", "numexpr", "numba"]
    lines = [f"CPU: {info['cpu']}, {info['cores']} cores; numpy {info['numpy']}, jax "
             f"{info['jax']}, llvmlite {info['llvmlite']}, numexpr {info['numexpr']}, "
             f"numba {info['numba']}; {info['date']}; scale {scale}", ""]
    tri = ", ".join(f"{k} {triad[k]['gbs_best']:.1f} GB/s"
                    for k in ("numba_parallel", "numpy_out") if k in triad)
    lines.append(f"Triad `a = b + s*c` (float32, 2^24, 3 arrays counted), best of 20 at the "
                 f"start: {tri}; best anywhere in the run {triad['best_in_run_gbs']:.1f} GB/s. "
                 "\"% triad\" (memory-bound rows): median over the timed calls of the call's "
                 "GB/s against the numba triad run just before it; \"% best\": the median "
                 "call against the best triad of the run.")
    lines.append("")
    lines.append("Median ms per call (ratio = peer time / jitlib time; >1 means jitlib faster).")
    lines.append("")
    hdr = ["workload"] + [f"{t} ms" for t in tools] + \
        [f"x {t}" for t in tools[1:]] + \
        ["jitlib GB/s (% triad)", "jitlib % best", "triad beside ms", "best peer GB/s (% triad)",
         "jitlib GFLOP/s", "jax GFLOP/s",
         "jitlib 1st ms", "jax 1st ms", "fallbacks"]
    lines.append("| " + " | ".join(hdr) + " |")
    lines.append("|" + "---|" * len(hdr))
    for name, row in rows.items():
        if name == "tiny":
            continue
        T = row["tools"]
        cells = [name]
        cells += [_f(T[t]["median_ms"], ".2f") if t in T else "-" for t in tools]
        cells += [_f(row["ratio_vs_jitlib"].get(t), ".2f") for t in tools[1:]]
        j = T["jitlib"]
        cells.append(f"{j['gbs']:.1f}" + (f" ({j['pct_triad']:.0f}%)" if "pct_triad" in j else ""))
        cells.append(f"{j['pct_best_triad']:.0f}%")
        cells.append(_f(j.get("triad_beside_median_ms"), ".2f"))
        peers = [(T[t]["gbs"], t) for t in T if t != "jitlib"]
        bp = max(peers) if peers else None
        bp_pct = f" ({T[bp[1]]['pct_triad']:.0f}%)" if bp and "pct_triad" in T[bp[1]] else ""
        cells.append(f"{bp[0]:.1f} {bp[1]}{bp_pct}" if bp else "-")
        cells.append(_f(j.get("gflops"), ".1f"))
        cells.append(_f(T.get("jax", {}).get("gflops"), ".1f"))
        cells.append(f"{j['first_ms']:.0f}")
        cells.append(_f(T.get("jax", {}).get("first_ms"), ".0f"))
        cells.append(_fallbacks(row["jitlib_fallbacks"]))
        lines.append("| " + " | ".join(cells) + " |")
    if "tiny" in rows:
        T = rows["tiny"]["tools"]
        lines.append("")
        lines.append("Dispatch (`tiny`, x + 1.0 on 4 floats), µs per call: " + ", ".join(
            f"{t} {T[t]['dispatch_us']:.1f}" for t in T) + ".")
    if geo is not None:
        lines.append("")
        lines.append(f"Geometric-mean speedup of jitlib over NumPy on {', '.join(MEMORY_BOUND)}: "
                     f"{geo:.2f}x.")
    errs = [f"{n}/{t} {r['max_rel_err']:.1e}" for n, row in rows.items()
            for t, r in row["tools"].items() if r["max_rel_err"] > 1e-3]
    lines.append("")
    lines.append("Max relative error vs eager NumPy above 1e-3: " + (", ".join(errs) or "none") + ".")
    for n in notes:
        lines.append(f"- {n}")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
