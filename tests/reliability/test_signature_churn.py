"""Signature churn: many distinct signatures through a bounded jit cache.

Evicting a program must release its native code: each kernel text has its own MCJIT
engine, shared by the programs that run it, and closed once none does (after a short
retention, compiler.RETAIN_UNUSED). The second pass runs every signature again after it
was evicted, loading object code from the disk cache, so resident memory there measures
what eviction gives back. A cold LLVM compile costs llvmlite's optimizer 50-70 KiB that it
never frees, so past its first compiles a process runs the optimizer in a worker process
(optimizer_process.py); the cold test below holds the process to that.
The full 2,000-signature run is `python tools/long_run_signatures.py`.
"""
import ctypes
import hashlib
import os

import numpy as np
import pytest

import jitlib
from jitlib.backends.llvm import compiler, optimizer_process

SIGNATURES = 150
CACHE_SIZE = 4
RETAIN = 8
RSS_BUDGET = 6 * 2**20


def _rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _open_fds():
    return len(os.listdir("/proc/self/fd"))


def _churn(f, sizes):
    for n in sizes:
        x = np.linspace(-2.0, 2.0, n, dtype=np.float32)
        np.testing.assert_allclose(f(x), np.tanh(x) * 2.0 + 1.0, rtol=1e-6, atol=1e-6,
                                   err_msg=f"n={n}")


@pytest.mark.slow   # 300 compiled signatures: the slow job's
@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs Linux /proc")
def test_evicted_programs_release_their_native_code(tmp_path, monkeypatch):
    monkeypatch.setenv("JITLIB_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(compiler, "RETAIN_UNUSED", RETAIN)
    llvm = compiler.get_compiler()
    f = jitlib.jit(lambda x: np.tanh(x) * 2.0 + 1.0, backend="cpu", cache_size=CACHE_SIZE)
    sizes = range(2, 2 + SIGNATURES)
    _churn(f, sizes)                                  # cold: compiled and stored on disk
    exe = next(iter(f._cache._entries.values())).executable
    modules_per_program = len(exe.native) + (exe.program is not None)
    released = llvm.released
    _churn(f, sizes[:30])                             # warm: loaded from disk, evicted
    rss, fds = _rss_bytes(), _open_fds()
    _churn(f, sizes[30:])
    grown = _rss_bytes() - rss
    in_use, kept = llvm.engines()
    assert f.cache_info().misses == 2 * SIGNATURES and len(f._cache) == CACHE_SIZE
    assert in_use <= CACHE_SIZE * modules_per_program, (in_use, modules_per_program)
    assert kept <= RETAIN
    # every warm signature mapped its own kernel again (the driver's text is the same
    # for all sizes, so one engine serves every program): all but the live ones closed
    assert llvm.released - released >= SIGNATURES - in_use - kept
    assert _open_fds() == fds
    assert grown < RSS_BUDGET, f"resident memory grew {grown / 2**20:.1f} MiB over " \
                               f"{SIGNATURES - 30} evicted signatures"


def test_a_kernel_shared_by_two_programs_stays_until_both_are_gone(monkeypatch):
    monkeypatch.setenv("JITLIB_CACHE_DIR", "")
    monkeypatch.setattr(compiler, "RETAIN_UNUSED", 0)
    llvm = compiler.get_compiler()
    ir = ('define void @"k"(ptr %p) nounwind {\nentry:\n  store i64 7, ptr %p\n'
          '  ret void\n}\n; churn-test-unique-text\n')
    first, second = llvm.load(ir, "k"), llvm.load(ir, "k")
    assert first is second                            # one engine per text, shared
    released = llvm.released
    del first
    call = np.zeros(1, np.int64)
    ctypes.CFUNCTYPE(None, ctypes.c_void_p)(second.address)(call.ctypes.data)
    assert call[0] == 7 and llvm.released == released
    del second                                        # the last user gone: engine closed
    digest = hashlib.sha256(ir.encode()).hexdigest()
    assert llvm.released > released
    assert digest not in llvm._live and digest not in llvm._unused


@pytest.mark.slow   # hundreds of cold compiles: the slow job's
@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs Linux /proc")
def test_cold_compiles_past_the_limit_keep_memory_flat(tmp_path, monkeypatch):
    # every signature compiles anew (an empty disk cache each time would not change it)
    monkeypatch.setenv("JITLIB_CACHE_DIR", "")
    monkeypatch.setenv("JITLIB_COMPILE_WORKER", "auto")
    monkeypatch.setattr(optimizer_process, "IN_PROCESS_LIMIT", 0)
    monkeypatch.setattr(compiler, "RETAIN_UNUSED", RETAIN)
    llvm = compiler.get_compiler()
    f = jitlib.jit(lambda x: np.tanh(x) * 3.0 - 1.0, backend="cpu", cache_size=CACHE_SIZE)
    here = llvm.optimized_here
    _churn3 = lambda sizes: [np.testing.assert_allclose(  # noqa: E731
        f(x), np.tanh(x) * 3.0 - 1.0, rtol=1e-6, atol=1e-6)
        for x in (np.linspace(-2.0, 2.0, n, dtype=np.float32) for n in sizes)]
    _churn3(range(2, 22))                             # the worker started, pools warmed
    rss, fds = _rss_bytes(), _open_fds()
    _churn3(range(22, 122))
    grown = _rss_bytes() - rss
    assert llvm.optimized_here == here                # every compile ran in the worker
    assert _open_fds() == fds
    assert grown < RSS_BUDGET, f"resident memory grew {grown / 2**20:.1f} MiB over 100 " \
                               "cold signatures"
