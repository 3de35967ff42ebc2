"""NumPy's OpenBLAS thread count (blas_threads.py) is the process's, whatever the
setter's name says: sections that want one thread share one count, and the count
comes back when the last of them ends.
"""
import ctypes
import threading

import numpy as np
import pytest

from jitlib.backends.llvm import blas_threads

RNG = np.random.default_rng(11)


def _stack(batch, m, k, n, dtype=np.float32):
    a = RNG.standard_normal((*batch, m, k)).astype(dtype)
    b = RNG.standard_normal((*batch, k, n)).astype(dtype)
    return a, b, np.full((*batch, m, n), np.nan, dtype)


def _process_count():
    lib = ctypes.CDLL(blas_threads.library_path())
    get = getattr(lib, "scipy_openblas_get_num_threads64_", None) or lib.openblas_get_num_threads
    get.restype = ctypes.c_int
    return get()


def test_two_threads_small_products_give_the_thread_count_back(monkeypatch):
    # OpenBLAS's "local" count is the process's: two small products at once, the first
    # to finish ending first, once left NumPy's BLAS on one thread for good
    if blas_threads._set_threads is None:
        pytest.skip("NumPy's BLAS has no per-thread thread count here")
    before = _process_count()
    both_in, first_out = threading.Barrier(2), threading.Event()
    matmul = np.matmul

    def held(*args, **kwargs):
        both_in.wait()
        if threading.current_thread().name == "second":
            first_out.wait()
        return matmul(*args, **kwargs)
    monkeypatch.setattr(np, "matmul", held)

    def small(name):
        a, b, out = _stack((), 4, 4, 4)
        blas_threads.matmul(a, b, out, 64)
        if name == "first":
            first_out.set()
    threads = [threading.Thread(target=small, args=(n,), name=n) for n in ("first", "second")]
    threads[0].start()
    while not both_in.n_waiting:     # the first is inside its section before the second
        pass
    threads[1].start()
    for t in threads:
        t.join()
    assert _process_count() == before
