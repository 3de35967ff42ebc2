"""Sweep launch configurations of the GPU backend's kernels for the benchmark workloads.

    PYTHONPATH=$PWD python tools/gpu_tune_sweep.py [--rows layernorm "mlp bf16" ...]
        [--jobs 14] [--budget-s 180] [--out sweep.json]

For every kernel jitlib generates for a row of `benchmarks/gpu.py` (scale "large"), this
compiles a grid of configs far wider than the autotuner's candidates (in parallel worker
processes: ahead-of-time compiles need no GPU), then times each on the GPU
(CUDA events around batches of launches that rotate through input copies larger than
L2; the median batch), checks each result
against the heuristic config's, and prints per kernel: the heuristic, the best the
autotuner's candidates reach, and the best of the sweep. This is how the candidate lists
and heuristics in jitlib/backends/triton/configs.py were chosen; rerun it after changing
the kernels. "What-if" source variants (e.g. exp through ex2.approx) say where a
kernel's time goes; they are measurements, not options of the backend.
"""
import argparse
import concurrent.futures as cf
import dataclasses
import json
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

DEFAULT_ROWS = ("logsumexp_rows", "layernorm", "softmax_rows", "attention", "attention bf16",
                "mlp", "mlp bf16")

def _early_row_loads(source):
    """A reduction kernel with its row-independent loads (layernorm's g and b, indexed
    by `r` alone) moved up to just after `r` is defined, before the reductions."""
    lines = source.split("\n")
    early = [l for l in lines if re.match(r"\s+ld\d+ = tl\.load\(in\d+ \+ r, ", l)]
    rest = [l for l in lines if l not in early]
    at = next(i for i, l in enumerate(rest) if re.match(r"\s+r = tl\.arange", l)) + 1
    return "\n".join(rest[:at] + early + rest[at:])


def _streaming(source):
    """The row tile's loads marked evict_first and its stores .cs (streamed: read or
    written once), the row-independent loads (indexed by `r` alone) left as they are."""
    out = []
    for l in source.split("\n"):
        if "tl.load(" in l and " + r, " not in l:
            l = l[:l.rindex(")")] + ', eviction_policy="evict_first")' + l[l.rindex(")") + 1:]
        elif "tl.store(" in l:
            l = l[:l.rindex(")")] + ', cache_modifier=".cs")' + l[l.rindex(")") + 1:]
        out.append(l)
    return "\n".join(out)


def _int32_index(source):
    """Offsets in int32 (they fit: these outputs are under 2^31 elements) instead of int64."""
    source = re.sub(r"tl\.program_id\(0\)\.to\(tl\.int64\) \* (BLOCK|ROWS)",
                    r"tl.program_id(0) * \1", source)
    return re.sub(r"(r = tl\.arange\(0, \d+\)\[None, :\])\.to\(tl\.int64\)", r"\1", source)


def _unmasked(source):
    """A loop kernel's bound folded to a compile-time true when BLOCK tiles the output."""
    return re.sub(r"(mask\d+) = i < (\d+)$", r"\1 = (i < \2) | (\2 % BLOCK == 0)", source,
                  flags=re.M)


def _recheck_line():
    from jitlib.backends.triton.f32_products import recheck
    return f"if {recheck('acc')}:"


# source variants timed beside the generated kernel: (name, kind, old text, new text or
# a function editing the source; `old` must be in the source for the variant to apply)
WHAT_IF = [("fast_exp", "reduction", "libdevice.exp(", "tl.exp("),
           # exp as ex2.approx of x * log2(e) (what tl.exp is for f32) in fused attention
           ("fast_exp", "attention", "libdevice.exp(", "tl.exp("),
           ("all_ieee", "attention", 'input_precision="tf32x3"', 'input_precision="ieee"'),
           # the pass over k and v that guards tf32x3 in attention, skipped: a
           # constant-true test lets Triton drop the pass and the IEEE loop
           ("no_pass", "attention", "if bad == 0:", "if True:"),
           # the dot kernels' test of the tf32x3 accumulator (f32_products.recheck), never
           # true: its cost is the tile reduction and the branch
           ("no_recheck", "dot", _recheck_line(), "if tl.program_id(0) < 0:"),
           # p @ v of bf16 attention without the low halves' product (not within the
           # tolerance: it says what the second product costs)
           ("no_p_lo", "attention", "acc_lo = tl.dot(", "acc_lo = acc_lo if True else tl.dot("),
           # IEEE division as the approximate div.full.f32: what the exact quotient costs
           ("fast_div", "reduction", "tl.div_rn(", "tl.fdiv("),
           # layernorm's g and b loaded before the reductions; the row streamed past L2
           ("early_row_loads", "reduction", "tl.load(in1 + r, ", _early_row_loads),
           ("streaming", "reduction", "tl.store(", _streaming),
           ("no_nan_max", "reduction", "tl.PropagateNan.ALL", "tl.PropagateNan.NONE"),
           ("load_cg", "reduction", ", other=0)", ", other=0, cache_modifier=\".cg\")"),
           # 32-bit offsets (4 instructions fewer per address); a loop's mask folded away
           ("int32_index", "reduction", ".to(tl.int64)", _int32_index),
           ("int32_index", "loop", ".to(tl.int64)", _int32_index),
           ("unmasked", "loop", " = i < ", _unmasked),
           ("int32_unmasked", "loop", " = i < ", lambda s: _unmasked(_int32_index(s)))]


# ----------------------------------------------------------------------- the kernels

_kernel_cache = {}


def row_kernels(row):
    """The TritonKernels jitlib generates for benchmark row `row`, in program order."""
    if row not in _kernel_cache:
        import jitlib
        from benchmarks import gpu as G
        from benchmarks import workloads as W
        from jitlib.backends.triton import kernels
        from jitlib.backends.triton.executable import _attention_kernels
        from jitlib.backends.triton.source import Unsupported
        from jitlib.fusion import optimize
        from jitlib.hlo.ops import Op
        (_, name, dtype), = [r for r in G.rows([row]) if r[0] == row]
        arrays = G.row_inputs(name, dtype, "large")
        module = optimize(jitlib.make_ir(lambda *a: W.WORKLOADS[name](np, *a))(*arrays))
        # the executable's plan: an attention chain is one kernel in place of three
        fused, absorbed = {}, set()
        for chain, generated in _attention_kernels(module).items():
            fused[chain.output] = generated
            absorbed |= {chain.scores, chain.softmax}
        out = []
        for instr in module.instructions:
            if instr.op is not Op.FUSION or instr in absorbed:
                continue
            operands = instr.operands
            if instr in fused:
                kernel, operands = fused[instr].kernel, fused[instr].operands
            else:
                try:
                    kernel = kernels.render(instr)
                except Unsupported:
                    continue
            kernel.input_types = [(o.shape, o.dtype) for o in operands]
            out.append(kernel)
        _kernel_cache[row] = out
    return _kernel_cache[row]


def variant(kernel, what_if):
    """`kernel` with one what-if edit of its source (None: the kernel itself)."""
    if what_if is None:
        return kernel
    _, _, old, new = next(w for w in WHAT_IF if w[0] == what_if and w[1] == kernel.kind)
    source = new(kernel.source) if callable(new) else kernel.source.replace(old, new)
    return dataclasses.replace(kernel, source=source)


def what_ifs(kernel):
    return [w[0] for w in WHAT_IF if w[1] == kernel.kind and w[2] in kernel.source]


# ----------------------------------------------------------------------- the configs

def sweep_configs(kernel):
    from jitlib.backends.triton.configs import Config, candidates, next_pow2
    p = kernel.problem
    out = list(candidates(kernel))
    if kernel.kind == "loop":   # elements per thread from 2 (torch.compile's) to 64
        for block in (256, 512, 1024, 2048, 4096, 8192, 16384):
            for warps in (1, 2, 4, 8, 16):
                if 2 <= block // (32 * warps) <= 64:
                    out.append(Config({"BLOCK": block}, warps))
    elif kernel.kind == "reduction":
        for rows in (1, 2, 4, 8):
            if rows * p["block_r"] > 16384 or rows > next_pow2(p["rows"]):
                continue
            for warps in (2, 4, 8, 16):
                if not 128 <= rows * p["block_r"] // warps <= 2048:   # 4-64 per thread
                    continue
                out.append(Config({"ROWS": rows}, warps))
                # registers capped so more programs fit an SM (65536 registers: 8 programs
                # of 8 warps at 32 a thread, 5 at 48); spills show as LOCAL in the usage
                for cap in (32, 40):
                    if rows * p["block_r"] // (32 * warps) <= cap // 2:
                        out.append(Config({"ROWS": rows}, warps, maxnreg=cap))
    elif kernel.kind == "attention":
        fit = lambda n: max(16, next_pow2(n))   # noqa: E731
        for bm in (32, 64, 128):
            for bn in (32, 64, 128):
                for warps, stages in ((4, 2), (4, 3), (8, 2), (8, 3)):
                    out.append(Config({"BM": min(bm, fit(p["M"])), "BN": min(bn, fit(p["N"]))},
                                      warps, stages))
    elif kernel.kind == "dot":
        fit = lambda n: max(16, next_pow2(n))   # noqa: E731
        if p.get("mode") == "either":   # f32 x f32 under "auto": both loops, each a grid
            for flag, mode in ((1, "tf32x3"), (0, None)):
                grid = sweep_configs(dataclasses.replace(
                    kernel, problem={**p, "mode": mode}, config=_without_flag(kernel.config)))
                out += [Config({**c.constexprs, "TF32X3": flag}, c.num_warps, c.num_stages)
                        for c in grid]
            tiles, plans = [], []
        elif p.get("mode") in ("tf32x3", "bf16x2"):   # f32 tiles on the tensor cores
            tiles = [(128, 128, 32), (128, 256, 32), (256, 128, 32), (128, 128, 64),
                     (64, 256, 32), (128, 64, 32), (64, 128, 32), (128, 128, 16),
                     (64, 64, 32)]
            plans = [(4, 3), (8, 3), (8, 4), (4, 4)]
        elif p["itemsize"] == 2:
            tiles = [(128, 256, 64), (256, 128, 64), (128, 128, 64), (128, 128, 128),
                     (64, 128, 64), (128, 64, 64), (64, 256, 64), (64, 64, 64)]
            plans = [(4, 3), (4, 4), (8, 3), (8, 4), (8, 5)]
        else:
            tiles = [(64, 64, 32), (128, 64, 32), (64, 128, 32), (128, 128, 32),
                     (128, 128, 16), (256, 64, 16), (64, 256, 16), (256, 128, 16),
                     (128, 256, 16), (128, 64, 16), (64, 128, 16), (32, 64, 32)]
            plans = [(4, 2), (4, 3), (8, 2), (8, 3)]
        for bm, bn, bk in tiles:
            c = (min(bm, fit(p["M"])), min(bn, fit(p["N"])), min(bk, fit(p["K"])))
            for warps, stages in plans:
                out.append(Config({"BM": c[0], "BN": c[1], "BK": c[2]}, warps, stages))
    seen, unique = set(), []
    for c in out:
        if c.key() not in seen:
            seen.add(c.key())
            unique.append(c)
    return unique


def _without_flag(config):
    from jitlib.backends.triton.configs import Config
    rest = {k: v for k, v in config.constexprs.items() if k != "TF32X3"}
    return Config(rest, config.num_warps, config.num_stages)


def compile_key(config):
    return config.key()


# ----------------------------------------------------------------------- compiling

def _compile_one(row, index, what_if, config):
    """Worker: compile one (kernel, variant, config) ahead of time; resource usage."""
    import triton
    from jitlib.backends.triton import compiler
    kernel = variant(row_kernels(row)[index], what_if)
    t0 = time.perf_counter()
    try:
        ck = compiler.compile_for(kernel, config=config)
    except Exception as e:   # noqa: BLE001 - e.g. out of shared memory: reported, skipped
        return dict(error=f"{type(e).__name__}: {str(e)[:200]}")
    usage = ""
    cuobjdump = os.path.join(os.path.dirname(triton.__file__), "backends/nvidia/bin/cuobjdump")
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(ck.asm["cubin"])
        f.flush()
        try:
            text = subprocess.run([cuobjdump, "--dump-resource-usage", f.name],
                                  capture_output=True, text=True, timeout=30).stdout
            usage = " ".join(w for line in text.splitlines() if "REG:" in line
                             for w in line.split() if w.startswith(("REG:", "LOCAL:")))
        except Exception:   # noqa: BLE001 - usage is informative only
            pass
    return dict(compile_s=time.perf_counter() - t0, usage=usage, smem=ck.metadata.shared)


# ----------------------------------------------------------------------- timing

def timed(row, index, what_if, config, torch, buffers, reference):
    """(median µs per launch, error against `reference`, outputs when no reference).

    `buffers` is a list of input sets (rotated so L2 holds none of them between
    launches, as benchmarks/gpu.py does) followed by the outputs; each batch of launches
    is timed with CUDA events and the median batch mean is taken. (do_bench's L2 flush
    leaves the cache full of dirty lines, whose write-backs slowed read-only kernels.)"""
    from jitlib.backends.triton import compiler
    kernel = variant(row_kernels(row)[index], what_if)
    ck = compiler.compile_for(kernel, config=config)       # from Triton's cache
    grid = (tuple(kernel.grid(config)) + (1, 1))[:3]
    fn = compiler.jit_function(kernel)
    n_ptr = len(kernel.inputs) + len(kernel.outputs)
    tail = [config.constexprs[n] for n in fn.arg_names[n_ptr:]]
    input_sets, outs = buffers
    arg_sets = [[b.data_ptr() for b in ins] + [o.data_ptr() for o in outs] + tail
                for ins in input_sets]
    run = ck[grid]
    for o in outs:
        o.fill_(float("nan")) if o.dtype.is_floating_point else o.fill_(-1)
    run(*arg_sets[0])
    torch.cuda.synchronize()
    err = None
    if reference is not None:
        err = max(float(((o.double() - r.double()).abs().max() /
                         r.double().abs().max().clamp_min(1e-30)).nan_to_num(1e30))
                  for o, r in zip(outs, reference))
    per_batch = max(10, len(arg_sets))
    times = []
    for _ in range(REPS):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for i in range(per_batch):
            run(*arg_sets[i % len(arg_sets)])
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3 / per_batch)
    times.sort()
    return times[len(times) // 2], err, [o.clone() for o in outs] if reference is None else None


REPS = 7
WORKING_SET = 256 << 20   # bytes of inputs rotated through: L2 is 60 MB


def make_buffers(kernel, torch):
    """(input sets, outputs): random inputs (never zeros), copied until the sets
    together are at least WORKING_SET bytes."""
    def dtype(dt):
        return {"float32": torch.float32, "bfloat16": torch.bfloat16,
                "float16": torch.float16, "float64": torch.float64}[np.dtype(dt).name]
    first = [torch.randn(tuple(s), device="cuda").to(dtype(dt)) for s, dt in kernel.input_types]
    size = sum(b.numel() * b.element_size() for b in first)
    copies = max(1, min(32, -(-WORKING_SET // max(size, 1))))
    sets = [first] + [[b.clone() for b in first] for _ in range(copies - 1)]
    outs = [torch.empty(tuple(s), device="cuda", dtype=dtype(dt)) for s, dt in kernel.outputs]
    return sets, outs


def work(kernel, buffers):
    """(bytes moved at least, flops) of one launch."""
    sets, outs = buffers
    nbytes = sum(b.numel() * b.element_size() for b in sets[0] + outs)
    p = kernel.problem
    flops = 0
    if kernel.kind == "dot":
        flops = 2 * p["B"] * p["M"] * p["N"] * p["K"]
    elif kernel.kind == "attention":    # the two products
        flops = 2 * p["B"] * p["M"] * p["N"] * (p["D"] + p["DV"])
    return nbytes, flops


# ----------------------------------------------------------------------- main

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", nargs="*", default=list(DEFAULT_ROWS))
    ap.add_argument("--jobs", type=int, default=max(1, (os.cpu_count() or 2) - 2))
    ap.add_argument("--budget-s", type=float, default=180.0)
    ap.add_argument("--out", default=os.path.join(os.environ.get("OUT", "."), "sweep.json"))
    ap.add_argument("--dot-grid", choices=("wide", "candidates"), default="wide",
                    help="the wide grid, or only the autotuner's candidates (the grid of "
                         "attention kernels is always swept)")
    ap.add_argument("--compile-only", action="store_true",
                    help="stop after compiling (no GPU needed): checks every config builds")
    args = ap.parse_args(argv)
    from jitlib.backends.triton.configs import candidates
    start = time.perf_counter()
    deadline = start + args.budget_s
    # one directory of generated sources for this process and its compiling workers
    os.environ.setdefault("JITLIB_CACHE_DIR", tempfile.mkdtemp(prefix="jitlib-sweep-"))

    # every (row, kernel, variant, config) to compile, before CUDA is touched here
    tasks = []
    for row in args.rows:
        for i, k in enumerate(row_kernels(row)):
            for w in [None] + what_ifs(k):
                cs = sweep_configs(k)
                if w is not None or (k.kind != "attention" and args.dot_grid == "candidates"):
                    cs = candidates(k)   # a what-if is a measurement: its candidates do
                for c in cs:
                    tasks.append((row, i, w, c))
    compiled = {}
    todo = {}
    for t in tasks:
        todo.setdefault((t[0], t[1], t[2], compile_key(t[3])), t)
    print(f"{len(tasks)} configs, {len(todo)} compiles on {args.jobs} processes", flush=True)
    ctx = __import__("multiprocessing").get_context("spawn")
    with cf.ProcessPoolExecutor(args.jobs, mp_context=ctx) as pool:
        futures = {pool.submit(_compile_one, *t): key for key, t in todo.items()}
        for f in cf.as_completed(futures):
            compiled[futures[f]] = f.result()
    failed = sum("error" in v for v in compiled.values())
    print(f"compiled in {time.perf_counter() - start:.0f} s ({failed} failed)", flush=True)
    if args.compile_only:
        for key, v in compiled.items():
            if "error" in v:
                print(f"  {key[0]} #{key[1]} {key[2] or ''} {key[3]}: {v['error'][:150]}")
        return

    import torch
    report = dict(device=torch.cuda.get_device_name(0), rows={})
    for row in args.rows:
        for i, k in enumerate(row_kernels(row)):
            if time.perf_counter() > deadline:
                print(f"budget spent: {row} {k.name} not timed", flush=True)
                continue
            buffers = make_buffers(k, torch)
            nbytes, flops = work(k, buffers)
            _, _, ref = timed(row, i, None, k.config, torch, buffers, None)
            results = []
            for (r, ki, w, c) in tasks:
                if (r, ki) != (row, i) or time.perf_counter() > deadline:
                    continue
                info = compiled[(r, ki, w, compile_key(c))]
                if "error" in info:
                    results.append(dict(what_if=w, config=_cfg(c), error=info["error"]))
                    continue
                try:
                    us, err, _ = timed(row, i, w, c, torch, buffers, ref)
                except Exception as e:   # noqa: BLE001 - a launch failure is a result
                    results.append(dict(what_if=w, config=_cfg(c),
                                        error=f"{type(e).__name__}: {e}"[:200]))
                    continue
                results.append(dict(what_if=w, config=_cfg(c), us=us, err=err,
                                    usage=info["usage"], smem=info["smem"],
                                    candidate=c in candidates(k), heuristic=c == k.config))
            entry = dict(kind=k.kind, problem=k.problem, bytes=nbytes, flops=flops,
                         results=results)
            report["rows"][f"{row} / {k.name}"] = entry
            print_kernel(f"{row} / {k.name}", entry, flush=True)
            del buffers
    report["total_s"] = time.perf_counter() - start
    with open(args.out, "w") as f:
        json.dump(report, f, indent=1)
    print(f"wrote {args.out}; {report['total_s']:.0f} s", flush=True)


def _cfg(c):
    return dict(constexprs=c.constexprs, num_warps=c.num_warps, num_stages=c.num_stages,
                maxnreg=c.maxnreg)


def print_kernel(title, entry, flush=True):
    ok = [r for r in entry["results"] if "us" in r and (r["err"] or 0) < 1e-3]
    bad = [r for r in entry["results"] if "us" in r and (r["err"] or 0) >= 1e-3]
    errors = [r for r in entry["results"] if "error" in r]

    def rate(r):
        if entry["flops"]:
            return f"{entry['flops'] / r['us'] / 1e6:6.1f} TFLOP/s"
        return f"{entry['bytes'] / r['us'] / 1e3:6.0f} GB/s"

    def line(tag, r):
        c = r["config"]
        return (f"  {tag:10s} {r['us']:8.1f} us {rate(r)}  {c['constexprs']} w{c['num_warps']} "
                f"s{c['num_stages']}{' r%d' % c['maxnreg'] if c.get('maxnreg') else ''} "
                f"{r.get('what_if') or ''} {r['usage']} "
                f"smem {r['smem']}")
    print(f"{title}: {entry['kind']} {entry['problem']}, {len(ok)} timed, {len(bad)} wrong, "
          f"{len(errors)} failed", flush=flush)
    plain = [r for r in ok if not r["what_if"]]
    for tag, pool in (("heuristic", [r for r in plain if r["heuristic"]]),
                      ("candidates", [r for r in plain if r["candidate"]])):
        if pool:
            print(line(tag, min(pool, key=lambda r: r["us"])), flush=flush)
    for r in sorted(plain, key=lambda r: r["us"])[:6]:
        print(line("top", r), flush=flush)
    # what-ifs are measurements: shown even where they change the result (no_p_lo)
    for w in sorted({r["what_if"] for r in ok + bad if r["what_if"]}):
        best = min((r for r in ok + bad if r["what_if"] == w), key=lambda r: r["us"])
        print(line("what-if", best) + f" err {best['err'] or 0:.1e}", flush=flush)
    bad = [r for r in bad if not r["what_if"]]
    for r in bad[:3]:
        print(f"  WRONG err {r['err']:.1e}: {r['config']}", flush=flush)
    for r in errors[:3]:
        print(f"  FAILED {r['config']}: {r['error'][:150]}", flush=flush)


if __name__ == "__main__":
    sys.path.insert(0, os.getcwd())
    main(sys.argv[1:])
