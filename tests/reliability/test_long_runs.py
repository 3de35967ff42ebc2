"""Long runs: a cached signature called 100,000 times keeps memory and descriptors flat.

Resident memory is read from /proc (Linux); the budget leaves room for allocator noise
but not for a leak of even a few dozen bytes a call (100,000 calls x 64 B = 6.4 MB).
"""
import os

import numpy as np
import pytest

import jitlib

CALLS = 100_000
RSS_BUDGET = 4 * 2**20


def _rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _open_fds():
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs Linux /proc")
@pytest.mark.parametrize("backend", ["cpu", "interpreter"])
def test_cached_calls_keep_memory_flat(backend):
    f = jitlib.jit(lambda x: x * 2.0 + 1.0, backend=backend)
    x = np.arange(4, dtype=np.float32)
    calls = CALLS if backend == "cpu" else CALLS // 10   # the interpreter is slower per call
    for _ in range(2_000):                               # let caches and pools settle
        f(x)
    rss, fds = _rss_bytes(), _open_fds()
    for _ in range(calls):
        out = f(x)
    grown = _rss_bytes() - rss
    np.testing.assert_array_equal(out, x * 2.0 + 1.0)
    assert f.cache_info().misses == 1
    assert grown < RSS_BUDGET, f"resident memory grew {grown / 2**20:.1f} MiB over {calls} calls"
    assert _open_fds() == fds
