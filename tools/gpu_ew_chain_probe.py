"""Is ew_chain's gap to torch.compile real, and if so, is it the kernel or the memory?

    PYTHONPATH=$PWD python tools/gpu_ew_chain_probe.py [--rounds 12] [--k 30] [--out p.json]
    ncu ... python tools/gpu_ew_chain_probe.py --ncu --only "kernel, torch out"

ew_chain is `max((a + b) * c, 0)` over three 16M-element float32 arrays (64 MiB each).
The benchmark times each tool once, one after the other, and its table has flipped
between jitlib and torch.compile by 0.3% from run to run. Here every variant below runs
K queued calls in each of R rounds, in one process, the order rotated every round; each
round's figure is the benchmark's own (`benchmarks.gpu.cupti_kernels`: the median over
the K calls of each call's CUPTI device time). Variants:

- the tools as the benchmark calls them: jitlib on its own arrays (the driver's
  stream-ordered pool), jax.jit, torch.compile on torch's arrays (its caching allocator);
- the same tools on the other's arrays (DLPack views: same memory, other tool), to tell
  the kernel from where its inputs live;
- the kernels without their tools: jitlib's generated kernel and inductor's (its source
  taken from torch.compile's output code, compiled here at inductor's chosen config),
  each writing a torch.empty output or a jitlib pool output per call;
- jitlib's kernel with cache hints (L1-bypassing `.cg` loads; `.cs`, `.cg` or
  evict-first stores), at inductor's shape (512 elements, 8 warps), and as a grid-stride
  persistent kernel.

Every variant's output is checked bit for bit against NumPy's (the math is exact in f32:
one add, one multiply, a max). The JSON holds every round's figure per variant, and the
per-round ratio of each variant to jitlib's benchmark form.
"""
import argparse
import dataclasses
import glob
import json
import os
import re
import statistics
import sys
import tempfile
import time

import numpy as np
import triton
import triton.language as tl

MIB = 1 << 20


@triton.jit
def ew_chain_persistent(a, b, c, out, TILES: tl.constexpr, BLOCK: tl.constexpr,
                        G: tl.constexpr, STAGES: tl.constexpr):
    """ew_chain over TILES whole BLOCK tiles, G programs striding over them."""
    for t in tl.range(tl.program_id(0), TILES, G, num_stages=STAGES):
        i = t.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
        x = (tl.load(a + i) + tl.load(b + i)) * tl.load(c + i)
        tl.store(out + i, tl.where(x != x, x, tl.where(x > 0.0, x, 0.0)))


def _with_modifier(source, call, modifier):
    """The kernel source with `modifier` (e.g. `cache_modifier=".cs"`) added to every
    `tl.load(` or `tl.store(` call; each such call is one line in generated loop kernels."""
    out = []
    for line in source.split("\n"):
        if f"{call}(" in line:
            close = line.rindex(")")
            line = f"{line[:close]}, {modifier}{line[close:]}"
        out.append(line)
    return "\n".join(out)


# Triton 3.6 takes .ca/.cg/.cv on loads (no .cs: a read-once load is evict_first, slower
# on 2026-12-02: 66.0 against 62.0 us) and .wb/.cg/.cs on stores
SOURCE_VARIANTS = {
    "jitlib kernel, loads .cg": [("tl.load", 'cache_modifier=".cg"')],
    "jitlib kernel, stores .cs": [("tl.store", 'cache_modifier=".cs"')],
    "jitlib kernel, stores .cg": [("tl.store", 'cache_modifier=".cg"')],
    "jitlib kernel, stores evict_first": [("tl.store", 'eviction_policy="evict_first"')],
    "jitlib kernel, loads .cg, stores .cs": [("tl.load", 'cache_modifier=".cg"'),
                                             ("tl.store", 'cache_modifier=".cs"')],
}


def inductor_kernel_source(torch, fn, args):
    """(kernel name, its Triton source as a plain @triton.jit function, wrapper code)."""
    from torch._inductor.utils import run_and_get_code
    _, codes = run_and_get_code(fn, *args)
    code = "\n".join(codes)
    for m in re.finditer(r"async_compile\.triton\('(\w+)', '''(.*?)'''", code, flags=re.S):
        name, src = m.group(1), m.group(2)
        if "@triton.jit" in src:
            # inductor's autotuning decorator stays behind: we launch at a fixed config
            src = re.sub(r"@triton_heuristics\.\w+\(.*?\)\n@triton\.jit", "@triton.jit", src,
                         flags=re.S)
            return name, src, code
    raise RuntimeError("no Triton kernel in torch.compile's output code:\n" + code[-3000:])


def inductor_best_configs():
    """What inductor's autotuner chose: the .best_config files in its cache dir."""
    out = {}
    for path in glob.glob(os.path.join(os.environ["TORCHINDUCTOR_CACHE_DIR"], "**",
                                       "*.best_config"), recursive=True):
        with open(path) as f:
            out[os.path.basename(path)] = json.load(f)
    return out


def load_module(source, name, folder):
    import importlib.util
    path = os.path.join(folder, f"{name}.py")
    with open(path, "w") as f:
        f.write(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def aot(fn, signature, constexprs, divisible, warps):
    """`fn` compiled for sm_90, the arguments at positions `divisible` specialized as
    multiples of 16 (aligned pointers, as allocators give; inductor's element count)."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    sig = dict(signature)
    sig.update({k: "constexpr" for k in constexprs})
    attrs = {(i,): [["tt.divisibility", 16]] for i in divisible}
    src = ASTSource(fn=fn, signature=sig, constexprs=dict(constexprs), attrs=attrs)
    return triton.compile(src, target=GPUTarget("cuda", 90, 32),
                          options={"num_warps": warps, "num_stages": 2})


def build_variants(torch, jax, arrays, copies, folder, report):
    """{name: (call(i) -> output, sync)} and the inductor facts found on the way."""
    import jax.numpy as jnp
    import jitlib
    from benchmarks import workloads as W
    from benchmarks.gpu import TorchNumPy
    from jitlib.backends.triton import compiler
    from jitlib.backends.triton.configs import Config
    from jitlib.backends.triton.device import get_device
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import gpu_tune_sweep as S

    device = get_device()
    n = arrays[0].size
    own = [[device.from_numpy(a) for a in arrays] for _ in range(copies)]
    tor = [[torch.from_numpy(a).cuda() for a in arrays] for _ in range(copies)]
    gpu = [d for d in jax.devices() if d.platform == "gpu"][0]
    jx = [[jax.device_put(a, gpu) for a in arrays] for _ in range(copies)]
    own_as_torch = [[torch.from_dlpack(x) for x in s] for s in own]
    tor_as_jitlib = [[jitlib.from_dlpack(t) for t in s] for s in tor]
    torch_sync = lambda out: torch.cuda.synchronize()   # noqa: E731
    V = {}

    f = jitlib.jit(lambda *a: W.ew_chain(np, *a), backend="gpu")
    V["jitlib"] = (lambda i: f(*own[i]), lambda out: device.synchronize())
    V["jitlib on torch's arrays"] = (lambda i: f(*tor_as_jitlib[i]),
                                     lambda out: device.synchronize())
    jf = jax.jit(lambda *a: W.ew_chain(jnp, *a))
    V["jax"] = (lambda i: jf(*jx[i]), lambda out: out.block_until_ready())
    tc = torch.compile(lambda *a: W.ew_chain(TorchNumPy(torch), *a))
    V["torch.compile"] = (lambda i: tc(*tor[i]), torch_sync)
    V["torch.compile on jitlib's arrays"] = (lambda i: tc(*own_as_torch[i]), torch_sync)

    def raw(run, ins, out_kind, tail):
        def call(i):
            out = torch.empty(n, device="cuda") if out_kind == "torch" else \
                device.empty((n,), np.float32)
            run(*[x.data_ptr() for x in ins[i]], out.data_ptr(), *tail)
            return out
        return call, torch_sync

    kernel, = S.row_kernels("ew_chain")
    report["jitlib_source"] = kernel.source
    cfg = kernel.config
    block = cfg.constexprs["BLOCK"]
    ck = compiler.compile_for(kernel, config=cfg)
    run = ck[(kernel.grid(cfg)[0], 1, 1)]   # loads the binary: n_regs is known from here
    report["jitlib_regs"] = dict(n_regs=ck.n_regs, n_spills=ck.n_spills)
    V["jitlib kernel, torch out"] = raw(run, tor, "torch", (block,))
    V["jitlib kernel, pool out"] = raw(run, tor, "pool", (block,))
    V["jitlib kernel on pool arrays, pool out"] = raw(run, own, "pool", (block,))
    for name, edits in SOURCE_VARIANTS.items():
        source = kernel.source
        for call, modifier in edits:
            source = _with_modifier(source, call, modifier)
        k2 = dataclasses.replace(kernel, source=source)
        ck2 = compiler.compile_for(k2, config=cfg)
        V[name] = raw(ck2[(kernel.grid(cfg)[0], 1, 1)], tor, "torch", (block,))
    # inductor's own shape for our kernel: 2 elements a thread (512 at 8 warps)
    c8 = Config({"BLOCK": 512}, 8)
    V["jitlib kernel 512/8 warps"] = raw(compiler.compile_for(kernel, config=c8)[
        (kernel.grid(c8)[0], 1, 1)], tor, "torch", (512,))
    sig = {"a": "*fp32", "b": "*fp32", "c": "*fp32", "out": "*fp32"}
    tiles = n // 512
    for g_per_sm, stages in ((8, 1), (16, 1), (8, 3)):
        G = 132 * g_per_sm
        ckp = aot(ew_chain_persistent, sig, dict(TILES=tiles, BLOCK=512, G=G, STAGES=stages),
                  range(4), 4)
        V[f"persistent G={G}, stages {stages}"] = raw(ckp[(G, 1, 1)], tor, "torch",
                                                      (tiles, 512, G, stages))

    # inductor's kernel, compiled here from its own source at its chosen config
    try:
        iname, isrc, wrapper = inductor_kernel_source(torch, tc, tor[0])
        report["inductor_source"], report["inductor_wrapper"] = isrc, wrapper[-6000:]
        best = inductor_best_configs()
        report["inductor_best_configs"] = best
        fn = getattr(load_module(isrc, iname, folder), iname)
        isig = {p: ("*fp32" if "ptr" in p else "i32") for p in fn.arg_names if p != "XBLOCK"}
        picked = [(int(c["XBLOCK"]), int(c["num_warps"])) for c in best.values()][:1]
        for xblock, warps in picked or [(512, 8), (1024, 4)]:   # none: try both shapes
            cki = aot(fn, isig, {"XBLOCK": xblock}, range(len(isig)), warps)
            runi = cki[(n // xblock, 1, 1)]
            report.setdefault("inductor_launch", []).append(dict(
                XBLOCK=xblock, num_warps=warps, n_regs=cki.n_regs, n_spills=cki.n_spills))
            tag = f"{xblock}/{warps} warps"
            V[f"inductor kernel {tag}, torch out"] = raw(runi, tor, "torch", (n, xblock))
            V[f"inductor kernel {tag} on pool arrays, pool out"] = raw(runi, own, "pool",
                                                                      (n, xblock))
    except Exception as e:   # noqa: BLE001 - the rest of the probe still runs
        report["errors"]["inductor"] = f"{type(e).__name__}: {str(e)[:600]}"
        print("inductor kernel: FAILED", report["errors"]["inductor"], flush=True)
    return V



# ----------------------------------------------------------------------- launch gaps

def sleep_kernel(torch):
    """(cycles per µs of torch.cuda._sleep, its kernel's name in a CUPTI trace)."""
    from torch.profiler import ProfilerActivity, profile
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    cycles = 1 << 22
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        start.record()
        torch.cuda._sleep(cycles)
        end.record()
        end.synchronize()
    names = {e.name() for e in prof.profiler.kineto_results.events()}
    per_us = cycles / (start.elapsed_time(end) * 1e3)
    return per_us, names


def kernel_us(torch, call, sync, k, mode, sleep):
    """(median, mean, first) CUPTI µs of the kernels of k calls (one kernel a call) issued in `mode`:
    "queued" (back to back, as the benchmark does), "synced" (the host waits for each
    call before issuing the next) or a number: µs of a sleep kernel before each call."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile
    per_us, sleep_names = sleep
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for i in range(k):
            if isinstance(mode, (int, float)):
                torch.cuda._sleep(int(mode * per_us))
            out = call(i)
            if mode == "synced":
                sync(out)
        sync(out)
    durations = [e.duration_ns() / 1e3 for e in prof.profiler.kineto_results.events()
                 if e.device_type() == DeviceType.CUDA and e.name() not in sleep_names
                 and not e.name().startswith(("Memcpy", "Memset"))]
    return statistics.median(durations), statistics.fmean(durations), durations[0]


def queue_us(call, sync, k):
    """Host µs per call to queue k calls (no waiting), then one wait."""
    t0 = time.perf_counter()
    for i in range(k):
        out = call(i)
    t1 = time.perf_counter()
    sync(out)
    return (t1 - t0) / k * 1e6


def gaps_part(torch, V, copies, args, report):
    """Does an idle gap before a kernel shorten it? Each variant in each mode, rounds
    rotated; and each tool's host time to queue a call (above ~62 µs a tool cannot keep
    the GPU busy, and its kernels start after gaps)."""
    from benchmarks import workloads as W
    from jitlib.backends.triton import compiler
    from jitlib.backends.triton.configs import Config
    import gpu_tune_sweep as S
    sleep = sleep_kernel(torch)
    report["sleep_cycles_per_us"] = sleep[0]
    plan = [(name, mode) for name in ("jitlib", "torch.compile", "jax")
            for mode in ("queued", "synced")]
    plan += [("jitlib kernel, torch out", m) for m in ("queued", 2, 5, 10, 20, "synced")]
    plan += [("jitlib kernel 512/8 warps", m) for m in ("queued", 10, "synced")]
    plan += [(n, m) for n in V if n.startswith("inductor kernel") and "torch out" in n
             for m in ("queued", 10, "synced")]
    # gelu's generated kernel at 4 and 8 warps (8 warps ran ew_chain 0.4% faster)
    kernel, = S.row_kernels("gelu_tanh")
    n = 1 << 24
    xs = [torch.from_numpy(W.inputs("gelu_tanh", np.random.default_rng(i), "large")[0]).cuda()
          for i in range(4)]
    want = torch.from_numpy(W.gelu_tanh(np, xs[0].cpu().numpy())).cuda()
    ref = None
    for warps in (4, 8):
        cfg = Config({"BLOCK": 512}, warps)
        run = compiler.compile_for(kernel, config=cfg)[(kernel.grid(cfg)[0], 1, 1)]

        def gelu(i, run=run):
            out = torch.empty(n, device="cuda")
            run(xs[i % 4].data_ptr(), out.data_ptr(), 512)
            return out
        got = gelu(0)
        torch.cuda.synchronize()
        ref = got if ref is None else ref
        report["checks"][f"gelu 512/{warps}: bits differing from 512/4"] = int(
            (got.view(torch.int32) != ref.view(torch.int32)).sum())
        report["checks"][f"gelu 512/{warps}: max abs diff from NumPy"] = float(
            (got - want).abs().max())
        V[f"gelu kernel 512/{warps} warps"] = (gelu, lambda out: torch.cuda.synchronize())
        plan.append((f"gelu kernel 512/{warps} warps", "queued"))
    for name in ("jitlib", "torch.compile", "jax"):
        call, sync = V[name]
        queue_us(lambda i: call(i % copies), sync, args.k)   # warm
        report.setdefault("queue_us", {})[name] = statistics.median(
            queue_us(lambda i: call(i % copies), sync, args.k) for _ in range(5))
    print("host µs to queue one call:", report["queue_us"], flush=True)
    rows = {f"{name} [{mode}]": (name, mode) for name, mode in plan}
    keys = list(rows)
    out = report.setdefault("gaps_us", {k: [] for k in keys})
    means = report.setdefault("gaps_mean_us", {k: [] for k in keys})
    firsts = report.setdefault("gaps_first_us", {k: [] for k in keys})
    for r in range(args.rounds):
        for key in keys[r % len(keys):] + keys[:r % len(keys)]:
            name, mode = rows[key]
            call, sync = V[name]
            us, mean, first = kernel_us(torch, lambda i: call(i % copies), sync, args.k, mode,
                                        sleep)
            out[key].append(us)
            means[key].append(mean)
            firsts[key].append(first)
        print(f"gaps round {r}: " + ", ".join(f"{k} {out[k][-1]:.2f}" for k in keys), flush=True)
    print(f"\n{'variant [mode]':52s} {'median':>7s} {'min':>7s} {'max':>7s} {'mean':>7s} "
          f"{'first':>7s}  (median over rounds of each round's figure)")
    for key in sorted(keys, key=lambda k: statistics.median(out[k])):
        v = out[key]
        print(f"{key:52s} {statistics.median(v):7.2f} {min(v):7.2f} {max(v):7.2f} "
              f"{statistics.median(means[key]):7.2f} {statistics.median(firsts[key]):7.2f}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--part", choices=("tools", "gaps"), default="tools",
                    help="tools: every variant back to back (the first question); gaps: "
                         "launch gaps, host queue rates, gelu at 8 warps")
    ap.add_argument("--rounds", type=int, default=12)
    ap.add_argument("--k", type=int, default=30, help="queued calls per variant and round")
    ap.add_argument("--only", nargs="*", default=None,
                    help="keep the variants whose names contain one of these")
    ap.add_argument("--ncu", action="store_true",
                    help="run each raw kernel a few times, no timing (under ncu)")
    ap.add_argument("--out", default=os.path.join(os.environ.get("OUT", "."),
                                                  "ew_chain_probe.json"))
    args = ap.parse_args(argv)
    folder = tempfile.mkdtemp(prefix="ew_chain_probe-")
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", os.path.join(folder, "inductor"))
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    import jax
    import torch
    from benchmarks import workloads as W
    from benchmarks.gpu import copies_needed, cupti_kernels

    started = time.perf_counter()
    arrays = W.inputs("ew_chain", np.random.default_rng(0), "large")
    want = W.ew_chain(np, *arrays)
    copies = copies_needed(arrays, 256 * MIB)
    report = dict(device=torch.cuda.get_device_name(0), date=time.strftime("%Y-%m-%dT%H:%M:%SZ",
                  time.gmtime()), torch=torch.__version__, triton=triton.__version__,
                  jax=jax.__version__, copies=copies, k=args.k, rounds=args.rounds,
                  checks={}, errors={}, rounds_us={}, rounds_mean_us={})
    V = build_variants(torch, jax, arrays, copies, folder, report)
    if args.ncu:   # ncu profiles what runs: each kept variant a few times, nothing else
        for name, (call, sync) in V.items():
            if any(part in name for part in args.only or [name]):
                for i in range(3):
                    out = call(i % copies)
                sync(out)
        return
    if args.only:   # jitlib's benchmark form stays: the ratios are to it
        V = {k: v for k, v in V.items() if k == "jitlib" or any(p in k for p in args.only)}
    from jitlib.backends.triton.device import get_device
    device = get_device()
    n = arrays[0].size

    def poison():
        """Recently freed output-sized blocks of both allocators filled with NaN, so an
        output that a variant leaves partly unwritten shows."""
        held = [torch.empty(n, device="cuda") for _ in range(3)]
        held += [torch.from_dlpack(device.empty((n,), np.float32)) for _ in range(3)]
        for t in held:
            t.fill_(float("nan"))
        torch.cuda.synchronize()

    for name, (call, sync) in list(V.items()):   # warm, then check one poisoned call
        try:
            for i in range(3):
                out = call(i % copies)
            sync(out)
            del out
            poison()
            out = call(1 % copies)
            sync(out)
            got = out.cpu().numpy() if hasattr(out, "cpu") else np.asarray(out)
            report["checks"][name] = int(np.sum(got.view(np.int32) != want.view(np.int32)))
            del out, got
        except Exception as e:   # noqa: BLE001 - a failing variant is a result
            report["errors"][name] = f"{type(e).__name__}: {str(e)[:400]}"
            print(f"{name}: FAILED {report['errors'][name]}", flush=True)
            del V[name]
    print("bit differences from NumPy:", report["checks"], flush=True)
    print(f"setup {time.perf_counter() - started:.0f} s", flush=True)
    if args.part == "gaps":
        gaps_part(torch, V, copies, args, report)
        with open(args.out, "w") as f:
            json.dump(report, f, indent=1)
        print(f"wrote {args.out} after {time.perf_counter() - started:.0f} s")
        return
    names = list(V)
    for r in range(args.rounds):
        order = names[r % len(names):] + names[:r % len(names)]
        for name in order:
            call, sync = V[name]
            med, mean, _ = cupti_kernels(torch, lambda i: call(i % copies), sync, args.k)
            report["rounds_us"].setdefault(name, [None] * args.rounds)[r] = med
            report["rounds_mean_us"].setdefault(name, [None] * args.rounds)[r] = mean
        print(f"round {r}: " + ", ".join(f"{n} {report['rounds_us'][n][r]:.2f}"
                                         for n in names), flush=True)
    summary = {}
    base = report["rounds_us"]["jitlib"]
    for name in names:
        xs = report["rounds_us"][name]
        ratios = [x / b for x, b in zip(xs, base)]
        summary[name] = dict(median=statistics.median(xs), min=min(xs), max=max(xs),
                             median_of_means=statistics.median(report["rounds_mean_us"][name]),
                             ratio_to_jitlib_median=statistics.median(ratios),
                             rounds_faster_than_jitlib=sum(x < b for x, b in zip(xs, base)))
    report["summary"] = summary
    report["total_s"] = time.perf_counter() - started
    with open(args.out, "w") as f:
        json.dump(report, f, indent=1)
    print(f"\n{'variant':44s} {'median':>7s} {'min':>7s} {'max':>7s} {'x jitlib':>8s} faster")
    for name, s in sorted(summary.items(), key=lambda kv: kv[1]["median"]):
        print(f"{name:44s} {s['median']:7.2f} {s['min']:7.2f} {s['max']:7.2f} "
              f"{s['ratio_to_jitlib_median']:8.4f} {s['rounds_faster_than_jitlib']:3d}/"
              f"{args.rounds}")
    print(f"wrote {args.out} after {report['total_s']:.0f} s")


if __name__ == "__main__":
    sys.path.insert(0, os.getcwd())
    main(sys.argv[1:])
