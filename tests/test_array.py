"""jitlib.Array and its DLPack exchange, on a machine without a GPU.

`HostDevice` stands in for the CUDA device with host memory, so everything above the driver
runs here: the capsule's bytes are read back through the DLPack structures and checked
against dlpack.h's layout, capsules are consumed by jitlib's own importer, and lifetimes are
watched with weak references. `InterpretedDevice` adds the gpu backend's kernels under
Triton's interpreter, so jit's device path (Arrays in, Arrays out, host arrays copied in
once) runs here too. The same paths against torch, JAX and a real GPU are in
tests/test_array_gpu.py.
"""
import ctypes
import gc
import weakref

import numpy as np
import pytest

import jitlib
from jitlib import array as A
from jitlib.array import Array, DeviceError
from jitlib.hlo import dtypes
from array_devices import HostDevice, gpu_backend_on_host, view  # noqa: F401


def capsule_struct(capsule, name=b"dltensor"):
    address = A._PyCapsule_GetPointer(id(capsule), name)
    cls = A.DLManagedTensorVersioned if name == b"dltensor_versioned" else A.DLManagedTensor
    return cls.from_address(address)


@pytest.fixture
def device():
    return HostDevice()


# ---------------------------------------------------------------------------- the structures

def test_dlpack_structures_match_dlpack_h_on_64_bit():
    # offsets and sizes of dlpack.h v1.x on LP64: a wrong field order would show here
    assert ctypes.sizeof(A.DLDevice) == 8
    assert ctypes.sizeof(A.DLDataType) == 4
    expect = dict(data=0, device=8, ndim=16, dtype=20, shape=24, strides=32, byte_offset=40)
    assert {f: getattr(A.DLTensor, f).offset for f in expect} == expect
    assert ctypes.sizeof(A.DLTensor) == 48
    assert (A.DLManagedTensor.manager_ctx.offset, A.DLManagedTensor.deleter.offset,
            ctypes.sizeof(A.DLManagedTensor)) == (48, 56, 64)
    versioned = A.DLManagedTensorVersioned
    assert (versioned.version.offset, versioned.manager_ctx.offset, versioned.deleter.offset,
            versioned.flags.offset, versioned.dl_tensor.offset,
            ctypes.sizeof(versioned)) == (0, 8, 16, 24, 32, 80)


@pytest.mark.parametrize("dtype", dtypes.REAL, ids=dtypes.name)
def test_dtype_codes_round_trip(dtype):
    code, bits = A.dl_dtype(dtype)
    assert bits == 8 * dtype.itemsize
    assert A.numpy_dtype(code, bits, 1) == dtype


def test_dtype_codes_follow_dlpack():
    assert A.dl_dtype(np.float32) == (2, 32)
    assert A.dl_dtype(np.int8) == (0, 8)
    assert A.dl_dtype(np.uint64) == (1, 64)
    assert A.dl_dtype(dtypes.bfloat16) == (4, 16)
    assert A.dl_dtype(np.bool_) == (6, 8)
    assert A.dl_dtype(np.complex64) == (5, 64)


@pytest.mark.parametrize("code,bits,lanes", [(5, 32, 1), (2, 32, 4), (2, 8, 1)])
def test_unsupported_dlpack_dtypes_are_jitlib_errors(code, bits, lanes):
    with pytest.raises(jitlib.JitlibTypeError, match="not one jitlib supports"):
        A.numpy_dtype(code, bits, lanes)   # complex32, a vector type, an 8-bit float


@pytest.mark.parametrize("shape,strides,dense", [
    ((2, 3), (3, 1), True), ((2, 3), (1, 2), False), ((1, 3), (99, 1), True),
    ((2, 1), (1, 7), True), ((0, 3), (5, 5), True), ((), (), True), ((4,), (2,), False)])
def test_c_contiguity(shape, strides, dense):
    assert A.is_c_contiguous(shape, strides) is dense


# ---------------------------------------------------------------------------- producing

@pytest.mark.parametrize("shape", [(), (5,), (2, 3, 4), (0, 7)])
def test_capsule_describes_the_array(device, shape):
    a = device.from_numpy(np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape))
    capsule = a.__dlpack__(stream=None)
    t = capsule_struct(capsule).dl_tensor
    assert (t.data or 0) == a.data_ptr()
    assert (t.device.device_type, t.device.device_id) == (2, 0) == a.__dlpack_device__()
    assert t.ndim == len(shape)
    assert tuple(t.shape[i] for i in range(t.ndim)) == shape
    c_strides = tuple(int(np.prod(shape[i + 1:])) for i in range(len(shape)))
    assert tuple(t.strides[i] for i in range(t.ndim)) == c_strides
    assert (t.dtype.code, t.dtype.bits, t.dtype.lanes) == (2, 32, 1)
    assert t.byte_offset == 0
    assert device.ordered == [None]   # the consumer's stream reached the device


def test_versioned_capsule_when_the_consumer_asks(device):
    a = device.from_numpy(np.ones((2, 2), np.int32))
    capsule = a.__dlpack__(stream=1, max_version=(1, 2))
    m = capsule_struct(capsule, b"dltensor_versioned")
    assert (m.version.major, m.version.minor, m.flags) == (1, 0, 0)
    assert m.dl_tensor.data == a.data_ptr()
    assert (m.dl_tensor.dtype.code, m.dl_tensor.dtype.bits) == (0, 32)
    legacy = a.__dlpack__(max_version=(0, 8))
    assert A._PyCapsule_IsValid(id(legacy), b"dltensor")


def test_export_refuses_copies_and_other_devices(device):
    a = device.from_numpy(np.ones(3, np.float32))
    with pytest.raises(BufferError, match="without copying"):
        a.__dlpack__(copy=True)
    with pytest.raises(BufferError, match="cannot be exported"):
        a.__dlpack__(dl_device=(1, 0))


def test_unconsumed_capsule_releases_the_array(device):
    a = device.from_numpy(np.ones(4, np.float32))
    alive = weakref.ref(a)
    capsule = a.__dlpack__()
    del a
    gc.collect()
    assert alive() is not None   # the capsule holds it
    n = len(A._live_exports)
    del capsule
    gc.collect()
    assert alive() is None and len(A._live_exports) == n - 1


def test_consumer_owns_the_memory_until_its_deleter_runs(device):
    x = np.arange(6, dtype=np.float64).reshape(2, 3)
    a = device.from_numpy(x)
    alive = weakref.ref(a)
    b = A._import(a.__dlpack__(), a, device)   # jitlib consuming its own capsule
    assert b.data_ptr() == a.data_ptr() and b.shape == (2, 3) and b.dtype == np.float64
    view(a)[0, 0] = -1.0                       # same memory: a write shows through
    np.testing.assert_array_equal(np.asarray(b), np.where(x == 0, -1.0, x))
    del a
    gc.collect()
    assert alive() is not None                 # kept by b's DLPack record
    del b
    gc.collect()
    assert alive() is None


def test_a_consumed_capsule_cannot_be_consumed_again(device):
    a = device.from_numpy(np.ones(2, np.float32))
    capsule = a.__dlpack__()
    A._import(capsule, a, device)
    with pytest.raises(jitlib.JitlibTypeError, match="consumed only once"):
        A._import(capsule, a, device)


def test_strided_tensors_are_refused_with_a_hint(device):
    a = device.from_numpy(np.ones((2, 3), np.float32))
    capsule = a.__dlpack__()
    t = capsule_struct(capsule).dl_tensor
    t.strides[0], t.strides[1] = 1, 2          # now it claims to be a transpose
    with pytest.raises(jitlib.JitlibTypeError, match="contiguous"):
        A._import(capsule, a, device)


# ---------------------------------------------------------------------------- the Array

def test_array_attributes_and_host_copy(device):
    x = np.arange(12, dtype=np.int16).reshape(3, 4)
    a = device.from_numpy(x)
    assert (a.shape, a.dtype, a.ndim, a.size, a.nbytes, len(a)) == \
        ((3, 4), np.int16, 2, 12, 24, 3)
    np.testing.assert_array_equal(np.asarray(a), x)
    assert np.asarray(a, dtype=np.float32).dtype == np.float32
    with pytest.raises(ValueError, match="must copy"):
        np.asarray(a, copy=False)
    assert repr(a).startswith("jitlib.Array([[ 0,  1,  2,  3],")
    assert repr(a).endswith("i16[3,4] on host)")
    with pytest.raises(TypeError):
        len(device.from_numpy(np.float32(1.0)))


def test_jit_keys_an_array_like_an_ndarray_and_traces_without_a_host_copy(device):
    f = jitlib.jit(lambda x, y: np.tanh(x) * y + 1.0, backend="interpreter")
    x = np.linspace(-2, 2, 8, dtype=np.float32)
    a = device.from_numpy(x)
    text = f.lower(a, x).as_text()
    assert "f32[8]" in text and device.to_host == 0, text
    expect = np.tanh(x) * x + 1.0
    np.testing.assert_allclose(f(a, x), expect, rtol=1e-6)   # interpreter: via the host
    np.testing.assert_allclose(f(x, x), expect, rtol=1e-6)
    np.testing.assert_allclose(f(x, a), expect, rtol=1e-6)
    assert f.cache_info().misses == 1, f.cache_info()


# ---------------------------------------------------------------------------- jit on a device


def test_chained_jitted_calls_keep_arrays_on_the_device(gpu_backend_on_host):
    dev = gpu_backend_on_host
    f = jitlib.jit(lambda x: np.exp(x) * 2.0, backend="gpu")
    g = jitlib.jit(lambda y, x: (y - x).sum(axis=-1), backend="gpu")
    x = np.random.default_rng(0).standard_normal((8, 33), dtype=np.float32)
    a = dev.from_numpy(x)
    copies = (dev.to_device, dev.to_host)
    for _ in range(2):          # the second round takes jit's fast path
        y = f(a)
        z = g(y, a)
    assert type(y) is Array and type(z) is Array and z.shape == (8,)
    assert (dev.to_device, dev.to_host) == copies, "a chained call went through the host"
    np.testing.assert_allclose(np.asarray(z), (np.exp(x) * 2.0 - x).sum(-1), rtol=1e-5)


def test_host_arguments_are_copied_in_once(gpu_backend_on_host):
    dev = gpu_backend_on_host
    f = jitlib.jit(lambda x, w: np.maximum(x @ w, 0.0), backend="gpu")
    x, w = np.ones((4, 16), np.float32), np.full((16, 8), -0.25, np.float32)
    before = dev.to_device
    out = f(x, w)
    assert type(out) is Array and dev.to_device == before + 2
    np.testing.assert_array_equal(np.asarray(out), np.maximum(x @ w, 0.0))


def test_a_returned_argument_is_the_argument(gpu_backend_on_host):
    dev = gpu_backend_on_host
    a = dev.from_numpy(np.arange(5, dtype=np.int32))
    out, doubled = jitlib.jit(lambda x: (x, x * 2), backend="gpu")(a)
    assert out is a   # as eager NumPy returns the argument itself
    np.testing.assert_array_equal(np.asarray(out), np.arange(5))
    np.testing.assert_array_equal(np.asarray(doubled), 2 * np.arange(5))


def test_a_reshape_at_the_boundary_is_a_view_not_a_kernel(gpu_backend_on_host):
    from jitlib.backends.triton import TritonBackend
    dev = gpu_backend_on_host

    def products(a, x, y):
        return a @ x, (y @ a).reshape(4, 6), a.reshape(-1), (a * 2.0).reshape(6, 12)

    rng = np.random.default_rng(3)
    args = [rng.standard_normal(s) for s in ((3, 24), 24, 3)]
    module = jitlib.make_ir(products)(*args)
    executable = TritonBackend(device=dev).compile(module)
    assert not [name for name in executable.kernels if "reshape" in name], \
        str(executable.optimized)
    assert "a reshape, run as a view of its operand" in executable.kernel_sources()
    arrays = [dev.from_numpy(a) for a in args]
    matvec, vecmat, flat, doubled = dev.run_executable(executable, arrays)
    for got, want in zip((matvec, vecmat, flat, doubled), products(*args)):
        np.testing.assert_allclose(view(got), want, rtol=1e-12)
    # the argument's reshape is handed out as a copy: writing it leaves `a` alone
    assert flat.data_ptr() != arrays[0].data_ptr()
    view(flat)[0] = 99.0
    assert view(arrays[0])[0, 0] == args[0][0, 0]


def test_results_over_one_buffer_are_separate_arrays(gpu_backend_on_host):
    f = jitlib.jit(lambda x: ((x + 1.0).reshape(2, 3), (x + 1.0).reshape(3, 2)),
                   backend="gpu")
    a, b = f(gpu_backend_on_host.from_numpy(np.arange(6.0)))
    assert a.data_ptr() != b.data_ptr()
    view(a)[0, 0] = -1.0
    np.testing.assert_array_equal(view(b), np.arange(1.0, 7.0).reshape(3, 2))


def test_writes_reach_array_and_host_arguments_on_the_gpu_backend(gpu_backend_on_host):
    dev = gpu_backend_on_host

    def step(state, velocity, dt):
        velocity *= 0.5
        state += dt * velocity
        return state.sum()
    x, v = np.arange(6, dtype=np.float32), np.ones(6, np.float32)
    a = dev.from_numpy(x)
    f = jitlib.jit(step, backend="gpu")
    for _ in range(2):
        total = f(a, v, 0.1)          # an Array written on the device, a host array here
    x_eager, v_eager = x.copy(), np.ones(6, np.float32)
    for _ in range(2):
        expected = step(x_eager, v_eager, 0.1)
    np.testing.assert_allclose(np.asarray(a), x_eager, rtol=1e-6)
    np.testing.assert_array_equal(v, v_eager)
    np.testing.assert_allclose(np.asarray(total), expected, rtol=1e-6)


def test_a_wrong_array_is_refused_with_the_modules_types(gpu_backend_on_host):
    from jitlib.backends.triton import TritonBackend
    module = jitlib.make_ir(lambda x: x + 1.0)(np.ones(3, np.float32))
    backend = TritonBackend(device=gpu_backend_on_host)
    executable = backend.compile(module)
    wrong = gpu_backend_on_host.from_numpy(np.ones(4, np.float32))
    with pytest.raises(jitlib.JitlibTypeError, match=r"must be f32\[3\], got float32\[4\]"):
        gpu_backend_on_host.run_executable(executable, [wrong])


# ---------------------------------------------------------------------------- without a GPU

def test_from_dlpack_of_host_memory_is_a_clear_error():
    with pytest.raises(jitlib.JitlibTypeError, match="CPU") as info:
        jitlib.from_dlpack(np.ones(3))
    assert "test_array.py" in str(info.value) and "hint:" in str(info.value)
    with pytest.raises(jitlib.JitlibTypeError, match="takes an array with __dlpack__"):
        jitlib.from_dlpack([1.0, 2.0])


def _gpu_here():
    from jitlib.backends.triton.device import get_device
    try:
        get_device()
    except DeviceError:
        return False
    return True


@pytest.mark.skipif(_gpu_here(), reason="a CUDA GPU is present: this checks its absence")
def test_no_gpu_is_a_jitlib_error_naming_the_users_line():
    from jitlib.backends.triton.device import get_device
    with pytest.raises(DeviceError, match="no CUDA GPU") as info:
        get_device()
    assert isinstance(info.value, jitlib.JitlibError)
    assert "test_array.py" in str(info.value) and "backend='cpu'" in str(info.value)
