"""How the tracer's and the optimizer's cost grows with program size (issue 24 part 3).

    python -m benchmarks.optimizer_scaling [--max-ops 100000] [--families chain ...]

Three families of straight-line programs (loop rolling off, so a Python loop stays
unrolled), each traced at sizes from about 100 to `--max-ops` IR ops:

- chain: an elementwise recurrence over four arrays with a reduction every 8 steps
  (long fusible chains; the fuser's 512-op cap splits them);
- stencil: 2-D Jacobi sweeps on a 16x16 grid, five shifted slices a step (values read at
  several offsets: what the fused-work accounting decides on);
- layers: dense tanh layers, each with its own weights (one dot kernel and epilogue per
  layer: many kernels).

For each it prints IR ops, trace and optimize seconds, microseconds per op, and the
slowest optimizer passes; then the exponent b of time ~ ops^b fitted over the sizes
(1 is linear). Timings are single runs (the largest programs take seconds); the fit is
what the figure is for.
"""
import argparse
import math
import os
import platform
import time
from collections import defaultdict

import numpy as np

os.environ["JITLIB_ROLL_LOOPS"] = "0"   # before jitlib reads it: keep loops unrolled

import jitlib  # noqa: E402
from jitlib.fusion import optimize, pipeline  # noqa: E402


def chain(steps):
    def f(x, a, b, c):
        total = x.sum()
        for i in range(steps):
            x = x * a + np.sin(b) * 0.5 - c
            if i % 8 == 7:
                total = total + x.sum()
                x = x / (1.0 + total)
        return x, total
    n = 64
    rng = np.random.default_rng(0)
    return f, [rng.standard_normal(n).astype(np.float32) for _ in range(4)]


def stencil(steps):
    def f(a):
        for _ in range(steps):
            b = a.copy()
            b[1:-1, 1:-1] = 0.2 * (a[1:-1, 1:-1] + a[1:-1, :-2] + a[1:-1, 2:]
                                   + a[2:, 1:-1] + a[:-2, 1:-1])
            a = b
        return a
    return f, [np.random.default_rng(0).standard_normal((16, 16))]


def layers(count):
    def f(x, weights, biases):
        for w, b in zip(weights, biases):
            x = np.tanh(x @ w + b)
        return x
    rng = np.random.default_rng(0)
    ws = [rng.standard_normal((32, 32)).astype(np.float32) * 0.2 for _ in range(count)]
    bs = [rng.standard_normal(32).astype(np.float32) for _ in range(count)]
    return f, [rng.standard_normal((8, 32)).astype(np.float32), ws, bs]


# family -> (program maker, size knob values roughly giving 100 ... 100,000 ops)
FAMILIES = {
    "chain": (chain, [16, 48, 160, 480, 1600, 4800, 16000]),
    "stencil": (stencil, [4, 12, 40, 120, 400, 1200, 4000]),
    "layers": (layers, [20, 60, 200, 600, 2000, 6000, 20000]),
}


class PassClock:
    """Seconds spent in each top-level pass of the pipeline while installed."""

    def __init__(self):
        self.seconds = defaultdict(float)
        self._run = pipeline._run

    def __enter__(self):
        def timed(p, module, options, check, debug):
            t0 = time.perf_counter()
            out = self._run(p, module, options, check, debug)
            self.seconds[p.name] += time.perf_counter() - t0
            return out
        pipeline._run = timed
        return self

    def __exit__(self, *exc):
        pipeline._run = self._run


def measure(make, size):
    fn, args = make(size)
    t0 = time.perf_counter()
    module = jitlib.make_ir(fn)(*args)
    traced = time.perf_counter() - t0
    with PassClock() as clock:
        t0 = time.perf_counter()
        optimized = optimize(module)
        optimized_s = time.perf_counter() - t0
    kernels = sum(1 for i in optimized.instructions if i.op.name == "FUSION")
    return dict(size=size, ops=len(module.instructions), kernels=kernels, trace_s=traced,
                optimize_s=optimized_s, passes=dict(clock.seconds))


def slope(points):
    """Least-squares exponent b of y = a * x^b."""
    xs = [math.log(x) for x, _ in points]
    ys = [math.log(y) for _, y in points]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return (sum((x - mx) * (y - my) for x, y in zip(xs, ys))
            / sum((x - mx) ** 2 for x in xs))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--max-ops", type=int, default=100_000)
    p.add_argument("--families", nargs="*", default=list(FAMILIES))
    args = p.parse_args(argv)
    print(f"host: {platform.processor() or platform.machine()}, {os.cpu_count()} cpus; "
          f"numpy {np.__version__}")
    for name in args.families:
        make, sizes = FAMILIES[name]
        print(f"\n### {name}\n")
        print("| IR ops | kernels | trace s | trace µs/op | optimize s | optimize µs/op "
              "| slowest passes (s) |")
        print("| --- | --- | --- | --- | --- | --- | --- |")
        rows = []
        for size in sizes:
            r = measure(make, size)
            rows.append(r)
            top = sorted(r["passes"].items(), key=lambda kv: -kv[1])[:3]
            print(f"| {r['ops']} | {r['kernels']} | {r['trace_s']:.2f} | "
                  f"{1e6 * r['trace_s'] / r['ops']:.0f} | {r['optimize_s']:.2f} | "
                  f"{1e6 * r['optimize_s'] / r['ops']:.0f} | "
                  f"{', '.join(f'{k} {v:.2f}' for k, v in top)} |", flush=True)
            if r["ops"] >= args.max_ops:
                break
        if len(rows) >= 3:
            big = [r for r in rows if r["ops"] >= 1000] or rows
            print(f"\nexponent (ops >= 1000): trace {slope([(r['ops'], r['trace_s']) for r in big]):.2f}, "
                  f"optimize {slope([(r['ops'], r['optimize_s']) for r in big]):.2f}")


if __name__ == "__main__":
    main()
