"""Control-flow bugs, each the smallest program that showed it, kept as differential
tests. An open one is a strict xfail whose reason is the error it raises today: when its
fix lands the xfail fails and the marker goes. Found by the loop fuzzer
(tests/fuzz/numpy_programs.py) or by hand."""
import numpy as np
import pytest

import jitlib.numpy as jnp
from jitlib.testing import check_backends


def reshaped_value_read_before_and_inside_a_loop(a):
    v = a.reshape(1, 9)
    return v.sum(), jnp.fori_loop(0, 2, lambda i, c: -v, v)


@pytest.mark.parametrize("backend", ["interpreter", "cpu", "jax"])
def test_value_reduced_and_read_by_a_loop(backend):
    # fusion once formed a cycle: the reduce of v and the loop reading v fed each other
    a = np.arange(9, dtype=np.float32).reshape(3, 3)
    check_backends(reshaped_value_read_before_and_inside_a_loop, a, backends=(backend,))
