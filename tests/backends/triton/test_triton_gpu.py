"""The Triton backend on a real CUDA GPU (the H200): every fusion kind and op family
against jitlib's interpreter and JAX. Run with `pytest -m gpu`; skipped without a GPU."""
import numpy as np
import pytest

import anchors
import programs
from test_triton_interpreted import DT, FAST, _sample
from triton_cases import flat_args, traced, working_tolerance
from jitlib.backends import _cuda_gpu_visible
from jitlib.backends.jax import JaxBackend
from jitlib.backends.triton import TritonBackend, default_device
from jitlib.hlo import build as B, dtypes
from jitlib.hlo.interpreter import evaluate
from jitlib.hlo.ir import Module
from jitlib.hlo.ops import Op
from jitlib.testing import assert_allclose_tree

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not _cuda_gpu_visible(), reason="needs a CUDA GPU")]


@pytest.fixture(scope="module")
def gpu():
    device = default_device()
    assert not getattr(device, "interpreted", False), "fell back to the host device"
    return TritonBackend(device)


def check(gpu, module, args, rtol=2e-5, atol=1e-6):
    exe = gpu.compile(module)
    got = exe(*args)
    assert_allclose_tree(got, evaluate(module, args), rtol=rtol, atol=atol,
                         err_msg=f"cuda vs interpreter\n{exe.kernel_sources()}")
    assert_allclose_tree(got, JaxBackend().compile(module)(*args), rtol=rtol, atol=atol,
                         err_msg="cuda vs jax")
    return exe


@pytest.mark.parametrize("fn", list(anchors.ARGS), ids=lambda f: f.__name__)
def test_anchors(gpu, fn):
    args = anchors.ARGS[fn](np.random.default_rng(0))
    exe = check(gpu, traced(fn, args), args)
    assert exe.fallbacks == {}


@pytest.mark.parametrize("p", programs.PROGRAMS, ids=lambda p: p.name)
def test_programs(gpu, p):
    args = p.make_args(np.random.default_rng(0))
    module = traced(p.fn, args, p.static_argnums)
    flat = flat_args(module, args, p.static_argnums)
    exe = gpu.compile(module)
    # per-dtype default tolerances: f16/bf16 sums accumulate in f32 and round once (as the
    # cpu backend's), while NumPy's half loops round after every add, so they differ by ulps;
    # results computed through narrower floats get those floats' tolerance
    rtol, atol = (p.rtol, p.atol) if p.rtol is not None else working_tolerance(module)
    assert_allclose_tree(exe(*flat), evaluate(module, flat), rtol=rtol, atol=atol,
                         err_msg=exe.kernel_sources())


@pytest.mark.parametrize("name", DT)
def test_elementwise(gpu, name):
    dt = dtypes.from_name(name)
    x, y = B.parameter(0, (300, 7), dt, "x"), B.parameter(1, (300, 7), dt, "y")
    outs = []
    for op in (Op.ADD, Op.SUB, Op.MUL, Op.DIV, Op.REM, Op.MAX, Op.MIN, Op.ATAN2):
        try:
            outs.append(B.binary(op, x, y))
        except Exception:
            continue
    for op in (Op.NEG, Op.ABS, Op.EXP, Op.LOG1P, Op.TANH, Op.SQRT, Op.ROUND, Op.LOGISTIC):
        try:
            outs.append(B.unary(op, x))
        except Exception:
            continue
    args = [_sample(name, (300, 7), 1), _sample(name, (300, 7), 2)]
    rtol = {"f16": 4e-3, "bf16": 2e-2}.get(name, 2e-6)
    exe = gpu.compile(Module("ew", [x, y], outs))
    assert_allclose_tree(exe(*args), evaluate(Module("ew", [x, y], outs), args),
                         rtol=rtol, atol=rtol)


@pytest.mark.parametrize("dt", ["f16", "bf16", "f32", "f64"])
@pytest.mark.parametrize("shape", [(17, 33, 9), (256, 512, 128)])
def test_dot_with_epilogue(gpu, dt, shape):
    m, k, n = shape
    d = dtypes.from_name(dt)
    x, w = B.parameter(0, (m, k), d, "x"), B.parameter(1, (k, n), d, "w")
    dot = B.dot_general(x, w, lhs_contract=(1,), rhs_contract=(0,))
    out = B.binary(Op.MAX, dot, B.broadcast_to(B.constant(0, d), dot.shape))
    rng = np.random.default_rng(0)
    args = [rng.standard_normal((m, k)).astype(d), rng.standard_normal((k, n)).astype(d)]
    tol = {"f16": 1e-2, "bf16": 5e-2, "f32": 1e-4, "f64": 1e-10}[dt]
    check(gpu, Module("mm", [x, w], [out]), args, rtol=tol, atol=tol * k ** 0.5)


@pytest.mark.parametrize("name", ["gaussian_process_posterior", "least_squares_polynomial_fit",
                                  "logistic_regression_newton", "batched_gaussian_log_density"])
def test_linear_algebra_runs_through_host_lapack(gpu, name):
    # the factorizations fall back to the interpreter (device -> host -> device); the
    # kernels around them are generated
    prog = next(p for p in programs.PROGRAMS if p.name == name)
    args = prog.make_args(np.random.default_rng(0))
    exe = check(gpu, traced(prog.fn, args), args, rtol=1e-9, atol=1e-9)
    linalg = [why for why in exe.fallbacks.values() if "linear algebra" in why]
    assert linalg and exe.kernels, exe.fallbacks
