"""What a read-only row kernel can reach on this GPU, and row-kernel variants beside it.

    PYTHONPATH=$PWD python tools/gpu_read_probe.py [--rows 4096 --cols 4096] [--split]
        [--ceilings-only] [--out p.json]

logsumexp over rows reads its whole input and writes one value per row, so its ceiling is
a pure read, not the copy figure (read + write). This times, by CUPTI kernel durations
(the benchmark's method; median over launches that rotate through input copies larger
than L2):

- the ceilings: torch `copy_` (read + write counted), torch.sum over rows and over all,
  a Triton row sum shaped as jitlib's reduction kernels (a whole row in registers, one
  program a row), a flat Triton sum of 8K-element blocks (no row granularity), and a
  row copy (layernorm's traffic without its math);
- jitlib's generated logsumexp and layernorm kernels, at their heuristic configs;
- both as persistent programs that load the next row before this row's math;
- (--split) logsumexp with each row split over SPLIT programs (partial max and sum of
  exp), the partials combined either by a second small kernel or by the row's last
  program to finish (an atomic counter per row, reset by that program for the next launch).

Every variant's result is checked against the generated kernel's. These are
measurements, not backend options.
"""
import argparse
import json
import os
import statistics
import sys

import numpy as np
import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit
def _max_nan(a, b):
    return tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL)


@triton.jit
def row_sum(x, out, N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    v = tl.load(x + row * N + tl.arange(0, N))
    tl.store(out + row, tl.sum(v, axis=0))


@triton.jit
def row_copy(x, out, N: tl.constexpr):
    """Layernorm's memory traffic without its math: a row in registers, stored back."""
    row = tl.program_id(0).to(tl.int64)
    offsets = row * N + tl.arange(0, N)
    tl.store(out + offsets, tl.load(x + offsets))


@triton.jit
def flat_sum(x, out, BLOCK: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    v = tl.load(x + pid * BLOCK + tl.arange(0, BLOCK))
    tl.store(out + pid, tl.sum(v, axis=0))


@triton.jit
def _lse_partial(x, pid, N: tl.constexpr, SPLIT: tl.constexpr):
    """(max, sum of exp(x - max)) over segment pid % SPLIT of row pid // SPLIT; a segment
    of -inf alone contributes a sum of 0 (its x - max would be NaN)."""
    SEG: tl.constexpr = N // SPLIT
    row = (pid // SPLIT).to(tl.int64)
    v = tl.load(x + row * N + (pid % SPLIT) * SEG + tl.arange(0, SEG))
    m = tl.reduce(v, 0, _max_nan)
    s = tl.sum(libdevice.exp(v - m), axis=0)
    return m, tl.where(m == float("-inf"), 0.0, s)


@triton.jit
def _lse_merge(ms, ss):
    big = tl.reduce(ms, 0, _max_nan)
    return libdevice.log(tl.sum(ss * libdevice.exp(ms - big), axis=0)) + big


@triton.jit
def lse_split_parts(x, m_buf, s_buf, N: tl.constexpr, SPLIT: tl.constexpr):
    pid = tl.program_id(0)
    m, s = _lse_partial(x, pid, N, SPLIT)
    tl.store(m_buf + pid, m)
    tl.store(s_buf + pid, s)


@triton.jit
def lse_split_combine(m_buf, s_buf, out, SPLIT: tl.constexpr):
    row = tl.program_id(0)
    j = row * SPLIT + tl.arange(0, SPLIT)
    tl.store(out + row, _lse_merge(tl.load(m_buf + j), tl.load(s_buf + j)))


@triton.jit
def lse_split_last(x, m_buf, s_buf, count, out, N: tl.constexpr, SPLIT: tl.constexpr):
    pid = tl.program_id(0)
    row = pid // SPLIT
    m, s = _lse_partial(x, pid, N, SPLIT)
    tl.store(m_buf + pid, m)
    tl.store(s_buf + pid, s)
    tl.debug_barrier()   # the partials are stored before the count says so
    done = tl.atomic_add(count + row, 1, sem="acq_rel")
    if done == SPLIT - 1:
        j = row * SPLIT + tl.arange(0, SPLIT)
        ms = tl.load(m_buf + j, cache_modifier=".cg")
        ss = tl.load(s_buf + j, cache_modifier=".cg")
        tl.store(out + row, _lse_merge(ms, ss))
        tl.store(count + row, 0)   # ready for the next launch


@triton.jit
def lse_rows_prefetched(x, out, R: tl.constexpr, N: tl.constexpr, PER: tl.constexpr):
    """logsumexp of rows p, p + G, ... (G programs, PER rows each), the next row's load
    issued before this row's max, exp and sum, so its latency hides behind that math."""
    G: tl.constexpr = R // PER
    cols = tl.arange(0, N)
    row = tl.program_id(0)
    v = tl.load(x + row.to(tl.int64) * N + cols)
    for _ in range(PER):
        nxt = row + G
        nv = tl.load(x + nxt.to(tl.int64) * N + cols, mask=(cols < N) & (nxt < R), other=0)
        m = tl.reduce(v, 0, _max_nan)
        s = tl.sum(libdevice.exp(v - m), axis=0)
        tl.store(out + row, libdevice.log(s) + m)
        v = nv
        row = nxt


@triton.jit
def layernorm_rows_prefetched(x, g, b, out, R: tl.constexpr, N: tl.constexpr,
                              PER: tl.constexpr):
    """jitlib's layernorm math (f64 mean division, IEEE sqrt and division) on rows p,
    p + G, ..., the next row's load issued before this row's two reductions."""
    G: tl.constexpr = R // PER
    cols = tl.arange(0, N)
    row = tl.program_id(0)
    v = tl.load(x + row.to(tl.int64) * N + cols)
    for _ in range(PER):
        nxt = row + G
        nv = tl.load(x + nxt.to(tl.int64) * N + cols, mask=(cols < N) & (nxt < R), other=0)
        mean = (tl.sum(v, axis=0).to(tl.float64) / N).to(tl.float32)
        d = v - mean
        var = (tl.sum(d * d, axis=0).to(tl.float64) / N).to(tl.float32)
        y = tl.div_rn(d, tl.sqrt_rn(var + 9.999999747378752e-06)) * tl.load(g + cols)
        tl.store(out + row.to(tl.int64) * N + cols, y + tl.load(b + cols))
        v = nv
        row = nxt


def cupti_us(torch, launches, reps=3):
    """Median µs per launch of each kernel name (kernels of one launch summed in order)."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(reps):
            for launch in launches:
                launch()
        torch.cuda.synchronize()
    per = {}
    for e in prof.profiler.kineto_results.events():
        if e.device_type() == DeviceType.CUDA:   # a DtoD copy is a Memcpy record
            per.setdefault(e.name(), []).append(e.duration_ns() / 1e3)
    return {name: statistics.median(v) for name, v in per.items()}, {
        name: (min(v), max(v)) for name, v in per.items()}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=4096)
    ap.add_argument("--cols", type=int, default=4096)
    ap.add_argument("--launches", type=int, default=40)
    ap.add_argument("--split", action="store_true",
                    help="also logsumexp with each row split over programs (2026-12-03: "
                         "all slower)")
    ap.add_argument("--ceilings-only", action="store_true",
                    help="the copy and read ceilings and a row copy, not logsumexp")
    ap.add_argument("--out", default=os.path.join(os.environ.get("OUT", "."), "read_probe.json"))
    args = ap.parse_args(argv)
    import torch
    R, N = args.rows, args.cols
    nbytes = R * N * 4
    copies = max(1, -(-(256 << 20) // nbytes))
    xs = [torch.randn(R, N, device="cuda") for _ in range(copies)]
    out = torch.empty(R, device="cuda")
    report = dict(device=torch.cuda.get_device_name(0), rows=R, cols=N, results={})

    def record(name, launches, bytes_moved, check=None):
        fns = [lambda i=i: launches(i) for i in range(args.launches)]
        for f in fns[:3]:
            f()
        torch.cuda.synchronize()
        med, spread = cupti_us(torch, fns)
        us = sum(med.values())
        err = None
        if check is not None:
            got, want = check()
            err = float(((got.double() - want.double()).abs() /
                         want.double().abs().clamp_min(1e-30)).max())
        report["results"][name] = dict(us=us, kernels=med, spread=spread,
                                       gbs=bytes_moved / us / 1e3, err=err)
        print(f"{name:42s} {us:7.2f} us  {bytes_moved / us / 1e3:6.0f} GB/s"
              + (f"  err {err:.1e}" if err is not None else "")
              + "  " + " + ".join(f"{v:.2f}" for v in med.values()), flush=True)

    # ceilings
    src = torch.randn(512 << 20 >> 2, device="cuda")
    dst = torch.empty_like(src)
    record("copy 512 MiB (read + write)", lambda i: dst.copy_(src), 2 * src.numel() * 4)
    del src, dst
    y = torch.empty_like(xs[0])
    record("copy 64 MiB (layernorm's bytes)", lambda i: y.copy_(xs[i % copies]), 2 * nbytes)
    for warps in (4, 8):
        record(f"triton row_copy 1 row/{warps} warps",
               lambda i, w=warps: row_copy[(R,)](xs[i % copies], y, N, num_warps=w), 2 * nbytes)
    record("torch.sum(x, dim=1)", lambda i: torch.sum(xs[i % copies], dim=1, out=out), nbytes)
    record("torch.sum(x)", lambda i: xs[i % copies].sum(), nbytes)
    for warps in (4, 8, 16):
        record(f"triton row_sum 1 row/{warps} warps",
               lambda i, w=warps: row_sum[(R,)](xs[i % copies], out, N, num_warps=w), nbytes)
    for block, warps in ((8192, 8), (4096, 8), (16384, 16)):
        partial = torch.empty(R * N // block, device="cuda")
        record(f"triton flat_sum {block}/{warps} warps",
               lambda i, b=block, w=warps, p=partial: flat_sum[(R * N // b,)](
                   xs[i % copies], p, b, num_warps=w), nbytes)

    if args.ceilings_only:
        with open(args.out, "w") as f:
            json.dump(report, f, indent=1)
        return
    # jitlib's logsumexp kernel, as generated
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import gpu_tune_sweep as S
    from jitlib.backends.triton import compiler
    kernel, = S.row_kernels("logsumexp_rows")
    ref = torch.empty(R, device="cuda")
    for config in [kernel.config] + [c for c in S.sweep_configs(kernel)
                                     if c.constexprs["ROWS"] == 1 and c.num_warps == 4][:1]:
        ck = compiler.compile_for(kernel, config=config)
        grid = kernel.grid(config)
        run = ck[(grid[0], 1, 1)]
        tail = [config.constexprs["ROWS"]]
        target = ref if config is kernel.config else out
        record(f"jitlib logsumexp ROWS=1/{config.num_warps} warps",
               lambda i, t=target: run(xs[i % copies].data_ptr(), t.data_ptr(), *tail), nbytes)
    run_ref = compiler.compile_for(kernel)[(R, 1, 1)]
    run_ref(xs[0].data_ptr(), ref.data_ptr(), kernel.config.constexprs["ROWS"])
    torch.cuda.synchronize()
    expect = torch.logsumexp(xs[0].double(), dim=1)
    print(f"generated kernel vs float64 logsumexp: "
          f"{float(((ref.double() - expect).abs() / expect.abs()).max()):.1e}")

    def check_against_ref(result):
        def check():
            run_ref(xs[0].data_ptr(), ref.data_ptr(), kernel.config.constexprs["ROWS"])
            torch.cuda.synchronize()
            return result, ref.clone()
        return check

    # the next row prefetched by persistent programs
    for per, warps in ((2, 8), (4, 8), (8, 8), (16, 8), (4, 4)):
        def prefetched(i, per=per, w=warps):
            lse_rows_prefetched[(R // per,)](xs[i % copies], out, R, N, per, num_warps=w)

        def check_p(per=per, w=warps):
            out.fill_(float("nan"))
            lse_rows_prefetched[(R // per,)](xs[0], out, R, N, per, num_warps=w)
            return check_against_ref(out)()
        record(f"prefetched, {R // per} programs x {per} rows/{warps} warps", prefetched,
               nbytes, check_p)
    ln, = S.row_kernels("layernorm")
    g, b = torch.randn(N, device="cuda"), torch.randn(N, device="cuda")
    y, y_ref = torch.empty_like(xs[0]), torch.empty_like(xs[0])
    ln_run = compiler.compile_for(ln)[(R, 1, 1)]
    ln_args = lambda i, o: (xs[i % copies].data_ptr(), g.data_ptr(), b.data_ptr(),  # noqa
                            o.data_ptr(), ln.config.constexprs["ROWS"])
    record("jitlib layernorm (heuristic)", lambda i: ln_run(*ln_args(i, y_ref)), 2 * nbytes)
    for per, warps in ((4, 8), (8, 8), (16, 8), (8, 4)):
        def ln_check(per=per, w=warps):
            y.fill_(float("nan"))
            layernorm_rows_prefetched[(R // per,)](xs[0], g, b, y, R, N, per, num_warps=w)
            ln_run(*ln_args(0, y_ref))
            torch.cuda.synchronize()
            return y, y_ref
        record(f"layernorm prefetched, {R // per} x {per} rows/{warps} warps",
               lambda i, per=per, w=warps: layernorm_rows_prefetched[(R // per,)](
                   xs[i % copies], g, b, y, R, N, per, num_warps=w), 2 * nbytes, ln_check)

    # split rows
    for split in (2, 4, 8) if args.split else ():
        m_buf = torch.empty(R * split, device="cuda")
        s_buf = torch.empty(R * split, device="cuda")
        count = torch.zeros(R, device="cuda", dtype=torch.int32)
        seg = N // split
        for warps in sorted({max(1, min(8, seg // 512)), max(1, min(8, seg // 256))}):
            def two(i, w=warps, sp=split, mb=m_buf, sb=s_buf):
                lse_split_parts[(R * sp,)](xs[i % copies], mb, sb, N, sp, num_warps=w)
                lse_split_combine[(R,)](mb, sb, out, sp, num_warps=1)

            def check2(sp=split, mb=m_buf, sb=s_buf, w=warps):
                lse_split_parts[(R * sp,)](xs[0], mb, sb, N, sp, num_warps=w)
                lse_split_combine[(R,)](mb, sb, out, sp, num_warps=1)
                return check_against_ref(out)()
            record(f"split {split}/{warps} warps + combine kernel", two, nbytes, check2)

            def last(i, w=warps, sp=split, mb=m_buf, sb=s_buf, c=count):
                lse_split_last[(R * sp,)](xs[i % copies], mb, sb, c, out, N, sp, num_warps=w)

            def check3(sp=split, mb=m_buf, sb=s_buf, c=count, w=warps):
                out.fill_(float("nan"))
                lse_split_last[(R * sp,)](xs[0], mb, sb, c, out, N, sp, num_warps=w)
                return check_against_ref(out)()
            record(f"split {split}/{warps} warps, last program combines", last, nbytes, check3)
        assert int(count.abs().sum()) == 0, "a row counter was left non-zero"
    with open(args.out, "w") as f:
        json.dump(report, f, indent=1)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    sys.path.insert(0, os.getcwd())
    main(sys.argv[1:])
