"""GPU side-by-side timing of the anchor workloads: jitlib "gpu" next to jax.jit, PyTorch
eager and torch.compile, on one NVIDIA GPU.

    python -m benchmarks.gpu [--quick] [--only NAME ...] [--rounds R] [--out PATH]
        [--budget-s S]
    python -m benchmarks --gpu ...
    ncu --profile-from-start off ... python -m benchmarks.gpu --ncu [--only NAME ...]

For each workload of `benchmarks/workloads.py` (float32 at the "large" sizes; mlp and
attention also in bfloat16), each tool gets:

- first call: seconds for the first call and its sync (trace + compile + run);
- kernel µs: GPU time per call from CUPTI (torch.profiler, which also sees JAX's and
  Triton's kernels): the median over K queued calls of each call's summed device time
  (the mean over the K calls is kept too, `kernel_us_mean`: the figure before
  2026-12-03 12:00), and kernels per call. For the memory-bound rows, whose tools differ
  by less than a single pass's run-to-run spread, the figure is the median of R
  interleaved rounds (`kernel_rounds`: every round times every tool once, in a rotating
  order; the calls of the tools on the current stream queued behind a sleep kernel so
  they run back to back whatever the tool's dispatch speed); the single pass stays in
  the record as `kernel_us_single`, the plain queued rounds as `kernel_us_queued`;
- event µs (jitlib, torch, torch.compile, which share the current stream): the median over
  reps of CUDA events around K calls queued behind a sleep kernel, so host dispatch gaps do
  not count; "host-bound" when queueing took longer than the sleep;
- wall µs: the median over reps of (K queued calls + one sync) / K: what a caller sees.

Inputs rotate over enough copies that the working set is at least 256 MiB, so L2 holds none
of them between calls. GB/s is `workloads.min_bytes / kernel time`, as % of the
device-to-device copy bandwidth measured in the same run (torch `copy_`, read + write
counted). TFLOP/s counts 2*M*N*K per matmul, as % of torch.matmul (cuBLAS) at the same
shapes and dtype (fp32 without TF32, as torch defaults; TF32 is measured too; a bf16 row's
products each at the types NumPy gives them: bf16 x bf16, then f32 x f32). `tiny`
gives dispatch: call + sync median (p10/p90) and queued µs/call.

`--ncu` times nothing: it builds and warms every tool's function (autotuning included),
then calls each once between cudaProfilerStart and cudaProfilerStop, so Nsight Compute
(`--profile-from-start off`) profiles exactly one launch of each tool's kernels.

A failing row or tool records its error and the run goes on. Results:
`benchmarks/results/gpu-<date>.json` and `.md`, and copies in $OUT when it is set.
"""
import argparse
import datetime
import json
import math
import os
import pathlib
import platform
import shutil
import statistics
import sys
import time
import traceback

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")   # JAX shares the GPU

import numpy as np

from benchmarks import workloads as W

TOOLS = ("jitlib", "jax", "torch", "torch.compile")
SAME_STREAM = ("jitlib", "torch", "torch.compile")   # timed with CUDA events
MEMORY_BOUND = ("ew_chain", "gelu_tanh", "softmax_rows", "layernorm", "logsumexp_rows")
MIB = 1 << 20


# ---------------------------------------------------------------------------- rows

def rows(only=None):
    """(row name, workload name, dtype) for every row of the table."""
    out = []
    for name in W.WORKLOADS:
        dts = ("float32", "bfloat16") if name in ("mlp", "attention") else ("float32",)
        out += [(name if dt == "float32" else f"{name} bf16", name, dt) for dt in dts]
    return [r for r in out if not only or r[0] in only or r[1] in only]


def row_inputs(name, dtype, scale):
    arrays = W.inputs(name, np.random.default_rng(0), scale)
    if dtype == "bfloat16":
        from jitlib.hlo.dtypes import bfloat16
        arrays = [a.astype(bfloat16) for a in arrays]
    return arrays


def copies_needed(arrays, working_set):
    """How many copies of the inputs make a working set of at least `working_set` bytes."""
    per = sum(W.nbytes(a) for a in arrays)
    return max(1, min(64, math.ceil(working_set / max(per, 1))))


def matmul_shapes(name, arrays):
    """The (batch, m, k, n) of each matmul in the workload."""
    if name == "mlp":
        x, w1, _, w2, _ = arrays
        return [(1, x.shape[0], x.shape[1], w1.shape[1]), (1, x.shape[0], w1.shape[1], w2.shape[1])]
    if name == "attention":
        b, s, d = arrays[0].shape
        return [(b, s, d, s), (b, s, s, arrays[2].shape[-1])]
    if name == "mse_loss":
        w1, w2, x, _ = arrays
        return [(1, x.shape[0], x.shape[1], w1.shape[1]), (1, x.shape[0], w1.shape[1], w2.shape[1])]
    return []


def product_dtypes(name, dtype):
    """The (lhs, rhs) types each matmul of the workload multiplies under NumPy's promotion:
    bf16 @ bf16 is f32, so the second product of a bf16 mlp or attention is f32 @ bf16,
    which NumPy computes as f32 @ f32 (the bf16 operand widened)."""
    if dtype != "bfloat16":
        return None
    if name in ("mlp", "attention"):
        return ["bfloat16", "float32"]
    return None


def flops(shapes):
    return sum(2 * b * m * k * n for b, m, k, n in shapes)


# ---------------------------------------------------------------------------- tools

class TorchNumPy:
    """The NumPy functions the workloads call, on torch tensors (for eager and compile)."""

    def __init__(self, torch):
        self.t = torch
        self.tanh, self.exp, self.log, self.sqrt = torch.tanh, torch.exp, torch.log, torch.sqrt
        self.swapaxes = torch.swapaxes

    def maximum(self, a, b):
        return self.t.clamp_min(a, b) if isinstance(b, (int, float)) else self.t.maximum(a, b)

    def _reduce(self, fn, x, axis, keepdims):
        return fn(x) if axis is None else fn(x, dim=axis, keepdim=keepdims)

    def max(self, x, axis=None, keepdims=False):
        return self._reduce(self.t.amax, x, axis, keepdims)

    def sum(self, x, axis=None, keepdims=False):
        return self._reduce(self.t.sum, x, axis, keepdims)

    def mean(self, x, axis=None, keepdims=False):
        return self._reduce(self.t.mean, x, axis, keepdims)


class Tool:
    """One framework: how to make its inputs, its function, and how to wait for it."""

    def __init__(self, name, put, make, sync, to_host):
        self.name, self.put, self.make, self.sync, self.to_host = name, put, make, sync, to_host


def make_tools(torch, jax):
    import jitlib
    from jitlib.backends.triton.device import get_device
    device = get_device()
    tools = {}

    def jitlib_host(out):
        return np.asarray(out)
    tools["jitlib"] = Tool(
        "jitlib", device.from_numpy,
        lambda fn: jitlib.jit(lambda *a: fn(np, *a), backend="gpu"),
        lambda out: device.synchronize(), jitlib_host)
    if jax is not None:
        import jax.numpy as jnp
        gpu = [d for d in jax.devices() if d.platform == "gpu"][0]
        tools["jax"] = Tool(
            "jax", lambda a: jax.device_put(a, gpu),
            lambda fn: jax.jit(lambda *a: fn(jnp, *a)),
            lambda out: out.block_until_ready(), lambda out: np.asarray(out))
    if torch is not None:
        xp = TorchNumPy(torch)

        def to_torch(a):
            if a.dtype.name == "bfloat16":
                return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16).cuda()
            return torch.from_numpy(a).cuda()

        def torch_host(out):
            if out.dtype == torch.bfloat16:
                return out.float().cpu().numpy()
            return out.cpu().numpy()
        sync = lambda out: torch.cuda.synchronize()   # noqa: E731
        tools["torch"] = Tool("torch", to_torch, lambda fn: (lambda *a: fn(xp, *a)),
                              sync, torch_host)
        tools["torch.compile"] = Tool(
            "torch.compile", to_torch, lambda fn: torch.compile(lambda *a: fn(xp, *a)),
            sync, torch_host)
    return tools


# ---------------------------------------------------------------------------- timing

def wall_us(call, sync, k, reps):
    """Median over reps of (k queued calls + one sync) / k, in µs; and the median host
    time to queue the k calls (s)."""
    per_call, queue = [], []
    for _ in range(reps):
        t0 = time.perf_counter()
        for i in range(k):
            out = call(i)
        t1 = time.perf_counter()
        sync(out)
        per_call.append((time.perf_counter() - t0) / k * 1e6)
        queue.append(t1 - t0)
    return statistics.median(per_call), statistics.median(queue)


class EventTimer:
    """CUDA events on the current stream around calls queued behind a sleep kernel.

    The sleep kernel (torch.cuda._sleep) spins for a count of SM clock cycles, so how long
    it lasts depends on the clock. Calibrated once on an idle H200 (SM clock 345 MHz) it
    measured 154K cycles a ms against 1.96M with the clock up: every "5 ms"
    hold then lasted 0.39 ms, and torch.compile, which queues a call in ~70 us, left idle
    gaps of up to 0.64 ms among the calls meant to run back to back. So the calibration
    repeats until the rate stops rising (the clock has come up) and keeps the highest
    rate: a hold lasts at least its nominal length at any clock up to the one seen.
    `short_holds` counts holds that still ended before their calls were queued
    (`cupti_kernels` checks each against the sleep kernel's own CUPTI duration)."""

    def __init__(self, torch, tries=8):
        self.t = torch
        self.cycles_per_ms = 0.0
        self.short_holds = 0
        for _ in range(tries):
            rate = self._calibrate()
            settled = rate <= 1.02 * self.cycles_per_ms
            self.cycles_per_ms = max(self.cycles_per_ms, rate)
            if settled:
                break

    def _calibrate(self, cycles=1 << 22):
        t = self.t
        start, end = t.cuda.Event(enable_timing=True), t.cuda.Event(enable_timing=True)
        start.record()
        t.cuda._sleep(cycles)
        end.record()
        end.synchronize()
        return cycles / max(start.elapsed_time(end), 1e-3)

    def hold(self, ms):
        """Queue a kernel that spins for about `ms` on the current stream."""
        self.t.cuda._sleep(int(ms * self.cycles_per_ms))

    def time_us(self, call, k, reps, queue_s):
        t = self.t
        sleep_ms = max(5.0, 2e3 * queue_s)
        times, host_bound = [], False
        for _ in range(reps):
            start, end = t.cuda.Event(enable_timing=True), t.cuda.Event(enable_timing=True)
            t.cuda._sleep(int(sleep_ms * self.cycles_per_ms))
            start.record()
            q0 = time.perf_counter()
            for i in range(k):
                call(i)
            host_bound |= (time.perf_counter() - q0) * 1e3 > sleep_ms
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) * 1e3 / k)
        return statistics.median(times), host_bound


def cupti_kernels(torch, call, sync, k, hold_ms=0.0, timer=None):
    """(median µs of device activity per call, mean µs, kernels per call) from a CUPTI trace
    of k calls. Each call queues the same work, so the activity in time order splits into
    k equal runs, one per call; where the count does not split evenly (a tool whose calls
    differ), the median is the mean. `hold_ms` > 0 (tools on the current stream only)
    queues the calls behind a sleep kernel of that length (`timer.hold`), so they run back
    to back however fast the tool queues them; the sleep is left out of the figures."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:   # kernels only: cheap
        if hold_ms:
            timer.hold(hold_ms)
        q0 = time.perf_counter()
        for i in range(k):
            out = call(i)
        queued_us = (time.perf_counter() - q0) * 1e6
        sync(out)
    try:   # kineto's raw records keep kernels no torch op launched (Triton's, JAX's)
        device = [(e.start_ns(), e.name(), e.duration_ns() / 1e3)
                  for e in prof.profiler.kineto_results.events()
                  if e.device_type() == DeviceType.CUDA]
    except AttributeError:
        device = [(e.time_range.start, e.name, e.time_range.elapsed_us()) for e in prof.events()
                  if e.device_type == DeviceType.CUDA]
    if not device:
        raise RuntimeError("the CUPTI trace holds no device activity")
    device.sort(key=lambda event: event[0])
    if hold_ms:
        # the sleep kernel, queued first on the calls' stream; it began before the first
        # call was queued, so a sleep shorter than the queueing let the GPU catch up
        timer.short_holds += device[0][2] < queued_us
        device = device[1:]
    kernels = [n for _, n, _ in device if not n.startswith(("Memcpy", "Memset"))]
    mean = sum(us for _, _, us in device) / k
    each = len(device) // k
    if each * k != len(device):
        return mean, mean, len(kernels) / k
    per_call = [sum(us for _, _, us in device[i * each:(i + 1) * each]) for i in range(k)]
    return statistics.median(per_call), mean, len(kernels) / k


def copy_bandwidth(torch, timer, sizes_mib, reps):
    """Device-to-device copy GB/s (read + write counted) per size, torch `copy_`."""
    out = {}
    for mib in sizes_mib:
        src = torch.empty(mib * MIB // 4, dtype=torch.float32, device="cuda").normal_()
        dst = torch.empty_like(src)
        us, _ = timer.time_us(lambda i: dst.copy_(src), 10, reps, 0.0)
        out[f"{mib} MiB"] = 2 * mib * MIB / us / 1e3
        del src, dst
    return out


def _block_sum():
    """A Triton kernel that only reads: each program sums 4096 floats and writes one."""
    import triton
    import triton.language as tl

    @triton.jit
    def block_sum(x, out, BLOCK: tl.constexpr):
        pid = tl.program_id(0).to(tl.int64)
        tl.store(out + pid, tl.sum(tl.load(x + pid * BLOCK + tl.arange(0, BLOCK)), axis=0))
    return block_sum


def read_bandwidth(torch, timer, sizes_mib, reps):
    """Device read GB/s per size, the faster of torch.sum and a Triton block sum over a flat
    float32 buffer: what a read-only kernel such as logsumexp can reach (the copy figure
    also pays for writes). The Triton block sum reads faster than torch.sum on the H200
    (docs/performance.md)."""
    block_sum = _block_sum()
    out = {}
    for mib in sizes_mib:
        src = torch.empty(mib * MIB // 4, dtype=torch.float32, device="cuda").normal_()
        sums = torch.empty(src.numel() // 4096, device="cuda")
        us = min(timer.time_us(call, 10, reps, 0.0)[0] for call in (
            lambda i: torch.sum(src),
            lambda i: block_sum[(sums.numel(),)](src, sums, 4096, num_warps=8)))
        out[f"{mib} MiB"] = mib * MIB / us / 1e3
        del src, sums
    return out


def read_only(row):
    """Whether a row's bytes are (almost) all reads: its % of the read ceiling is shown."""
    return row["min_bytes"] - row["input_bytes"] < 0.01 * row["min_bytes"]


def cublas_us(torch, timer, shapes, dtype, reps, tf32=False):
    """µs of torch.matmul for each (batch, m, k, n), summed: the cuBLAS reference. `dtype`
    is one torch dtype for every product, or a list of one per product."""
    old = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = tf32
    per = dtype if isinstance(dtype, list) else [dtype] * len(shapes)
    try:
        total = 0.0
        for (b, m, k, n), dtype in zip(shapes, per):
            x = torch.randn((b, m, k), device="cuda").to(dtype)
            y = torch.randn((b, k, n), device="cuda").to(dtype)
            torch.matmul(x, y)
            us, _ = timer.time_us(lambda i: torch.matmul(x, y), 10, reps, 0.0)
            total += us
        return total
    finally:
        torch.backends.cuda.matmul.allow_tf32 = old


def dispatch(call, sync, n):
    """tiny: call + sync per call (median, p10, p90 µs) and queued µs/call."""
    one = []
    for i in range(n):
        t0 = time.perf_counter()
        sync(call(i))
        one.append((time.perf_counter() - t0) * 1e6)
    one.sort()
    t0 = time.perf_counter()
    for i in range(n):
        out = call(i)
    sync(out)
    queued = (time.perf_counter() - t0) / n * 1e6
    return dict(call_sync_us=one[n // 2], p10_us=one[n // 10], p90_us=one[9 * n // 10],
                queued_us=queued)


# ---------------------------------------------------------------------------- rounds

def round_orders(names, rounds):
    """The order the tools run in each round: every other round reverses the one before,
    and each pair of rounds starts one place further round, so no tool always runs
    first, last, or right after the same tool (two tools alternate)."""
    names = list(names)
    out = []
    for r in range(rounds):
        k = (r // 2) % len(names)
        order = names[k:] + names[:k]
        out.append(order[::-1] if r % 2 else order)
    return out


def interleaved(names, rounds, time_one):
    """{name: [figure of each round]}: every round calls `time_one(name)` once per name, in
    `round_orders`' order."""
    out = {n: [] for n in names}
    for order in round_orders(names, rounds):
        for n in order:
            out[n].append(time_one(n))
    return out


# ---------------------------------------------------------------------------- one row

def prepare(tool, fn, arrays, ref, settings, is_tiny):
    """(record, call): the tool's inputs made, its function built and called once (first
    call time, error against the float64 reference), then warmed. `call(i)` runs it on
    the i-th input copy (modulo the copies)."""
    rec = {}
    copies = 1 if is_tiny else copies_needed(arrays, settings["working_set"])
    args = [[tool.put(a) for a in arrays] for _ in range(copies)]
    f = tool.make(fn)
    rec["copies"] = copies

    def call(i):
        return f(*args[i % copies])
    t0 = time.perf_counter()
    out = call(0)
    tool.sync(out)
    rec["first_call_s"] = time.perf_counter() - t0
    got = tool.to_host(out).astype(np.float64)
    rec["max_rel_err"] = float(np.max(np.abs(got - ref)) / max(1e-30, float(np.max(np.abs(ref)))))
    call(1)
    tool.sync(call(2))                       # warm: second-call paths, autotuning
    return rec, call


def measure(tool, call, rec, settings, torch, timer, is_tiny):
    """Dispatch (tiny) or wall, one CUPTI pass of K queued calls, and CUDA events."""
    if is_tiny:
        rec.update(dispatch(call, tool.sync, settings["dispatch_n"]))
        return rec
    k, reps = settings["k"], settings["reps"]
    rec["wall_us"], queue_s = wall_us(call, tool.sync, k, reps)
    rec["queue_us"] = queue_s / k * 1e6   # host µs to queue one call
    if torch is not None:
        try:
            rec["kernel_us"], rec["kernel_us_mean"], rec["kernels_per_call"] = cupti_kernels(
                torch, call, tool.sync, k)
        except Exception as e:   # the profiler is a cross-check; keep the row
            rec["kernel_error"] = f"{type(e).__name__}: {e}"
        if tool.name in SAME_STREAM:
            rec["event_us"], rec["host_bound"] = timer.time_us(call, k, reps, queue_s)
    return rec


def kernel_rounds(torch, ready, settings, timer=None):
    """A memory-bound row's kernel µs as the median of interleaved rounds: each round
    takes every ready tool's CUPTI figure (the median over K calls) once, so the tools
    share the GPU's state (clocks, temperature, whatever ran before) round by round
    instead of one tool being timed a minute after another.

    Tools on the current stream (SAME_STREAM) have their K calls queued behind a sleep
    kernel, so they run back to back whatever the tool's dispatch speed: a tool that
    takes about as long to queue a call as its kernel runs (torch.compile and jax on
    ew_chain, ~61 µs against ~62) leaves the GPU idle before some of its kernels, and on
    the H200 a kernel after an idle gap ran 0.2-1 µs faster (docs/performance.md).
    jax queues on its own stream and is timed as queued. Each record keeps its rounds,
    the rounds' plain queued figures (kernel_us_queued_rounds) and the single pass of
    `measure` (kernel_us_single)."""
    def time_one(name):
        tool, call, rec = ready[name]
        plain = cupti_kernels(torch, call, tool.sync, settings["k"])[0]
        rec.setdefault("kernel_us_queued_rounds", []).append(plain)
        if name not in SAME_STREAM or timer is None:
            return plain
        hold_ms = max(5.0, 2e3 * rec.get("queue_us", 0.0) * settings["k"] / 1e6)
        before = getattr(timer, "short_holds", 0)
        us = cupti_kernels(torch, call, tool.sync, settings["k"], hold_ms, timer)[0]
        rec["short_holds"] = (rec.get("short_holds", 0) + getattr(timer, "short_holds", 0)
                              - before)
        return us
    figures = interleaved(list(ready), settings["rounds"], time_one)
    for name, rounds in figures.items():
        rec = ready[name][2]
        rec["kernel_us_single"] = rec.get("kernel_us")
        rec["kernel_us_rounds"] = rounds
        rec["kernel_us"] = statistics.median(rounds)
        rec["kernel_us_queued"] = statistics.median(rec["kernel_us_queued_rounds"])
        rec["kernel_timing"] = ("back to back behind a sleep" if name in SAME_STREAM
                                and timer is not None else "queued")


def run_row(row, name, dtype, tools, settings, torch, timer, ceilings):
    fn = W.WORKLOADS[name]
    arrays = row_inputs(name, dtype, settings["scale"])
    ref = np.asarray(fn(np, *[a.astype(np.float32) for a in arrays]), dtype=np.float64)
    result = dict(workload=name, dtype=dtype, shapes=[list(a.shape) for a in arrays],
                  min_bytes=W.min_bytes(arrays, ref.astype(arrays[0].dtype)),
                  input_bytes=sum(W.nbytes(a) for a in arrays), tools={})
    shapes = matmul_shapes(name, arrays)
    if shapes and name != "mse_loss" and torch is not None:
        tdt = torch.bfloat16 if dtype == "bfloat16" else torch.float32
        types = product_dtypes(name, dtype)
        try:
            if types:   # each product at its own types; all-bf16 kept as extra information
                result["cublas_types"] = types
                result["cublas_us"] = cublas_us(torch, timer, shapes,
                                                [getattr(torch, t) for t in types],
                                                settings["reps"])
                result["cublas_bf16_us"] = cublas_us(torch, timer, shapes, tdt,
                                                     settings["reps"])
            else:
                result["cublas_us"] = cublas_us(torch, timer, shapes, tdt, settings["reps"])
            if dtype == "float32":
                result["cublas_tf32_us"] = cublas_us(torch, timer, shapes, tdt,
                                                     settings["reps"], tf32=True)
        except Exception as e:
            result["cublas_error"] = f"{type(e).__name__}: {e}"
    result["flops"] = flops(shapes) or None
    is_tiny = name == "tiny"
    rounds = name in MEMORY_BOUND and torch is not None and settings["rounds"] > 1
    ready = {}   # tool name -> (tool, call, record): kept for the rounds
    for tool in tools.values():
        if time.perf_counter() > settings["deadline"]:
            result["tools"][tool.name] = dict(error="skipped: the run's time budget is spent")
            continue
        try:
            rec, call = prepare(tool, fn, arrays, ref, settings, is_tiny)
            measure(tool, call, rec, settings, torch, timer, is_tiny)
            if rounds and "kernel_us" in rec:
                ready[tool.name] = (tool, call, rec)
        except Exception as e:
            rec = dict(error=f"{type(e).__name__}: {e}",
                       traceback=traceback.format_exc(limit=6)[-3000:])
        result["tools"][tool.name] = rec
    if ready:
        try:
            kernel_rounds(torch, ready, settings, timer)
        except Exception as e:   # keep the single-pass figures
            result["rounds_error"] = f"{type(e).__name__}: {e}"
    ready.clear()                # the tools' inputs go before the next row's
    for tool_name, rec in result["tools"].items():
        derive(rec, result, ceilings)
        print(f"  {tool_name:14s} {summary(rec)}", flush=True)
    base = result["tools"].get("jitlib", {}).get("kernel_us")
    if base:
        result["ratio_vs_jitlib"] = {t: r["kernel_us"] / base for t, r in result["tools"].items()
                                     if t != "jitlib" and r.get("kernel_us")}
    return result


def profile_once(only, tools, torch, scale):
    """--ncu: every tool's function for each row built and warmed, then called once inside
    the CUDA profiler's range, so Nsight Compute sees one launch of each."""
    calls = []
    for row_name, name, dtype in rows(only):
        arrays = row_inputs(name, dtype, scale)
        for tool in tools.values():
            f = tool.make(W.WORKLOADS[name])
            put = [tool.put(a) for a in arrays]
            for _ in range(3):
                tool.sync(f(*put))
            calls.append((f"{row_name} / {tool.name}",
                          lambda f=f, put=put, tool=tool: tool.sync(f(*put))))
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    for label, call in calls:
        print(f"profiling: {label}", flush=True)
        call()
    torch.cuda.profiler.stop()


def derive(rec, row, ceilings):
    us = rec.get("kernel_us") or rec.get("event_us")
    if not us:
        return
    rec["gbs"] = row["min_bytes"] / us / 1e3
    if ceilings.get("copy_gbs"):
        rec["pct_copy"] = 100 * rec["gbs"] / ceilings["copy_gbs"]
    if ceilings.get("read_gbs") and read_only(row):
        rec["pct_read"] = 100 * rec["gbs"] / ceilings["read_gbs"]
    if row.get("flops"):
        rec["tflops"] = row["flops"] / us / 1e6
        if row.get("cublas_us"):
            rec["pct_cublas"] = 100 * row["cublas_us"] / us


def summary(rec):
    if "error" in rec:
        return "ERROR " + rec["error"].splitlines()[0][:150]
    if "call_sync_us" in rec:
        return (f"call+sync {rec['call_sync_us']:.1f} µs, queued {rec['queued_us']:.1f} µs/call,"
                f" first {rec['first_call_s']:.2f} s")
    parts = [f"kernel {_f(rec.get('kernel_us'), '.1f')} µs ({_f(rec.get('kernels_per_call'), '.0f')})",
             f"event {_f(rec.get('event_us'), '.1f')}", f"wall {rec['wall_us']:.1f} µs",
             f"first {rec['first_call_s']:.2f} s", f"err {rec['max_rel_err']:.1e}"]
    if rec.get("pct_copy") is not None:
        parts.append(f"{rec['pct_copy']:.0f}% copy bw")
    if rec.get("pct_read") is not None:
        parts.append(f"{rec['pct_read']:.0f}% read bw")
    if rec.get("pct_cublas") is not None:
        parts.append(f"{rec['tflops']:.0f} TFLOP/s = {rec['pct_cublas']:.0f}% cuBLAS")
    return ", ".join(parts)


# ---------------------------------------------------------------------------- report

def _f(v, fmt):
    return "-" if v is None else format(v, fmt)


def render(result):
    info, ceil = result["machine"], result["ceilings"]
    lines = [f"GPU: {info.get('gpu')}; torch {info.get('torch')}, triton {info.get('triton')}, "
             f"jax {info.get('jax')}, python {info['python']}; {info['date']}; "
             f"{'quick' if result['quick'] else 'full'} run", ""]
    bw = ", ".join(f"{k} {v:.0f} GB/s" for k, v in ceil.get("copy", {}).items())
    rd = ", ".join(f"{k} {v:.0f} GB/s" for k, v in ceil.get("read", {}).items())
    lines += [f"Device-to-device copy (read + write): {bw or '-'}; ceiling "
              f"{_f(ceil.get('copy_gbs'), '.0f')} GB/s.", "",
              f"Device read (torch.sum or a Triton block sum over a flat buffer): {rd or '-'}; "
              f"ceiling {_f(ceil.get('read_gbs'), '.0f')} GB/s (a read-only row's % of it in "
              "brackets).", "",
              "Kernel µs per call (CUPTI; kernels per call in brackets), ratio = peer / jitlib "
              "(>1: jitlib faster), wall µs = (K queued calls + sync) / K.", ""]
    rounds = result["settings"].get("rounds", 1)
    if rounds > 1 and any("kernel_us_rounds" in r for row in result["rows"].values()
                          for r in row["tools"].values()):
        lines += [f"Memory-bound rows ({', '.join(MEMORY_BOUND)}): kernel µs is the median of "
                  f"{rounds} interleaved rounds; each round times every tool once (the median "
                  f"over {result['settings']['k']} calls of each call's CUPTI time), the order "
                  "rotated and reversed from round to round, so the tools share the GPU's "
                  "state instead of being timed one after another. The calls of jitlib, torch "
                  "and torch.compile (one stream) are queued behind a sleep kernel so they run "
                  "back to back whatever the tool's dispatch speed (a kernel that follows an "
                  "idle gap runs faster); jax's, on its own stream, are timed as queued. The "
                  "rounds' range, and each tool's figure queued without the sleep, are under "
                  "the table.", ""]
    hdr = ["row"] + [f"{t} kernel µs" for t in TOOLS] + [f"x {t}" for t in TOOLS[1:]] + \
        ["jitlib % copy bw", "jitlib TFLOP/s (% cuBLAS)", "wall µs " + " / ".join(TOOLS),
         "first call s " + " / ".join(TOOLS), "jitlib err"]
    lines += ["| " + " | ".join(hdr) + " |", "|" + "---|" * len(hdr)]
    for row_name, row in result["rows"].items():
        if row["workload"] == "tiny":
            continue
        T = row["tools"]
        cells = [row_name]
        for t in TOOLS:
            r = T.get(t, {})
            cells.append("ERROR" if "error" in r else
                         f"{_f(r.get('kernel_us'), '.1f')} ({_f(r.get('kernels_per_call'), '.0f')})")
        cells += [_f(row.get("ratio_vs_jitlib", {}).get(t), ".2f") for t in TOOLS[1:]]
        j = T.get("jitlib", {})
        cells.append(_f(j.get("pct_copy"), ".0f") + (f" ({j['pct_read']:.0f}% read)"
                                                     if j.get("pct_read") else ""))
        cells.append(f"{_f(j.get('tflops'), '.0f')} ({_f(j.get('pct_cublas'), '.0f')}%)"
                     if row.get("flops") else "-")
        cells.append(" / ".join(_f(T.get(t, {}).get("wall_us"), ".0f") for t in TOOLS))
        cells.append(" / ".join(_f(T.get(t, {}).get("first_call_s"), ".2f") for t in TOOLS))
        cells.append(_f(j.get("max_rel_err"), ".1e"))
        lines.append("| " + " | ".join(cells) + " |")
    spread = [(n, r) for n, r in result["rows"].items()
              if any("kernel_us_rounds" in t for t in r["tools"].values())]
    if spread:
        lines += ["", "Rounds' range of kernel µs (min-max): " + "; ".join(
            f"{n} " + ", ".join(f"{t} {min(v['kernel_us_rounds']):.2f}-"
                                f"{max(v['kernel_us_rounds']):.2f}"
                                + (f" (queued {v['kernel_us_queued']:.2f})"
                                   if v.get("kernel_us_queued") else "")
                                + (f" [{v['short_holds']} rounds' sleep ended before its "
                                   "calls were queued]" if v.get("short_holds") else "")
                                for t, v in r["tools"].items() if "kernel_us_rounds" in v)
            for n, r in spread) + "."]
    mm = [(n, r) for n, r in result["rows"].items() if r.get("cublas_us")]
    if mm:
        lines += ["", "cuBLAS reference (torch.matmul at the same shapes): " + ", ".join(
            f"{n} {r['flops'] / r['cublas_us'] / 1e6:.0f} TFLOP/s"
            + (f" (TF32 {r['flops'] / r['cublas_tf32_us'] / 1e6:.0f})"
               if r.get("cublas_tf32_us") else "")
            + (f" (products at {' then '.join(r['cublas_types'])}; all-bf16 "
               f"{r['flops'] / r['cublas_bf16_us'] / 1e6:.0f})"
               if r.get("cublas_bf16_us") else "") for n, r in mm) + "."]
    tiny = result["rows"].get("tiny")
    if tiny:
        lines += ["", "Dispatch (`tiny`: x + 1.0 on 4 floats)", "",
                  "| tool | call + sync µs median (p10 / p90) | queued µs/call | first call s |",
                  "|---|---|---|---|"]
        for t in TOOLS:
            r = tiny["tools"].get(t)
            if r is None:
                continue
            if "error" in r:
                lines.append(f"| {t} | ERROR | | |")
                continue
            lines.append(f"| {t} | {r['call_sync_us']:.1f} ({r['p10_us']:.1f} / "
                         f"{r['p90_us']:.1f}) | {r['queued_us']:.1f} | {r['first_call_s']:.2f} |")
    errors = [f"{n}/{t}: {r['error'].splitlines()[0][:200]}" for n, row in result["rows"].items()
              for t, r in row["tools"].items() if "error" in r]
    errors += [f"{n}: {row[k]}" for n, row in result["rows"].items()
               for k in ("error", "cublas_error") if k in row]
    lines += ["", "Errors: " + ("none" if not errors else "")] + [f"- {e}" for e in errors]
    lines += [f"- {n}" for n in result["notes"]]
    return "\n".join(lines)


def machine_info(torch, jax):
    info = dict(python=platform.python_version(), platform=platform.platform(),
                numpy=np.__version__, date=datetime.datetime.now().isoformat(timespec="seconds"))
    for mod in ("torch", "triton", "jax", "jaxlib", "cupy"):
        try:
            info[mod] = __import__(mod).__version__
        except Exception:
            info[mod] = None
    try:
        from jitlib.backends.triton.device import get_device
        info["gpu"] = get_device().name
    except Exception as e:
        info["gpu"] = f"none ({getattr(e, 'message', e)})"
    if torch is not None and torch.cuda.is_available():
        p = torch.cuda.get_device_properties(0)
        info.update(sms=p.multi_processor_count, memory_gib=round(p.total_memory / 2**30, 1))
    return info


# ---------------------------------------------------------------------------- main

def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m benchmarks.gpu", description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true",
                   help="small inputs, few calls: checks every path in about a minute")
    p.add_argument("--only", nargs="*", default=None, help="row or workload names")
    p.add_argument("--out", default=None)
    p.add_argument("--rounds", type=int, default=None,
                   help="interleaved rounds for the memory-bound rows' kernel µs (default 15, "
                        "3 with --quick; 1: a single pass per tool, the method before "
                        "2026-12-03 13:00)")
    p.add_argument("--budget-s", type=float, default=360.0,
                   help="stop timing new tools after this many seconds (rows say so)")
    p.add_argument("--ncu", action="store_true",
                   help="time nothing: call each tool once inside the CUDA profiler's range, "
                        "for ncu --profile-from-start off")
    args = p.parse_args(argv)
    if args.ncu:
        import torch
        profile_once(args.only, make_tools(torch, _gpu_jax()),
                     torch, "small" if args.quick else "large")
        return
    started = time.perf_counter()
    quick = args.quick
    settings = dict(scale="small" if quick else "large", k=5 if quick else 30,
                    reps=3 if quick else 7, working_set=(16 if quick else 256) * MIB,
                    rounds=args.rounds if args.rounds is not None else (3 if quick else 15),
                    dispatch_n=50 if quick else 400, deadline=started + args.budget_s)
    notes = []
    torch = jax = None
    try:
        import torch
    except ImportError as e:
        notes.append(f"torch not importable ({e}): no torch columns, no CUPTI or event timing")
    jax = _gpu_jax(notes)

    result = dict(machine=machine_info(torch, jax), quick=quick, settings={
        k: v for k, v in settings.items() if k != "deadline"}, ceilings={}, rows={}, notes=notes)
    print(json.dumps(result["machine"]), flush=True)
    timer = None
    try:
        tools = make_tools(torch, jax)
        if torch is not None:
            timer = EventTimer(torch)
            copy = copy_bandwidth(torch, timer, (64, 256) if quick else (256, 1024, 2048),
                                  settings["reps"])
            read = read_bandwidth(torch, timer, (64, 256) if quick else (256, 1024, 2048),
                                  settings["reps"])
            result["ceilings"] = dict(copy=copy, copy_gbs=max(copy.values()), read=read,
                                      read_gbs=max(read.values()))
            print(f"copy bandwidth: {copy}; read: {read}", flush=True)
    except Exception as e:
        notes.append(f"setup failed: {type(e).__name__}: {e}")
        print(traceback.format_exc(), flush=True)
        tools = {}
    for row_name, name, dtype in rows(args.only):
        print(f"{row_name}:", flush=True)
        try:
            result["rows"][row_name] = run_row(row_name, name, dtype, tools, settings, torch,
                                               timer, result["ceilings"])
        except Exception as e:
            result["rows"][row_name] = dict(workload=name, dtype=dtype, tools={},
                                            error=f"{type(e).__name__}: {e}")
            print(traceback.format_exc(), flush=True)
    if any(r.get("cublas_types") for r in result["rows"].values()):
        notes.append("bf16 rows: % cuBLAS compares with torch.matmul at each product's own "
                     "types under NumPy's promotion (bf16 x bf16, then f32 x f32 with the "
                     "bf16 operand widened, TF32 off); the all-bf16 cuBLAS figure is beside it")
    if jax is not None:
        notes.append("jax.jit runs fp32 matmuls with TF32 by default on GPU: compare its fp32 "
                     "mlp/attention with the TF32 cuBLAS figure")
    notes.append(f"total {time.perf_counter() - started:.0f} s")
    write(result, args.out)


def _gpu_jax(notes=None):
    """jax, where it is importable and sees a GPU; else None (and a note why)."""
    notes = [] if notes is None else notes
    try:
        import jax
        if not any(d.platform == "gpu" for d in jax.devices()):
            notes.append(f"jax sees no GPU ({jax.devices()}): no jax column")
            return None
        return jax
    except Exception as e:
        notes.append(f"jax not usable ({type(e).__name__}: {e}): no jax column")
        return None


def write(result, out):
    md = render(result)
    print()
    print(md)
    path = pathlib.Path(out or f"benchmarks/results/gpu-{datetime.date.today().isoformat()}.json")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2, default=str))
    path.with_suffix(".md").write_text(md + "\n")
    print(f"wrote {path} and {path.with_suffix('.md')}")
    if os.environ.get("OUT"):
        for p in (path, path.with_suffix(".md")):
            dest = os.path.join(os.environ["OUT"], p.name)
            if not (os.path.exists(dest) and os.path.samefile(p, dest)):   # --out in $OUT
                shutil.copy(p, dest)


if __name__ == "__main__":
    main(sys.argv[1:])
