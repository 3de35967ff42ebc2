"""The memory-bound benchmark rows' kernels, jitlib's beside its peers', for Nsight Compute.

    ncu --clock-control none --profile-from-start off --csv --page details \\
        --section SpeedOfLight --section Occupancy --section LaunchStats ... \\
        python3 tools/gpu_ncu_probe.py [--rows ew_chain layernorm ...] [--tools jitlib ...]

Every tool's function is compiled and warmed (autotuning included) first; then, between
cudaProfilerStart and cudaProfilerStop, each is called once, so ncu profiles exactly one
launch of each kernel. A row sum shaped as jitlib's reduction kernels (tools/
gpu_read_probe.py) runs there too: the read-only reference for logsumexp.
"""
import argparse
import csv
import os
import sys

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import numpy as np


SHOWN = ("Duration", "DRAM Throughput", "Memory Throughput", "Elapsed Cycles",
         "SM Active Cycles", "sm__cycles_active.max", "sm__cycles_active.min",
         "dram__bytes_read.sum", "dram__bytes_write.sum", "Achieved Occupancy",
         "Theoretical Occupancy", "Registers Per Thread", "Grid Size", "Block Size",
         "Waves Per SM", "Block Limit Registers")


def summarize(path):
    """One line per profiled kernel from `ncu --import X --csv --page details` output."""
    kernels = {}
    with open(path) as f:
        lines = [l for l in f if l.startswith('"')]
    for rec in csv.DictReader(lines):
        key = (rec["ID"], rec["Kernel Name"][:60])
        kernels.setdefault(key, {})[rec["Metric Name"]] = (rec["Metric Value"],
                                                           rec["Metric Unit"])
    for (kid, name), m in kernels.items():
        print(f"{kid:>3} {name}")
        print("     " + "; ".join(f"{k} {m[k][0]} {m[k][1]}".strip() for k in SHOWN if k in m))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--summarize", default=None, help="a details CSV to print, then exit")
    ap.add_argument("--rows", nargs="*", default=["ew_chain", "gelu_tanh", "softmax_rows",
                                                   "layernorm", "logsumexp_rows"])
    ap.add_argument("--tools", nargs="*", default=["jitlib", "torch.compile", "jax"])
    args = ap.parse_args(argv)
    if args.summarize:
        return summarize(args.summarize)
    import torch
    from benchmarks import gpu as G
    from benchmarks import workloads as W
    jax = None
    if "jax" in args.tools:
        import jax
    tools = G.make_tools(torch, jax)
    calls = []
    for row in args.rows:
        (_, name, dtype), = [r for r in G.rows([row]) if r[0] == row]
        arrays = G.row_inputs(name, dtype, "large")
        for t in args.tools:
            tool = tools[t]
            f = tool.make(W.WORKLOADS[name])
            put = [tool.put(a) for a in arrays]
            for _ in range(3):
                tool.sync(f(*put))
            calls.append((f"{row} / {t}", lambda f=f, put=put, tool=tool: tool.sync(f(*put))))
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import gpu_read_probe as P
    x = torch.randn(4096, 4096, device="cuda")
    out = torch.empty(4096, device="cuda")
    m_buf, s_buf = (torch.empty(4096 * 2, device="cuda") for _ in range(2))
    count = torch.zeros(4096, device="cuda", dtype=torch.int32)
    y = torch.empty_like(x)
    probes = [("row_sum 8 warps", lambda: P.row_sum[(4096,)](x, out, 4096, num_warps=8)),
              ("row_copy 8 warps", lambda: P.row_copy[(4096,)](x, y, 4096, num_warps=8)),
              ("logsumexp split 2, last combines", lambda: P.lse_split_last[(8192,)](
                  x, m_buf, s_buf, count, out, 4096, 2, num_warps=4))]
    for _, p in probes:
        p()
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    for label, call in calls + probes:
        print(f"profiling: {label}", flush=True)
        call()
        torch.cuda.synchronize()
    torch.cuda.profiler.stop()


if __name__ == "__main__":
    sys.path.insert(0, os.getcwd())
    main(sys.argv[1:])
