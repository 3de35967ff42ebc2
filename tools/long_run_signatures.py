"""Signature churn, long run: thousands of distinct signatures through a bounded cache.

    python tools/long_run_signatures.py [--signatures 2000] [--cache-size 8]

Each signature is a new shape of a tiny program on the cpu backend, so every call
compiles and, past `cache_size`, evicts the least recent program. The signatures run
twice: cold (LLVM compiles each kernel, and stores it on disk) and warm (every one was
evicted, so each loads its object code again). Past its first compiles the process hands
LLVM's optimizer to a worker process (JITLIB_COMPILE_WORKER, optimizer_process.py). Prints resident memory and open
descriptors around each pass, and the compiled kernels still mapped (in use by cached
programs, kept unused) against those closed. The bounded CI version is
tests/reliability/test_signature_churn.py.
"""
import argparse
import os
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def rss_mib():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def open_fds():
    return len(os.listdir("/proc/self/fd"))


def churn(f, sizes):
    for n in sizes:
        x = np.linspace(-1.0, 1.0, n, dtype=np.float32)
        np.testing.assert_allclose(f(x), np.tanh(x) * 2.0 + 1.0, rtol=1e-6, atol=1e-6,
                                   err_msg=f"n={n}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--signatures", type=int, default=2000)
    parser.add_argument("--cache-size", type=int, default=8)
    parser.add_argument("--warmup", type=int, default=200)
    args = parser.parse_args(argv)
    os.environ.setdefault("JITLIB_CACHE_DIR", tempfile.mkdtemp(prefix="jitlib-churn-"))
    import jitlib
    from jitlib.backends.llvm.compiler import get_compiler

    f = jitlib.jit(lambda x: np.tanh(x) * 2.0 + 1.0, backend="cpu",
                   cache_size=args.cache_size)
    compiler = get_compiler()
    warmup = range(1, args.warmup + 1)
    sizes = range(args.warmup + 1, args.warmup + args.signatures + 1)
    print(f"{args.signatures} signatures after {args.warmup} warm-up ones, "
          f"cache_size={args.cache_size}, disk cache {os.environ['JITLIB_CACHE_DIR']!r}")
    churn(f, warmup)
    for label in ("cold: each compiled by LLVM", "warm: each loaded from the disk cache"):
        t0 = time.perf_counter()
        rss0, fds0 = rss_mib(), open_fds()
        churn(f, sizes)
        rss1, fds1 = rss_mib(), open_fds()
        in_use, kept = compiler.engines()
        print(f"{label}: {time.perf_counter() - t0:.1f} s")
        print(f"  resident memory  {rss0:8.1f} MiB -> {rss1:8.1f} MiB ({rss1 - rss0:+.1f} MiB)")
        print(f"  open descriptors {fds0:8d}     -> {fds1:8d}")
        print(f"  compiled kernels mapped: {in_use} in use, {kept} kept unused; "
              f"{compiler.released} closed so far")
        print(f"  LLVM optimizer runs: {compiler.optimized_here} in this process, the rest "
              f"in {compiler._worker.started} worker process(es)")
    print(f"jit cache: {f.cache_info()}, {f._cache.stats()}")


if __name__ == "__main__":
    main()
