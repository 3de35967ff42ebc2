"""Each error a user can make while tracing names their file, line and what to do."""
import inspect

import numpy as np
import pytest

import jitlib
import jitlib.numpy as jnp
from jitlib import errors


def _line_of(fn, marker):
    lines, start = inspect.getsourcelines(fn)
    for offset, text in enumerate(lines):
        if marker in text:
            return start + offset
    raise AssertionError(marker)


def _raises(fn, args, error_type, marker, *, match=None):
    with pytest.raises(error_type, match=match) as info:
        jitlib.jit(fn, backend="interpreter")(*args)
    message = str(info.value)
    line = _line_of(fn, marker)
    assert message.startswith(f"{__file__}:{line} in {fn.__name__}"), message
    assert "hint:" in message, message
    return message


X = np.arange(6.0).reshape(2, 3)


def test_value_dependent_if():
    def relu_if(x):
        if x.sum() > 0:  # mark
            return x
        return -x
    msg = _raises(relu_if, (X,), errors.TracerConversionError, "# mark")
    assert "np.where" in msg and "static_argnums" in msg
    assert "jnp.cond(pred, lambda v:" in msg and "jnp.while_loop(" in msg


def test_while_on_a_traced_value():
    def loop(x):
        while (x < 10).all():  # mark
            x = x * 2
        return x
    msg = _raises(loop, (X,), errors.TracerConversionError, "# mark")
    assert "jnp.while_loop(" in msg

    def rewritten(x):   # as the hint says
        return jnp.while_loop(lambda v: (v < 10).all(), lambda v: v * 2, x)
    np.testing.assert_array_equal(jitlib.jit(rewritten)(X + 1), loop(X + 1))


def test_float_of_a_tracer():
    def to_float(x):
        return float(x.sum()) * 2  # mark
    _raises(to_float, (X,), errors.TracerConversionError, "# mark", match="float")


def test_int_of_a_tracer_as_a_size():
    def take_n(x):
        return np.ones(int(x[0, 0]))  # mark
    _raises(take_n, (X,), errors.TracerConversionError, "# mark", match="int")


def test_np_array_of_a_tracer_in_numpys_own_code():
    from numpy import asarray   # NumPy's function itself: jit does not see this call

    def to_numpy(x):
        return asarray(x) + 1  # mark
    msg = _raises(to_numpy, (X,), errors.TracerConversionError, "# mark",
                  match="NumPy array")
    assert "np.zeros/np.empty" in msg


GLOBAL_BUFFER = np.zeros(3)


def test_writing_a_tracer_into_a_global_numpy_buffer():
    def fill(x):
        GLOBAL_BUFFER[0] = x[0, 0]  # mark
        return x
    msg = _raises(fill, (X,), errors.TracerConversionError, "# mark")
    assert "pass that array as an argument" in msg


def test_unsupported_numpy_function():
    def decompose(x):
        return np.linalg.eig(x)  # mark
    msg = _raises(decompose, (X,), errors.UnsupportedError, "# mark", match="eig")
    assert "numpy_support.md" in msg


def test_shape_mismatch_in_broadcast():
    def add(x):
        return x + np.ones(4)  # mark
    _raises(add, (X,), errors.ShapeError, "# mark", match=r"\(2, 3\) \(4,\)")


def test_shape_mismatch_in_reshape():
    def bad_reshape(x):
        return x.reshape(4, 2)  # mark
    _raises(bad_reshape, (X,), errors.ShapeError, "# mark")


def test_shape_mismatch_in_matmul():
    def bad_matmul(x):
        return x @ x  # mark
    _raises(bad_matmul, (X,), errors.ShapeError, "# mark")


def test_traced_boolean_mask_read():
    def masked(x):
        return x[x > 2]  # mark
    msg = _raises(masked, (X,), errors.UnsupportedError, "# mark")
    assert "np.where" in msg


def test_errors_are_also_builtin_exception_types():
    # users catching ValueError/TypeError keep working
    assert issubclass(errors.ShapeError, ValueError)
    assert issubclass(errors.JitlibTypeError, TypeError)
