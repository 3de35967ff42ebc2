"""Issue 5 probes not tried before 2026-12-03c: TMA row kernels, tanh forms, inductor's code.

    PYTHONPATH=$PWD python tools/gpu_tma_probe.py [--part tma tanh inductor regcap]
        [--out $OUT/tma.json]

1. `tma`: logsumexp, softmax, layernorm and a row copy over 4096x4096 f32 as persistent
   programs whose rows arrive through a Hopper tensor descriptor (TMA) in a loop that
   Triton software-pipelines (`tl.range(..., num_stages=S)`): the next rows' bytes are
   in flight while this row's math runs. Each row is viewed as [N // 256, 256] so no box
   side exceeds TMA's 256. Beside them, the generated kernels and torch's copy_ of the
   same bytes, all timed by CUPTI kernel durations over rotated inputs (the benchmark's
   method, tools/gpu_read_probe.cupti_us), every result checked against the generated
   kernel's.
2. `tanh`: gelu_tanh's kernel with four tanh forms, each timed on the benchmark's 16M
   elements, and each checked over all 2^32 float32 inputs against float64 tanh (max
   ulp error, NaN/inf/-0 handling, bits equal to libdevice's):
   libdevice (the generated kernel's), the same instructions without the branch
   (inline PTX ex2/rcp.approx.ftz, as libdevice's SASS has them), a port of the CPU
   backend's 1-ulp tanh (mathlib._tanh_f32: polynomial below 0.5625, else 1 - 2/(e + 1)
   with a Cody-Waite exp; the division as div.full plus one correction), and
   tanh.approx.f32 (what-if only: 2^-11 relative, far outside the tolerance).
3. `inductor`: torch.compile's ew_chain and gelu kernels beside jitlib's (run with
   TORCH_LOGS=output_code to log inductor's source).
4. `regcap` (not in the default parts): the generated logsumexp and softmax with ptxas's
   register count capped at 40 and 32, three interleaved rounds.
5. `outputs` (not in the default parts): layernorm's generated kernel with one output
   buffer, two alternating, a new one each call, g and b rotated, and through jitlib's
   own call, two rounds: where the benchmark's figure and this harness's part.

These are measurements, not backend options.
"""
import argparse
import json
import os
import statistics
import sys
import time

import triton
import triton.language as tl
from triton.language.extra import libdevice

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpu_read_probe import cupti_us  # noqa: E402


@triton.jit
def _max_nan(a, b):
    return tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL)


@triton.jit
def _row_desc(x, R: tl.constexpr, N: tl.constexpr, SUB: tl.constexpr):
    """x as [R * N // SUB, SUB]: one row is the block [N // SUB, SUB] at row * N // SUB."""
    return tl.make_tensor_descriptor(x, shape=[R * (N // SUB), SUB], strides=[SUB, 1],
                                     block_shape=[N // SUB, SUB])


@triton.jit
def lse_tma(x, out, R: tl.constexpr, N: tl.constexpr, SUB: tl.constexpr,
            STAGES: tl.constexpr):
    desc = _row_desc(x, R, N, SUB)
    for row in tl.range(tl.program_id(0), R, tl.num_programs(0), num_stages=STAGES):
        v = desc.load([row * (N // SUB), 0])
        m = tl.reduce(tl.reduce(v, 1, _max_nan, keep_dims=True), 0, _max_nan, keep_dims=True)
        s = tl.sum(tl.sum(libdevice.exp(v - m), axis=1, keep_dims=True), axis=0, keep_dims=True)
        res = libdevice.log(s) + m
        tl.store(out + row + tl.arange(0, 1)[:, None], res)


@triton.jit
def softmax_tma(x, out, R: tl.constexpr, N: tl.constexpr, SUB: tl.constexpr,
                STAGES: tl.constexpr, TMA_STORE: tl.constexpr):
    desc = _row_desc(x, R, N, SUB)
    odesc = _row_desc(out, R, N, SUB)
    cols = tl.arange(0, N // SUB)[:, None] * SUB + tl.arange(0, SUB)[None, :]
    for row in tl.range(tl.program_id(0), R, tl.num_programs(0), num_stages=STAGES):
        v = desc.load([row * (N // SUB), 0])
        m = tl.reduce(tl.reduce(v, 1, _max_nan, keep_dims=True), 0, _max_nan, keep_dims=True)
        e = libdevice.exp(v - m)
        s = tl.sum(tl.sum(e, axis=1, keep_dims=True), axis=0, keep_dims=True)
        y = tl.div_rn(e, s)
        if TMA_STORE:
            odesc.store([row * (N // SUB), 0], y)
        else:
            tl.store(out + row.to(tl.int64) * N + cols, y)


@triton.jit
def layernorm_tma(x, g, b, out, R: tl.constexpr, N: tl.constexpr, SUB: tl.constexpr,
                  STAGES: tl.constexpr, TMA_STORE: tl.constexpr):
    """jitlib's layernorm math (f64 mean division, IEEE sqrt and division)."""
    desc = _row_desc(x, R, N, SUB)
    odesc = _row_desc(out, R, N, SUB)
    cols = tl.arange(0, N // SUB)[:, None] * SUB + tl.arange(0, SUB)[None, :]
    for row in tl.range(tl.program_id(0), R, tl.num_programs(0), num_stages=STAGES):
        v = desc.load([row * (N // SUB), 0])
        total = tl.sum(tl.sum(v, axis=1, keep_dims=True), axis=0, keep_dims=True)
        mean = (total.to(tl.float64) / N).to(tl.float32)
        d = v - mean
        sq = tl.sum(tl.sum(d * d, axis=1, keep_dims=True), axis=0, keep_dims=True)
        var = (sq.to(tl.float64) / N).to(tl.float32)
        y = tl.div_rn(d, tl.sqrt_rn(var + 9.999999747378752e-06)) * tl.load(g + cols)
        y = y + tl.load(b + cols)
        if TMA_STORE:
            odesc.store([row * (N // SUB), 0], y)
        else:
            tl.store(out + row.to(tl.int64) * N + cols, y)


@triton.jit
def row_copy_tma(x, out, R: tl.constexpr, N: tl.constexpr, SUB: tl.constexpr,
                 STAGES: tl.constexpr):
    desc = _row_desc(x, R, N, SUB)
    odesc = _row_desc(out, R, N, SUB)
    for row in tl.range(tl.program_id(0), R, tl.num_programs(0), num_stages=STAGES):
        odesc.store([row * (N // SUB), 0], desc.load([row * (N // SUB), 0]))


# ---------------------------------------------------------------- tanh forms

_TANH_P = [tl.constexpr(c) for c in (-0.3333331346511841, 0.13332471251487732,
                                     -0.053839243948459625, 0.021014273166656494,
                                     -0.00618863245472312)]
_TANH_Q = [tl.constexpr(c) for c in (0.9999999403953552, 0.6666615009307861,
                                     0.3333376944065094, 0.1338759958744049,
                                     0.04442537948489189)]
P0, P1, P2, P3, P4 = _TANH_P
Q0, Q1, Q2, Q3, Q4 = _TANH_Q
TWO_LOG2E = tl.constexpr(2.0 * 1.4426950408889634)
SHIFTER = tl.constexpr(1.5 * 2.0 ** 23 + 128)
LN2_HALF = tl.constexpr(0.6931471805599453 / 2)
LN2_LO_HALF = tl.constexpr(-1.9046542121259336e-09 / 2)


@triton.jit
def _with_sign_of(mag, x):
    bits = ((mag.to(tl.uint32, bitcast=True) & 0x7FFFFFFF)
            | (x.to(tl.uint32, bitcast=True) & 0x80000000))
    return bits.to(tl.float32, bitcast=True)


@triton.jit
def tanh_port(x):
    """mathlib._tanh_f32's operations; 2/d as div.full.f32 plus one residual correction."""
    a = tl.abs(x)
    ac = tl.minimum(a, 10.0)
    kf = tl.fma(ac, TWO_LOG2E, SHIFTER)
    k = kf - SHIFTER
    s2 = (kf.to(tl.int32, bitcast=True) << 23).to(tl.float32, bitcast=True)   # 2^(k+1)
    h = tl.fma(-k, LN2_HALF, ac)
    h = tl.fma(-k, LN2_LO_HALF, h)
    e = tl.fma(h * h, tl.fma(tl.fma(tl.fma(tl.fma(Q4, h, Q3), h, Q2), h, Q1), h, Q0), h)
    d = tl.fma(s2, e, tl.fma(s2, 0.5, 1.0))
    q0 = tl.fdiv(2.0, d)
    q = tl.fma(tl.fma(-d, q0, 2.0), q0 * 0.5, q0)
    z = x * x
    p = tl.fma(tl.fma(tl.fma(tl.fma(P4, z, P3), z, P2), z, P1), z, P0)
    small = tl.fma(x * z, p, x)
    return _with_sign_of(tl.where(a >= 0.5625, 1.0 - q, small), x)


@triton.jit
def _ex2_ftz(t):
    return tl.inline_asm_elementwise("ex2.approx.ftz.f32 $0, $1;", "=r,r", [t],
                                     dtype=tl.float32, is_pure=True, pack=1)


@triton.jit
def _rcp_ftz(t):
    return tl.inline_asm_elementwise("rcp.approx.ftz.f32 $0, $1;", "=r,r", [t],
                                     dtype=tl.float32, is_pure=True, pack=1)


@triton.jit
def tanh_branchfree(x):
    """libdevice's tanhf as its sm_90 SASS has it (both sides, then a select)."""
    a = tl.abs(x)
    r = _rcp_ftz(_ex2_ftz(a * 2.885390043258667) + 1.0)
    big = tl.where(a >= 9.010913848876953, 1.0, tl.fma(r, -2.0, 1.0))
    z = x * x
    p = tl.fma(z, 0.015724964812397957, -0.052303962409496307)
    p = tl.fma(z, p, 0.1331529766321182)
    p = tl.fma(z, p, -0.33332768082618713)
    small = tl.fma(x, z * p, x)
    return tl.where(a >= 0.6000000238418579, _with_sign_of(big, x), small)


@triton.jit
def tanh_approx(x):
    return tl.inline_asm_elementwise("tanh.approx.f32 $0, $1;", "=r,r", [x],
                                     dtype=tl.float32, is_pure=True, pack=1)


@triton.jit
def _tanh(x, FORM: tl.constexpr):
    if FORM == 0:
        y = libdevice.tanh(x)
    elif FORM == 1:
        y = tanh_branchfree(x)
    elif FORM == 2:
        y = tanh_port(x)
    else:
        y = tanh_approx(x)
    return y


@triton.jit
def tanh_k(x, out, n, FORM: tl.constexpr, BLOCK: tl.constexpr):
    i = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    tl.store(out + i, _tanh(tl.load(x + i, mask=m), FORM), mask=m)


@triton.jit
def gelu_k(x, out, FORM: tl.constexpr, N: tl.constexpr, BLOCK: tl.constexpr):
    """The generated gelu_tanh kernel's operations, tanh as FORM."""
    i = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = i < N
    v = tl.load(x + i, mask=m, other=0)
    u = (v + v * 0.044714998453855515 * v * v) * 0.7978845834732056
    tl.store(out + i, v * 0.5 * (_tanh(u, FORM) + 1.0), mask=m)


TANH_FORMS = {0: "libdevice", 1: "libdevice branch-free", 2: "port of mathlib (1 ulp?)",
              3: "tanh.approx (what-if)"}


def tanh_exhaustive(torch, forms):
    """All 2^32 float32 inputs through each tanh form: max ulp error against float64 tanh,
    wrong specials (NaN, +-inf, +-0), and results whose bits differ from libdevice's."""
    chunk = 1 << 28
    rep = {f: dict(max_ulp=0.0, at=None, bits_differ_from_libdevice=0, wrong_specials=0)
           for f in forms}
    out = torch.empty(chunk, device="cuda", dtype=torch.float32)
    lib = torch.empty_like(out)
    grid = (triton.cdiv(chunk, 1024),)
    for c in range((1 << 32) // chunk):
        bits = torch.arange(c * chunk, (c + 1) * chunk, device="cuda", dtype=torch.int64)
        x = torch.where(bits >= (1 << 31), bits - (1 << 32), bits).to(torch.int32)
        x = x.view(torch.float32)
        del bits
        ref = torch.tanh(x.double())
        r32 = ref.float()
        # the ulp of a float32 result near ref (2^-149 for subnormals)
        ulp = torch.pow(2.0, (torch.frexp(r32)[1] - 24).clamp_min(-149).double())
        finite = torch.isfinite(x)
        tanh_k[grid](x, lib, chunk, 0, 1024, num_warps=4)
        for f in forms:
            r = rep[f]
            tanh_k[grid](x, out, chunk, f, 1024, num_warps=4)
            r["bits_differ_from_libdevice"] += int((out.view(torch.int32) !=
                                                    lib.view(torch.int32)).sum())
            err = ((out.double() - ref).abs() / ulp).where(finite, torch.zeros_like(ref))
            err = err.nan_to_num(1e30)
            i = int(err.argmax())
            if float(err[i]) > r["max_ulp"]:
                r["max_ulp"], r["at"] = float(err[i]), float(x[i])
            r["wrong_specials"] += int((torch.isnan(out) != torch.isnan(x)).sum())
            r["wrong_specials"] += int(((out != torch.sign(x)) & torch.isinf(x)).sum())
            r["wrong_specials"] += int(((out.view(torch.int32) != x.view(torch.int32))
                                        & (x == 0)).sum())
            del err
        del x, ref, r32, ulp, finite
    return rep


def inductor_ab(torch, record, launches):
    """ew_chain and gelu_tanh: torch.compile's kernel beside jitlib's generated one at its
    config and at inductor's shape (512 elements, 8 warps), same process, same inputs."""
    from benchmarks import workloads as W
    from benchmarks.gpu import TorchNumPy
    from jitlib.backends.triton import compiler
    from jitlib.backends.triton.configs import Config
    import gpu_tune_sweep as S
    n = 1 << 24
    for row, n_in in (("ew_chain", 3), ("gelu_tanh", 1)):
        copies = max(1, -(-(256 << 20) // (n * 4 * n_in)))
        sets = [[torch.randn(n, device="cuda") for _ in range(n_in)] for _ in range(copies)]
        out = torch.empty(n, device="cuda")
        fn = torch.compile(lambda *a, f=W.WORKLOADS[row], xp=TorchNumPy(torch): f(xp, *a))
        fn(*sets[0])
        record(f"{row} torch.compile", lambda i, fn=fn, sets=sets: fn(*sets[i]), copies,
               (n_in + 1) * n * 4)
        k, = S.row_kernels(row)
        for cfg in (k.config, Config({"BLOCK": 512}, 8), Config({"BLOCK": 1024}, 4)):
            run = compiler.compile_for(k, config=cfg)[(k.grid(cfg)[0], 1, 1)]
            record(f"{row} jitlib {cfg.constexprs['BLOCK']}/{cfg.num_warps}w",
                   lambda i, run=run, sets=sets, b=cfg.constexprs["BLOCK"]: run(
                       *[t.data_ptr() for t in sets[i]], out.data_ptr(), b),
                   copies, (n_in + 1) * n * 4)
        del sets, out


def register_caps(torch, record, rounds=3):
    """The generated logsumexp and softmax kernels at their heuristic config with ptxas's
    register count capped (Config.maxnreg: more programs per SM, 65536 registers per SM),
    in interleaved rounds so a difference can be told from the spread."""
    from jitlib.backends.triton import compiler
    from jitlib.backends.triton.configs import Config
    import gpu_tune_sweep as S
    R = N = 4096
    copies = max(1, -(-(256 << 20) // (R * N * 4)))
    xs = [torch.randn(R, N, device="cuda") for _ in range(copies)]
    outs = {"logsumexp_rows": torch.empty(R, device="cuda"),
            "softmax_rows": torch.empty_like(xs[0])}
    runs = {}
    for row, out in outs.items():
        k, = S.row_kernels(row)
        for cap in (None, 40, 32):
            cfg = Config(dict(k.config.constexprs), k.config.num_warps, maxnreg=cap)
            run = compiler.compile_for(k, config=cfg)[(k.grid(cfg)[0], 1, 1)]
            runs[(row, cap)] = (run, out, k.config.constexprs["ROWS"])
    for rnd in range(rounds):
        for (row, cap), (run, out, rows) in runs.items():
            nbytes = R * N * 4 * (1 if out.numel() == R else 2)
            record(f"{row} maxnreg={cap} #{rnd}",
                   lambda i, run=run, out=out, rows=rows: run(xs[i].data_ptr(),
                                                              out.data_ptr(), rows),
                   copies, nbytes)
    del xs


def output_buffers(torch, record):
    """Where layernorm's kernel time differs between this probe's harness (one output
    buffer, one g and b) and the benchmark's (jitlib's own call, a fresh output from the
    pool each call, g and b rotated with x): the generated kernel with one output, two
    alternating outputs, a new torch.empty each call, and the jitted function itself."""
    import numpy as np
    import jitlib
    from benchmarks import workloads as W
    from jitlib.backends.triton import compiler
    import gpu_tune_sweep as S
    R = N = 4096
    copies = max(1, -(-(256 << 20) // (R * N * 4)))
    xs = [torch.randn(R, N, device="cuda") for _ in range(copies)]
    gs = [torch.randn(N, device="cuda") for _ in range(copies)]
    bs = [torch.randn(N, device="cuda") for _ in range(copies)]
    ys = [torch.empty_like(xs[0]) for _ in range(2)]
    k, = S.row_kernels("layernorm")
    run = compiler.compile_for(k)[(k.grid(k.config)[0], 1, 1)]
    rows = k.config.constexprs["ROWS"]
    nbytes = 2 * R * N * 4

    def launch(i, out, rotate_gb=False):
        j = i if rotate_gb else 0
        run(xs[i].data_ptr(), gs[j].data_ptr(), bs[j].data_ptr(), out.data_ptr(), rows)

    f = jitlib.jit(lambda x, g, b: W.layernorm(np, x, g, b), backend="gpu")
    args = [[jitlib.from_dlpack(t) for t in (xs[i], gs[i], bs[i])] for i in range(copies)]
    f(*args[0])
    for rnd in range(2):
        record(f"layernorm one output #{rnd}", lambda i: launch(i, ys[0]), copies, nbytes)
        record(f"layernorm two outputs, alternating #{rnd}",
               lambda i: launch(i, ys[i % 2]), copies, nbytes)
        record(f"layernorm g, b rotated with x #{rnd}",
               lambda i: launch(i, ys[0], True), copies, nbytes)
        record(f"layernorm new torch.empty output each call #{rnd}",
               lambda i: launch(i, torch.empty_like(xs[0])), copies, nbytes)
        record(f"layernorm through jitlib's call #{rnd}", lambda i: f(*args[i]), copies,
               nbytes)
    del xs, ys, args


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--part", nargs="*", default=["tma", "tanh", "inductor"])
    ap.add_argument("--launches", type=int, default=40)
    ap.add_argument("--out", default=os.path.join(os.environ.get("OUT", "."), "tma_probe.json"))
    args = ap.parse_args(argv)
    import torch
    triton.set_allocator(lambda size, align, stream: torch.empty(size, device="cuda",
                                                                 dtype=torch.int8))
    nsm = torch.cuda.get_device_properties(0).multi_processor_count
    report = dict(device=torch.cuda.get_device_name(0), sms=nsm, results={})
    t_start = time.perf_counter()

    def record(name, launch, copies, nbytes, check=None):
        fns = [lambda i=i: launch(i % copies) for i in range(args.launches)]
        try:
            for f in fns[:3]:
                f()
            torch.cuda.synchronize()
        except Exception as e:   # noqa: BLE001 - a compile or launch failure is a result
            msg = f"{type(e).__name__}: {str(e)[:300]}"
            report["results"][name] = dict(error=msg)
            print(f"{name:56s} FAILED {msg[:200]}", flush=True)
            return
        med, spread = cupti_us(torch, fns)
        us = sum(med.values())
        err = check() if check else None
        report["results"][name] = dict(us=us, kernels=med, spread=spread,
                                       gbs=nbytes / us / 1e3, err=err)
        print(f"{name:56s} {us:7.2f} us {nbytes / us / 1e3:6.0f} GB/s"
              + (f" err {err:.1e}" if err is not None else ""), flush=True)

    def rel_err(got, want):
        got, want = got.double(), want.double()
        return float(((got - want).abs() / want.abs().clamp_min(1e-30)).nan_to_num(1e30).max())

    if "inductor" in args.part:
        inductor_ab(torch, record, args.launches)
    if "regcap" in args.part:
        register_caps(torch, record)
    if "outputs" in args.part:
        output_buffers(torch, record)
    if "tanh" in args.part:
        n = 1 << 24
        copies = max(1, -(-(256 << 20) // (n * 4)))
        xs = [torch.randn(n, device="cuda") for _ in range(copies)]
        out = torch.empty_like(xs[0])
        ref = torch.empty_like(out)
        gelu_k[(n // 512,)](xs[0], ref, 0, n, 512, num_warps=4)
        for form, name in TANH_FORMS.items():
            for block, warps in ((512, 4), (1024, 4)):
                def check(form=form, block=block, warps=warps):
                    out.fill_(float("nan"))
                    gelu_k[(n // block,)](xs[0], out, form, n, block, num_warps=warps)
                    torch.cuda.synchronize()
                    return float(((out - ref).abs() / ref.abs().clamp_min(1e-30)).max())
                record(f"gelu tanh={name} {block}/{warps}w",
                       lambda i, form=form, block=block, warps=warps: gelu_k[(n // block,)](
                           xs[i], out, form, n, block, num_warps=warps),
                       copies, 2 * n * 4, check)
        record("torch copy_ 64 MiB (gelu's bytes)", lambda i: out.copy_(xs[i]), copies,
               2 * n * 4)
        del xs, out, ref
        torch.cuda.empty_cache()
        t0 = time.perf_counter()
        for form, entry in tanh_exhaustive(torch, list(TANH_FORMS)).items():
            entry["form"] = TANH_FORMS[form]
            report[f"tanh exhaustive {TANH_FORMS[form]}"] = entry
            print(f"tanh all 2^32 inputs: {entry}", flush=True)
        print(f"exhaustive checks {time.perf_counter() - t0:.0f} s", flush=True)
    if "tma" in args.part:
        from jitlib.backends.triton import compiler
        import gpu_tune_sweep as S
        R = N = 4096
        nbytes = R * N * 4
        copies = max(1, -(-(256 << 20) // nbytes))
        xs = [torch.randn(R, N, device="cuda") for _ in range(copies)]
        g, b = torch.randn(N, device="cuda"), torch.randn(N, device="cuda")
        y = torch.empty_like(xs[0])
        lse = torch.empty(R, device="cuda")

        def generated(row):
            k, = S.row_kernels(row)
            run = compiler.compile_for(k)[(k.grid(k.config)[0], 1, 1)]
            return k, run, k.config.constexprs["ROWS"]

        # the reference results and times of the generated kernels
        k_lse, run_lse, rows_lse = generated("logsumexp_rows")
        k_sm, run_sm, rows_sm = generated("softmax_rows")
        k_ln, run_ln, rows_ln = generated("layernorm")
        ref_lse, ref_sm, ref_ln = torch.empty(R, device="cuda"), torch.empty_like(y), \
            torch.empty_like(y)
        run_lse(xs[0].data_ptr(), ref_lse.data_ptr(), rows_lse)
        run_sm(xs[0].data_ptr(), ref_sm.data_ptr(), rows_sm)
        run_ln(xs[0].data_ptr(), g.data_ptr(), b.data_ptr(), ref_ln.data_ptr(), rows_ln)
        torch.cuda.synchronize()
        record("torch copy_ 64 MiB", lambda i: y.copy_(xs[i]), copies, 2 * nbytes)
        record("generated logsumexp", lambda i: run_lse(xs[i].data_ptr(), lse.data_ptr(),
                                                         rows_lse), copies, nbytes)
        record("generated softmax", lambda i: run_sm(xs[i].data_ptr(), y.data_ptr(),
                                                      rows_sm), copies, 2 * nbytes)
        record("generated layernorm", lambda i: run_ln(xs[i].data_ptr(), g.data_ptr(),
                                                        b.data_ptr(), y.data_ptr(), rows_ln),
               copies, 2 * nbytes)

        def check_out(out, ref, launch0):
            def check():
                out.fill_(float("nan"))
                launch0()
                torch.cuda.synchronize()
                return rel_err(out, ref)
            return check

        # programs per SM x stages x warps; one program a row (grid R) as the last form
        plans = [(p, s, w) for p in (1, 2, 4) for s in (2, 3, 4) for w in (4, 8)
                 if p * (s - 1) * 16 <= 200]
        plans += [(R / nsm, 1, 8), (R / nsm, 1, 4)]
        for p, s, w in plans:
            G = min(R, int(p * nsm))
            tag = f"G={G} ({p:g}/SM) stages={s} warps={w}"
            record(f"tma logsumexp {tag}",
                   lambda i, G=G, s=s, w=w: lse_tma[(G,)](xs[i], lse, R, N, 256, s,
                                                          num_warps=w),
                   copies, nbytes,
                   check_out(lse, ref_lse, lambda G=G, s=s, w=w: lse_tma[(G,)](
                       xs[0], lse, R, N, 256, s, num_warps=w)))
            if time.perf_counter() - t_start > 170:
                print("time limit: stopping the tma sweep", flush=True)
                break
        for p, s, w in [(1, 3, 8), (2, 2, 8), (2, 3, 8), (1, 4, 8), (R / nsm, 1, 8),
                        (2, 3, 4)]:
            G = min(R, int(p * nsm))
            for ts in (0, 1):
                tag = f"G={G} ({p:g}/SM) stages={s} warps={w} tma_store={ts}"
                record(f"tma layernorm {tag}",
                       lambda i, G=G, s=s, w=w, ts=ts: layernorm_tma[(G,)](
                           xs[i], g, b, y, R, N, 256, s, ts, num_warps=w),
                       copies, 2 * nbytes,
                       check_out(y, ref_ln, lambda G=G, s=s, w=w, ts=ts: layernorm_tma[(G,)](
                           xs[0], g, b, y, R, N, 256, s, ts, num_warps=w)))
                record(f"tma softmax {tag}",
                       lambda i, G=G, s=s, w=w, ts=ts: softmax_tma[(G,)](
                           xs[i], y, R, N, 256, s, ts, num_warps=w),
                       copies, 2 * nbytes,
                       check_out(y, ref_sm, lambda G=G, s=s, w=w, ts=ts: softmax_tma[(G,)](
                           xs[0], y, R, N, 256, s, ts, num_warps=w)))
            record(f"tma row copy G={G} ({p:g}/SM) stages={s} warps={w}",
                   lambda i, G=G, s=s, w=w: row_copy_tma[(G,)](xs[i], y, R, N, 256, s,
                                                               num_warps=w),
                   copies, 2 * nbytes)
            if time.perf_counter() - t_start > 235:
                print("time limit: stopping the row sweep", flush=True)
                break
        # special rows: -inf, NaN and +inf rows through the best logsumexp form
        x = xs[0].clone()
        x[0] = float("-inf")
        x[1, 7] = float("nan")
        x[2, 9] = float("inf")
        run_lse(x.data_ptr(), ref_lse.data_ptr(), rows_lse)
        lse_tma[(2 * nsm,)](x, lse, R, N, 256, 3, num_warps=8)
        torch.cuda.synchronize()
        same = torch.equal(lse[:3].isnan(), ref_lse[:3].isnan()) and \
            bool((lse[:3] == ref_lse[:3]).logical_or(lse[:3].isnan()).all())
        report["lse_special_rows"] = dict(tma=lse[:3].tolist(), generated=ref_lse[:3].tolist(),
                                          same=same)
        print("special rows (-inf, NaN, +inf):", lse[:3].tolist(), ref_lse[:3].tolist(),
              flush=True)
        del xs, y

    with open(args.out, "w") as f:
        json.dump(report, f, indent=1)
    print(f"wrote {args.out} after {time.perf_counter() - t_start:.0f} s")


if __name__ == "__main__":
    sys.path.insert(0, os.getcwd())
    main(sys.argv[1:])
