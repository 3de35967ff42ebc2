"""Slices with traced bounds (jitlib/trace/windows.py): the shrinking slices of
factorizations and triangular solves, inside loops traced once. Eager NumPy's values and
caller-visible state on every backend, a trace that does not grow with the trip count,
and errors that name the line where a window's length would escape."""
import numpy as np
import pytest

import jitlib
import jitlib.numpy as jnp
from jitlib import errors
from jitlib.hlo.ops import Op
from jitlib.testing import check_backends

BACKENDS = ("interpreter", "cpu", "jax")


def lu_in_place(A):
    # Doolittle by rows, written into the caller's array
    n = A.shape[0]
    for k in range(n - 1):
        A[k + 1:, k] /= A[k, k]
        A[k + 1:, k + 1:] -= np.outer(A[k + 1:, k], A[k, k + 1:])


def eliminate(A, b):
    A, b = A.copy(), b.copy()
    n = len(b)
    for k in range(n - 1):
        factors = A[k + 1:, k] / A[k, k]      # a temporary: its length shrinks each trip
        A[k + 1:, k:] -= np.outer(factors, A[k, k:])
        b[k + 1:] -= factors * b[k]
    return A, b


def back_substitute(U, b):
    n = b.shape[0]
    x = np.zeros_like(b)
    for i in range(n - 1, -1, -1):
        x[i] = (b[i] - U[i, i + 1:] @ x[i + 1:]) / U[i, i]
    return x


def cholesky_by_columns(A):
    L = np.zeros_like(A)
    for j in range(A.shape[0]):
        L[j, j] = np.sqrt(A[j, j] - np.dot(L[j, :j], L[j, :j]))
        L[j + 1:, j] = (A[j + 1:, j] - L[j + 1:, :j] @ L[j, :j]) / L[j, j]
    return L


def running_stats(x):
    means, tail_max = np.empty_like(x), np.empty_like(x)
    for i in range(x.shape[0]):
        means[i] = x[:i + 1].mean()
        tail_max[i] = x[i:].max()
    return means, tail_max


def householder_r(A):
    # R of A = QR by Householder reflections: one element of a window read and written
    A = A.copy()
    for k in range(A.shape[1]):
        x = A[k:, k]
        v = x.copy()
        v[0] += np.sign(x[0]) * np.linalg.norm(x)
        v /= np.linalg.norm(v)
        A[k:, k:] -= 2.0 * np.outer(v, v @ A[k:, k:])
    return np.triu(A)


def _spd(n, seed=0, dtype=np.float64):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((n, n))
    return (a @ a.T + n * np.eye(n)).astype(dtype), rng.standard_normal(n).astype(dtype)


def _whiles(fn, *args):
    return sum(i.op is Op.WHILE for i in jitlib.jit(fn).lower(*args).module.instructions)


@pytest.mark.parametrize("name, fn, args", [
    ("lu_in_place", lu_in_place, lambda: (_spd(12, dtype=np.float32)[0],)),
    ("eliminate", eliminate, lambda: _spd(12)),
    ("back_substitute", back_substitute, lambda: (np.triu(_spd(12)[0]), _spd(12)[1])),
    ("cholesky_by_columns", cholesky_by_columns, lambda: (_spd(12)[0],)),
    ("running_stats", running_stats, lambda: (_spd(12)[1],)),
    ("householder_r", householder_r, lambda: (np.random.default_rng(3).standard_normal((9, 6)),)),
])
def test_shrinking_slices_trace_once_and_keep_numpys_values(name, fn, args):
    args = args()
    assert _whiles(fn, *args) == 1
    check_backends(fn, *args, backends=BACKENDS)


def test_elementwise_window_math_is_numpys_to_the_bit():
    # outer products, divisions and subtractions through windows: no sum, so no order
    A = _spd(16, dtype=np.float32)[0]
    got, want = A.copy(), A.copy()
    jitlib.jit(lu_in_place, backend="cpu")(got)
    lu_in_place(want)
    assert np.array_equal(got, want)


def test_the_trace_does_not_grow_with_the_trip_count():
    small, large = (jitlib.jit(eliminate).lower(*_spd(n)).as_text() for n in (8, 64))
    assert small.count("\n") == large.count("\n")


@pytest.mark.parametrize("lo, hi", [(0, 3), (-4, None), (None, -2), (5, 100), (-100, 2), (7, 3)])
def test_bounds_follow_numpys_rules(lo, hi):
    # negative bounds count from the end, then clamp; an empty window sums to 0 and its
    # max is NaN (NumPy raises there)
    x = np.arange(1.0, 9.0)

    def window_stats(x, k):
        def body(i, acc):
            a = None if lo is None else lo + i * 0 + k
            b = None if hi is None else hi + i * 0 + k
            w = x[a:b]
            return acc + w.sum() * 1000 + w.mean() * 0
        return jnp.fori_loop(0, 1, body, 0.0), x[lo:hi]

    want = x[lo:hi].sum() * 1000
    for backend in BACKENDS:
        got = jitlib.jit(window_stats, backend=backend)(x, 0)[0]
        np.testing.assert_allclose(got, want + (np.nan if x[lo:hi].size == 0 else 0),
                                   equal_nan=True)


def test_one_element_of_a_window_is_read_and_written_from_either_end():
    def ends(x):
        out = np.zeros(4)
        for i in range(4):
            w = x[i:i + 3].copy()
            w[0] += 10.0
            w[-1] = w[-1] * 2 + w[i % 3 - 3]
            x[i:i + 3] = w            # a copy: x changes only here
            out[i] = w[1] + x[i]
        return out

    x = np.arange(10.0)
    assert _whiles(ends, x) == 1
    check_backends(ends, x, backends=BACKENDS)


def test_an_empty_window_has_a_nan_maximum():
    x = np.arange(5.0)
    f = jitlib.jit(lambda x: jnp.fori_loop(0, 1, lambda i, acc: acc + x[i + 5:].max(), 0.0))
    assert np.isnan(f(x))


def test_a_variable_read_after_the_loop_is_carried_not_a_temporary():
    # `factors` is read after the loop: not a temporary, so the shrinking trips run as
    # Python, and its last value is NumPy's
    def elimination_with_last_factors(A):
        A = A.copy()
        for k in range(A.shape[0] - 1):
            factors = A[k + 1:, k] / A[k, k]
            A[k + 1:, k:] -= np.outer(factors, A[k, k:])
        return A, factors

    A = _spd(6)[0]
    assert _whiles(elimination_with_last_factors, A) == 0
    check_backends(elimination_with_last_factors, A, backends=BACKENDS)


@pytest.mark.parametrize("body, message", [
    (lambda x, k: x[k:], "returning"),
    (lambda x, k: len(x[k:]), "len()"),
    (lambda x, k: x[k:] + x[k + 1:], "lengths may differ"),
    (lambda x, k: x[k:] * np.ones(8), "static shape"),
    (lambda x, k: x[k:].reshape(-1, 1), "reshape"),
    (lambda x, k: x[k::2], "step 1"),
    (lambda x, k: np.outer(x[k:], x[k:])[0], "one element of a 1-d"),
])
def test_a_windows_length_escaping_is_an_error_at_its_line(body, message):
    x = np.arange(8.0)
    with pytest.raises(errors.JitlibError, match=message) as info:
        jitlib.jit(body)(x, np.int64(2))   # k traced: x[k:] is a window
    assert "test_windows.py" in str(info.value)


# -- slices of a fixed length at a traced start: plain views

def batch_sums(X, bs):
    out = np.zeros((X.shape[0] // bs, X.shape[1]))
    for k, s in enumerate(range(0, X.shape[0], bs)):
        xb = X[s:s + bs]
        out[k] = xb.sum(0) * xb.shape[0]     # the length is static: len() and shape work
    return out


def scale_batches_in_place(X, bs):
    for s in range(0, X.shape[0], bs):
        xb = X[s:s + bs, 1:]
        xb *= 1.0 + s                       # through the view: the caller's X changes
        X[s:s + bs, 0] = xb[:, 0] - 1.0     # and a write of the same bounds
    return X.sum()


def ragged_batches(X, bs):
    total = np.zeros(X.shape[1])
    for s in range(0, X.shape[0], bs):      # the last batch is shorter: not fixed
        total = total + X[s:s + bs].mean(0)
    return total


@pytest.mark.parametrize("fn, rows", [(batch_sums, 40), (scale_batches_in_place, 40),
                                      (ragged_batches, 43)])
def test_a_slice_of_fixed_length_at_a_loop_counter_is_numpys(fn, rows):
    X = np.random.default_rng(rows).standard_normal((rows, 3))
    check_backends(fn, X, 5, backends=BACKENDS, static_argnums=(1,))


def test_a_fixed_length_batch_slice_traces_once():
    X = np.ones((400, 3))
    module = jitlib.jit(batch_sums, static_argnums=(1,)).lower(X, 4).module
    assert sum(i.op is Op.WHILE for i in module.instructions) == 1
    assert len(module.instructions) < 60, module
