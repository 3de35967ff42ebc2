"""NumPy's OpenBLAS thread count (blas_threads.py) is the process's, whatever the
setter's name says: sections that want one thread share one count, and the count
comes back when the last of them ends.
"""
import ctypes
import threading

import numpy as np
import pytest

import jitlib
from jitlib import blas_threads

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


def _set_process_count(n):
    lib = ctypes.CDLL(blas_threads.library_path())
    lib.scipy_openblas_set_num_threads64_.argtypes = [ctypes.c_int]
    lib.scipy_openblas_set_num_threads64_(n)


@pytest.fixture
def user_count():
    """The user's own thread count (3: neither the default nor jitlib's 1), restored."""
    if blas_threads._set_threads is None:
        pytest.skip("NumPy's BLAS has no per-thread thread count here")
    before = _process_count()
    _set_process_count(3)
    yield 3
    _set_process_count(before)


def _small_product():
    return jitlib.jit(lambda a, b: a @ b, backend="cpu"), *_stack((), 64, 32, 48)[:2]


def test_numpys_count_is_unchanged_after_a_jitted_call_in_another_thread(user_count):
    f, a, b = _small_product()
    out = []
    worker = threading.Thread(target=lambda: out.append(f(a, b)))
    worker.start()
    worker.join()
    np.testing.assert_allclose(out[0], a @ b, rtol=1e-5)
    assert _process_count() == user_count


def test_a_count_set_during_a_jitted_call_is_kept(user_count, monkeypatch):
    # the user changes NumPy's count while jitlib's one-thread section runs: at its end
    # jitlib must not put back the count from before
    f, a, b = _small_product()
    f(a, b)   # compiled: the next call only runs
    inside, changed = threading.Event(), threading.Event()
    matmul = np.matmul

    def held(*args, **kwargs):
        if threading.current_thread().name == "jitted":
            assert _process_count() == 1
            inside.set()
            changed.wait(30)
        return matmul(*args, **kwargs)
    monkeypatch.setattr(np, "matmul", held)
    worker = threading.Thread(target=f, args=(a, b), name="jitted")
    worker.start()
    assert inside.wait(30)
    _set_process_count(2)
    changed.set()
    worker.join()
    assert _process_count() == 2


@pytest.mark.parametrize("form", ["matrix @ vector", "vector @ matrix"])
def test_matrix_vector_products_are_numpys_gemv_with_its_bits(monkeypatch, form):
    # a gemm with one column packs the whole matrix first (half NumPy's speed on a large
    # float64 pair); the product goes to np.matmul with a 1-D operand, as eager `M @ x`
    # does, and is threaded from a matrix-vector's own size
    calls = []
    real = blas_threads.matmul

    def spy(left, right, out, multiply_adds):
        calls.append((left.ndim, right.ndim, multiply_adds >= blas_threads.SMALL_MATVEC))
        return real(left, right, out, multiply_adds)
    monkeypatch.setattr(blas_threads, "matmul", spy)
    m = RNG.standard_normal((700, 600))
    v = RNG.standard_normal(700 if form == "vector @ matrix" else 600)
    fn = (lambda m, v: m @ v) if form == "matrix @ vector" else (lambda m, v: v @ m)
    got = jitlib.jit(fn, backend="cpu")(m, v)
    want = (2, 1, True) if form == "matrix @ vector" else (1, 2, True)
    assert calls == [want], calls
    np.testing.assert_array_equal(got, fn(m, v))


def test_tiny_matrix_products_call_numpy_directly_with_its_bits(monkeypatch):
    # a product OpenBLAS keeps on one thread anyway skips matmul()'s checks, which cost
    # several times an 8x8 product; the bits are np.matmul's either way
    from jitlib.backends.llvm import executable
    monkeypatch.setattr(executable, "matmul",
                        lambda *args, **kwargs: pytest.fail("took the general path"))
    a, b = RNG.standard_normal((8, 5)), RNG.standard_normal((5, 8))
    got = jitlib.jit(lambda a, b: (a @ b) * 2.0 - 1.0, backend="cpu")(a, b)
    np.testing.assert_array_equal(got, (a @ b) * 2.0 - 1.0)
