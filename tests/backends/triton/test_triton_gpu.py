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
                                  "principal_components", "logistic_regression_newton",
                                  "batched_gaussian_log_density"])
def test_linear_algebra_runs_through_cusolver(gpu, name, monkeypatch):
    # each factorization or solve is one kernel, run by CuPy on the device's own stream
    pytest.importorskip("cupy")
    monkeypatch.setenv("JITLIB_GPU_LINALG", "cusolver")
    prog = next(p for p in programs.PROGRAMS if p.name == name)
    args = prog.make_args(np.random.default_rng(0))
    exe = check(gpu, traced(prog.fn, args), args, rtol=1e-8, atol=1e-8)
    assert exe.library_calls, exe.fallbacks
    assert not [why for why in exe.fallbacks.values() if "linear algebra" in why]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cusolver_ops_match_the_interpreter_and_failures_fall_back(gpu, dtype, monkeypatch):
    pytest.importorskip("cupy")
    monkeypatch.setenv("JITLIB_GPU_LINALG", "cusolver")
    rng = np.random.default_rng(1)
    g = rng.normal(size=(3, 4, 4))
    a = (g @ np.swapaxes(g, -1, -2) + 4 * np.eye(4)).astype(dtype)
    r = rng.normal(size=(2, 5, 3)).astype(dtype)
    x = B.parameter(0, a.shape, a.dtype, "x")
    y = B.parameter(1, r.shape, r.dtype, "y")
    sq = lambda v: B.binary(Op.MUL, v, v)   # noqa: E731 - vector signs are free
    outs = [B.cholesky(x), B.triangular_solve(x, x, False, True, True, False),
            B.lu(x, "lu"), B.lu(x, "permutation"), B.eigh(x, "values"),
            sq(B.eigh(x, "vectors")), B.svd(y, "s"), sq(B.svd(y, "u", True)),
            sq(B.qr(y, "q")), sq(B.qr(y, "r", True))]
    tol = dict(rtol=2e-4, atol=2e-4) if dtype == np.float32 else dict(rtol=1e-9, atol=1e-9)
    exe = check(gpu, Module("linalg", [x, y], outs), [a, r], **tol)
    assert exe.library_calls
    bad = a.copy()
    bad[1] = -bad[1]     # not positive definite: cuSOLVER fails, the interpreter gives NaN
    got = gpu.compile(Module("chol", [x], [B.cholesky(x)]))(bad)[0]
    assert np.isnan(got[1][np.tril_indices(4)]).all() and np.isfinite(got[0]).all()


def test_linear_algebra_runs_through_host_lapack_by_default(gpu, monkeypatch):
    # JITLIB_GPU_LINALG=host: the factorizations cross to the interpreter and back
    monkeypatch.setenv("JITLIB_GPU_LINALG", "host")
    prog = next(p for p in programs.PROGRAMS if p.name == "logistic_regression_newton")
    args = prog.make_args(np.random.default_rng(0))
    exe = check(gpu, traced(prog.fn, args), args, rtol=1e-8, atol=1e-8)
    assert not exe.library_calls and exe.kernels
    assert [why for why in exe.fallbacks.values() if "linear algebra" in why]


@pytest.mark.parametrize("steps", [5, 40])
def test_counted_loops_replay_as_cuda_graphs(gpu, monkeypatch, steps):
    import jitlib
    import jitlib.numpy as jnp
    from jitlib.backends.triton import graphs
    from jitlib.backends.triton.device import Device
    monkeypatch.setattr(graphs, "MAX_KERNELS", 16)    # several graphs and a remainder
    launched = []
    real = Device.launch_graph
    monkeypatch.setattr(Device, "launch_graph",
                        lambda self, g: (launched.append(g), real(self, g))[1])

    def step(i, c):
        a, b = c
        a2 = a.copy()
        a2[1:-1, 1:-1] = 0.25 * (a[1:-1, :-2] + a[1:-1, 2:] + a[:-2, 1:-1] + a[2:, 1:-1])
        return b[::-1] * 0.5 + a2, a2      # a pass-through read reversed: arena reuse shows

    f = jitlib.jit(lambda a, b: jnp.fori_loop(0, steps, step, (a, b)), backend="gpu")
    ref = jitlib.jit(lambda a, b: jnp.fori_loop(0, steps, step, (a, b)),
                     backend="interpreter")
    rng = np.random.default_rng(steps)
    for call in range(3):
        a, b = (rng.standard_normal((64, 48)).astype(np.float32) for _ in range(2))
        for got, want in zip(f(a, b), ref(a, b)):
            np.testing.assert_allclose(np.asarray(got), want, rtol=2e-5, atol=2e-5,
                                       err_msg=f"call {call}")
    assert launched, "the loop never ran as a graph"


def test_complex_arithmetic_runs_on_the_device(gpu):
    import jitlib
    rng = np.random.default_rng(8)
    x = rng.standard_normal(1 << 16)
    z = (rng.standard_normal(1 << 16) + 1j * rng.standard_normal(1 << 16)).astype(np.complex64)

    def wave(z, x):
        psi = np.exp(1j * x.astype(np.float32)) * z + z / 3
        return np.abs(psi) ** 2, psi.conj(), psi == z
    f = jitlib.jit(wave, backend="gpu")
    compiled = f.lower(z, x).compile()
    assert compiled.fallbacks == {}, compiled.fallbacks
    before = compiled.device.device_to_host
    got = f(z, x)
    assert compiled.device.device_to_host == before   # nothing went through the host
    for g, want in zip(got, wave(z, x)):
        np.testing.assert_allclose(np.asarray(g), want, rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_complex_functions_and_means_run_on_the_device(gpu, dtype):
    # glibc's clog/csinh/ctanh/cpow over real parts with libdevice's real functions, and
    # a mean split from its sum: no kernel through the host; NumPy's special values exactly
    import jitlib

    def functions(z):
        return (np.log(z), np.sin(z), np.tanh(z), z ** 2.5, np.sqrt(z), np.exp(z),
                np.log1p(z), z.mean(), np.abs(z.sum()))
    special = np.array([0.0, -0.0, 1.0, -1.5, np.inf, -np.inf, np.nan, 1e300, 1e-310, 0.75])
    grid = np.empty(special.size ** 2, dtype)
    grid.real, grid.imag = np.repeat(special, special.size), np.tile(special, special.size)
    rng = np.random.default_rng(10)
    z = (rng.standard_normal(4000) * 2 + 1j * rng.standard_normal(4000)).astype(dtype)
    f = jitlib.jit(functions, backend="gpu")
    compiled = f.lower(z).compile()
    assert compiled.fallbacks == {}, compiled.fallbacks
    dz = jitlib.device_put(z)
    before = compiled.device.device_to_host
    got = f(dz)
    assert compiled.device.device_to_host == before
    tol = 1e-5 if dtype is np.complex64 else 1e-12
    for g, want in zip(got, functions(z)):
        np.testing.assert_allclose(np.asarray(g), want, rtol=tol, atol=tol)
    with np.errstate(all="ignore"):
        wants = functions(grid)[:7]
        gots = [np.asarray(g) for g in f(grid)[:7]]
    for g, w in zip(gots, wants):
        for gp, wp in ((g.real, w.real), (g.imag, w.imag)):
            exact = ~np.isfinite(wp) | (wp == 0)
            assert np.array_equal(gp[exact], wp[exact], equal_nan=True), \
                (grid[exact][gp[exact] != wp[exact]][:4], gp[exact][gp[exact] != wp[exact]][:4])


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_complex_products_run_on_the_device(gpu, dtype):
    import jitlib
    rng = np.random.default_rng(9)
    a, b = ((rng.standard_normal(s) + 1j * rng.standard_normal(s)).astype(dtype)
            for s in ((96, 80), (80, 112)))

    def evolve(a, b):
        return np.exp(-1j * (a @ b).real) * (a @ b), a.conj().T @ a
    f = jitlib.jit(evolve, backend="gpu")
    compiled = f.lower(a, b).compile()
    assert compiled.fallbacks == {}, compiled.fallbacks
    da, db = jitlib.device_put(a), jitlib.device_put(b)
    before = compiled.device.device_to_host
    got = f(da, db)
    assert compiled.device.device_to_host == before
    tol = 2e-4 if dtype is np.complex64 else 1e-10
    for g, want in zip(got, evolve(a, b)):
        np.testing.assert_allclose(np.asarray(g), want, rtol=tol, atol=tol)


def test_complex_kernels_run_through_the_host_and_stay_arrays(gpu):
    import jitlib
    from jitlib.array import Array

    def spectral(x, h):
        spectrum = np.fft.rfft(x) * h
        return np.fft.irfft(spectrum, n=x.shape[-1]), np.abs(spectrum).max()

    rng = np.random.default_rng(6)
    x = rng.standard_normal((4, 64))
    h = np.exp(-np.arange(33) / 8.0) * (1 + 0.5j)
    f = jitlib.jit(spectral, backend="gpu")
    got = f(x, h)
    assert all(isinstance(g, Array) for g in got)
    kernels = f.lower(x, h).as_text("kernels")
    assert kernels.count("fft through CuPy (cuFFT)") == 2, kernels
    for g, want in zip(got, spectral(x, h)):
        np.testing.assert_allclose(np.asarray(g), want, rtol=1e-12, atol=1e-12)
