"""Long 1-D FFTs on the cpu backend run in six steps on all threads (host_fft.py), real
ones through a complex transform of half the length: as accurate as NumPy's single call
against the exact transform (within a small factor), the same bits for any thread count,
and NumPy's own call below the size where that pays."""
import numpy as np
import pytest

import jitlib
from jitlib.backends.llvm import host_fft

pytest.importorskip("llvmlite.binding")

TRANSFORMS = {"fft": np.fft.fft, "ifft": np.fft.ifft,
              "fft_ortho": lambda a: np.fft.fft(a, norm="ortho")}


def _signal(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)


def _relative_error(got, exact):
    return np.abs(got - exact).max() / np.abs(exact).max()


@pytest.mark.parametrize("name", list(TRANSFORMS))
@pytest.mark.parametrize("n, dtype", [(1 << 18, np.complex64), (3 << 16, np.complex64),
                                      (1 << 17, np.complex128)])
def test_six_step_transforms_are_as_accurate_as_numpys(name, n, dtype):
    fn = TRANSFORMS[name]
    x = _signal((2, n), dtype)
    jitted = jitlib.jit(fn, backend="cpu")
    got = jitted(x)
    assert got.dtype == fn(x).dtype and got.shape == x.shape
    assert "fft" not in " ".join(jitted.lower(x).compile().fallbacks)
    exact = fn(x.astype(np.complex128))
    if dtype == np.complex128:      # NumPy's double transform is the reference itself
        assert _relative_error(got, exact) < 1e-14
    else:
        assert _relative_error(got, exact) <= 2 * _relative_error(fn(x), exact) + 1e-8


@pytest.mark.parametrize("n, dtype", [(1 << 17, np.float32), (3 << 17, np.float64),
                                      (1 << 19, np.float32)])
def test_real_transforms_through_half_length_ones_are_accurate(n, dtype):
    x = np.random.default_rng(3).standard_normal((2, n)).astype(dtype)
    jitted = jitlib.jit(np.fft.rfft, backend="cpu")
    got = jitted(x)
    want = np.fft.rfft(x)
    assert got.dtype == want.dtype and got.shape == want.shape == (2, n // 2 + 1)
    assert "fft" not in " ".join(jitted.lower(x).compile().fallbacks)
    exact = np.fft.rfft(x.astype(np.float64))
    if dtype == np.float64:
        assert _relative_error(got, exact) < 1e-14
    else:
        assert _relative_error(got, exact) <= 3 * _relative_error(want, exact) + 1e-8
    assert got[:, 0].imag.max() == 0 and got[:, -1].imag.max() == 0   # real at 0 and N/2


@pytest.mark.parametrize("fn, x", [
    (np.fft.fft, _signal((3, 1 << 16), np.complex64, seed=1)),
    (np.fft.rfft, np.random.default_rng(4).standard_normal((2, 1 << 17)).astype(np.float32))],
    ids=["fft", "rfft"])
def test_six_step_bits_do_not_depend_on_the_thread_count(fn, x, monkeypatch):
    monkeypatch.setenv("JITLIB_NUM_THREADS", "2")
    two = jitlib.jit(fn, backend="cpu")(x)
    monkeypatch.setenv("JITLIB_NUM_THREADS", "3")
    three = jitlib.jit(fn, backend="cpu")(x)
    monkeypatch.setenv("JITLIB_NUM_THREADS", "1")
    one = jitlib.jit(fn, backend="cpu")(x)
    np.testing.assert_array_equal(two, one)
    np.testing.assert_array_equal(three, one)


@pytest.mark.parametrize("n", [host_fft.MIN_POINTS // 2, 65537])   # short; prime
def test_short_and_prime_transforms_are_numpys_call(n):
    x = _signal(n, np.complex64, seed=2)
    np.testing.assert_array_equal(jitlib.jit(np.fft.fft, backend="cpu")(x), np.fft.fft(x))


def test_only_long_one_dimensional_transforms_take_the_six_steps():
    from jitlib.fusion import optimize

    def body_of(fn, x):
        (kernel,) = [i for i in optimize(jitlib.make_ir(fn)(x)).instructions
                     if i.op.name == "FUSION"]
        return kernel.attrs["body"]
    def kind(fn, x):
        return type(host_fft.runner(body_of(fn, x)))
    long = _signal(1 << 16, np.complex64)
    assert kind(np.fft.fft, long) is host_fft.SixStepRunner
    assert kind(np.fft.rfft, _signal(1 << 17, np.complex64).real.copy()) is host_fft.RealRunner
    # the others: NumPy's own call, as the interpreter makes it
    odd = _signal((1 << 17) + 1, np.complex64).real.copy()
    for fn, x in [(np.fft.rfft, long.real.copy()), (np.fft.rfft, odd), (np.fft.irfft, long),
                  (np.fft.fft2, long.reshape(256, 256)), (np.fft.fft, long[:4096])]:
        assert kind(fn, x) is host_fft.NumPyRunner
        np.testing.assert_array_equal(jitlib.jit(fn, backend="cpu")(x), fn(x))
