"""NumPy functions written in terms of others (jitlib/trace/functions/compositions.py),
against eager NumPy on every CPU backend: the values, dtypes and shapes, with the edge
cases NumPy gives an answer for (n = 0 and negative powers, vector ends of a chain, a
singular matrix's inf condition number, integer inputs)."""
import warnings

import numpy as np
import pytest

from jitlib.testing import check_backends

BACKENDS = ("interpreter", "cpu", "jax")
rng = np.random.default_rng(0)
A, B, C, D = (rng.standard_normal(s) for s in ((4, 4), (4, 3), (3, 5), (5, 2)))
V = rng.standard_normal(4)
SINGULAR = np.array([[1.0, 2.0], [2.0, 4.0]])

CASES = {
    "multi_dot of three": (lambda a, b, c: np.linalg.multi_dot([a, b, c]), (A, B, C)),
    "multi_dot, vector ends": (lambda x, b, c, d: np.linalg.multi_dot([x, b, c, d[:, 0]]),
                               (V, B, C, D)),
    "multi_dot of four": (lambda a, b, c, d: np.linalg.multi_dot([a, b, c, d]), (A, B, C, D)),
    "matrix_power 3": (lambda a: np.linalg.matrix_power(a, 3), (A,)),
    "matrix_power 7": (lambda a: np.linalg.matrix_power(a, 7), (A,)),
    "matrix_power 0 of ints": (lambda a: np.linalg.matrix_power(a, 0),
                               (np.arange(8).reshape(2, 2, 2),)),
    "matrix_power -2": (lambda a: np.linalg.matrix_power(a, -2), (A,)),
    "tensorinv": (lambda a: np.linalg.tensorinv(a.reshape(4, 2, 2), ind=1), (A,)),
    "tensorsolve": (lambda a, b: np.linalg.tensorsolve(a.reshape(2, 2, 4), b.reshape(2, 2)),
                    (A, V)),
    "cond": (lambda a: np.linalg.cond(a), (A,)),
    "cond -2": (lambda a: np.linalg.cond(a, -2), (A,)),
    "cond 1": (lambda a: np.linalg.cond(a, 1), (A,)),
    "cond fro": (lambda a: np.linalg.cond(a, "fro"), (A,)),
    "cond of a singular matrix": (lambda a: np.linalg.cond(a, 1), (SINGULAR,)),
    "polyder 2": (lambda p: np.polyder(p, 2), (V,)),
    "polyder 0": (lambda p: np.polyder(p, 0), (V,)),
    "polyint with constants": (lambda p: np.polyint(p, 2, k=[1.0, 2.0]), (V,)),
    "polyint of ints, one constant": (lambda p: np.polyint(p, 3, k=5), (np.arange(4),)),
    "hfft": (lambda x: np.fft.hfft(x.astype(np.complex128), 6), (V,)),
    "hfft ortho": (lambda x: np.fft.hfft(x.astype(np.complex128), norm="ortho"), (V,)),
    "ihfft": (lambda x: np.fft.ihfft(x), (V,)),
    "diagflat of a matrix": (lambda x: np.diagflat(x, -1), (A[:2, :2],)),
    "sort_complex of floats": (lambda x: np.sort_complex(x), (V,)),
    "sort_complex of int8": (lambda x: np.sort_complex(x), (np.array([3, -1, 2], np.int8),)),
    "dsplit": (lambda a: np.dsplit(a.reshape(2, 2, 4), 2)[1], (A,)),
    "put_along_axis (writes its argument)": (
        lambda a: np.put_along_axis(a, np.argsort(a, axis=1)[:, :1], 0.0, axis=1), (A,)),
}


@pytest.mark.parametrize("name", CASES)
def test_compositions_match_eager_numpy(name):
    fn, args = CASES[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")    # the singular matrix's inv
        check_backends(fn, *args, backends=BACKENDS)


def test_a_singular_matrix_has_an_infinite_condition_number():
    import jitlib
    assert jitlib.jit(lambda a: np.linalg.cond(a, 1), backend="cpu")(SINGULAR) == np.inf
