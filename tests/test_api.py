"""jit's contract: caching per signature, static arguments, pytrees, lowering, errors."""
import dataclasses
import subprocess
import sys
from collections import namedtuple

import numpy as np
import pytest

import jitlib
from jitlib import tree

Pair = namedtuple("Pair", "a b")


def _jit(fn, **kw):
    return jitlib.jit(fn, backend="interpreter", **kw)


def test_second_call_with_same_signature_does_not_trace_again():
    traces = []

    def f(x, y):
        traces.append(type(x))
        return x * y + 1.0
    jf = _jit(f)
    x = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(jf(x, x), x * x + 1.0)
    np.testing.assert_array_equal(jf(x + 1, x), (x + 1) * x + 1.0)
    assert traces == [jitlib.trace.Tracer]
    assert jf.cache_info() == jitlib.CacheInfo(hits=1, misses=1, entries=1)
    jf(x.astype(np.float32), x)          # new dtype: new signature
    jf(np.ones((3, 3)), np.ones((3, 3)))  # new shape: new signature
    assert len(traces) == 3 and jf.cache_info().misses == 3


def test_static_arguments_key_the_cache():
    def f(x, n, *, mode="sum"):
        return x.sum() * n if mode == "sum" else x.max() * n
    jf = _jit(f, static_argnums=1, static_argnames="mode")
    x = np.arange(4.0)
    assert jf(x, 2) == 12.0 and jf(x, 3) == 18.0 and jf(x, 3, mode="max") == 9.0
    assert jf.cache_info().misses == 3
    jf(x, 3)
    assert jf.cache_info().hits == 1


def test_unhashable_static_argument_is_a_clear_error():
    jf = _jit(lambda x, shape: x.reshape(shape), static_argnums=1)
    with pytest.raises(TypeError, match="unhashable list") as info:
        jf(np.arange(4.0), [2, 2])
    assert "test_api.py" in str(info.value) and "tuple" in str(info.value)
    np.testing.assert_array_equal(jf(np.arange(4.0), (2, 2)), np.arange(4.0).reshape(2, 2))


def test_pytrees_in_and_out():
    @tree.register_dataclass
    @dataclasses.dataclass
    class Params:
        w: np.ndarray
        b: np.ndarray

    def f(p, xs, extra):
        assert extra["none"] is None
        h = xs[0] @ p.w + p.b
        return {"h": h, "pair": Pair(h.sum(), xs[1] * 2), "nothing": None}
    p = Params(np.ones((3, 2)), np.zeros(2))
    xs = [np.arange(6.0).reshape(2, 3), np.arange(2)]
    out = _jit(f)(p, xs, {"none": None})
    expected = f(p, xs, {"none": None})
    assert isinstance(out["pair"], Pair) and out["nothing"] is None
    np.testing.assert_array_equal(out["h"], expected["h"])
    np.testing.assert_array_equal(out["pair"].b, expected["pair"].b)


def test_keyword_arguments_and_defaults():
    def f(x, y=None, scale=2.0):
        return x * scale if y is None else (x + y) * scale
    jf = _jit(f)
    x = np.arange(3.0)
    np.testing.assert_array_equal(jf(x), f(x))
    np.testing.assert_array_equal(jf(x, y=x, scale=0.5), f(x, y=x, scale=0.5))
    np.testing.assert_array_equal(jf(scale=3.0, x=x), f(x, scale=3.0))


def test_wrong_number_of_arguments_names_the_call_site():
    jf = _jit(lambda x, y: x + y)
    with pytest.raises(TypeError, match="missing a required argument") as info:
        jf(np.ones(2))
    assert "test_api.py" in str(info.value)


def test_non_array_argument_needs_static():
    jf = _jit(lambda x, name: x)
    with pytest.raises(TypeError, match="str") as info:
        jf(np.ones(2), "relu")
    assert "static_argnums" in str(info.value)


def test_object_dtype_argument_is_refused():
    with pytest.raises(TypeError, match="dtype object"):
        _jit(lambda x: x)(np.array([1, "a"], dtype=object))


def test_lower_prints_ir_with_user_source_lines():
    def f(x, w):
        return np.maximum(x @ w, 0.0)
    x, w = np.ones((2, 3), np.float32), np.ones((3, 4), np.float32)
    text = _jit(f).lower(x, w).as_text()
    assert "module f(%x: f32[2,3], %w: f32[3,4])" in text
    assert "dot_general" in text and "max" in text
    line = f.__code__.co_firstlineno + 1
    assert f"test_api.py\":{line}" in text or f"test_api.py:{line}" in text


def test_make_ir_returns_the_module():
    module = jitlib.make_ir(lambda x: np.exp(x) + 1)(np.ones(3, np.float32))
    assert isinstance(module, jitlib.hlo.Module)
    assert [p.shape for p in module.params] == [(3,)]
    assert module.results[0].dtype == np.float32


def test_jit_inside_a_trace_is_inlined():
    inner = _jit(lambda x: x * 2)
    outer = _jit(lambda x: inner(x) + 1)
    np.testing.assert_array_equal(outer(np.arange(3.0)), np.arange(3.0) * 2 + 1)
    assert inner.cache_info().misses == 0


def test_inputs_are_written_as_numpy_writes_them():
    def f(x):
        x += 1
        x[0] = 100
        return x
    x = np.arange(3.0)
    out = _jit(f)(x)
    np.testing.assert_array_equal(x, [100.0, 2.0, 3.0])
    assert out is x   # eager NumPy returns the argument itself


def test_decorator_forms():
    @jitlib.jit
    def a(x):
        return x + 1

    @jitlib.jit(backend="interpreter", static_argnums=(1,))
    def b(x, n):
        return x * n
    assert isinstance(a, jitlib.Jitted) and a.__name__ == "a"
    np.testing.assert_array_equal(b(np.ones(2), 3), [3.0, 3.0])


def test_import_jitlib_is_light():
    code = ("import sys, jitlib, jitlib.numpy, jitlib.backends; "
            "bad = [m for m in ('jax', 'triton', 'torch') if m in sys.modules]; "
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_float_programs_do_not_import_ml_dtypes_and_bfloat16_loads_on_first_need():
    # ml_dtypes' import is half a second (NumPy 2.4): jitlib loads it only for bfloat16,
    # asked for by name, as jitlib.numpy.bfloat16, or arriving on the user's array
    code = """
import sys, numpy as np, jitlib
f = jitlib.jit(lambda x: np.tanh(x) * 2 + x.sum(), backend="cpu")
f(np.ones(5, np.float32)); f(np.arange(3))
assert "ml_dtypes" not in sys.modules
y = jitlib.jit(lambda x: x.astype("bfloat16") * 3, backend="cpu")(np.ones(3, np.float32))
assert y.dtype.name == "bfloat16" and y.tolist() == [3.0] * 3, y
import ml_dtypes   # a fresh process where the user's array brings it
""" + """
from jitlib.hlo import dtypes
assert dtypes.is_bfloat16(np.dtype(ml_dtypes.bfloat16)) and dtypes.name("bfloat16") == "bf16"
"""
    subprocess.run([sys.executable, "-c", code], check=True)
    late = """
import sys, numpy as np, jitlib
f = jitlib.jit(lambda x: x * 2 + 1, backend="cpu")
f(np.ones(2, np.float32))
import ml_dtypes
x = np.ones(3, ml_dtypes.bfloat16)
assert f(x).dtype == x.dtype and f(x).tolist() == [3.0] * 3
import jitlib.numpy as jnp
assert jnp.bfloat16 is ml_dtypes.bfloat16
"""
    subprocess.run([sys.executable, "-c", late], check=True)


def test_partial_and_callable_objects_can_be_jitted():
    import functools

    class Scale:
        def __call__(self, x):
            return x * 3

    np.testing.assert_array_equal(_jit(functools.partial(np.multiply, 2.0))(np.ones(2)), [2, 2])
    assert jitlib.make_ir(Scale())(np.ones(2)).name == "Scale"


def test_fast_path_for_positional_arrays_keeps_the_cache_contract():
    traces = []

    def f(x, y):
        traces.append(1)
        return x * y
    jf = _jit(f)
    a, b = np.arange(3.0), np.arange(3, dtype=np.float32)
    for _ in range(3):
        np.testing.assert_array_equal(jf(a, a), a * a)
    out = jf(a, b)                      # a new dtype misses the fast cache too
    assert out.dtype == np.float64 and len(traces) == 2
    np.testing.assert_array_equal(jf(a, y=a), a * a)   # keywords take the full path: a hit
    assert jf.cache_info() == jitlib.CacheInfo(hits=3, misses=2, entries=2)
    jf.clear_cache()
    jf(a, a)
    assert len(traces) == 3
