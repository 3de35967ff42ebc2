"""ew_chain at the H200's limit: tile shapes, memory instructions and TMA against inductor's.

    PYTHONPATH=$PWD python tools/gpu_ew_tile_probe.py [--rounds 20] [--k 30] [--only ...]
    PYTHONPATH=$PWD python tools/gpu_ew_tile_probe.py --compile-only   # no GPU: sm_90 builds

ew_chain is `max((a + b) * c, 0)` over three 16M-element float32 arrays (256 MiB moved a
call). jitlib's light loop kernel (512 elements, 8 warps) and inductor's at its 512/8 pick
run at the same speed (gpu-2026-12-03d-notes.md), so torch.compile's figure in the
benchmark depends on which of 512/8 and 1024/4 its autotuner picks per process. This asks
whether any form of the kernel is faster than inductor's best, with every variant timed as
the benchmark times jitlib: K calls queued back to back behind a sleep kernel, CUPTI device
time per call, the median over the K calls (`benchmarks.gpu.cupti_kernels`); one figure per
variant per round, the order rotated and reversed every round (`round_orders`), all in
one process on the same two rotating input sets (2 x 192 MiB: L2 holds none between
calls). Variants:

- `tool jitlib`, `tool torch.compile`: the tools as the benchmark calls them;
- `inductor X/W`: inductor's kernel (its source from torch.compile's output code)
  compiled here at XBLOCK 512, 8 warps and 1024, 4 warps, the two shapes it picks;
- `gen B/W`: jitlib's generated kernel at BLOCK B and W warps, 1 to 8 elements a thread
  (B / 32W; Triton gives each thread that many contiguous elements, at most 4 per access);
- `tiles T x B/W`: T contiguous B-tiles per program, one after the other (fewer,
  longer programs; the same accesses);
- `ptx vV B/W ld<q>/st<q>`: the loads and stores written as PTX (`ld.global<q>.vV.b32`),
  V-wide per thread, with qualifiers Triton does not offer: `.nc` (read-only path),
  `.L1::no_allocate`, `.L2::256B` (L2 fetches 256-byte blocks), `.cs` (streaming);
- `tma R/W`: each program moves [R, 256] blocks through host tensor descriptors
  (TMA loads, TMA or pointer stores);
- `order ...`: the generated kernel at 512/8 visiting its tiles reversed, or spread over
  S interleaved streams;
- `place ...`: the generated kernel at 512/8 on a, b, c and out laid out as views of one
  buffer at 64 MiB plus d bytes apart, or writing d bytes into a larger output buffer
  (where the arrays sit relative to each other, against DRAM bank and channel clashes);
- `... @t3`, `... @pool`: the forward, reversed and inductor kernels on three other torch
  input sets, and on jitlib's pool arrays with a fresh pool output per call.

Every variant's output is checked before timing: on the timing inputs bit for bit against
NumPy, and on inputs holding NaN, inf and zeros bit for bit against `gen 512/8` (the
kernel jitlib runs), its outputs first filled with a NaN pattern no arithmetic makes, so
an unwritten element shows. A variant that fails its check is dropped and listed.
Measurements, not backend options.
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import time

import numpy as np

MIB = 1 << 20
POISON = 0x7FBADBAD          # a NaN payload no float32 operation returns (theirs: 0x7FFFFFFF)

# (BLOCK, warps): 1 to 8 elements a thread
GEN_SHAPES = [(128, 2), (256, 2), (256, 4), (256, 8), (512, 2), (512, 4), (512, 8), (512, 16),
              (1024, 4), (1024, 8), (1024, 16), (2048, 8), (2048, 16), (4096, 16)]
TILE_SHAPES = [(2, 512, 8), (4, 512, 8), (8, 512, 8), (2, 1024, 8), (4, 1024, 16)]
# (vector, BLOCK, warps, load qualifiers, store qualifiers)
PTX_SHAPES = [(4, 1024, 8, "", ""), (4, 1024, 8, ".nc", ""), (4, 1024, 8, ".L2::256B", ""),
              (4, 1024, 8, ".nc.L1::no_allocate.L2::256B", ""),
              (4, 1024, 8, ".cs", ".cs"), (4, 1024, 8, ".L2::256B", ".cs"),
              (2, 512, 8, "", ""), (2, 512, 8, ".L2::256B", ""),
              (2, 512, 8, ".nc.L1::no_allocate.L2::256B", ""), (4, 512, 4, ".L2::256B", "")]
# (rows of 256, warps, TMA store)
TMA_SHAPES = [(2, 4, False), (4, 8, False), (4, 8, True), (8, 8, False)]

HEAD = "import triton\nimport triton.language as tl\n\n"
RELU = "tl.where({x} != {x}, {x}, tl.where({x} > 0.0, {x}, 0.0))"   # as the generated max


def tiles_source(T):
    body = [f"@triton.jit",
            f"def ew_tiles_{T}(a, b, c, out, BLOCK: tl.constexpr):",
            f"    base = tl.program_id(0).to(tl.int64) * ({T} * BLOCK)",
            f"    for t in tl.static_range({T}):",
            f"        i = base + t * BLOCK + tl.arange(0, BLOCK)",
            f"        x = (tl.load(a + i) + tl.load(b + i)) * tl.load(c + i)",
            f"        tl.store(out + i, {RELU.format(x='x')})"]
    return HEAD + "\n".join(body) + "\n"


def ptx_source(name, V, ldq, stq):
    """Each thread moves V-wide groups: pointers to the groups, one asm load per input and
    group (V results), the math on the V lanes, one asm store per group."""
    regs = ", ".join(f"${j}" for j in range(V))
    lanes = ", ".join(f"x{j}" for j in range(V))
    ld = (f'tl.inline_asm_elementwise("ld.global{ldq}.v{V}.b32 {{{regs}}}, [${V}];", '
          f'"{",".join(["=r"] * V)},l", [PTR + off], dtype=({", ".join(["tl.float32"] * V)}), '
          f'is_pure=True, pack=1)')
    sregs = ", ".join(f"${j + 2}" for j in range(V))
    st = (f'tl.inline_asm_elementwise("st.global{stq}.v{V}.b32 [$1], {{{sregs}}}; '
          f'mov.u32 $0, 0;", "=r,l{",r" * V}", [(out + off).to(tl.int64), YS], dtype=tl.int32, '
          f'is_pure=False, pack=1)')
    lines = ["@triton.jit", f"def {name}(a, b, c, out, BLOCK: tl.constexpr):",
             f"    g = tl.program_id(0) * (BLOCK // {V}) + tl.arange(0, BLOCK // {V})",
             f"    off = g.to(tl.int64) * {V}"]
    for p in "abc":
        lines.append(f"    {', '.join(f'{p}{j}' for j in range(V))} = {ld.replace('PTR', p)}")
    for j in range(V):
        lines.append(f"    x{j} = (a{j} + b{j}) * c{j}")
        lines.append(f"    y{j} = {RELU.format(x=f'x{j}')}")
    lines.append(f"    {st.replace('YS', ', '.join(f'y{j}' for j in range(V)))}")
    return HEAD + "\n".join(lines) + "\n"


TMA_SOURCE = HEAD + f"""@triton.jit
def ew_tma(da, db, dc, do, out, R: tl.constexpr, TMA_STORE: tl.constexpr):
    row = tl.program_id(0) * R
    x = (da.load([row, 0]) + db.load([row, 0])) * dc.load([row, 0])
    y = {RELU.format(x='x')}
    if TMA_STORE:
        do.store([row, 0], y)
    else:
        i = (row + tl.arange(0, R)).to(tl.int64)[:, None] * 256 + tl.arange(0, 256)[None, :]
        tl.store(out + i, y)
"""


def held_kernels(torch, call, sync, k, hold_ms, timer):
    """(median µs per kernel, largest and median idle gap µs between consecutive kernels,
    the sleep kernel's µs) of k calls queued behind a sleep of `hold_ms` (nominal: the
    timer's calibration), from one CUPTI trace. A gap of more than a microsecond or two
    means the host fell behind the GPU: the sleep ended before the calls were queued."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        timer.hold(hold_ms)
        for i in range(k):
            out = call(i)
        sync(out)
    ev = sorted((e.start_ns(), e.duration_ns()) for e in prof.profiler.kineto_results.events()
                if e.device_type() == DeviceType.CUDA)
    sleep_us = ev[0][1] / 1e3
    ev = ev[1:]
    gaps = [(b[0] - (a[0] + a[1])) / 1e3 for a, b in zip(ev, ev[1:])]
    return (statistics.median(d / 1e3 for _, d in ev), max(gaps), statistics.median(gaps),
            sleep_us)


def load_source(source, name, folder):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from gpu_ew_chain_probe import load_module
    return getattr(load_module(source, name, folder), name)


def custom_kernels(folder):
    """{name: (jit function, constexprs, warps, grid elements per program)} of the
    hand-written variants (TMA aside)."""
    out = {}
    for T, B, W in TILE_SHAPES:
        fn = load_source(tiles_source(T), f"ew_tiles_{T}", folder)
        out[f"tiles {T} x {B}/{W}"] = (fn, {"BLOCK": B}, W, T * B)
    for k, (V, B, W, ldq, stq) in enumerate(PTX_SHAPES):
        name = f"ew_ptx_{k}"
        fn = load_source(ptx_source(name, V, ldq, stq), name, folder)
        out[f"ptx v{V} {B}/{W} ld{ldq or '-'}/st{stq or '-'}"] = (fn, {"BLOCK": B}, W, B)
    return out


def compile_only(folder):
    """Every hand-written variant compiled for sm_90 (ptxas checks the PTX): no GPU."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from gpu_ew_chain_probe import aot
    sig = {"a": "*fp32", "b": "*fp32", "c": "*fp32", "out": "*fp32"}
    for name, (fn, constexprs, warps, _) in custom_kernels(folder).items():
        ck = aot(fn, sig, constexprs, range(4), warps)
        ptx = ck.asm["ptx"]
        mem = sorted({l.split()[0] for l in ptx.split("\n")
                      if l.strip().startswith(("ld.global", "st.global"))})
        print(f"{name:44s} regs {ck.n_regs if hasattr(ck, 'n_regs') else '?'}  {mem}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--k", type=int, default=30, help="calls per variant and round")
    ap.add_argument("--budget-s", type=float, default=240,
                    help="no new round starts after this many seconds of rounds")
    ap.add_argument("--only", nargs="*", default=None,
                    help="keep the variants whose names contain one of these")
    ap.add_argument("--compile-only", action="store_true")
    ap.add_argument("--out", default=os.path.join(os.environ.get("OUT", "."),
                                                  "ew_tile_probe.json"))
    args = ap.parse_args(argv)
    folder = tempfile.mkdtemp(prefix="ew_tile_probe-")
    if args.compile_only:
        return compile_only(folder)
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", os.path.join(folder, "inductor"))
    import torch
    import triton
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from gpu_ew_chain_probe import aot, inductor_best_configs, inductor_kernel_source
    import gpu_tune_sweep as S
    import jitlib
    from benchmarks import workloads as W
    from benchmarks.gpu import EventTimer, TorchNumPy, copies_needed, round_orders
    from jitlib.backends.triton import compiler
    from jitlib.backends.triton.configs import Config
    from jitlib.backends.triton.device import get_device

    started = time.perf_counter()
    # the benchmark calibrates its sleep kernel on an idle GPU: this one too, before any
    # work, to see what a "5 ms" hold then lasts once the clocks are up
    cold_timer = EventTimer(torch)
    arrays = W.inputs("ew_chain", np.random.default_rng(0), "large")
    want = W.ew_chain(np, *arrays)
    n = arrays[0].size
    copies = copies_needed(arrays, 256 * MIB)
    ins = [[torch.from_numpy(a).cuda() for a in arrays] for _ in range(copies)]
    outs = [torch.empty(n, device="cuda") for _ in range(copies)]
    # the check set: NaN, +-inf and zeros sprinkled in
    rng = np.random.default_rng(1)
    special = [a.copy() for a in W.inputs("ew_chain", rng, "large")]
    for a in special:
        for value in (np.nan, np.inf, -np.inf, 0.0, -0.0):
            a[rng.integers(0, n, 4096)] = value
    check_in = [torch.from_numpy(a).cuda() for a in special]
    report = dict(device=torch.cuda.get_device_name(0), torch=torch.__version__,
                  triton=triton.__version__, date=time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                                time.gmtime()),
                  copies=copies, k=args.k, checks={}, errors={}, rounds_us={})
    sig = {"a": "*fp32", "b": "*fp32", "c": "*fp32", "out": "*fp32"}

    # launch(ins, out) per raw variant
    L = {}

    def raw(ck, grid, tail):
        run = ck[(grid, 1, 1)]
        return lambda xs, out: run(*[x.data_ptr() for x in xs], out.data_ptr(), *tail)

    kernel, = S.row_kernels("ew_chain")
    for B, Wp in GEN_SHAPES:
        ck = compiler.compile_for(kernel, config=Config({"BLOCK": B}, Wp))
        L[f"gen {B}/{Wp}"] = raw(ck, n // B, (B,))
    for name, (fn, constexprs, warps, per) in custom_kernels(folder).items():
        try:
            ck = aot(fn, sig, constexprs, range(4), warps)
            L[name] = raw(ck, n // per, tuple(constexprs.values()))
        except Exception as e:   # noqa: BLE001 - a variant that does not build is a result
            report["errors"][name] = f"{type(e).__name__}: {str(e)[:300]}"
    tc = torch.compile(lambda *a: W.ew_chain(TorchNumPy(torch), *a))
    try:
        iname, isrc, _ = inductor_kernel_source(torch, tc, ins[0])
        report["inductor_source"] = isrc
        fn = load_source(isrc, iname, folder)
        isig = {p: ("*fp32" if "ptr" in p else "i32") for p in fn.arg_names if p != "XBLOCK"}
        for xblock, warps in ((512, 8), (1024, 4)):
            cki = aot(fn, isig, {"XBLOCK": xblock}, range(len(isig)), warps)
            L[f"inductor {xblock}/{warps}"] = raw(cki, n // xblock, (n, xblock))
    except Exception as e:   # noqa: BLE001
        report["errors"]["inductor"] = f"{type(e).__name__}: {str(e)[:600]}"
    try:
        from triton.tools.tensor_descriptor import TensorDescriptor
        tma = load_source(TMA_SOURCE, "ew_tma", folder)
        for R, Wp, tstore in TMA_SHAPES:
            def launch(xs, out, R=R, Wp=Wp, tstore=tstore, cache={}):
                key = (tuple(x.data_ptr() for x in xs), out.data_ptr())
                if key not in cache:
                    cache[key] = [TensorDescriptor.from_tensor(t.view(-1, 256), [R, 256])
                                  for t in list(xs) + [out]]
                tma[(n // (256 * R),)](*cache[key], out, R=R, TMA_STORE=tstore,
                                       num_warps=Wp)
            L[f"tma {R}x256/{Wp} {'tma' if tstore else 'pointer'} store"] = launch
    except Exception as e:   # noqa: BLE001
        report["errors"]["tma"] = f"{type(e).__name__}: {str(e)[:600]}"
    # program order: the generated kernel at 512/8 with its tiles visited reversed, or
    # spread over S interleaved streams (program p takes tile (p % S) * (N / S) + p // S)
    import dataclasses
    progs = n // 512
    orders = {"order reversed": f"({progs - 1} - tl.program_id(0))"}
    for S_ in (8, 64):
        orders[f"order spread {S_}"] = (f"(tl.program_id(0) % {S_} * {progs // S_} "
                                         f"+ tl.program_id(0) // {S_})")
    for name, pid in orders.items():
        src = kernel.source.replace("tl.program_id(0).to(tl.int64)", f"{pid}.to(tl.int64)")
        k2 = dataclasses.replace(kernel, source=src)
        L[name] = raw(compiler.compile_for(k2, config=Config({"BLOCK": 512}, 8)), progs,
                      (512,))
    # placement: a, b, c and out as views of one buffer, `stride` bytes apart, for the
    # generated kernel at 512/8; "out +d" keeps torch's inputs and writes d bytes into a
    # larger output buffer. Inputs copied in once per input set; in checks the output is
    # copied back to the caller's buffer
    gen = L["gen 512/8"]
    nb = n * 4
    state = dict(checking=True)

    def placed(stride, out_only=0):
        sets = {}

        def views(xs):
            if id(xs) not in sets:
                if out_only:
                    buf = torch.empty(nb + out_only, dtype=torch.uint8, device="cuda")
                    sets[id(xs)] = list(xs) + [buf[out_only:].view(torch.float32)]
                else:
                    buf = torch.empty(3 * stride + nb, dtype=torch.uint8, device="cuda")
                    vs = [buf[j * stride:j * stride + nb].view(torch.float32)
                          for j in range(4)]
                    for v, x in zip(vs, xs):
                        v.copy_(x)
                    sets[id(xs)] = vs
            return sets[id(xs)]

        def launch(xs, out):
            vs = views(xs)
            gen(vs[:3], vs[3])
            if state["checking"]:
                out.copy_(vs[3])
        return launch
    for label, stride in (("+0", 0), ("+256B", 256), ("+4KiB", 4096), ("+64KiB", 65536),
                          ("+1MiB+4KiB", (1 << 20) + 4096)):
        L[f"place packed 64MiB{label}"] = placed(64 * MIB + stride)
    for label, d in (("+256B", 256), ("+4KiB", 4096), ("+1MiB", 1 << 20)):
        L[f"place out {label}"] = placed(0, out_only=d)
    # arrangements: the forward, reversed and inductor 512/8 kernels on other input sets,
    # rotating their own copies when timed ("@t3": three torch sets with 1 MiB spacers
    # allocated between them; "@pool": two sets in jitlib's pool, each call's output a
    # fresh pool buffer, as jitlib's own calls). Checks run the kernel on the caller's
    # buffers (the arrangement changes no bits)
    dev = get_device()
    arrangements = {}
    spacers = []
    t3 = []
    for _ in range(3):
        spacers.append(torch.empty(MIB, dtype=torch.uint8, device="cuda"))
        t3.append(([torch.from_numpy(a).cuda() for a in arrays], torch.empty(n, device="cuda")))
    arrangements["t3"] = lambda j: t3[j % 3]
    pool = [[dev.from_numpy(a) for a in arrays] for _ in range(2)]
    arrangements["pool"] = lambda j: (pool[j % 2], dev.empty((n,), np.float32))
    for kname in ("gen 512/8", "order reversed", "inductor 512/8"):
        if kname not in L:
            continue
        for aname, pick in arrangements.items():
            def launch(xs, out, base=L[kname], pick=pick, count=[0], keep=[None]):
                if state["checking"]:
                    return base(xs, out)
                count[0] += 1
                xs2, out2 = pick(count[0])
                keep[0] = out2
                base(xs2, out2)
            L[f"{kname} @{aname}"] = launch
    if args.only:
        L = {k: v for k, v in L.items() if k in ("gen 512/8", "inductor 512/8")
             or any(p in k for p in args.only)}

    # checks: timing inputs against NumPy, the special inputs against gen 512/8
    ref_special = None
    for name in ["gen 512/8"] + [k for k in L if k != "gen 512/8"]:
        launch = L[name]
        try:
            for i in range(3):
                launch(ins[i % copies], outs[i % copies])
            outs[1 % copies].view(torch.int32).fill_(POISON)
            launch(ins[1 % copies], outs[1 % copies])
            got = outs[1 % copies].cpu().numpy()
            bad = int(np.sum(got.view(np.int32) != want.view(np.int32)))
            outs[0].view(torch.int32).fill_(POISON)
            launch(check_in, outs[0])
            sp = outs[0].cpu().numpy().view(np.int32)
            torch.cuda.synchronize()
            if ref_special is None:
                ref_special = sp.copy()
                # against NumPy: finite results equal, NaN where NumPy has NaN
                np_sp = W.ew_chain(np, *special)
                nan = np.isnan(np_sp)
                report["checks"]["gen 512/8 special vs numpy: differing non-NaN / NaN "
                                 "positions"] = [
                    int(np.sum(sp[~nan] != np_sp.view(np.int32)[~nan])),
                    int(np.sum(np.isnan(sp.view(np.float32)) != nan))]
            bad_sp = int(np.sum(sp != ref_special))
            unwritten = int(np.sum(sp == POISON))
            report["checks"][name] = dict(vs_numpy=bad, special_vs_gen=bad_sp,
                                          unwritten=unwritten)
            if bad or bad_sp or unwritten:
                raise ValueError(f"{bad} / {bad_sp} bits differ, {unwritten} unwritten")
        except Exception as e:   # noqa: BLE001
            report["errors"][name] = f"{type(e).__name__}: {str(e)[-600:]}"
            print(f"{name}: FAILED {report['errors'][name]}", flush=True)
            del L[name]

    state["checking"] = False
    timer = EventTimer(torch)
    report["sleep_cycles_per_ms"] = dict(cold=cold_timer.cycles_per_ms,
                                         warm=[EventTimer(torch).cycles_per_ms
                                               for _ in range(3)] + [timer.cycles_per_ms])
    print("sleep cycles per ms:", report["sleep_cycles_per_ms"], flush=True)
    sync = lambda out: torch.cuda.synchronize()   # noqa: E731
    calls = {}
    for name, launch in L.items():
        calls[name] = (lambda i, launch=launch: (launch(ins[i % copies], outs[i % copies]),
                                                 outs[i % copies])[1], sync)
    device = get_device()
    own = [[device.from_numpy(a) for a in arrays] for _ in range(copies)]
    f = jitlib.jit(lambda *a: W.ew_chain(np, *a), backend="gpu")
    calls["tool jitlib"] = (lambda i: f(*own[i % copies]), lambda out: device.synchronize())
    calls["tool torch.compile"] = (lambda i: tc(*ins[i % copies]), sync)
    timers = {name: timer for name in calls}
    for name in ("tool jitlib", "tool torch.compile"):
        calls[f"{name} [cold hold]"] = calls[name]
        timers[f"{name} [cold hold]"] = cold_timer
    for name in ("tool jitlib", "tool torch.compile"):
        call, s = calls[name]
        t0 = time.perf_counter()
        for i in range(args.k):
            out = call(i)
        report.setdefault("queue_us", {})[name] = (time.perf_counter() - t0) / args.k * 1e6
        s(out)
        for i in range(3):
            out = call(i)
        s(out)
        got = np.asarray(out) if name == "tool jitlib" else out.cpu().numpy()
        report["checks"][name] = dict(vs_numpy=int(np.sum(got.view(np.int32)
                                                          != want.view(np.int32))))
    report["inductor_best_configs"] = inductor_best_configs()
    print("errors:", json.dumps(report["errors"], indent=1), flush=True)
    print(f"setup {time.perf_counter() - started:.0f} s, {len(calls)} variants", flush=True)

    names = list(calls)
    t_rounds = time.perf_counter()
    done = 0
    for r, order in enumerate(round_orders(names, args.rounds)):
        if time.perf_counter() - t_rounds > args.budget_s:
            break
        for name in order:
            call, s = calls[name]
            us, gmax, gmed, sleep_us = held_kernels(torch, call, s, args.k, 5.0, timers[name])
            report["rounds_us"].setdefault(name, []).append(us)
            g = report.setdefault("gaps", {}).setdefault(name, dict(max=[], median=[],
                                                                       sleep=[]))
            g["max"].append(gmax)
            g["median"].append(gmed)
            g["sleep"].append(sleep_us)
        done += 1
        print(f"round {r}: {time.perf_counter() - t_rounds:.0f} s", flush=True)
    report["rounds_done"] = done
    summary = {}
    for ref in ("inductor 512/8", "gen 512/8"):
        if ref not in report["rounds_us"]:
            continue
        base = report["rounds_us"][ref]
        for name, xs in report["rounds_us"].items():
            g = report["gaps"][name]
            s = summary.setdefault(name, dict(median=statistics.median(xs), min=min(xs),
                                              max=max(xs), gap_max=max(g["max"]),
                                              gap_median=statistics.median(g["median"]),
                                              sleep_us=statistics.median(g["sleep"])))
            s[f"x {ref}"] = statistics.median(x / b for x, b in zip(xs, base))
            s[f"faster than {ref}"] = sum(x < b for x, b in zip(xs, base))
    report["summary"] = summary
    report["total_s"] = time.perf_counter() - started
    with open(args.out, "w") as fh:
        json.dump(report, fh, indent=1)
    print(f"\n{done} rounds of K={args.k}; x = median of paired round ratios")
    print(f"{'variant':44s} {'median':>7s} {'min':>7s} {'max':>7s} {'x ind512':>8s} "
          f"{'won':>4s} {'x gen512':>8s} {'won':>4s} {'gap med':>7s} {'gap max':>7s} {'sleep':>6s}")
    for name, s in sorted(summary.items(), key=lambda kv: kv[1]["median"]):
        print(f"{name:44s} {s['median']:7.2f} {s['min']:7.2f} {s['max']:7.2f} "
              f"{s.get('x inductor 512/8', float('nan')):8.4f} "
              f"{s.get('faster than inductor 512/8', -1):4d} "
              f"{s.get('x gen 512/8', float('nan')):8.4f} {s.get('faster than gen 512/8', -1):4d} "
              f"{s['gap_median']:7.2f} {s['gap_max']:7.2f} {s['sleep_us']:6.0f}")
    print(f"wrote {args.out} after {report['total_s']:.0f} s")


if __name__ == "__main__":
    sys.path.insert(0, os.getcwd())
    main(sys.argv[1:])
