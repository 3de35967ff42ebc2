"""A fork() while another thread compiles leaves the child able to jit.

The child has only the forking thread: a lock the compiling thread held (jit's per
function, the compiler's, llvmlite's) would stay held there for good, and the child's
first compile would hang. The child reports by exit status; a hang is a timeout here.
"""
import os
import threading
import time

import numpy as np
import pytest

import jitlib
from jitlib.backends.llvm import compiler

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")


def _in_child(check):
    """Run `check()` in a forked child; its exit status, or None if it hung."""
    pid = os.fork()
    if pid == 0:
        status = 1
        try:
            status = 0 if check() else 2
        finally:
            os._exit(status)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.05)
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    return None


def test_fork_while_another_thread_compiles(monkeypatch):
    monkeypatch.setenv("JITLIB_CACHE_DIR", "")   # every kernel compiles: no disk hits
    comp = compiler.get_compiler()
    real = comp.object_code
    inside, leave = threading.Event(), threading.Event()

    def held(ir_text):   # the compile stops inside LLVM's turn, holding jit's locks
        inside.set()
        leave.wait(30)
        return real(ir_text)
    monkeypatch.setattr(comp, "object_code", held)

    @jitlib.jit(backend="cpu")
    def f(x):
        return x * 7.0625 + 0.3125
    x = np.arange(6, dtype=np.float32)
    other = threading.Thread(target=f, args=(x,))
    other.start()
    assert inside.wait(30)

    def child():
        comp.object_code = real    # the parent's thread, and its event, are not here
        g = jitlib.jit(lambda y: np.exp(y) - 0.5625, backend="cpu")
        return (np.array_equal(f(x), x * np.float32(7.0625) + np.float32(0.3125))
                and np.allclose(g(x), np.exp(x) - 0.5625))
    try:
        status = _in_child(child)
    finally:
        leave.set()
        other.join()
    assert status == 0, "the child hung" if status is None else f"child exit {status}"


def test_fork_waits_for_the_thread_inside_llvm():
    # a thread inside llvmlite holds its lock (and LLVM's own mutexes); the fork waits
    # for it to leave rather than copying them held into the child
    if compiler._llvm_lock is None:
        pytest.skip("this llvmlite has no lock to wait for")
    holding, left = threading.Event(), []

    def inside_llvm():
        with compiler._llvm_lock:
            holding.set()
            time.sleep(0.3)
            left.append(time.monotonic())
    other = threading.Thread(target=inside_llvm)
    other.start()
    assert holding.wait(30)

    def child():
        g = jitlib.jit(lambda y: np.tanh(y) * 0.4375, backend="cpu")
        y = np.linspace(-2, 2, 9)
        return np.allclose(g(y), np.tanh(y) * 0.4375)
    status = _in_child(child)
    forked_after = time.monotonic()
    other.join()
    assert status == 0, "the child hung" if status is None else f"child exit {status}"
    assert left and left[0] <= forked_after
