"""The cumulative kernel (backends/triton/scan.py) under Triton's interpreter, bit for bit
against the interpreter: in-order float rounding, integer wrap-around, NaN kept from
where it appears in cummax/cummin, both directions, every axis position."""
import numpy as np
import pytest

from test_triton_aot import compile_sm90
from triton_cases import rendered
from jitlib.backends.triton import TritonBackend
from jitlib.backends.triton.host import HostDevice
from jitlib.hlo import build as B, dtypes
from jitlib.hlo.interpreter import evaluate
from jitlib.hlo.ir import Module
from jitlib.hlo.ops import Op
from jitlib.hlo.printer import print_module

GPU = TritonBackend(HostDevice())
OPS = [Op.CUMSUM, Op.CUMPROD, Op.CUMMAX, Op.CUMMIN]


def _scan_module(op, name, shape, axis, reverse):
    x = B.parameter(0, shape, dtypes.from_name(name), "x")
    return Module("scan", [x], [B.cumulative(op, x, axis, reverse)])


def _values(name, shape, seed):
    """Values where the order of the steps shows: floats of mixed magnitude (so a
    reordered sum rounds differently) with a NaN and infinities; integers that wrap."""
    rng, dt = np.random.default_rng(seed), dtypes.from_name(name)
    if dtypes.is_float(dt):
        x = (rng.standard_normal(shape) * 10.0 ** rng.integers(-3, 4, shape)).astype(dt)
        flat = x.reshape(-1)
        if flat.size > 4:
            flat[[1, -2]] = [np.nan, np.inf]
        return x
    info = np.iinfo(dt)
    return rng.integers(info.min // 2 if info.min else 0, info.max // 2, shape, dtype=dt)


def _bits(a):
    a = np.ascontiguousarray(a)
    return a.view(f"u{a.dtype.itemsize}") if a.dtype.itemsize > 1 else a.view(np.uint8)


@pytest.mark.parametrize("op", OPS, ids=lambda op: op.value)
@pytest.mark.parametrize("name", ["f32", "f64", "f16", "i32", "i64", "u8", "i16"])
@pytest.mark.parametrize("shape,axis", [((37,), 0), ((5, 300), 1), ((300, 5), 0),
                                        ((2, 9, 3), 1)])
@pytest.mark.parametrize("reverse", [False, True], ids=["forward", "reverse"])
def test_scan_kernels_match_the_interpreter_bit_for_bit(op, name, shape, axis, reverse):
    module = _scan_module(op, name, shape, axis, reverse)
    exe = GPU.compile(module)
    assert exe.device.interpreted and not exe.fallbacks, exe.fallbacks
    x = _values(name, shape, 7)
    got, want = np.asarray(exe(x)[0]), evaluate(module, [x])[0]
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(_bits(got), _bits(want), err_msg=print_module(module))


@pytest.mark.parametrize("name,why", [("bf16", "bf16"), ("bool", "bool")])
def test_scans_left_to_the_interpreter_say_why(name, why):
    module = _scan_module(Op.CUMSUM, name, (4, 6), 1, False)
    exe = GPU.compile(module)
    (reason,) = exe.fallbacks.values()
    assert why in reason and "interpreter" in reason, reason


@pytest.mark.parametrize("op", OPS, ids=lambda op: op.value)
@pytest.mark.parametrize("name", ["f32", "f16", "i64"])
def test_scan_kernels_compile_for_sm90(op, name):
    ((_, kernel),) = rendered(_scan_module(op, name, (64, 1000), 0, True))
    assert kernel.kind == "scan", kernel
    compile_sm90(kernel)


def test_np_cumsum_through_jit_runs_the_scan_kernel(monkeypatch):
    import jitlib
    from jitlib import backends
    monkeypatch.setitem(backends._instances, "gpu", GPU)
    x = _values("f32", (40, 3), 1)
    f = jitlib.jit(lambda v: np.cumsum(v, axis=0) + np.maximum.accumulate(v, axis=1),
                   backend="gpu")
    text = f.lower(x).as_text("kernels")
    assert "not generated" not in text and text.count("scan kernel") == 2, text
    want = np.cumsum(x, axis=0) + np.maximum.accumulate(x, axis=1)
    np.testing.assert_array_equal(np.asarray(f(x)), want)
