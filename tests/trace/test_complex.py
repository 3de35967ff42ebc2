"""Complex arrays through the tracer: NumPy 2's promotion, the elementwise ufuncs NumPy
defines on them, parts and views, reductions and products; each checked on the
interpreter, cpu and jax backends against eager NumPy, dtypes included."""
import numpy as np
import pytest

import jitlib
from array_devices import gpu_backend_on_host  # noqa: F401
from jitlib.errors import JitlibTypeError, UnsupportedError
from jitlib.testing import check_backends

BACKENDS = ("interpreter", "cpu", "jax")
C64, C128 = np.complex64, np.complex128

# the branch cuts' sides (negative real axis, imaginary axis past +-1) with +-0 parts,
# and non-finite parts
EDGES = [complex(-2.0, 0.0), complex(-2.0, -0.0), complex(0.0, 0.0), complex(-0.0, -0.0),
         complex(0.0, 2.0), complex(-0.0, -2.0), complex(0.5, 0.0), complex(-0.5, -0.0),
         complex(np.inf, 0.0), complex(-np.inf, 1.0), complex(1.0, np.inf),
         complex(np.nan, 0.0), complex(0.0, np.nan), complex(1.5, -0.5)]


def values(dt, n=24, seed=0, edges=False):
    rng = np.random.default_rng(seed)
    z = rng.normal(0, 1.5, n) + 1j * rng.normal(0, 1.5, n)
    if edges:
        z = np.concatenate([np.array(EDGES), z])
    return z.astype(dt)


def check(fn, *args, backends=BACKENDS, **kwargs):
    with np.errstate(all="ignore"):
        return check_backends(fn, *args, backends=backends, **kwargs)


# XLA's complex functions answer unlike NumPy's on non-finite parts (jax.py says so): the
# jax backend is checked on finite values, the interpreter and cpu on the edges too
NUMPY_EXACT = ("interpreter", "cpu")


@pytest.mark.parametrize("dt", [C64, C128], ids=["c64", "c128"])
@pytest.mark.parametrize("ufunc", [
    np.negative, np.positive, np.absolute, np.sign, np.conjugate, np.exp, np.expm1,
    np.log, np.log1p, np.sqrt, np.tanh, np.sin, np.cos, np.tan, np.square, np.reciprocal,
    np.isnan, np.isinf, np.isfinite, np.logical_not, np.sinh, np.cosh, np.arcsin, np.arccos,
    np.arctan, np.arcsinh, np.arccosh, np.arctanh, np.exp2, np.log2, np.log10],
    ids=lambda u: u.__name__)
def test_unary_ufuncs_match_numpy_at_the_edges(ufunc, dt):
    out = check(ufunc, values(dt, edges=True), backends=NUMPY_EXACT)
    assert out.dtype == ufunc(values(dt, 2)).dtype   # c64 stays c64; abs gives f32
    check(ufunc, values(dt, 40, seed=3), backends=("jax",))


def test_sqrt_and_log_keep_numpys_side_of_the_branch_cut_on_jax():
    z = np.array([complex(-2.0, 0.0), complex(-2.0, -0.0), complex(-0.5, -0.0)])
    check(lambda z: (np.sqrt(z), np.log(z)), z)


@pytest.mark.parametrize("dt", [C64, C128], ids=["c64", "c128"])
@pytest.mark.parametrize("ufunc", [
    np.add, np.subtract, np.multiply, np.true_divide, np.power, np.equal, np.not_equal,
    np.less, np.less_equal, np.greater, np.greater_equal, np.maximum, np.minimum, np.fmax,
    np.fmin, np.logical_and], ids=lambda u: u.__name__)
def test_binary_ufuncs_match_numpy(ufunc, dt):
    for edges, backends in ((True, NUMPY_EXACT), (False, ("jax",))):
        z = values(dt, edges=edges)
        w = z[::-1].copy()
        w[::4] = z[::4]          # ties, so the lexicographic order's second key is reached
        w[1::5] = z[1::5].real + 1j * w[1::5].imag
        check(ufunc, z, w, backends=backends)


@pytest.mark.parametrize("fn", [
    lambda x: x * 1j,                           # Python complex: weak, f32 -> c64
    lambda x: x + (2 - 1j),
    lambda x: (x + 0j) ** 2,
    lambda x: x.astype(np.complex64) * np.float64(2),   # a strong f64 scalar: c128
    lambda x: np.exp(1j * x),
], ids=["mul_1j", "add_complex", "square", "strong_f64", "exp_i"])
def test_python_complex_scalars_promote_as_numpy_2(fn):
    x = np.linspace(-2, 2, 9, dtype=np.float32)
    check(fn, x)


def test_complex_scalar_argument_is_weak():
    x = values(C64)
    out = check(lambda z, c: z * c + c, x, 0.5 - 2j)
    assert out.dtype == C64


def test_parts_angle_and_predicates():
    z = values(C128, edges=True)
    check(lambda z: (np.real(z), np.imag(z), z.real * z.imag, np.angle(z),
                     np.angle(z, deg=True), np.iscomplex(z), np.isreal(z), z.conj()), z)
    x = np.array([1.0, -2.0, 0.0], np.float32)
    check(lambda x: (np.real(x), np.imag(x), np.angle(x), np.iscomplexobj(x),
                     np.iscomplexobj(x + 1j)), x)


def test_astype_between_complex_and_real():
    z = values(C128)
    with np.errstate(all="ignore"):
        check(lambda z: (z.astype(np.complex64), (z.real * 2).astype(np.complex64),
                         np.float32(1) + z.astype(np.complex64)), z)


def test_assigning_to_real_and_imag_parts():
    def f(z, v):
        y = z.copy()
        y.real = v                 # a view written through, as NumPy
        y.imag *= 2
        y.imag[1] = -1.0
        return y

    check(f, values(C64, 6), np.arange(6, dtype=np.float32))


def test_assigning_into_an_argument_reaches_the_caller():
    def f(z):
        z.imag = 0.0
        return z.real.sum()

    check(f, values(C128, 5))


def test_imag_of_a_real_array_cannot_be_set():
    def f(x):
        x.imag = 1.0
        return x

    with pytest.raises(JitlibTypeError, match="imaginary part"):
        jitlib.jit(f, backend="interpreter")(np.ones(3))


@pytest.mark.parametrize("dt", [C64, C128], ids=["c64", "c128"])
def test_reductions(dt):
    z = values(dt, 24).reshape(4, 6)
    check(lambda z: (z.sum(), z.sum(axis=0), np.mean(z, axis=1), np.prod(z[:, :3], axis=1),
                     np.cumsum(z, axis=1), np.max(z), np.min(z, axis=0), np.argmax(z),
                     np.argmin(z, axis=1)), z)


def test_extremes_put_nan_first_like_numpy():
    z = np.array([1 + 1j, complex(1, np.nan), 3 - 1j, 3 + 0j], C128)
    check(lambda z: (np.max(z), np.min(z), np.argmax(z), np.maximum.reduce(z)), z)


@pytest.mark.parametrize("dt", [C64, C128], ids=["c64", "c128"])
def test_products(dt):
    a, b = values(dt, 12).reshape(3, 4), values(dt, 20, seed=1).reshape(4, 5)
    check(lambda a, b: (a @ b, np.dot(a[0], b[:, 1]), np.einsum("ij,jk->ik", a, b),
                        np.vdot(a[0], b[:, 0]), a @ b.real, np.vecdot(a, b.T[:3]),
                        np.linalg.vecdot(a[0], b[:, 2])), a, b)


def test_unsupported_complex_ufunc_is_refused_by_name():
    with pytest.raises(UnsupportedError, match="np.float_power of complex values"):
        jitlib.jit(np.float_power, backend="interpreter")(values(C128, 3), 2.0)


def test_round_and_rint_take_each_part():
    z = values(C64, 12) * 10
    z[:3] = [2.5 + 3.5j, -0.5 - 1.5j, complex(np.inf, np.nan)]
    check(lambda z: (np.rint(z), np.round(z), np.round(z, 1), np.round(z, -1)), z)


def test_the_gpu_backend_runs_complex_programs(gpu_backend_on_host):
    # the arithmetic as kernels over real parts, the FFTs on the interpreter through
    # the host (cuFFT on a GPU)
    pytest.importorskip("triton")

    def f(z, w, x):
        u = np.exp(z) * w + np.conj(z) / (w + 3)
        spectrum = np.fft.fft(u)
        return np.abs(spectrum) + x, spectrum.real.sum(), np.fft.ifft(spectrum * 2)

    z, w = values(C64, 8), values(C64, 8, seed=3)
    x = np.linspace(0, 1, 8, dtype=np.float32)
    got = jitlib.jit(f, backend="gpu")(z, w, x)
    for g, want in zip(got, f(z, w, x)):
        assert np.asarray(g).dtype == want.dtype
        np.testing.assert_allclose(np.asarray(g), want, rtol=1e-5, atol=1e-5)


def test_grad_of_a_real_function_of_complex_inputs_matches_jax():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    jax.config.update("jax_enable_x64", True)

    def make(m):
        def f(z, w):
            u = m.exp(z) * w + m.sin(z) / (w + 3) + m.sqrt(z * z + 1) * m.log(w)
            return m.sum(m.abs(u) ** 2 + m.real(u * m.conj(z)) - m.imag(w) * 3.0)
        return f

    z, w = values(C128, 5), values(C128, 5, seed=2)
    got = jitlib.grad(make(np), argnums=(0, 1))(z, w)
    want = jax.grad(make(jnp), argnums=(0, 1))(z, w)
    for g, e in zip(got, want):
        np.testing.assert_allclose(g, np.asarray(e), rtol=1e-10)


def test_vjp_of_a_complex_output_matches_jax():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    jax.config.update("jax_enable_x64", True)
    z = values(C128, 4)
    ct = values(C128, 4, seed=5)
    _, pull = jitlib.vjp(lambda z: np.exp(z) * np.conj(z) + z.real, z)
    _, jpull = jax.vjp(lambda z: jnp.exp(z) * jnp.conj(z) + jnp.real(z), z)
    np.testing.assert_allclose(pull(ct)[0], np.asarray(jpull(ct)[0]), rtol=1e-12)


def test_vmap_over_complex_values():
    z = values(C64, 12).reshape(3, 4)
    got = jitlib.vmap(lambda r: np.abs(r).sum() + r.imag)(z)
    want = np.stack([np.abs(r).sum() + r.imag for r in z])
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_sort_in_numpys_complex_order_nans_last():
    z = np.array([3 + 1j, complex(1, np.nan), complex(np.nan, 2), 1 + 2j, 1 - 1j,
                  complex(np.nan, np.nan), 0j, complex(np.nan, -1), complex(2, np.nan)])
    z = np.stack([z, z[::-1]])
    check(lambda z: (np.sort(z, axis=1), np.argsort(z, axis=1), np.sort(z, axis=None)), z)


def test_var_std_and_norms_are_real_as_numpy():
    z = values(C128, 12).reshape(3, 4)
    out = check(lambda z: (np.var(z, axis=1), np.std(z), np.linalg.norm(z),
                           np.linalg.norm(z, axis=0), np.linalg.norm(z, "fro"),
                           np.linalg.norm(z[0], 1)), z)
    assert all(o.dtype == np.float64 for o in out)


def test_complex_carry_through_loops_and_branches_and_its_grad():
    import jitlib.numpy as jnp

    def rotate(z):
        out = jnp.fori_loop(0, 5, lambda i, s: s * np.exp(0.1j) + 0.01 * i, z)
        return jnp.cond(out.real.sum() > 0, lambda v: v.conj(), lambda v: -v, out), \
            np.abs(out).max()

    z = np.linspace(0, 1, 6) + 0.5j
    check(rotate, z)
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)

    def make(m, loop):
        return lambda z: m.sum(m.abs(loop(0, 3, lambda i, s: s * s * 0.5 + z, z)))

    got = jitlib.grad(make(np, jnp.fori_loop))(z)
    want = jax.grad(make(jax.numpy, jax.lax.fori_loop))(z)
    np.testing.assert_allclose(got, np.asarray(want), rtol=1e-10)
