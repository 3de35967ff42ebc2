"""float32 tanh in generated kernels (jitlib/backends/triton/tanh.py) against NumPy, in ulps.

The same generated kernel runs on both paths: Triton's interpreter over host buffers
(here and in CI; edge values and log-spaced samples), and a CUDA GPU (`-m gpu`: the same
samples, then every one of the 2^32 float32 inputs against float64 tanh). The bound is
the one docs/gpu_numerics.md states; libdevice's tanhf, which this form replaces, is
documented at 2 ulp."""
import numpy as np
import pytest

from triton_cases import traced
from jitlib.backends import _cuda_gpu_visible
from jitlib.backends.triton import TritonBackend, default_device, tanh
from jitlib.backends.triton.host import HostDevice

MAX_ULP = 2.0
F32 = np.float32
TINY = np.finfo(F32).tiny


def _around(v):
    v = F32(v)
    return [np.nextafter(v, F32(-np.inf)), v, np.nextafter(v, F32(np.inf))]


def inputs():
    """Edges (zeros, subnormals, the switch between the two forms, where results round to
    1, overflow of e = 2^(2|x|/ln 2), the largest finite, infinities, NaN) and 20,000
    log-spaced magnitudes from 2^-30 to 2^6, both signs."""
    edges = [0.0, 1e-45, 2e-45, 1e-40, 1.1754942e-38, TINY, 1e-30, 1e-10, 2.0 ** -12, 0.25,
             0.5, 1.0, 2.0, 4.0, 8.0, 9.0, 9.01, 10.0, 20.0, 44.0, 44.5, 89.0, 1e10,
             np.finfo(F32).max, np.inf]
    edges += _around(tanh.THRESHOLD) + _around(0.5625) + _around(0.6) + _around(44.36)
    rng = np.random.default_rng(5)
    mags = np.exp2(rng.uniform(-30, 6, 20000))
    x = np.concatenate([np.array(edges, dtype=F32), mags.astype(F32)])
    return np.concatenate([x, -x, np.array([np.nan], F32)])


def ulp_errors(got, x):
    """|got - tanh(x)| in units of the float32 spacing at the exact result (subnormal
    spacing 2^-149 at the bottom); 0 where x is not finite."""
    ref = np.tanh(x.astype(np.float64))
    exp = np.frexp(ref.astype(F32))[1].astype(np.float64)
    ulp = np.exp2(np.maximum(exp - 24, -149))
    err = np.abs(got.astype(np.float64) - ref) / ulp
    return np.where(np.isfinite(x), err, 0.0)


def check_specials(got, x):
    nan = np.isnan(x)
    assert np.array_equal(np.isnan(got), nan), x[np.isnan(got) != nan]
    inf = np.isinf(x)
    assert np.array_equal(got[inf], np.sign(x[inf])), (x[inf], got[inf])
    # +-0 and subnormals come back unchanged, sign included (tanh(x) rounds to x there)
    small = np.abs(x) < TINY
    assert np.array_equal(got[small].view(np.int32), x[small].view(np.int32)), \
        x[small][got[small].view(np.int32) != x[small].view(np.int32)]


def run_tanh(backend, x):
    exe = backend.compile(traced(lambda v: np.tanh(v), [x]))
    assert tanh.NAME in exe.kernel_sources(), exe.kernel_sources()
    (out,) = exe(x)
    return exe, np.asarray(out)


def test_tanh_f32_within_bound_on_the_interpreter():
    x = inputs()
    exe, got = run_tanh(TritonBackend(HostDevice()), x)
    assert exe.device.interpreted
    check_specials(got, x)
    err = ulp_errors(got, x)
    i = int(np.argmax(err))
    assert err[i] <= MAX_ULP, f"{err[i]:.2f} ulp at x={x[i]!r}\n{exe.kernel_sources()}"


def test_tanh_f64_keeps_libdevice():
    x = np.linspace(-3, 3, 7)
    exe = TritonBackend(HostDevice()).compile(traced(lambda v: np.tanh(v), [x]))
    assert "libdevice.tanh(" in exe.kernel_sources() and tanh.NAME not in exe.kernel_sources()
    np.testing.assert_allclose(np.asarray(exe(x)[0]), np.tanh(x), rtol=1e-15)


needs_gpu = pytest.mark.skipif(not _cuda_gpu_visible(), reason="needs a CUDA GPU")


@pytest.mark.gpu
@needs_gpu
def test_tanh_f32_within_bound_on_the_gpu():
    x = inputs()
    exe, got = run_tanh(TritonBackend(default_device()), x)
    assert not getattr(exe.device, "interpreted", False)
    check_specials(got, x)
    err = ulp_errors(got, x)
    i = int(np.argmax(err))
    assert err[i] <= MAX_ULP, f"{err[i]:.2f} ulp at x={x[i]!r}\n{exe.kernel_sources()}"


@pytest.mark.gpu
@needs_gpu
def test_tanh_f32_every_input_on_the_gpu():
    """All 2^32 float32 bit patterns through the generated kernel (DLPack in and out of
    PyTorch, which the GPU machine carries), against float64 tanh on the GPU."""
    import jitlib
    torch = pytest.importorskip("torch")
    f = jitlib.jit(lambda v: np.tanh(v), backend="gpu")
    chunk = 1 << 28
    worst, worst_x = 0.0, None
    tiny = torch.finfo(torch.float32).tiny
    for c in range((1 << 32) // chunk):
        bits = torch.arange(c * chunk, (c + 1) * chunk, device="cuda", dtype=torch.int64)
        x = torch.where(bits >= 1 << 31, bits - (1 << 32), bits).to(torch.int32)
        x = x.view(torch.float32)
        del bits
        got = torch.from_dlpack(f(jitlib.from_dlpack(x)))
        ref = torch.tanh(x.double())
        ulp = torch.pow(2.0, (torch.frexp(ref.float())[1] - 24).clamp_min(-149).double())
        err = ((got.double() - ref).abs() / ulp).nan_to_num(1e30)
        err = err.where(torch.isfinite(x), torch.zeros_like(err))
        i = int(err.argmax())
        if float(err[i]) > worst:
            worst, worst_x = float(err[i]), float(x[i])
        assert torch.equal(torch.isnan(got), torch.isnan(x))
        small = x.abs() < tiny          # zeros and subnormals: x itself, sign included
        assert torch.equal(got.view(torch.int32)[small], x.view(torch.int32)[small])
        inf = torch.isinf(x)
        assert torch.equal(got[inf], torch.sign(x[inf]))
        del x, got, ref, ulp, err
    assert worst <= MAX_ULP, f"{worst:.2f} ulp at x={worst_x!r}"
