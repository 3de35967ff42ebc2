"""Generated Triton kernels run under Triton's interpreter, against jitlib's interpreter
and JAX. No GPU and no PyTorch: the path is `HostDevice` (NumPy buffers) with
`HostGridExecutor`; every test here asserts that path ran (`PATH` below)."""
import numpy as np
import pytest
from hypothesis import given, settings

import anchors
import programs
from ir_strategies import fused_programs
from triton_cases import flat_args, traced
from jitlib.backends.jax import JaxBackend
from jitlib.backends.triton import TritonBackend
from jitlib.backends.triton.host import HostDevice
from jitlib.hlo import build as B, dtypes
from jitlib.hlo.interpreter import evaluate
from jitlib.hlo.ir import Module
from jitlib.hlo.ops import Op
from jitlib.testing import assert_allclose_tree

PATH = "triton-interpreter (host buffers, no torch)"
GPU = TritonBackend(HostDevice())


def run(module, args):
    exe = GPU.compile(module)
    assert exe.device.interpreted, f"expected the {PATH} path, got {exe.device.name}"
    return exe, exe(*args)


@pytest.mark.parametrize("fn", list(anchors.ARGS), ids=lambda f: f.__name__)
def test_anchors_match_interpreter_and_jax(fn):
    args = anchors.ARGS[fn](np.random.default_rng(0))
    module = traced(fn, args)
    exe, got = run(module, args)
    assert exe.fallbacks == {} and exe.kernels, exe.fallbacks
    assert_allclose_tree(got, evaluate(module, args), err_msg=f"{PATH}\n{module}")
    assert_allclose_tree(got, JaxBackend().compile(module)(*args), err_msg=f"{PATH} vs jax")


FAST = ["softmax", "layernorm", "gelu_tanh", "rmsnorm", "mlp2", "attention_single_head",
        "cross_entropy", "rotary_embedding", "embedding_lookup", "bool_logic",
        "integer_arithmetic", "bit_ops_int32", "conv2d_single_channel", "polyval_horner",
        "discounted_returns", "bin_counts", "int64_mixed", "l2_normalize", "minmax_scale"]


@pytest.mark.parametrize("name", FAST)
def test_programs_match_the_interpreter(name):
    (p,) = [p for p in programs.PROGRAMS if p.name == name]
    args = p.make_args(np.random.default_rng(0))
    module = traced(p.fn, args, p.static_argnums)
    flat = flat_args(module, args, p.static_argnums)
    exe, got = run(module, flat)
    assert_allclose_tree(got, evaluate(module, flat), rtol=p.rtol or 2e-5, atol=p.atol or 1e-6,
                         err_msg=f"{PATH}\n{exe.kernel_sources()}")


DT = ["bool", "i8", "i32", "u8", "i64", "f16", "bf16", "f32", "f64"]


def _sample(name, shape, seed):
    rng, dt = np.random.default_rng(seed), dtypes.from_name(name)
    if name == "bool":
        return rng.random(shape) < 0.5
    if dtypes.is_integer(dt):
        lo = 0 if dtypes.is_unsigned(dt) else -9
        return rng.integers(lo, 9, shape).astype(dt)
    x = rng.standard_normal(shape) * 3
    x.flat[:4] = [np.nan, np.inf, -0.0, 0.5][: x.size]
    return x.astype(dt)


@pytest.mark.parametrize("name", DT)
def test_elementwise_ops(name):
    dt = dtypes.from_name(name)
    x, y = B.parameter(0, (5, 7), dt, "x"), B.parameter(1, (5, 7), dt, "y")
    outs = []
    for op in (Op.ADD, Op.SUB, Op.MUL, Op.DIV, Op.REM, Op.MAX, Op.MIN, Op.POW, Op.AND, Op.ATAN2):
        try:
            outs.append(B.binary(op, x, y))
        except Exception:
            continue
    for op in (Op.NEG, Op.ABS, Op.SIGN, Op.EXP, Op.LOG1P, Op.TANH, Op.SQRT, Op.ROUND,
               Op.LOGISTIC, Op.NOT, Op.IS_FINITE, Op.FLOOR, Op.SIN):
        try:
            outs.append(B.unary(op, x))
        except Exception:
            continue
    outs.append(B.compare(x, y, "LT"))
    outs.append(B.convert(x, np.float32))
    module = Module("ew", [x, y], outs)
    args = [_sample(name, (5, 7), 1), _sample(name, (5, 7), 2)]
    if dtypes.is_integer(dt) and name != "bool":
        args[1] = np.abs(args[1]) % 4   # small exponents keep pow comparable
    exe, got = run(module, args)
    assert not exe.fallbacks
    rtol = {"f16": 4e-3, "bf16": 2e-2}.get(name, 2e-6)
    assert_allclose_tree(got, evaluate(module, args), rtol=rtol, atol=rtol,
                         err_msg=f"{PATH}\n{exe.kernel_sources()}")


@pytest.mark.parametrize("op", [Op.REDUCE_SUM, Op.REDUCE_MAX, Op.REDUCE_MIN, Op.REDUCE_PROD,
                                Op.ARGMAX, Op.ARGMIN])
@pytest.mark.parametrize("name", ["f32", "i32", "bf16"])
def test_reductions_with_nan_and_ties(op, name):
    x = B.parameter(0, (6, 9), dtypes.from_name(name), "x")
    red = (B.reduce(op, x, dims=(1,)) if op not in (Op.ARGMAX, Op.ARGMIN)
           else B.arg_reduce(op, x, axis=1))
    module = Module("r", [x], [red])
    a = _sample(name, (6, 9), 3)
    a[2] = a[2, 0]   # a row of ties
    exe, got = run(module, [a])
    assert not exe.fallbacks
    assert_allclose_tree(got, evaluate(module, [a]), rtol=1e-2, atol=1e-5,
                         err_msg=f"{PATH}\n{exe.kernel_sources()}")


def _scatter_module(mode, name, axis):
    x = B.parameter(0, (4, 6), dtypes.from_name(name), "x")
    idx = B.parameter(1, (9,), dtypes.INDEX, "idx")
    upd_shape = (9, 6) if axis == 0 else (4, 9)
    upd = B.parameter(2, upd_shape, dtypes.from_name(name), "upd")
    return Module("s", [x, idx, upd], [B.scatter(x, idx, upd, axis, mode)])


@pytest.mark.parametrize("mode", ["add", "max", "min"])
@pytest.mark.parametrize("name", ["i32", "i64", "u32", "u64"])
@pytest.mark.parametrize("axis", [0, 1])
def test_integer_scatters_run_as_atomics(mode, name, axis):
    module = _scatter_module(mode, name, axis)
    n = 4 if axis == 0 else 6
    idx = np.array([0, 2, 2, n - 1, n, -1, 2, 0, 1 << 40])   # repeats, and three dropped
    args = [_sample(name, (4, 6), 1), idx, _sample(name, module.params[2].shape, 2)]
    exe, got = run(module, args)
    assert not exe.fallbacks and [k.kind for k in exe.kernels.values()] == ["scatter"]
    assert_allclose_tree(got, evaluate(module, args), rtol=0, atol=0,
                         err_msg=f"{PATH}\n{exe.kernel_sources()}")


@pytest.mark.parametrize("mode,name", [("add", "f32"), ("max", "f64"), ("set", "i64"),
                                       ("add", "i8")])
def test_scatters_whose_order_shows_stay_on_the_interpreter(mode, name):
    module = _scatter_module(mode, name, 0)
    args = [_sample(name, (4, 6), 1), np.array([0, 2, 2, 3, 0, 1, 1, 1, 0]),
            _sample(name, (9, 6), 2)]
    exe, got = run(module, args)
    (reason,) = exe.fallbacks.values()
    assert "scatter" in reason and "interpreter" in reason
    assert_allclose_tree(got, evaluate(module, args), rtol=0, atol=0)


@pytest.mark.parametrize("mode", ["set", "add", "mul", "max", "min"])
@pytest.mark.parametrize("name", ["f32", "f64", "f16", "i8", "bool"])
@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("index", [2, -1, 7])
def test_scatters_of_one_index_are_generated_in_any_mode(mode, name, axis, index):
    """One index has no duplicates to order (a scan's ys[i] = y): generated for every
    mode, floats and NaN included; the -1 and 7 land outside and are dropped."""
    if name == "bool" and mode != "set":
        pytest.skip("bool scatters combine logically; only set is generated")
    x = B.parameter(0, (4, 6), dtypes.from_name(name), "x")
    idx = B.parameter(1, (1,), dtypes.INDEX, "idx")
    upd = B.parameter(2, (1, 6) if axis == 0 else (4, 1), dtypes.from_name(name), "upd")
    module = Module("s", [x, idx, upd], [B.scatter(x, idx, upd, axis, mode)])
    a, u = _sample(name, (4, 6), 1), _sample(name, upd.shape, 2)
    if dtypes.is_float(a.dtype):
        a[2, 3], u.flat[0] = np.nan, np.nan
    args = [a, np.array([index]), u]
    exe, got = run(module, args)
    assert not exe.fallbacks and [k.kind for k in exe.kernels.values()] == ["scatter"]
    assert_allclose_tree(got, evaluate(module, args), rtol=0, atol=0,
                         err_msg=f"{PATH}\n{exe.kernel_sources()}")


@settings(max_examples=8)
@given(fused_programs())
def test_random_fused_programs(case):
    module, inputs = case
    exe, got = run(module, inputs)
    assert_allclose_tree(got, evaluate(module, inputs), rtol=1e-3, atol=1e-3,
                         err_msg=f"{PATH}\n{module}\n{exe.kernel_sources()}")


def test_kernels_are_readable_files_on_disk(tmp_path, monkeypatch):
    monkeypatch.setenv("JITLIB_CACHE_DIR", str(tmp_path))
    import jitlib
    args = anchors.ARGS[anchors.softmax_rows](np.random.default_rng(0))
    text = jitlib.jit(anchors.softmax_rows, backend="gpu").lower(*args).as_text("kernels")
    assert "@triton.jit" in text and "tl.max" in text and "anchors.py" in text
    assert list(tmp_path.glob("triton/*.py")), text


@pytest.mark.parametrize("name", ["f16", "f32", "f64"])
def test_float_rem_is_c_fmod_at_special_values(name):
    # Triton's float `%` lowers, on NVIDIA, to x - trunc(x/y)*y, which returns x when y is
    # inf (the H200 gave fmod(inf, inf) = inf); the kernel must call libdevice's fmod
    dt = dtypes.from_name(name)
    x, y = B.parameter(0, (6,), dt, "x"), B.parameter(1, (6,), dt, "y")
    module = Module("rem", [x, y], [B.binary(Op.REM, x, y)])
    args = [np.array([np.inf, np.inf, 5.5, -7.0, 1e4, 0.0], dt),
            np.array([np.inf, 2.0, np.inf, 0.0, 3.0, -1.5], dt)]
    exe, got = run(module, args)
    assert "libdevice.fmod(" in exe.kernel_sources(), exe.kernel_sources()
    assert_allclose_tree(got, evaluate(module, args), rtol=0, atol=0,
                         err_msg=f"{PATH}\n{exe.kernel_sources()}")


def test_dot_grouped_tile_order_covers_every_tile_once():
    # 11 row tiles (not a multiple of the group of 8) by 3 column tiles of 16
    from triton_cases import fusions
    from jitlib.backends.triton import kernels
    from jitlib.backends.triton.configs import Config
    from jitlib.backends.triton.host import HostBuffer, launch_interpreted
    x, w = B.parameter(0, (170, 24), dtypes.from_name("f32"), "x"), \
        B.parameter(1, (24, 40), dtypes.from_name("f32"), "w")
    module = Module("mm", [x, w], [B.dot_general(x, w, lhs_contract=(1,), rhs_contract=(0,))])
    kernel = kernels.render(fusions(module)[0])
    rng = np.random.default_rng(0)
    args = [rng.standard_normal((170, 24)).astype(np.float32),
            rng.standard_normal((24, 40)).astype(np.float32)]
    out = np.full((170, 40), np.nan, np.float32)
    # (an f32 x f32 kernel's TF32X3 flag, "auto" by default, kept as the heuristic has it)
    tiles = Config({**kernel.config.constexprs, "BM": 16, "BN": 16, "BK": 16})
    launch_interpreted(kernel, tiles,
                       [HostBuffer(a) for a in args] + [HostBuffer(out)])
    np.testing.assert_allclose(out, args[0] @ args[1], rtol=1e-5, atol=1e-5,
                               err_msg=f"{PATH}\n{kernel.source}")


F64_ONLY = ["log_softmax", "sigmoid", "entropy_and_kl", "polyval_horner", "trapezoid_integral"]


@pytest.mark.parametrize("name", F64_ONLY)
def test_f64_programs_compute_in_f64_throughout(name):
    # every constant, accumulator and libdevice call of an all-f64 program is f64: one
    # float32 anywhere in its kernels would show as ~1e-7 relative error, far over rtol
    (p,) = [p for p in programs.PROGRAMS if p.name == name]
    args = p.make_args(np.random.default_rng(0))
    module = traced(p.fn, args, p.static_argnums)
    assert {dtypes.name(i.dtype) for i in module.instructions if dtypes.is_float(i.dtype)} \
        == {"f64"}, module
    flat = flat_args(module, args, p.static_argnums)
    exe, got = run(module, flat)
    assert exe.kernels and "float32" not in exe.kernel_sources(), exe.kernel_sources()
    assert_allclose_tree(got, evaluate(module, flat), err_msg=f"{PATH}\n{exe.kernel_sources()}")


def test_f64_results_of_f32_work_are_judged_at_f32_tolerance():
    # masked_mean sums in f32 (as NumPy does) and divides in f64: the f32 sum's order
    # (a tree here, sequential in NumPy) moves the f64 result by an f32 ulp, not a bug
    from triton_cases import working_tolerance
    (p,) = [p for p in programs.PROGRAMS if p.name == "masked_mean"]
    args = p.make_args(np.random.default_rng(0))
    module = traced(p.fn, args)
    sums = [i for i in module.instructions if i.op is Op.REDUCE_SUM and i.dtype == np.float32]
    assert sums, module
    assert working_tolerance(module) == (2e-5, 1e-6)
    exe, got = run(module, args)
    assert "tl.sum(" in exe.kernel_sources()
    assert_allclose_tree(got, evaluate(module, args), rtol=2e-5, atol=1e-6)
    x = B.parameter(0, (4,), np.dtype(np.float32), "x")
    widened = Module("w", [x], [B.binary(Op.MUL, B.convert(x, np.float64),
                                         B.convert(x, np.float64))])
    assert working_tolerance(widened) == (1e-12, 1e-14)


@pytest.mark.parametrize("lhs_widened", [True, False])
def test_dots_of_widened_f16_operands_match_the_interpreter(lhs_widened):
    # (Triton 3.6's interpreter multiplies bf16 tiles wrongly, so f16 stands in for both
    # 16-bit types here; bf16 runs on the H200 and compiles in test_triton_aot)
    from test_triton_aot import _widened_dot
    module = _widened_dot("f16", lhs_widened)
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(p.shape).astype(p.dtype) for p in module.params]
    exe, got = run(module, args)
    assert len(exe.kernels) == 1 and not exe.fallbacks, exe.kernel_sources()
    assert_allclose_tree(got, evaluate(module, args), rtol=1e-5, atol=1e-5,
                         err_msg=f"{PATH}\n{exe.kernel_sources()}")


FLOAT_TO_INT_SOURCES = ["f16", "bf16", "f32", "f64"]
FLOAT_TO_INT_TARGETS = ["i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"]


@pytest.mark.parametrize("src", FLOAT_TO_INT_SOURCES)
def test_float_to_int_of_nan_inf_and_out_of_range_is_the_interpreters(src):
    """The IR's meaning of these casts (NumPy's on x86-64), not the GPU's saturating one."""
    values = [np.nan, np.inf, -np.inf, -0.0, 0.7, -1.5, 127.9, 128.0, 255.5, 256.0, -129.0,
              40000.0, 65504.0, -70000.0, 3e9, -3e9, 2.0 ** 31, 2.0 ** 32, 2.0 ** 63,
              1.5 * 2.0 ** 63, 2.0 ** 64, -2.0 ** 63, 1e30]
    dt = dtypes.canonicalize(src)
    with np.errstate(over="ignore", invalid="ignore"):
        x = np.array(values, np.float64).astype(dt)
    p = B.parameter(0, x.shape, dt, "x")
    module = Module("casts", [p], [B.convert(p, dtypes.canonicalize(t))
                                   for t in FLOAT_TO_INT_TARGETS])
    _, got = run(module, [x])
    for t, g, want in zip(FLOAT_TO_INT_TARGETS, got, evaluate(module, [x])):
        np.testing.assert_array_equal(np.asarray(g), want, err_msg=f"{src} -> {t}")


LINALG_PROGRAMS = ["gaussian_process_posterior", "least_squares_polynomial_fit",
                   "principal_components", "logistic_regression_newton",
                   "batched_gaussian_log_density"]


@pytest.mark.parametrize("name", LINALG_PROGRAMS)
def test_linear_algebra_runs_on_the_interpreter_through_host_memory(name):
    # no Triton kernel factors a matrix yet: those kernels are documented fallbacks
    prog = next(p for p in programs.PROGRAMS if p.name == name)
    args = prog.make_args(np.random.default_rng(0))
    module = traced(prog.fn, args)
    exe, got = run(module, args)
    linalg = [why for why in exe.fallbacks.values() if "linear algebra" in why]
    assert linalg and all("LAPACK on the host" in why for why in linalg), exe.fallbacks
    assert_allclose_tree(got, evaluate(module, args), rtol=1e-9, atol=1e-9,
                         err_msg=f"{PATH}\n{module}")


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_complex_arithmetic_is_generated_over_real_parts(dtype):
    # complex_lowering.py: the kernel reads and writes the complex buffers as real pairs
    z, w = (B.parameter(i, (5, 3), dtype) for i in range(2))
    x = B.parameter(2, (3,), dtypes.part_type(dtype))
    phase = B.unary(Op.EXP, B.binary(Op.COMPLEX, B.full(0, (3,), x.dtype), x))
    ratio = B.binary(Op.DIV, B.binary(Op.MUL, z, B.broadcast_in_dim(phase, (5, 3), (1,))),
                     B.binary(Op.ADD, w, B.unary(Op.CONJ, z)))
    module = Module("c", [z, w, x], [ratio, B.unary(Op.ABS, ratio), B.unary(Op.REAL, w),
                                     B.reduce(Op.REDUCE_SUM, ratio, (0,))])
    rng = np.random.default_rng(3)
    args = [(rng.standard_normal((5, 3)) + 1j * rng.standard_normal((5, 3))).astype(dtype)
            for _ in range(2)] + [rng.standard_normal(3).astype(dtypes.part_type(dtype))]
    exe, got = run(module, args)
    assert exe.fallbacks == {}, exe.fallbacks
    assert [g.dtype for g in got] == [r.dtype for r in module.results]
    assert_allclose_tree(got, evaluate(module, args), err_msg=exe.kernel_sources())
    # an op without a real form keeps its kernel on the interpreter, and says which
    unlowered = Module("l", [z], [B.unary(Op.RSQRT, z)])
    assert "rsqrt on complex values" in str(GPU.compile(unlowered).fallbacks)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_complex_log_trig_and_powers_are_generated_over_real_parts(dtype):
    # glibc's clog, ctanh and cpow over real parts, with libdevice's real functions
    z = B.parameter(0, (9,), dtype)
    power = B.binary(Op.POW, z, B.full(2.5 - 0.5j, (9,), dtype))
    module = Module("t", [z], [B.unary(Op.LOG, z), B.unary(Op.TAN, z), power])
    rng = np.random.default_rng(4)
    args = [(rng.standard_normal(9) * 2 + 1j * rng.standard_normal(9)).astype(dtype)]
    exe, got = run(module, args)
    assert exe.fallbacks == {}, exe.fallbacks
    tol = 1e-5 if dtype == np.complex64 else 1e-12
    assert_allclose_tree(got, evaluate(module, args), rtol=tol, atol=tol,
                         err_msg=exe.kernel_sources())


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_complex_inverse_functions_and_computed_powers_are_generated_over_real_parts(dtype):
    # glibc's casinh (casin, cacos, cacosh through its kernel), catanh (catan mirrored)
    # and NumPy's npy_cpow of a computed exponent, with libdevice's real functions
    z, w = B.parameter(0, (12,), dtype), B.parameter(1, (12,), dtype)
    module = Module("t", [z, w], [B.unary(op, z) for op in (
        Op.ASINH, Op.ASIN, Op.ACOS, Op.ACOSH, Op.ATANH, Op.ATAN)] + [B.binary(Op.POW, z, w)])
    rng = np.random.default_rng(5)
    args = [(rng.standard_normal(12) * 2 + 1j * rng.standard_normal(12)).astype(dtype),
            (rng.standard_normal(12) + 1j * rng.standard_normal(12)).astype(dtype)]
    args[1][:4] = [3, -2, 0, 1.5]    # repeated squaring, b = 0, cpow
    args[0][:2] = [1e20 + 1j, 1e-3 + 1j]
    exe, got = run(module, args)
    assert exe.fallbacks == {}, exe.fallbacks
    tol = 1e-5 if dtype == np.complex64 else 1e-12
    assert_allclose_tree(got, evaluate(module, args), rtol=tol, atol=tol,
                         err_msg=exe.kernel_sources())


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_complex_products_are_four_real_dot_kernels(dtype):
    # complex_products.py: (ar.br - ai.bi) + i(ar.bi + ai.br), each a real dot kernel;
    # the parts and the combination (an epilogue here) are complex kernels over real parts
    from jitlib.backends import complex_products
    a, b = B.parameter(0, (6, 5), dtype), B.parameter(1, (5, 4), dtype)
    product = B.dot_general(a, b, (1,), (0,))
    module = Module("p", [a, b], [product, B.unary(Op.EXP, product)])
    split = complex_products.split(module)
    dots = [i for i in split.instructions if i.op is Op.DOT_GENERAL]
    assert len(dots) == 4 and all(not dtypes.is_complex(d.dtype) for d in dots), split
    rng = np.random.default_rng(4)
    args = [(rng.standard_normal(s) + 1j * rng.standard_normal(s)).astype(dtype)
            for s in ((6, 5), (5, 4))]
    exe, got = run(module, args)
    assert exe.fallbacks == {}, exe.fallbacks
    assert_allclose_tree(got, evaluate(module, args), err_msg=exe.kernel_sources())
    real = Module("r", [B.parameter(0, (3, 3), np.float32)], [])
    assert complex_products.split(real) is real


@pytest.mark.parametrize("name, fn", [
    ("exp", lambda x, z: np.exp(x.astype(np.complex64)) + z),
    ("sqrt", lambda x, z: np.sqrt(x + 0j) * z),
    ("abs_compare", lambda x, z: (np.abs(x + 0j), (x + 0j) == z)),
    ("real_divisor", lambda x, z: z / np.sqrt(x * x + 1)),
])
def test_complex_ops_on_real_values_fold_their_constant_parts(name, fn):
    # a real value as complex has a constant zero imaginary part: what the lowering
    # computes from it alone is folded before Triton sees it (an unfolded `abs(0) == 0`
    # broke the interpreter's `&`)
    rng = np.random.default_rng(12)
    args = [rng.standard_normal(16).astype(np.float32),
            (rng.standard_normal(16) + 1j * rng.standard_normal(16)).astype(np.complex64)]
    module = traced(fn, args)
    exe, got = run(module, args)
    assert exe.fallbacks == {}, exe.fallbacks
    assert_allclose_tree(got, evaluate(module, args), err_msg=exe.kernel_sources())
