"""FFT kernels calling NumPy's pocketfft loops (llvm/pocketfft.py): np.fft's bits for
every 1-D kind, dtype and length, as compiled kernels a native loop can call."""
import os
import subprocess
import sys

import numpy as np
import pytest

import jitlib
import jitlib.numpy as jnp
from jitlib.backends.llvm.executable import NativeRunner
from jitlib.backends.llvm.native_loop import NativeLoop


def _complex(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)


def _runs_compiled(fn, x):
    executable = jitlib.jit(fn, backend="cpu").lower(x).compile()
    assert not executable.fallbacks, executable.fallbacks
    runners = [type(r) for _, r in executable._steps if r is not None]
    return bool(runners) and set(runners) == {NativeRunner}


def _irfft_17(a):
    return np.fft.irfft(a, n=17)


@pytest.mark.parametrize("n", [1, 2, 7, 64, 100, 1024])
@pytest.mark.parametrize("fn, dtype", [
    (np.fft.fft, np.complex128), (np.fft.fft, np.complex64),
    (np.fft.ifft, np.complex128), (np.fft.ifft, np.complex64),
    (np.fft.rfft, np.float64), (np.fft.rfft, np.float32),
    (np.fft.irfft, np.complex128), (np.fft.irfft, np.complex64),
    (_irfft_17, np.complex128),
], ids=lambda v: getattr(v, "__name__", None))
def test_one_dimensional_transforms_are_numpys_bits(fn, dtype, n):
    if fn is np.fft.irfft and n == 1:
        pytest.skip("irfft of one point asks for a transform of 0 points (NumPy raises)")
    shape = (3, n)
    x = _complex(shape, dtype) if np.dtype(dtype).kind == "c" else \
        np.random.default_rng(1).standard_normal(shape).astype(dtype)
    got, want = jitlib.jit(fn, backend="cpu")(x), fn(x)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    assert _runs_compiled(fn, x)


def test_several_axes_and_long_transforms_keep_the_host_runners():
    from jitlib.backends.llvm import host_fft
    x = _complex((16, 16), np.complex128)
    assert not _runs_compiled(np.fft.fft2, x)
    np.testing.assert_array_equal(jitlib.jit(np.fft.fft2, backend="cpu")(x), np.fft.fft2(x))
    long = _complex(host_fft.MIN_POINTS, np.complex64)
    executable = jitlib.jit(np.fft.fft, backend="cpu").lower(long).compile()
    assert any(isinstance(r, host_fft.SixStepRunner) for _, r in executable._steps)


def spectral_steps(u, decay):
    # a spectral time step: the loop with its FFTs is one native call
    return jnp.fori_loop(0, 20, lambda i, u: np.fft.ifft(np.fft.fft(u) * decay).real, u)


def test_a_loop_of_transforms_runs_natively():
    u = np.random.default_rng(2).standard_normal(128)
    decay = np.exp(-np.arange(128) * 0.01)
    executable = jitlib.jit(spectral_steps, backend="cpu").lower(u, decay).compile()
    assert any(isinstance(r, NativeLoop) for _, r in executable._steps)
    np.testing.assert_array_equal(jitlib.jit(spectral_steps, backend="cpu")(u, decay),
                                  jitlib.jit(spectral_steps, backend="interpreter")(u, decay))


def test_saved_fft_kernels_load_in_a_new_process(tmp_path):
    # the loop's address is resolved by name at load, not baked into the object
    script = ("import numpy as np, jitlib\n"
              "x = (np.arange(48.0) + 1j).reshape(3, 16)\n"
              "f = lambda x: np.fft.ifft(np.fft.fft(x) * 2.0)\n"
              "assert np.array_equal(jitlib.jit(f, backend='cpu')(x), f(x))\n")
    env = dict(os.environ, JITLIB_CACHE_DIR=str(tmp_path))
    for _ in range(2):
        subprocess.run([sys.executable, "-c", script], env=env, check=True, timeout=120)
    assert any((tmp_path / "objects").iterdir())
