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


# ---------------------------------------------------------------------------- Arrays as arrays
# The operations of test_array_ops.py (there on Triton's interpreter), on the device: each
# runs as a compiled program there, and only what needs a Python object reaches the host.

from test_array_ops import (  # noqa: E402
    BINARY, FUNCTIONS, INDICES, INT_BINARY, METHODS, NOT_GENERATED, X, generate, operands,
    same, tiny_model)


@pytest.mark.parametrize("index", INDICES.values(), ids=INDICES.keys())
def test_indexing_on_the_device(dev, index):
    same(dev.from_numpy(X)[index], X[index])


@pytest.mark.parametrize("op", BINARY + INT_BINARY, ids=lambda op: op.__name__)
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_operators_on_the_device(dev, op, dtype):
    if op in INT_BINARY and dtype == np.float32:
        pytest.skip("integer operator")
    x, y = operands(dtype)
    a = dev.from_numpy(x)
    same(op(a, 2), op(x, 2))
    if (op.__name__, dtype) == ("pow", np.int32):
        # an integer exponent on the device may be negative, which NumPy refuses: jit
        # cannot know, and says so (as test_array_ops.py checks on the host)
        with pytest.raises(ValueError, match="negative"):
            op(3, a)
        return
    same(op(3, a), op(3, x))          # reflected (xfailed on the interpreter for float %)
    same(op(a, dev.from_numpy(y)), op(x, y))
    same(op(x, dev.from_numpy(y)), op(x, y))


@pytest.mark.parametrize("name", FUNCTIONS)
def test_numpy_functions_on_the_device(dev, name):
    a = dev.from_numpy(X)
    before = dev.device_to_host
    got = FUNCTIONS[name](a)
    assert dev.device_to_host == before or name in NOT_GENERATED, "went through the host"
    same(got, FUNCTIONS[name](X))


@pytest.mark.parametrize("fn", METHODS.values(), ids=METHODS.keys())
def test_methods_on_the_device(dev, fn):
    same(fn(dev.from_numpy(X)), fn(X))


def test_writes_on_the_device(dev):
    a = dev.from_numpy(X)
    view = a.reshape(-1)
    a += 1.0
    a[0] = -1.0
    a[a > 5] = 0.0
    np.add(a, 1.0, out=a)
    expected = X + 1.0
    expected[0] = -1.0
    expected[expected > 5] = 0.0
    expected += 1.0
    same(a, expected)
    same(view, expected.reshape(-1))


def test_conversions_and_repr_on_the_device(dev):
    a = dev.from_numpy(X)
    assert float(a[1, 2]) == X[1, 2] and int(a.argmax()) == 11 and bool(a[0, 0] < 0)
    assert a.tolist() == X.tolist() and str(a) == str(X)
    assert repr(a).endswith("f64[3,4] on cuda:0)")
    assert a.block_until_ready() is a


def test_repeated_eager_operations_compile_nothing(dev):
    from jitlib import eager
    a, b = dev.from_numpy(X), dev.from_numpy(X * 2)
    int(np.argmax(a[-1] * 2))
    compiles = eager.cache_info().misses
    for t in range(3):
        int(np.argmax(b[t] * 2))
    assert eager.cache_info().misses == compiles


def test_a_reshaped_product_is_a_view_not_a_copy_kernel(dev):
    f = jitlib.jit(lambda a, x: (a @ x).reshape(10, 40), backend="gpu")
    rng = np.random.default_rng(4)
    a, x = rng.standard_normal((400, 30)), rng.standard_normal(30)
    out = f(a, x)
    np.testing.assert_allclose(np.asarray(out), (a @ x).reshape(10, 40), rtol=1e-12)
    kernels = f.lower(a, x).as_text("kernels")
    assert "run as a view of its operand" in kernels and "def fused_reshape" not in kernels


def test_device_put_and_get_on_the_gpu(dev):
    tree = jitlib.device_put({"w": X, "b": [np.ones(3, np.float32)]})
    assert isinstance(tree["w"], Array) and tree["w"].device is dev
    back = jitlib.device_get(tree)
    assert type(back["b"][0]) is np.ndarray
    np.testing.assert_array_equal(back["w"], X)


def test_results_policy_on_the_gpu():
    from jitlib import config
    f = jitlib.jit(lambda x: x * 2.0)           # the default backend here is gpu
    assert isinstance(f(X), Array)
    config.update("results", "numpy")
    try:
        assert type(f(X)) is np.ndarray
    finally:
        config.update("results", "device")


def test_a_generation_loop_on_device_results(dev):
    rng = np.random.default_rng(0)
    params = (rng.standard_normal((64, 32), dtype=np.float32),
              rng.standard_normal((32, 64), dtype=np.float32))
    expected = generate(tiny_model, params, [1, 2, 3], 8)
    model = jitlib.jit(tiny_model, backend="gpu")
    on_device = jitlib.device_put(params)
    before = dev.device_to_host
    assert generate(model, on_device, [1, 2, 3], 8) == expected
    # per step, only int(argmax) reached the host: the logits and the argmax stayed
    assert dev.device_to_host - before == 8
