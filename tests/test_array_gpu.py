"""jitlib.Array on a real GPU: DLPack with PyTorch, JAX and CuPy (zero-copy: the same
device pointer on both sides), and jitted calls whose results stay on the device.

Marked `gpu`; skipped, with the reason, where no CUDA GPU is present. PyTorch and JAX are
required here (they are on the GPU machine); CuPy is optional.
"""
import gc
import os
import weakref

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")   # share the GPU with torch

import numpy as np
import pytest

import jitlib
from jitlib.array import Array
from jitlib.backends.triton.device import get_device
from jitlib.hlo import dtypes
from cuda_marks import NEEDS_CUDA


pytestmark = NEEDS_CUDA


@pytest.fixture(scope="module")
def dev():
    return get_device()


@pytest.fixture(scope="module")
def torch():
    import torch
    return torch


@pytest.fixture(scope="module")
def jax():
    import jax
    return jax


def values(dtype, shape=(3, 5)):
    if dtype == dtypes.BOOL:
        return np.arange(np.prod(shape)).reshape(shape) % 3 == 0
    return (np.arange(np.prod(shape)).reshape(shape) % 7 - 3).astype(dtype)


TORCH_DTYPES = ["bool", "i8", "i16", "i32", "i64", "u8", "f16", "bf16", "f32", "f64"]


# ---------------------------------------------------------------------------- PyTorch

@pytest.mark.parametrize("name", TORCH_DTYPES)
def test_torch_takes_an_array_without_copying(dev, torch, name):
    x = values(dtypes.from_name(name))
    a = dev.from_numpy(x)
    t = torch.from_dlpack(a)
    assert t.is_cuda and t.data_ptr() == a.data_ptr() and tuple(t.shape) == x.shape
    host = t.cpu()
    back = host.view(torch.int16).numpy().view(x.dtype) if name == "bf16" else host.numpy()
    assert back.tobytes() == x.tobytes()


def test_torch_writes_show_in_the_array_and_keep_it_alive(dev, torch):
    x = np.arange(1 << 20, dtype=np.float32)
    a = dev.from_numpy(x)
    alive = weakref.ref(a)
    t = torch.from_dlpack(a)
    t.mul_(2)
    np.testing.assert_array_equal(np.asarray(a), 2 * x)
    del a
    gc.collect()
    assert alive() is not None               # torch's tensor holds the buffer
    assert float(t[-1]) == 2 * x[-1]
    del t
    gc.collect()
    assert alive() is None


@pytest.mark.parametrize("name", TORCH_DTYPES)
def test_an_array_wraps_a_torch_tensor_without_copying(torch, name):
    x = values(dtypes.from_name(name))
    src = torch.from_numpy(x.view(np.int16)).view(torch.bfloat16) if name == "bf16" \
        else torch.from_numpy(x)
    t = src.cuda()
    a = jitlib.from_dlpack(t)
    assert isinstance(a, Array) and a.data_ptr() == t.data_ptr()
    assert a.dtype == x.dtype and a.shape == x.shape
    assert np.asarray(a).tobytes() == x.tobytes()


def test_an_array_keeps_the_torch_tensor_alive(torch):
    t = torch.arange(1 << 20, dtype=torch.float32, device="cuda")
    ptr = t.data_ptr()
    a = jitlib.from_dlpack(t)
    del t
    gc.collect()
    torch.cuda.empty_cache()
    junk = torch.full((1 << 20,), -1.0, device="cuda")   # would reuse freed memory
    assert a.data_ptr() == ptr and junk.data_ptr() != ptr
    np.testing.assert_array_equal(np.asarray(a), np.arange(1 << 20, dtype=np.float32))


def test_strided_torch_tensors_are_refused(torch):
    t = torch.ones((4, 6), device="cuda").T
    with pytest.raises(jitlib.JitlibTypeError, match="contiguous"):
        jitlib.from_dlpack(t)


def test_a_torch_consumer_on_another_stream_sees_finished_data(dev, torch):
    x = np.random.default_rng(0).standard_normal(1 << 26, dtype=np.float32)   # 256 MiB
    a = dev.copy(dev.from_numpy(x))          # the copy is still running on our stream
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        t = torch.from_dlpack(a)             # passes side's handle: side waits for us
        total = t.double().sum()
    side.synchronize()
    assert float(total) == pytest.approx(float(x.astype(np.float64).sum()), rel=1e-9)


def test_a_round_trip_through_torch_returns_the_same_memory(dev, torch):
    a = dev.from_numpy(np.ones((2, 3), np.float32))
    b = jitlib.from_dlpack(torch.from_dlpack(a))
    assert b.data_ptr() == a.data_ptr()


# ---------------------------------------------------------------------------- JAX

def _jax_gpu(jax):
    gpus = [d for d in jax.devices() if d.platform == "gpu"]
    assert gpus, f"JAX sees no GPU: {jax.devices()}"
    return gpus[0]


@pytest.mark.parametrize("name", ["f32", "bf16", "i32", "bool", "f16"])
def test_jax_takes_an_array_without_copying(dev, jax, name):
    x = values(dtypes.from_name(name), (64, 33))
    a = dev.from_numpy(x)
    y = jax.dlpack.from_dlpack(a)
    assert y.unsafe_buffer_pointer() == a.data_ptr()
    assert np.asarray(y).tobytes() == x.tobytes()


@pytest.mark.parametrize("name", ["f32", "bf16", "i64", "bool"])
def test_an_array_wraps_a_jax_array_without_copying(jax, name):
    x = values(dtypes.from_name(name), (16, 40))
    y = jax.device_put(x, _jax_gpu(jax))
    a = jitlib.from_dlpack(y)
    assert a.data_ptr() == y.unsafe_buffer_pointer()
    assert np.asarray(a).tobytes() == x.tobytes()


# ---------------------------------------------------------------------------- CuPy

def test_cupy_both_ways_without_copying(dev):
    cupy = pytest.importorskip("cupy")
    x = np.linspace(0, 1, 1000, dtype=np.float32)
    a = dev.from_numpy(x)
    c = cupy.from_dlpack(a)
    assert c.data.ptr == a.data_ptr()
    np.testing.assert_array_equal(cupy.asnumpy(c), x)
    b = jitlib.from_dlpack(c * 2)
    np.testing.assert_array_equal(np.asarray(b), 2 * x)


# ---------------------------------------------------------------------------- jit

def test_gpu_is_the_default_backend_here():
    from jitlib.backends import default_backend_name
    assert default_backend_name() == "gpu"


def test_chained_jitted_calls_stay_on_the_device(dev):
    f = jitlib.jit(lambda x: np.exp(x) * 2.0, backend="gpu")
    g = jitlib.jit(lambda y, x: (y - x).sum(axis=-1), backend="gpu")
    x = np.random.default_rng(1).standard_normal((64, 100), dtype=np.float32)
    a = dev.from_numpy(x)
    copies = (dev.host_to_device, dev.device_to_host)
    for _ in range(3):
        y = f(a)
        z = g(y, a)
    assert isinstance(y, Array) and isinstance(z, Array)
    assert (y.shape, y.dtype, z.shape, z.dtype) == ((64, 100), np.float32, (64,), np.float32)
    assert (dev.host_to_device, dev.device_to_host) == copies, "a chained call touched the host"
    np.testing.assert_allclose(np.asarray(z), (np.exp(x) * 2.0 - x).sum(-1), rtol=1e-5)


def test_numpy_arguments_are_copied_in_once_and_results_stay(dev):
    f = jitlib.jit(lambda x, w: np.maximum(x @ w, 0.0), backend="gpu")
    x = np.ones((32, 16), np.float32)
    w = np.full((16, 8), 0.5, np.float32)
    before = dev.host_to_device
    out = f(x, w)
    assert isinstance(out, Array) and dev.host_to_device == before + 2
    np.testing.assert_allclose(np.asarray(out), np.full((32, 8), 8.0, np.float32))


def test_an_array_and_an_ndarray_share_one_compile(dev):
    f = jitlib.jit(lambda x: x * 3.0 + 1.0, backend="gpu")
    x = np.arange(10, dtype=np.float32)
    r1, r2 = f(x), f(dev.from_numpy(x))
    assert f.cache_info().misses == 1
    np.testing.assert_array_equal(np.asarray(r1), np.asarray(r2))


def test_jitted_calls_take_torch_and_jax_arrays_through_dlpack(torch, jax):
    f = jitlib.jit(lambda x: np.tanh(x) + 1.0, backend="gpu")
    t = torch.linspace(-3, 3, 4096, device="cuda")
    out = torch.from_dlpack(f(jitlib.from_dlpack(t)))
    torch.testing.assert_close(out, torch.tanh(t) + 1.0)
    y = jax.device_put(np.linspace(-3, 3, 4096, dtype=np.float32), _jax_gpu(jax))
    back = jax.dlpack.from_dlpack(f(jitlib.from_dlpack(y)))
    # libdevice's tanh may be an ulp off NumPy's; near x = -3 the + 1 cancels, so the
    # absolute floor carries that ulp (6e-8)
    np.testing.assert_allclose(np.asarray(back), np.tanh(np.asarray(y)) + 1.0, rtol=1e-6,
                               atol=1e-6)
