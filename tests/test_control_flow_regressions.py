"""Open bugs in control flow, each the smallest program that shows it, kept as strict
xfails: when a fix lands the test passes, strict xfail fails it, and the marker goes.
Found by the loop fuzzer (tests/fuzz/numpy_programs.py) or by hand; the error each one
raises today is in its reason."""
import numpy as np
import pytest

import jitlib.numpy as jnp
from jitlib.errors import CompileError
from jitlib.testing import check_backends


def reshaped_value_read_before_and_inside_a_loop(a):
    v = a.reshape(1, 9)
    return v.sum(), jnp.fori_loop(0, 2, lambda i, c: -v, v)


@pytest.mark.xfail(strict=True, raises=CompileError, reason="fusion formed a cycle between kernels (AssertionError "
                                       "in jitlib/fusion/fuse.py): the reduce of v and the "
                                       "loop that reads v are fused into kernels that read "
                                       "each other; the interpreter and jax backends, which do "
                                       "not fuse, agree with NumPy")
@pytest.mark.parametrize("backend", ["cpu"])
def test_value_reduced_and_read_by_a_loop(backend):
    a = np.arange(9, dtype=np.float32).reshape(3, 3)
    check_backends(reshaped_value_read_before_and_inside_a_loop, a, backends=(backend,))
