"""A large stack of float products on NumPy's BLAS is shared out between jitlib's threads
(blas_threads.matmul): whole products, each on one OpenBLAS thread, in groups the
threads claim. The answer is NumPy's matmul, bit for bit, however the groups fall, and a
worker that is never scheduled leaves its share to the caller instead of holding it up.
"""
import threading

import numpy as np
import pytest

from jitlib.backends.llvm import blas_threads, parallel

RNG = np.random.default_rng(11)
BIG = 1 << 30   # multiply-adds: past SMALL_PRODUCT whatever the shapes


@pytest.fixture
def pool(monkeypatch):
    pool = parallel.Pool(2)
    monkeypatch.setattr(parallel, "_pool", pool)
    return pool


def _stack(batch, m, k, n, dtype=np.float32):
    a = RNG.standard_normal((*batch, m, k)).astype(dtype)
    b = RNG.standard_normal((*batch, k, n)).astype(dtype)
    return a, b, np.full((*batch, m, n), np.nan, dtype)


@pytest.mark.parametrize("batch", [(2,), (3,), (33,), (4, 5)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_shared_stack_is_numpys_matmul_bit_for_bit(pool, batch, dtype):
    if blas_threads._set_threads is None:
        pytest.skip("NumPy's BLAS has no per-thread thread count here")
    a, b, out = _stack(batch, 40, 30, 50, dtype)
    assert blas_threads.matmul(a, b, out, BIG) is out
    assert out.tobytes() == np.matmul(a, b).tobytes()


def test_a_worker_that_never_runs_leaves_its_share_to_the_caller(pool):
    if blas_threads._set_threads is None:
        pytest.skip("NumPy's BLAS has no per-thread thread count here")
    pool._ensure_workers()
    worker, gate = pool._workers[0], threading.Event()
    submit = worker.submit

    def held(fn, args, keep=None):       # the worker's job starts only once `gate` opens
        def late(*a):
            gate.wait()
            return fn(*a)
        submit(late, args, keep)
    worker.submit = held
    a, b, out = _stack((16,), 64, 32, 48)
    blas_threads.matmul(a, b, out, BIG)   # returns with the gate still shut
    assert not gate.is_set()
    assert out.tobytes() == np.matmul(a, b).tobytes()
    gate.set()
    a, b, out = _stack((5,), 8, 8, 8)     # the late worker's answer is collected first
    blas_threads.matmul(a, b, out, BIG)
    assert out.tobytes() == np.matmul(a, b).tobytes()



def test_an_error_in_a_worker_is_raised_once_by_the_call(pool, monkeypatch):
    if blas_threads._set_threads is None:
        pytest.skip("NumPy's BLAS has no per-thread thread count here")
    run = blas_threads._Stack.run

    def fails_on_a_worker(self, group):
        if threading.current_thread() is not threading.main_thread():
            raise FloatingPointError("from a worker")
        run(self, group)
    monkeypatch.setattr(blas_threads._Stack, "run", fails_on_a_worker)
    a, b, out = _stack((64,), 64, 64, 64)
    for _ in range(20):              # until a worker claims a group before the caller ends
        try:
            blas_threads.matmul(a, b, out, BIG)
        except FloatingPointError:
            break
    else:
        pytest.skip("the worker never claimed a group")
    monkeypatch.setattr(blas_threads._Stack, "run", run)
    a, b, out = _stack((8,), 8, 8, 8)    # the worker's error is not raised again here
    blas_threads.matmul(a, b, out, BIG)
    assert out.tobytes() == np.matmul(a, b).tobytes()
