"""Many threads at once: every answer right, every signature compiled once, no deadlock.

The threads share one jitted function and call it with a mix of signatures, some
already compiled and some new, so cache hits race with compiles of other signatures.
"""
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import jitlib
from jitlib.hlo import build
from jitlib.hlo.ir import Instr

N_THREADS = 8


def _model(x, w):
    return np.tanh(x @ w).sum(axis=-1) + x.mean()


def _inputs(rows, cols, seed):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((rows, cols)).astype(np.float32),
            rng.standard_normal((cols, 3)).astype(np.float32))


@pytest.mark.parametrize("backend", ["interpreter", "cpu"])
def test_threads_share_one_jitted_function(backend):
    f = jitlib.jit(_model, backend=backend)
    shapes = [(2, 4), (3, 4), (5, 4), (2, 6), (7, 6), (1, 5)]
    f(*_inputs(*shapes[0], seed=0))           # one signature cached before the storm
    calls = [(shapes[i % len(shapes)], i) for i in range(N_THREADS * 12)]
    start = threading.Barrier(N_THREADS)

    def worker(k):
        start.wait(timeout=30)
        out = []
        for (rows, cols), seed in calls[k::N_THREADS]:
            x, w = _inputs(rows, cols, seed)
            out.append((f(x, w), _model(x, w)))
        return out

    with ThreadPoolExecutor(N_THREADS) as pool:
        results = [r for batch in pool.map(worker, range(N_THREADS), timeout=120)
                   for r in batch]
    assert len(results) == len(calls)
    for got, want in results:
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5)
    info = f.cache_info()
    assert info.misses == len(shapes), info      # each signature compiled exactly once
    assert info.hits + info.misses == len(calls) + 1


def test_interning_agrees_across_threads():
    # Threads building the same structures must get the very same objects (CSE relies on it).
    start = threading.Barrier(N_THREADS)

    def build_chain(_):
        start.wait(timeout=30)
        x = build.parameter(0, (3,), np.float32, "x")
        out = []
        for i in range(300):
            x = build.binary("add", x, build.broadcast_to(build.constant(np.float32(i)), (3,)))
            out.append(x)
        return out

    with ThreadPoolExecutor(N_THREADS) as pool:
        chains = list(pool.map(build_chain, range(N_THREADS), timeout=60))
    for chain in chains[1:]:
        assert all(a is b for a, b in zip(chain, chains[0]))
    assert isinstance(chains[0][-1], Instr)
