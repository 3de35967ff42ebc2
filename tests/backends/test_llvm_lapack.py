"""Small LU factors and triangular solves compiled by the cpu backend (llvm/lapack.py):
SciPy's OpenBLAS getrf and trsm called from the kernel on the Fortran copies SciPy's
wrappers make, so the bits are the interpreter's; in a loop they keep it native."""
import itertools

import numpy as np
import pytest

import jitlib
import jitlib.numpy as jnp
from jitlib.backends.llvm import LLVMBackend
from jitlib.backends.llvm.native_loop import NativeLoop
from jitlib.hlo import Module, build as B
from jitlib.hlo.interpreter import evaluate

LLVM = LLVMBackend()


def _same_bits(module, args):
    exe = LLVM.compile(module)
    assert not exe.fallbacks, exe.fallbacks
    for got, want in zip(exe(*args), evaluate(module, args)):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [1, 2, 7, 40])
def test_lu_factors_pivots_and_permutation_are_the_interpreters(dtype, n):
    rng = np.random.default_rng(n)
    a = rng.standard_normal((n, n)).astype(dtype)
    p = B.parameter(0, a.shape, a.dtype)
    module = Module("lu", [p], [B.lu(p, out) for out in ("lu", "pivots", "permutation")])
    _same_bits(module, [a])
    singular = a.copy()
    singular[:, -1] = 0                     # a zero pivot: no error, as LAPACK leaves it
    _same_bits(module, [singular])
    with_nan = a.copy()
    with_nan[0, 0] = np.nan
    _same_bits(module, [with_nan])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("flags", list(itertools.product([True, False], repeat=4)))
@pytest.mark.parametrize("columns", [1, 3])
def test_triangular_solves_are_the_interpreters(dtype, flags, columns):
    left, lower, transpose, unit = flags
    rng = np.random.default_rng(columns)
    n = 9
    a = (rng.standard_normal((n, n)) + 4 * np.eye(n)).astype(dtype)
    b = rng.standard_normal((n, columns) if left else (columns, n)).astype(dtype)
    pa, pb = B.parameter(0, a.shape, a.dtype), B.parameter(1, b.shape, b.dtype)
    solve = B.triangular_solve(pa, pb, left, lower, transpose, unit)
    _same_bits(Module("trsm", [pa, pb], [solve]), [a, b])


def test_large_or_batched_matrices_stay_on_the_interpreter():
    big = B.parameter(0, (300, 300), np.dtype(np.float64))       # 720 KB: past the stack
    batch = B.parameter(1, (2, 5, 5), np.dtype(np.float64))
    module = Module("rest", [big, batch], [B.lu(big, "lu"), B.lu(batch, "lu")])
    exe = LLVM.compile(module)
    assert len(exe.fallbacks) == 2, exe.fallbacks


def newton(x, iters):
    for _ in range(iters):
        F = np.array([x[0] ** 2 + x[1] ** 2 - 4.0, np.exp(x[0]) + x[1] - 1.0])
        J = np.array([[2 * x[0], 2 * x[1]], [np.exp(x[0]), 1.0]])
        x = x - np.linalg.solve(J, F)
    return x


def implicit_steps(u, A):
    return jnp.fori_loop(0, 20, lambda i, u: np.linalg.solve(A, u), u)


@pytest.mark.parametrize("fn, args, static", [
    (newton, (np.array([1.0, -1.5]), 12), (1,)),
    (implicit_steps, (np.linspace(0, 1, 16),
                      np.eye(16) * 2 - 0.5 * (np.eye(16, k=1) + np.eye(16, k=-1))), ()),
])
def test_loops_that_solve_a_system_each_trip_run_natively(fn, args, static):
    executable = jitlib.jit(fn, backend="cpu", static_argnums=static).lower(*args).compile()
    loops = [r for _, r in executable._steps if isinstance(r, NativeLoop)]
    assert loops, [type(r).__name__ for _, r in executable._steps]
    got = jitlib.jit(fn, backend="cpu", static_argnums=static)(*args)
    want = jitlib.jit(fn, backend="interpreter", static_argnums=static)(*args)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_allclose(got, fn(*args), rtol=1e-12, atol=1e-12)
