"""Products in the layouts real code writes them (issue 24 part 2): a transposed
matrix-vector product reaches the BLAS as a view (no copy of the matrix), and a 3-D
operand times a matrix is one product with the batch folded into the rows. Values
against eager NumPy on every backend; the folding on the optimized IR."""
import numpy as np
import pytest

import jitlib
from jitlib.hlo.ops import Op
from jitlib.testing import check_backends

BACKENDS = ("interpreter", "cpu", "jax")


def rng():
    return np.random.default_rng(24)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_transposed_matrix_vector_products(dtype):
    M, x, y = (rng().random(s).astype(dtype) for s in ((40, 30), (30,), (40,)))
    check_backends(lambda M, x, y: (M @ x, M.T @ y, y @ M, x @ M.T), M, x, y,
                   backends=BACKENDS)


def test_transposed_operands_of_a_matrix_product():
    a, b = rng().random((20, 30)), rng().random((40, 20))
    check_backends(lambda a, b: (a.T @ b.T, a.T @ a, b @ a), a, b, backends=BACKENDS)


@pytest.mark.parametrize("shape", [(4, 6, 5), (2, 3, 6, 5)])
def test_a_batched_operand_times_a_matrix_is_one_product(shape):
    x, w = rng().random(shape), rng().random((5, 7))
    f = lambda x, w: np.maximum(x @ w, 0.0)   # noqa: E731
    check_backends(f, x, w, backends=BACKENDS)
    optimized = jitlib.jit(f, backend="cpu").lower(x, w).optimized()
    dots = [i for k in optimized.instructions if k.op is Op.FUSION
            for i in k.attrs["body"].instructions if i.op is Op.DOT_GENERAL]
    assert len(dots) == 1 and not dots[0].attrs["lhs_batch"], optimized
    assert dots[0].operands[1].shape == (5, 7)   # the matrix itself, not broadcast


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_tiny_products_are_numpys_own_call(dtype):
    # below OpenBLAS's threading threshold the cpu backend calls np.matmul directly, with
    # no scratch memory: the product as a result, under an epilogue, and as both
    a, b = rng().standard_normal((8, 8)).astype(dtype), rng().random((8, 8)).astype(dtype)
    f = jitlib.jit(lambda a, b: (a @ b, a @ b + 1, np.tanh(a.T @ b)), backend="cpu")
    for _ in range(2):   # the second call reuses what the first one left
        product, plus_one, tanh = f(a, b)
        assert product.dtype == plus_one.dtype == tanh.dtype == dtype
        np.testing.assert_array_equal(product, a @ b)
        np.testing.assert_array_equal(plus_one, a @ b + 1)
        np.testing.assert_array_max_ulp(tanh, np.tanh(a.T @ b), maxulp=2)   # two libms
