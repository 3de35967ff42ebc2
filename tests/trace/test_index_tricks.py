"""np.r_ and np.c_ inside jit: NumPy's own code runs, with traced items kept traced
(trace/numpy_hooks.py), against eager NumPy on every CPU backend: buffers made inside,
weak Python scalars (a float32 result stays float32), static slices, columns, and the
axis directive."""
import numpy as np
import pytest

from jitlib.testing import check_backends

BACKENDS = ("interpreter", "cpu", "jax")
rng = np.random.default_rng(0)
X = rng.standard_normal(5).astype(np.float32)
M = rng.standard_normal((3, 4))

CASES = {
    "r_ of a made buffer and a scalar": (lambda x: np.r_[np.zeros(5), x.sum()], (X,)),
    "r_ keeps float32 beside a Python float": (lambda x: np.r_[x, 1.0, x[:2]], (X,)),
    "r_ with a static slice": (lambda x: np.r_[x, 0:3] * 2, (X,)),
    "c_ of columns": (lambda x: np.c_[x, x ** 2, np.ones(5)], (X,)),
    "r_ along columns by directive": (lambda m: np.r_["1", m, m[:, :1]], (M,)),
    "c_ of matrices": (lambda m: np.c_[m, -m], (M,)),
}


@pytest.mark.parametrize("name", CASES)
def test_index_tricks_match_eager_numpy(name):
    fn, args = CASES[name]
    check_backends(fn, *args, backends=BACKENDS)


def test_r_outside_a_trace_is_numpys_own():
    from numpy.lib import _index_tricks_impl as index_tricks
    import jitlib
    jitlib.jit(lambda x: np.r_[x, 1.0], backend="interpreter")(X)
    assert index_tricks.array is np.array     # the hook is gone once no trace is running
