"""The CUDA device (jitlib/backends/triton/device.py) on a real GPU: copies, the pool,
stream ordering and errors. Marked `gpu`; skipped, with the reason, where none is present.
"""
import gc

import numpy as np
import pytest

from jitlib.array import Array, DeviceError
from jitlib.backends.triton.device import get_device
from jitlib.hlo import dtypes
from cuda_marks import NEEDS_CUDA


pytestmark = NEEDS_CUDA


@pytest.fixture(scope="module")
def dev():
    return get_device()


def sample(dtype, shape, seed=0):
    rng = np.random.default_rng(seed)
    if dtype == dtypes.BOOL:
        return rng.random(shape) < 0.5
    if dtypes.is_integer(dtype):
        info = np.iinfo(dtype)
        return rng.integers(max(info.min, -1000), min(info.max, 1000), shape, dtype=dtype)
    return rng.standard_normal(shape).astype(dtype)


def test_the_device_describes_itself(dev):
    assert dev.name and repr(dev) == "cuda:0"
    assert isinstance(dev.stream, int) and dev.dlpack_stream != 0
    assert get_device() is dev


@pytest.mark.parametrize("dtype", dtypes.REAL, ids=dtypes.name)
@pytest.mark.parametrize("shape", [(), (1,), (1000,), (3, 5, 7), (0, 4)])
def test_host_round_trip_is_exact(dev, dtype, shape):
    x = sample(dtype, shape)
    a = dev.from_numpy(x)
    assert isinstance(a, Array) and a.shape == shape and a.dtype == dtype
    back = np.asarray(a)
    assert back.dtype == dtype and back.shape == shape
    assert back.tobytes() == x.tobytes()
    assert np.asarray(dev.copy(a)).tobytes() == x.tobytes()


def test_non_contiguous_host_arrays_are_copied_in_c_order(dev):
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    np.testing.assert_array_equal(np.asarray(dev.from_numpy(x.T)), x.T)
    np.testing.assert_array_equal(np.asarray(dev.from_numpy(x[:, ::2])), x[:, ::2])


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int8, np.bool_], ids=str)
def test_large_host_arrays_arrive_whole_through_the_staging_buffers(dev, dtype):
    from jitlib.backends.triton import staging
    n = (2 * staging.CHUNK_BYTES + staging.MIN_BYTES + 13) // np.dtype(dtype).itemsize
    x = sample(dtype, (n,), seed=5)
    before = dev._stager().chunks_copied
    a = dev.from_numpy(x)
    x_copy = x.copy()
    x[:] = x[::-1]      # the caller may reuse its array as soon as the call returns
    assert dev._staging.chunks_copied == before + 3
    assert np.asarray(a).tobytes() == x_copy.tobytes()


def test_many_large_arguments_in_one_call(dev):
    import jitlib
    rng = np.random.default_rng(2)
    xs = [rng.standard_normal((1024, 1024 + k)) for k in range(5)]   # 8 MiB each
    f = jitlib.jit(lambda *xs: [x.sum() for x in xs], backend="gpu")
    for got, x in zip(f(*xs), xs):
        np.testing.assert_allclose(np.asarray(got), x.sum(), rtol=1e-10)


def test_copies_are_counted(dev):
    before = (dev.host_to_device, dev.device_to_host)
    a = dev.from_numpy(np.ones(8, np.float32))
    b = dev.copy(a)
    np.asarray(b)
    assert (dev.host_to_device, dev.device_to_host) == (before[0] + 1, before[1] + 1)


def test_allocation_and_free_in_a_loop_does_not_grow(dev):
    def churn(n):
        for i in range(n):
            a = dev.empty((1 << 18,), np.float32)   # 1 MiB
            b = dev.from_numpy(np.full(4, i, np.int32))
            del a, b
        gc.collect()
        dev.synchronize()

    churn(50)
    in_use = dev.memory_in_use()
    churn(2000)
    assert dev.memory_in_use() == in_use
    # the pool hands the same memory back out instead of growing
    ptrs = set()
    for _ in range(200):
        a = dev.empty((1 << 18,), np.float32)
        ptrs.add(a.data_ptr())
        del a
    assert len(ptrs) <= 4, len(ptrs)


def test_live_arrays_are_counted_until_collected(dev):
    gc.collect()   # earlier tests' garbage must not be freed inside the measurement
    dev.synchronize()
    base = dev.memory_in_use()
    arrays = [dev.empty((1 << 20,), np.uint8) for _ in range(8)]
    dev.synchronize()
    assert dev.memory_in_use() >= base + 8 * (1 << 20)
    del arrays
    gc.collect()
    dev.synchronize()
    assert dev.memory_in_use() == base


def test_empty_arrays_need_no_memory(dev):
    a = dev.empty((0, 3), np.float64)
    assert a.data_ptr() == 0 and a.nbytes == 0
    assert np.asarray(a).shape == (0, 3)


def test_ordering_for_another_stream(dev):
    from cuda.bindings import driver as cu
    err, stream = cu.cuStreamCreate(1)   # CU_STREAM_NON_BLOCKING: no implicit ordering
    assert err == cu.CUresult.CUDA_SUCCESS
    x = np.arange(1 << 24, dtype=np.float32)
    a = dev.copy(dev.from_numpy(x))      # queued on our stream
    dev.order_before(int(stream))         # the foreign stream now waits for it
    host = np.empty_like(x)
    err, = cu.cuMemcpyDtoHAsync(host.ctypes.data, a.data_ptr(), host.nbytes, int(stream))
    assert err == cu.CUresult.CUDA_SUCCESS
    cu.cuStreamSynchronize(stream)
    np.testing.assert_array_equal(host, x)
    for s in (None, -1, 1, 2, dev.dlpack_stream):
        dev.order_before(s)
    cu.cuStreamDestroy(stream)


def test_out_of_memory_is_a_device_error_naming_the_call(dev):
    with pytest.raises(DeviceError, match=r"cuMemAllocAsync\(\d+ bytes\) failed.*"
                                          r"CUDA_ERROR_OUT_OF_MEMORY"):
        dev.empty((1 << 50,), np.uint8)


def test_a_missing_ordinal_is_a_device_error():
    with pytest.raises(DeviceError, match="no CUDA GPU 99"):
        get_device(99)
