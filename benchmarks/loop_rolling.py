"""First-call time of Python loops, rolled and straight line (jitlib/trace/rolling.py).

    python -m benchmarks.loop_rolling [--backend cpu] [--runs 1] [case ...]

Cases: jacobi10, jacobi1000 (64x64 stencil, steps), leapfrog250 (16 bodies). For each,
with JITLIB_ROLL_LOOPS=0 and =1 in turn, in fresh jits and an empty disk cache: the
trace alone (its ops asked of the builder, µs per op, and the roller's share), the
first call (trace + optimize + compile + run) and a warm call.
"""
import argparse
import os
import tempfile
import time

import numpy as np

os.environ["JITLIB_CACHE_DIR"] = tempfile.mkdtemp(prefix="jitlib-bench-rolling-")

import jitlib   # noqa: E402
from jitlib.trace import rolling   # noqa: E402


def jacobi(A, B, steps):
    for _ in range(steps):
        B[1:-1, 1:-1] = 0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:]
                              + A[2:, 1:-1] + A[:-2, 1:-1])
        A[1:-1, 1:-1] = 0.2 * (B[1:-1, 1:-1] + B[1:-1, :-2] + B[1:-1, 2:]
                              + B[2:, 1:-1] + B[:-2, 1:-1])
    return A


def leapfrog(pos, vel, mass, dt, steps):
    def accel(p):
        d = p[None, :, :] - p[:, None, :]
        r2 = (d ** 2).sum(-1) + 0.01
        inv = mass[None, :] / (r2 * np.sqrt(r2))
        np.fill_diagonal(inv, 0.0)
        return (d * inv[:, :, None]).sum(1)
    a = accel(pos)
    for _ in range(steps):
        vel += 0.5 * dt * a
        pos += dt * vel
        a = accel(pos)
        vel += 0.5 * dt * a
    return 0.5 * (mass[:, None] * vel ** 2).sum()


def _case(name):
    rng = np.random.default_rng(0)
    if name.startswith("jacobi"):
        steps = int(name[len("jacobi"):])
        return jacobi, (rng.standard_normal((64, 64)), np.zeros((64, 64)), steps), (2,)
    steps = int(name[len("leapfrog"):])
    return leapfrog, (rng.standard_normal((16, 3)), rng.standard_normal((16, 3)),
                      rng.uniform(1.0, 2.0, 16), 0.01, steps), (4,)


def _copies(args):
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def measure(name, backend, roll):
    os.environ["JITLIB_ROLL_LOOPS"] = "1" if roll else "0"
    fn, args, static = _case(name)
    asked, rolled_in = [0], [0.0]
    original = rolling.roll

    def timed_roll(module, log):
        asked[0] = len(log)
        t = time.perf_counter()
        try:
            return original(module, log)
        finally:
            rolled_in[0] = time.perf_counter() - t
    rolling.roll = timed_roll
    try:
        t0 = time.perf_counter()
        module = jitlib.make_ir(fn, static_argnums=static)(*_copies(args))
        trace_s = time.perf_counter() - t0
    finally:
        rolling.roll = original
    if not roll:   # the builder keeps no log: count what the trace asks for in one that does
        asked[0] = _count_asked(fn, args, static)
    f = jitlib.jit(fn, static_argnums=static, backend=backend)
    t0 = time.perf_counter()
    f(*_copies(args))
    first_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    f(*_copies(args))
    warm_s = time.perf_counter() - t0
    return dict(case=name, roll=roll, ops_asked=asked[0], ir_ops=len(module.instructions),
                trace_s=trace_s, us_per_op=1e6 * trace_s / max(asked[0], 1),
                roll_s=rolled_in[0], first_call_s=first_s, warm_ms=1e3 * warm_s)


def _count_asked(fn, args, static):
    counted = [0]
    original = rolling.roll

    def count(module, log):
        counted[0] = len(log)
        return module
    os.environ["JITLIB_ROLL_LOOPS"] = "1"
    rolling.roll = count
    try:
        jitlib.make_ir(fn, static_argnums=static)(*_copies(args))
    finally:
        rolling.roll = original
        os.environ["JITLIB_ROLL_LOOPS"] = "0"
    return counted[0]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", nargs="*", default=["jacobi10", "jacobi1000", "leapfrog250"])
    parser.add_argument("--backend", default="cpu")
    args = parser.parse_args(argv)
    print("| case | rolled | ops traced | IR ops | trace s (µs/op) | of it rolling s "
          "| first call s | warm ms |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for name in args.cases:
        for roll in (False, True):
            r = measure(name, args.backend, roll)
            print(f"| {r['case']} | {'yes' if roll else 'no'} | {r['ops_asked']} | "
                  f"{r['ir_ops']} | {r['trace_s']:.2f} ({r['us_per_op']:.0f}) | "
                  f"{r['roll_s']:.3f} | {r['first_call_s']:.2f} | {r['warm_ms']:.2f} |",
                  flush=True)


if __name__ == "__main__":
    main()
