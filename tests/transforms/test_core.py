"""The shared transform machinery: trace a function into a Module, call it back."""
import numpy as np

import jitlib
from jitlib.hlo.ops import Op
from jitlib.transforms import core


def test_trace_and_call_eagerly_match_numpy():
    def f(x, y):
        return np.sin(x) * y + 1.0
    x, y = np.linspace(-2, 2, 5), np.arange(5, dtype=np.float32)
    traced = core.trace(f, (x, y))
    assert [p.dtype for p in traced.module.params] == [np.float64, np.float32]
    (out,) = core.call(traced.module, [x, y])
    np.testing.assert_array_equal(out, f(x, y))


def test_call_inside_jit_inlines_and_keeps_captured_values():
    def g(x, w):
        inner = core.trace(lambda a: a * w, (x,))
        # w is captured from the outer trace: a free value, not an inner parameter
        assert inner.module.params[0] not in (w.instr,)
        assert core.depends_on_params(inner.module) >= {inner.module.results[0]}
        return core.call(inner.module, [x])[0] + 2
    x, w = np.arange(4.0), np.full(4, 3.0)
    jitted = jitlib.jit(g, backend="interpreter")
    np.testing.assert_array_equal(jitted(x, w), x * w + 2)
    module = jitted.lower(x, w).module
    assert [p.attrs["name"] for p in module.params] == ["x", "w"]
    assert not any(i.op is Op.PARAMETER and i not in module.params
                   for i in module.instructions)


def test_inner_parameters_never_alias_outer_ones():
    # Same index, shape and dtype as the outer parameter: names keep them apart.
    def g(x):
        inner = core.trace(lambda a: a + x, (x,))
        live = core.depends_on_params(inner.module)
        assert x.instr not in live
        return core.call(inner.module, [x * 2])[0]
    x = np.arange(3.0)
    np.testing.assert_array_equal(jitlib.jit(g, backend="interpreter")(x), 3 * x)
