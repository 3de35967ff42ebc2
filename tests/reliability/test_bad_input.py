"""Every row of docs/bad_input.md: what a user gets for each kind of bad input.

An error row asserts the exception class, that the message names this file (the
user's line, not jitlib's), and the words that tell the user what to do. A value row
asserts the answer equals eager NumPy's (NaN/inf, wrap-around, division by zero) or the
documented semantics (clamped traced indices).
"""
import os

import numpy as np
import pytest

import jitlib
from jitlib import errors
from triton_marks import require_triton

HERE = os.path.basename(__file__)
X = np.arange(3, dtype=np.float32)


def _add(x, y):
    return x + y


def _raises(cls, fn, *words):
    with pytest.raises(cls) as info:
        fn()
    text = str(info.value)
    assert isinstance(info.value, errors.JitlibError), text
    assert HERE in text, f"the message does not point at the user's file:\n{text}"
    for word in words:
        assert word in text, f"{word!r} missing from:\n{text}"
    return text


def test_wrong_number_of_arguments():
    f = jitlib.jit(_add)
    _raises(errors.JitlibTypeError, lambda: f(X), "missing a required argument: 'y'")
    _raises(errors.JitlibTypeError, lambda: f(X, X, X), "too many positional arguments")


def test_unhashable_static_argument():
    f = jitlib.jit(lambda x, n: x * n, static_argnums=1)
    _raises(errors.JitlibTypeError, lambda: f(X, [2]), "unhashable list", "tuple")


@pytest.mark.parametrize("bad, words", [
    (object(), ("argument 'y'", "cannot trace")),
    ("abc", ("is a str",)),
    (np.array([1, None], dtype=object), ("dtype object", "supported dtypes")),
    (np.array(["a", "b", "c"]), ("dtype <U1", "supported dtypes")),
])
def test_arguments_jitlib_cannot_trace(bad, words):
    _raises(errors.JitlibTypeError, lambda: jitlib.jit(_add)(X, bad), *words)


def test_list_argument_is_a_pytree_and_the_error_says_so():
    # Ragged or not, a list is a container of scalars (as in JAX), not an array.
    f = jitlib.jit(_add)
    _raises(errors.TracerConversionError, lambda: f(X, [[1, 2], [3]]), "np.asarray(the_list)")
    np.testing.assert_array_equal(f(X, np.asarray([1, 2, 3])), X + np.asarray([1, 2, 3]))


def test_mismatched_shapes():
    _raises(errors.ShapeError, lambda: jitlib.jit(_add)(X, np.ones(4)),
            "could not be broadcast", "(3,) (4,)")


def test_value_dependent_python_control_flow():
    f = jitlib.jit(lambda a: a if a.sum() > 0 else -a)
    _raises(errors.TracerConversionError, lambda: f(X), "np.where")


def test_unknown_backend_is_refused_where_jit_is_called():
    _raises(errors.BackendError, lambda: jitlib.jit(_add, backend="tpu"), "known backends")


def test_static_index_out_of_range_is_an_error_like_numpy():
    _raises(errors.JitlibIndexError, lambda: jitlib.jit(lambda a: a[7])(X),
            "out of bounds for axis 0 with size 3")


@pytest.mark.parametrize("backend", ["interpreter", "cpu"])
def test_traced_indices_out_of_range_are_clamped(backend):
    f = jitlib.jit(lambda a, i: a[i], backend=backend)
    got = f(np.arange(5.0), np.array([0, 7, -1, -9]))
    # documented: like XLA, a traced index is clamped into [0, n); -1 still means the last
    np.testing.assert_array_equal(got, [0.0, 4.0, 4.0, 0.0])


@pytest.mark.parametrize("backend", ["interpreter", "cpu"])
def test_special_values_overflow_and_division_by_zero_match_numpy(backend):
    def f(a, b, i, j):
        return a + b, a / b, i + j, i // (j - j), i % (j - j)
    a = np.array([np.nan, np.inf, -np.inf, 1.0, 0.0, -1.0])
    b = np.array([1.0, -np.inf, np.inf, 0.0, 0.0, 0.0])
    i = np.array([2**31 - 1, -2**31, 5, -7, 0, 1], np.int32)
    j = np.array([1, -1, 2, 3, 4, 5], np.int32)
    with np.errstate(all="ignore"):
        want = f(a, b, i, j)
    got = jitlib.jit(f, backend=backend)(a, b, i, j)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)


def test_backend_compile_failure_is_reported_with_the_ir(monkeypatch):
    from jitlib.backends.llvm import compiler

    def broken(self, ir_text):
        raise RuntimeError("LLVM IR parsing error: simulated")
    monkeypatch.setattr(compiler.Compiler, "optimize", broken)
    monkeypatch.setenv("JITLIB_CACHE_DIR", "")
    monkeypatch.setenv("JITLIB_COMPILE_WORKER", "never")   # LLVM runs here, where it fails
    f = jitlib.jit(lambda a: np.exp(a) * 3.25 + 1.5, backend="cpu")   # a kernel no other test has
    text = _raises(errors.CompileError, lambda: f(np.arange(13, dtype=np.float64)),
                   "'cpu' backend failed", "simulated", "exp(%a)", "backend='interpreter'")
    assert "module " in text


def test_gpu_backend_without_a_gpu_is_an_error_not_a_silent_interpreter(monkeypatch):
    require_triton()
    from jitlib import backends
    from jitlib.array import DeviceError
    from jitlib.backends.triton import TritonBackend
    monkeypatch.setattr(backends, "_cuda_gpu_visible", lambda: False)
    monkeypatch.delenv("JITLIB_GPU_INTERPRET", raising=False)
    monkeypatch.setitem(backends._instances, "gpu", TritonBackend())
    f = jitlib.jit(lambda a: a + 1.0, backend="gpu")
    _raises(DeviceError, lambda: f(X), "no CUDA GPU", "backend='cpu'", "JITLIB_GPU_INTERPRET")
    # the opt-in: Triton's interpreter on host memory, same answer
    monkeypatch.setenv("JITLIB_GPU_INTERPRET", "1")
    monkeypatch.setitem(backends._instances, "gpu", TritonBackend())
    np.testing.assert_array_equal(np.asarray(jitlib.jit(lambda a: a + 1.0, backend="gpu")(X)),
                                  X + 1.0)


@pytest.mark.usefixtures("no_loop_rolling")
def test_a_long_programs_compile_failure_is_short_with_the_ir_in_a_file(monkeypatch):
    from jitlib.backends.llvm import compiler

    def broken(self, ir_text):
        raise RuntimeError("LLVM IR parsing error: simulated " + "x" * 5000)
    monkeypatch.setattr(compiler.Compiler, "optimize", broken)
    monkeypatch.setenv("JITLIB_CACHE_DIR", "")
    monkeypatch.setenv("JITLIB_COMPILE_WORKER", "never")

    def long_chain(a):
        for _ in range(100):
            a = np.exp(a) * 0.5 + 0.125
        return a
    f = jitlib.jit(long_chain, backend="cpu")
    with pytest.raises(errors.CompileError) as info:
        f(np.arange(11, dtype=np.float64))
    text = str(info.value)
    assert len(text) < 2000 and "ops)" in text and "simulated" in text
    path = text.split(" is in ")[1].split()[0]
    with open(path) as saved:
        assert saved.read().startswith("module long_chain(")
    assert info.value.location.function == "long_chain"
