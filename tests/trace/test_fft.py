"""np.fft inside jit: every transform with n/s, axis/axes and norm, on the interpreter,
cpu and jax backends against eager NumPy (dtypes included); round trips; gradients and
vmap of the fft op against JAX."""
import numpy as np
import pytest

import jitlib
from jitlib.testing import check_backends

BACKENDS = ("interpreter", "cpu", "jax")


def signal(shape, dt=np.float64, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=shape)
    if np.dtype(dt).kind == "c":
        x = x + 1j * rng.normal(size=shape)
    return x.astype(dt)


def check(fn, *args):
    return check_backends(fn, *args, backends=BACKENDS)


@pytest.mark.parametrize("dt", [np.float32, np.float64, np.complex64, np.complex128, np.int32],
                         ids=["f32", "f64", "c64", "c128", "i32"])
@pytest.mark.parametrize("name", ["fft", "ifft", "rfft"])
def test_one_axis_transforms_keep_numpys_dtype(name, dt):
    if name == "rfft" and np.dtype(dt).kind == "c":
        pytest.skip("rfft takes real input")
    fn = getattr(np.fft, name)
    out = check(lambda x: (fn(x), fn(x, axis=0), fn(x, n=5), fn(x, n=12, axis=0)),
                signal((6, 8), dt))
    assert out[0].dtype == fn(signal((6, 8), dt)).dtype


@pytest.mark.parametrize("norm", [None, "backward", "ortho", "forward"])
@pytest.mark.parametrize("name", ["fft", "ifft", "rfft", "irfft"])
def test_norms(name, norm):
    fn = getattr(np.fft, name)
    x = signal((4, 9), np.complex128 if name in ("ifft", "irfft") else np.float64)
    check(lambda x: fn(x, norm=norm), x)


@pytest.mark.parametrize("n", [None, 7, 8, 16])
def test_irfft_lengths(n):
    x = signal((3, 5), np.complex64)
    check(lambda x: np.fft.irfft(x, n=n), x)


@pytest.mark.parametrize("name", ["fft2", "ifft2", "rfft2", "irfft2", "fftn", "ifftn",
                                  "rfftn", "irfftn"])
def test_multi_axis_transforms(name):
    fn = getattr(np.fft, name)
    x = signal((3, 4, 6), np.complex128 if name.startswith(("i", "ir")) else np.float32)
    check(lambda x: (fn(x), fn(x, axes=(0, 2)), fn(x, s=(5, 4), axes=(2, 0)),
                     fn(x, norm="ortho")), x)


def test_round_trips_give_the_signal_back():
    x = signal((5, 16))
    check(lambda x: (np.fft.ifft(np.fft.fft(x)).real, np.fft.irfft(np.fft.rfft(x), n=16),
                     np.fft.irfftn(np.fft.rfftn(x), s=x.shape),
                     np.fft.ifft2(np.fft.fft2(x, norm="ortho"), norm="ortho")), x)


def test_freqs_and_shifts():
    x = signal((5, 6))

    def f(x, d):
        k = np.fft.fftfreq(6, d)
        return (np.fft.fftshift(x), np.fft.ifftshift(x, axes=1), np.fft.fftshift(x, axes=0),
                k * x, np.fft.rfftfreq(6, 0.5) + x[0, :4], np.fft.fftshift(np.fft.fftfreq(5)))

    check(f, x, 0.25)


def test_parseval_in_a_traced_program():
    def energy_gap(x):
        spectrum = np.fft.fft(x, norm="ortho")
        return np.sum(np.abs(x) ** 2) - np.sum(np.abs(spectrum) ** 2)

    assert abs(check(energy_gap, signal(64))) < 1e-10


def _jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    return jax, jax.numpy


@pytest.mark.parametrize("name", ["fft", "ifft", "rfft", "irfft", "fft2", "rfft2", "irfftn"])
def test_grad_through_each_transform_matches_jax(name):
    jax, jnp = _jax()

    def make(m):
        def f(x, w):
            y = getattr(m.fft, name)(x * w)
            return m.sum(m.abs(y) ** 2 * m.arange(y.shape[-1])) + m.sum(m.real(y) * 0.5)
        return f

    x = signal((4, 6), np.complex128 if name in ("fft", "ifft", "fft2", "irfftn", "irfft")
               else np.float64)
    if name in ("irfft", "irfftn"):
        x = x[:, :4]
    w = signal(x.shape[-1:], seed=3)
    got = jitlib.grad(make(np), argnums=(0, 1))(x, w)
    want = jax.grad(make(jnp), argnums=(0, 1))(x, w)
    for g, e in zip(got, want):
        np.testing.assert_allclose(g, np.asarray(e), rtol=1e-9, atol=1e-12)


def test_jvp_and_vmap_of_fft():
    jax, jnp = _jax()
    x, t = signal((3, 8)), signal((3, 8), seed=1)
    _, got = jitlib.jvp(lambda x: np.fft.rfft(x * x), (x,), (t,))
    _, want = jax.jvp(lambda x: jnp.fft.rfft(x * x), (x,), (t,))
    np.testing.assert_allclose(got, np.asarray(want), rtol=1e-10, atol=1e-12)
    batched = jitlib.vmap(lambda r: np.fft.irfft(np.fft.rfft(r) * 2, n=8))(x)
    np.testing.assert_allclose(batched, 2 * x, rtol=1e-12, atol=1e-12)


def test_cpu_runs_the_fft_kernel_on_numpy_and_says_so():
    lowered = jitlib.jit(np.fft.fft, backend="cpu").lower(signal(8))
    assert "fft(" in lowered.as_text()


def test_jnp_fft_namespace_traces_and_runs_eagerly():
    import jitlib.numpy as jnp
    x = signal((2, 8))
    check(lambda x: jnp.fft.irfft(jnp.fft.rfft(x) * jnp.fft.rfftfreq(8), n=8), x)
    np.testing.assert_allclose(jnp.fft.fft(x), np.fft.fft(x))
