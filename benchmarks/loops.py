"""Loops side by side: jitlib (plain Python loop and fori_loop/scan), jax.jit with
lax.fori_loop/lax.scan, and eager NumPy, on the workloads of `loop_workloads.py`.

    python -m benchmarks.loops [--quick] [--gpu] [--full] [--out DIR] [--only NAME ...]

For each workload and trip count (10 and 1000, LU: 10 and 63, its row count of a 64x64
matrix):

- first call: trace + compile + one run, each measured in a **fresh Python process**
  (imports done before the clock starts) with `JITLIB_CACHE_DIR` (and Triton's
  `TRITON_CACHE_DIR`) set to an empty temporary directory, so neither jitlib's in-memory
  nor its on-disk cache, nor Triton's or XLA's, can serve it. jitlib is measured twice: the plain Python loop (which it unrolls) and
  the fori_loop/scan form (one `while` op); jax once, with lax.fori_loop/lax.scan.
- warm: the median of repeated calls at the larger trip count, after the first call, in
  the same child process (one warm-up call, then calls until `--budget` seconds, 3 to 20
  calls). NumPy is the plain loop run eagerly.
- every tool's output at the larger trip count is compared with eager NumPy's (max
  relative error, float32 throughout).

The plain loop is traced once per trip, so its compile time grows with the trip count:
plain loops above `--plain-max-trips` (default 1000) are skipped unless `--full`, and
every child stops after `--timeout` seconds (recorded as a timeout). `--quick` runs 2 and
3 trips at tiny sizes: a smoke run, not a measurement.

Targets (issue 22): first call at 1000 trips <= 2x the first call at 10 trips (plain
Python loop); jitlib's first call <= jax.jit's; warm run time no slower than jax.jit, and
>= 5x faster than eager NumPy on the 256x256 stencil. The markdown says met / not met.

Writes `<out>/loops-<cpu|gpu>-<date>.json` and `.md` (default out: benchmarks/results).
"""
import argparse
import datetime
import json
import os
import pathlib
import platform
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

TOOLS = (("jitlib", "loop"), ("jitlib", "plain"), ("jax", "loop"), ("numpy", "plain"))
QUICK_SIZES = {"jacobi_256": dict(n=16), "nbody_64": dict(n=8), "rnn_scan": dict(hidden=8,
                                                                                inputs=4)}


# ---------------------------------------------------------------------------- child

def _leaves(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _block(out):
    for leaf in _leaves(out):
        if hasattr(leaf, "block_until_ready"):
            leaf.block_until_ready()
    return out


def _callable(spec):
    """The function a child times, and its arguments."""
    from benchmarks import loop_workloads as LW
    w = LW.WORKLOADS[spec["workload"]]
    sizes = QUICK_SIZES.get(w.name, {}) if spec["quick"] else {}
    args = w.make(np.random.default_rng(0), spec["trips"], **sizes)
    tool, form = spec["tool"], spec["form"]
    dynamic = [i for i in range(len(args)) if i not in w.static]
    if tool == "numpy":
        return w.plain, args
    if tool == "jax":
        import jax
        if not spec["gpu"]:
            jax.config.update("jax_platforms", "cpu")
        import jax.numpy as jnp
        f = jax.jit(lambda *a: w.jax(jnp, jax.lax, *a), static_argnums=w.static)
        args = tuple(jax.device_put(a) if i in dynamic else a for i, a in enumerate(args))
        return f, args
    import jitlib
    backend = "gpu" if spec["gpu"] else "cpu"
    f = jitlib.jit(w.loop if form == "loop" else w.plain, static_argnums=w.static,
                   backend=backend)
    if spec["gpu"]:
        args = tuple(jitlib.device_put(a) if i in dynamic else a for i, a in enumerate(args))
    return f, args


def child(spec, make=None):
    """Time one (workload, tool, form, trips) in this fresh process; print one JSON line.
    `make(spec) -> (f, args)` (default: this module's workloads) lets other benchmarks
    time their own programs the same way."""
    f, args = (make or _callable)(spec)
    t0 = time.perf_counter()
    out = _block(f(*args))
    rec = dict(first_s=time.perf_counter() - t0)
    if spec["warm"]:
        times, spent = [], 0.0
        _block(f(*args))
        while len(times) < 20 and (len(times) < 3 or spent < spec["budget"]):
            t0 = time.perf_counter()
            _block(f(*args))
            times.append(time.perf_counter() - t0)
            spent += times[-1]
        rec.update(warm_s=statistics.median(times), reps=len(times))
    if spec.get("save"):
        np.savez(spec["save"], *[np.asarray(x) for x in _leaves(out)])
    print("RESULT " + json.dumps(rec), flush=True)


def run_child(spec, timeout, module="benchmarks.loops"):
    """Run `module`'s `child(spec)` in a fresh interpreter with an empty jitlib cache
    directory."""
    with tempfile.TemporaryDirectory(prefix="jitlib-loops-") as cache:
        # Triton's own kernel cache too: a GPU first call compiles every kernel
        env = dict(os.environ, JITLIB_CACHE_DIR=cache, XLA_PYTHON_CLIENT_PREALLOCATE="false",
                   TRITON_CACHE_DIR=os.path.join(cache, "triton-own"))
        env.pop("JITLIB_LOG", None)
        env.pop("PYTHONDONTWRITEBYTECODE", None)   # see byte_compile_jitlib
        cmd = [sys.executable, "-m", module, "--child", json.dumps(spec)]
        try:
            proc = subprocess.run(cmd, env=env, capture_output=True, text=True,
                                  timeout=timeout)
        except subprocess.TimeoutExpired:
            return dict(error=f"timeout after {timeout:.0f} s")
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
    return dict(error=f"exit {proc.returncode}: " + " / ".join(tail))


# ---------------------------------------------------------------------------- parent

def byte_compile_jitlib():
    """Write jitlib's .pyc files, as `pip install` does, so that a child's first call does
    not compile the modules it imports lazily from source (some hosts set
    PYTHONDONTWRITEBYTECODE: about 55 ms of a cpu first call on the Intel VM)."""
    import compileall
    import jitlib
    compileall.compile_dir(os.path.dirname(jitlib.__file__), quiet=2)


def machine_info(gpu):
    info = dict(python=platform.python_version(), platform=platform.platform(),
                numpy=np.__version__, date=datetime.datetime.now().isoformat(timespec="seconds"))
    try:
        lscpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        fields = dict(line.split(":", 1) for line in lscpu.splitlines() if ":" in line)
        info["cpu"] = fields.get("Model name", "?").strip()
        info["cores"] = int(fields.get("CPU(s)", os.cpu_count() or 0))
    except (OSError, ValueError):
        info["cpu"], info["cores"] = platform.processor() or "?", os.cpu_count()
    for mod in ("jax", "jaxlib", "llvmlite", "triton"):
        try:
            info[mod] = __import__(mod).__version__
        except Exception:   # noqa: BLE001 - a missing peer is a note, not a failure
            info[mod] = None
    if gpu:
        try:
            info["gpu"] = subprocess.run(
                ["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                capture_output=True, text=True).stdout.strip()
        except OSError:
            info["gpu"] = "?"
    return info


def max_rel_err(got, want):
    errs = []
    for g, w in zip(got, want):
        scale = max(1e-30, float(np.max(np.abs(w)))) if w.size else 1.0
        errs.append(float(np.max(np.abs(g.astype(np.float64) - w))) / scale if w.size else 0.0)
    return max(errs)


def measure(w, args, notes):
    """All the children of one workload: {f"{tool}/{form}": {trips: record}}."""
    rows = {}
    small, large = (2, 3) if args.quick else w.trips
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="jitlib-loops-out-"))
    for tool, form in TOOLS:
        key = f"{tool}/{form}"
        rows[key] = {}
        for trips in ((large,) if tool == "numpy" else (small, large)):
            if form == "plain" and tool == "jitlib" and trips > args.plain_max_trips \
                    and not args.full:
                rows[key][trips] = dict(error=f"skipped: plain loop over "
                                              f"{args.plain_max_trips} trips (--full runs it)")
                continue
            save = str(tmp / f"{tool}-{form}-{trips}.npz") if trips == large else None
            spec = dict(workload=w.name, tool=tool, form=form, trips=trips, quick=args.quick,
                        gpu=args.gpu, warm=trips == large, budget=args.budget, save=save)
            rec = run_child(spec, args.timeout)
            if save and os.path.exists(save):
                rec["outputs"] = save
            rows[key][trips] = rec
            shown = rec.get("error") or (f"first {rec['first_s'] * 1e3:9.1f} ms" + (
                f"  warm {rec['warm_s'] * 1e3:9.3f} ms (x{rec['reps']})" if "warm_s" in rec
                else ""))
            print(f"  {key:13s} {trips:5d} trips  {shown}", flush=True)
    ref = rows["numpy/plain"][large].get("outputs")
    if ref:
        want = [np.asarray(v, np.float64) for v in np.load(ref).values()]
        for key, per in rows.items():
            rec = per.get(large, {})
            if "outputs" in rec:
                rec["max_rel_err"] = max_rel_err(list(np.load(rec["outputs"]).values()), want)
    for per in rows.values():
        for rec in per.values():
            rec.pop("outputs", None)
    return dict(trips=[small, large], note=w.note, tools=rows)


def _get(row, key, trips, field):
    return row["tools"].get(key, {}).get(trips, {}).get(field)


def targets(name, row):
    """[(target, figure, met)] for one workload; met is None where a figure is missing."""
    small, large = row["trips"]
    out = []
    p10, p1k = (_get(row, "jitlib/plain", t, "first_s") for t in (small, large))
    if p10 is not None and p1k is not None:
        out.append((f"plain loop first call at {large} <= 2x at {small} trips",
                    f"{p1k / p10:.1f}x", p1k <= 2 * p10))
    elif p10 is not None and "timeout" in row["tools"]["jitlib/plain"][large].get("error", ""):
        # a plain loop still compiling at the timeout is past any 2x of the small count
        out.append((f"plain loop first call at {large} <= 2x at {small} trips",
                    row["tools"]["jitlib/plain"][large]["error"], False))
    else:
        out.append((f"plain loop first call at {large} <= 2x at {small} trips",
                    "not measured", None))
    jx = _get(row, "jax/loop", large, "first_s")
    for form in ("loop", "plain"):
        j = _get(row, f"jitlib/{form}", large, "first_s")
        ok = None if j is None or jx is None else j <= jx
        fig = "-" if ok is None else f"{j * 1e3:.0f} vs {jx * 1e3:.0f} ms"
        out.append((f"jitlib {form} first call <= jax.jit's ({large} trips)", fig, ok))
    jw, xw, nw = (_get(row, k, large, "warm_s") for k in ("jitlib/loop", "jax/loop",
                                                          "numpy/plain"))
    ok = None if jw is None or xw is None else jw <= xw
    out.append(("jitlib loop warm <= jax.jit's", "-" if ok is None else
                f"{jw * 1e3:.2f} vs {xw * 1e3:.2f} ms", ok))
    if name == "jacobi_256":
        ok = None if jw is None or nw is None else nw >= 5 * jw
        out.append(("jitlib loop warm >= 5x faster than NumPy", "-" if ok is None else
                    f"{nw / jw:.1f}x", ok))
    return out


def _ms(v, fmt=".1f"):
    return "-" if v is None else format(v * 1e3, fmt)


def render(rows, info, args, notes):
    kind = "gpu" if args.gpu else "cpu"
    host = f"{info['cpu']}, {info['cores']} cores" + (f"; GPU {info.get('gpu')}" if args.gpu
                                                     else "")
    lines = [f"# Loops: jitlib ({kind}) vs jax.jit vs eager NumPy", "",
             f"Host: {host}; numpy {info['numpy']}, jax {info['jax']}, llvmlite "
             f"{info['llvmlite']}; {info['date']}" + ("; **--quick sizes**" if args.quick
                                                     else ""), "",
             "First call = trace + compile + one run, each in a fresh Python process with "
             "an empty JITLIB_CACHE_DIR (imports not counted; jitlib's modules byte-compiled "
             "first, as pip does). Warm = median of repeated "
             f"calls (budget {args.budget} s, 3-20 calls) at the larger trip count. Timings "
             "are from a shared machine and noisy: read them as rough.", "",
             "| workload | trips | jitlib plain 1st ms | jitlib loop 1st ms | jax 1st ms | "
             "jitlib loop warm ms | jitlib plain warm ms | jax warm ms | numpy ms | "
             "jax / jitlib | numpy / jitlib | max rel err (loop, plain, jax) |",
             "|" + "---|" * 12]
    for name, row in rows.items():
        for trips in row["trips"]:
            g = lambda k, f: _get(row, k, trips, f)   # noqa: E731
            jw, xw, nw = g("jitlib/loop", "warm_s"), g("jax/loop", "warm_s"), \
                g("numpy/plain", "warm_s")
            err = row["tools"]["jitlib/plain"].get(trips, {}).get("error", "")
            plain_first = _ms(g("jitlib/plain", "first_s"), ".0f") if not err else (
                "skipped" if err.startswith("skipped") else err.split(":")[0])
            errs = [g(k, "max_rel_err") for k in ("jitlib/loop", "jitlib/plain", "jax/loop")]
            cells = [name, str(trips), plain_first, _ms(g("jitlib/loop", "first_s"), ".0f"),
                     _ms(g("jax/loop", "first_s"), ".0f"), _ms(jw, ".3f"),
                     _ms(g("jitlib/plain", "warm_s"), ".3f"), _ms(xw, ".3f"), _ms(nw, ".3f"),
                     "-" if None in (jw, xw) else f"{xw / jw:.2f}",
                     "-" if None in (jw, nw) else f"{nw / jw:.2f}",
                     ", ".join("-" if e is None else f"{e:.0e}" for e in errs)
                     if trips == row["trips"][1] else ""]
            lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "Ratios > 1: jitlib (fori_loop/scan form) faster. Notes per workload: " +
              "; ".join(f"{n}: {r['note']}" for n, r in rows.items()) + ".", "",
              "## Targets (issue 22)", "", "| workload | target | figure | met |",
              "|---|---|---|---|"]
    for name, row in rows.items():
        for target, fig, ok in targets(name, row):
            met = "n/a" if ok is None else "met" if ok else "**not met**"
            lines.append(f"| {name} | {target} | {fig} | {met} |")
    errors = [f"{n} {k} {t}: {r['error']}" for n, row in rows.items()
              for k, per in row["tools"].items() for t, r in per.items()
              if "error" in r and not r["error"].startswith("skipped")]
    if errors or notes:
        lines += [""] + [f"- {e}" for e in notes + errors]
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m benchmarks.loops",
                                description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="tiny sizes and 2-3 trips (smoke)")
    p.add_argument("--gpu", action="store_true", help="jitlib's gpu backend, jax on the GPU")
    p.add_argument("--full", action="store_true", help="also plain loops over the cap")
    p.add_argument("--plain-max-trips", type=int, default=1000)
    p.add_argument("--timeout", type=float, default=300.0, help="seconds per child process")
    p.add_argument("--budget", type=float, default=2.0, help="seconds of warm calls per tool")
    p.add_argument("--out", default="benchmarks/results")
    p.add_argument("--only", nargs="*", default=None)
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        return child(json.loads(args.child))
    if args.quick:
        args.budget = min(args.budget, 0.05)

    from benchmarks import loop_workloads as LW
    notes = []
    try:
        import jax  # noqa: F401 - only to say in the output that it is missing
    except ImportError:
        notes.append("jax not installed: its columns are empty")
    info = machine_info(args.gpu)
    byte_compile_jitlib()
    rows = {}
    for name in args.only or list(LW.WORKLOADS):
        w = LW.WORKLOADS[name]
        print(f"{name}: {w.note}", flush=True)
        rows[name] = measure(w, args, notes)

    md = render(rows, info, args, notes)
    print()
    print(md)
    kind = "gpu" if args.gpu else "cpu"
    out = pathlib.Path(args.out) / f"loops-{kind}-{datetime.date.today().isoformat()}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    result = dict(machine=info, kind=kind, quick=args.quick, full=args.full,
                  plain_max_trips=args.plain_max_trips, timeout_s=args.timeout,
                  budget_s=args.budget, first_call="fresh process, empty JITLIB_CACHE_DIR",
                  workloads=rows, notes=notes,
                  targets={n: [dict(target=t, figure=f, met=m) for t, f, m in targets(n, r)]
                           for n, r in rows.items()})
    out.write_text(json.dumps(result, indent=2))
    out.with_suffix(".md").write_text(md + "\n")
    print(f"wrote {out} and {out.with_suffix('.md')}")
    return result


if __name__ == "__main__":
    main()
