"""Host arrays into GPU programs: copy bandwidth and a call on host data, side by side.

    python -m benchmarks.host_transfer [--out PATH] [--reps N]

Two tables, on one NVIDIA GPU:

- host-to-device GB/s for a float64 NumPy array of each size: jitlib's `device_put`
  (pinned staging for large arrays, jitlib/backends/triton/staging.py), the same with
  staging off (the driver's pageable path), torch from pageable memory
  (`torch.from_numpy(a).cuda()`) and torch from memory it pinned beforehand
  (`pinned.cuda(non_blocking=True)`, the ceiling the issue measures against). Each figure
  is the median over reps of one copy and a synchronize.
- a matrix-vector pair on a 4000x5000 float64 matrix (160 MB) called with NumPy
  arguments: jitlib's gpu backend, the same with the matrix put on the device once
  (`jitlib.device_put`), eager torch copying its inputs in, jax.jit with NumPy inputs,
  and NumPy on the host; milliseconds per call with its synchronize, median.

Results: `benchmarks/results/host-transfer-gpu-<date>.json` and `.md` (and in $OUT).
"""
import argparse
import datetime
import json
import os
import pathlib
import shutil
import statistics
import sys
import time

import numpy as np

SIZES_MIB = (1, 4, 16, 64, 160, 512)


def median_s(call, sync, reps):
    call()
    sync()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        call()
        sync()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def bandwidth_rows(torch, device, reps):
    from jitlib.backends.triton import staging
    import jitlib
    rows = []
    for mib in SIZES_MIB:
        a = np.random.default_rng(mib).standard_normal(mib * 2 ** 20 // 8)
        pinned = torch.from_numpy(a).pin_memory()
        sync = torch.cuda.synchronize
        row = {"MiB": mib}
        row["jitlib staged"] = median_s(lambda: jitlib.device_put(a), device.synchronize, reps)
        saved = staging.MIN_BYTES
        staging.MIN_BYTES = 1 << 62
        try:
            row["jitlib pageable"] = median_s(lambda: jitlib.device_put(a),
                                              device.synchronize, reps)
        finally:
            staging.MIN_BYTES = saved
        row["torch pageable"] = median_s(lambda: torch.from_numpy(a).cuda(), sync, reps)
        row["torch pinned"] = median_s(lambda: pinned.cuda(non_blocking=True), sync, reps)
        for k in ("jitlib staged", "jitlib pageable", "torch pageable", "torch pinned"):
            row[k] = round(a.nbytes / row[k] / 1e9, 1)
        row["staged % pinned"] = round(100 * row["jitlib staged"] / row["torch pinned"])
        rows.append(row)
        print(row, flush=True)
    return rows


def matvec_rows(torch, jax, device, reps):
    import jitlib
    rng = np.random.default_rng(0)
    a = rng.standard_normal((4000, 5000))
    x, y = rng.standard_normal(5000), rng.standard_normal(4000)

    def pair(a, x, y):
        return a @ x, y @ a

    f = jitlib.jit(pair, backend="gpu")
    resident = jitlib.device_put(a)
    expected = pair(a, x, y)
    for got, want in zip(f(a, x, y), expected):
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-9, atol=1e-9)
    rows = {"numpy (host)": median_s(lambda: pair(a, x, y), lambda: None, reps),
            "jitlib, NumPy arguments": median_s(lambda: f(a, x, y), device.synchronize, reps),
            "jitlib, matrix put once": median_s(lambda: f(resident, x, y),
                                                device.synchronize, reps)}

    def torch_pair():
        t = [torch.from_numpy(v).cuda() for v in (a, x, y)]
        return t[0] @ t[1], t[2] @ t[0]
    rows["torch eager, NumPy arguments"] = median_s(torch_pair, torch.cuda.synchronize, reps)
    if jax is not None:
        jf = jax.jit(pair)
        rows["jax.jit, NumPy arguments"] = median_s(
            lambda: [r.block_until_ready() for r in jf(a, x, y)], lambda: None, reps)
    return {k: round(v * 1e3, 3) for k, v in rows.items()}


def staging_breakdown(device, reps, mib=160):
    """Where a staged copy's time goes: host threads filling the pinned buffers alone, the
    copy engine draining them alone, the two overlapped, and pinning the caller's array in
    place (cuMemHostRegister) instead; GB/s over `mib` MiB, median of reps."""
    from jitlib.backends.triton import staging
    cu = device._cu
    a = np.random.default_rng(7).standard_normal(mib * 2 ** 20 // 8)
    data = a.view(np.uint8)
    out = device.empty(a.shape, a.dtype)
    stager = device._stager()
    buffers = stager._staging_buffers()
    chunks = [(k % staging.SLOTS, s, data[s:s + staging.CHUNK_BYTES])
              for k, s in enumerate(range(0, data.size, staging.CHUNK_BYTES))]
    rows = {}
    saved = stager._threads
    for threads in sorted({1, 2, 4, 8, saved}):
        stager._threads, stager._pool = threads, None

        def fill():
            for slot, _, chunk in chunks:
                stager._fill(buffers[slot][:chunk.size], chunk)
        rows[f"fill only, {threads} threads"] = median_s(fill, lambda: None, reps)
    stager._threads, stager._pool = saved, None

    def drain():
        for slot, start, chunk in chunks:
            device._check(cu.cuMemcpyHtoDAsync(out.data_ptr() + start, buffers[slot].ctypes.data,
                                               chunk.size, device.stream), "copy")
    rows["copy engine only"] = median_s(drain, device.synchronize, reps)
    rows["staged pipeline"] = median_s(lambda: stager.copy_in(out.data_ptr(), a),
                                       device.synchronize, reps)

    def pin_in_place():
        device._check(cu.cuMemHostRegister(a.ctypes.data, a.nbytes, 0), "register")
        device._check(cu.cuMemcpyHtoDAsync(out.data_ptr(), a.ctypes.data, a.nbytes,
                                           device.stream), "copy")
        device.synchronize()
        device._check(cu.cuMemHostUnregister(a.ctypes.data), "unregister")
    try:
        rows["register, copy, unregister"] = median_s(pin_in_place, lambda: None, reps)
    except Exception as e:   # a diagnostic: report, keep the other rows
        print(f"pin in place failed: {e}", flush=True)
    return {k: round(a.nbytes / v / 1e9, 1) for k, v in rows.items()}


def render(result):
    info = result["machine"]
    lines = [f"# Host arrays into GPU programs\n",
             f"GPU {info['gpu']}; {info['cpus']} host cores; torch {info['torch']}, "
             f"jax {info['jax']}, numpy {info['numpy']}; {info['date']}\n",
             "Host-to-device GB/s, float64 NumPy array, median of one copy + synchronize:\n"]
    keys = list(result["bandwidth"][0])
    lines.append("| " + " | ".join(keys) + " |")
    lines.append("|" + "---|" * len(keys))
    for row in result["bandwidth"]:
        lines.append("| " + " | ".join(str(row[k]) for k in keys) + " |")
    lines.append("\nMatrix-vector pair (`a @ x, y @ a`, a: 4000x5000 float64), ms per call "
                 "with its synchronize, median:\n")
    lines.append("| tool | ms |\n|---|---|")
    lines += [f"| {k} | {v} |" for k, v in result["matvec"].items()]
    if result.get("staging"):
        lines.append("\nWhere a staged 160 MiB copy's time goes, GB/s:\n")
        lines.append("| stage | GB/s |\n|---|---|")
        lines += [f"| {k} | {v} |" for k, v in result["staging"].items()]
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m benchmarks.host_transfer",
                                description=__doc__.split("\n")[0])
    p.add_argument("--out", default=None)
    p.add_argument("--reps", type=int, default=9)
    args = p.parse_args(argv)
    import torch
    from benchmarks.gpu import _gpu_jax
    from jitlib.backends.triton.device import get_device
    device = get_device()
    jax = _gpu_jax()
    result = {"machine": dict(gpu=device.name, cpus=os.cpu_count(), torch=torch.__version__,
                              jax=getattr(jax, "__version__", None), numpy=np.__version__,
                              date=datetime.datetime.now().isoformat(timespec="seconds"))}
    result["bandwidth"] = bandwidth_rows(torch, device, args.reps)
    result["matvec"] = matvec_rows(torch, jax, device, args.reps)
    result["staging"] = staging_breakdown(device, args.reps)
    print(result["staging"], flush=True)
    md = render(result)
    print(md)
    path = pathlib.Path(args.out or "benchmarks/results/host-transfer-gpu-"
                        f"{datetime.date.today().isoformat()}.json")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2))
    path.with_suffix(".md").write_text(md + "\n")
    if os.environ.get("OUT"):
        for q in (path, path.with_suffix(".md")):
            target = pathlib.Path(os.environ["OUT"], q.name)
            if not target.exists() or not target.samefile(q):
                shutil.copy(q, target)


if __name__ == "__main__":
    main(sys.argv[1:])
