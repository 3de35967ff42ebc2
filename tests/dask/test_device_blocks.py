"""Dask arrays whose blocks live on a GPU (CuPy arrays under dask-cuda, or jitlib Arrays):
each stage's program takes them where they are and its results stay there. Here the
device is the gpu backend's stand-in over host memory (tests/array_devices.py), which
counts every copy to the host; the same on a real GPU with CuPy blocks and a
distributed worker: tests/dask/test_gpu_workers.py.
"""
import numpy as np
import pytest

import jitlib
from jitlib.array import Array
from array_devices import gpu_backend_on_host, view  # noqa: F401

da = pytest.importorskip("dask.array")


def on_device(dev, x, chunks):
    """`x` as a Dask array of device blocks."""
    return da.from_array(x, chunks=chunks).map_blocks(dev.from_numpy, dtype=x.dtype)


def blocks_of(y):
    return [b.compute(scheduler="sync") for b in y.to_delayed().ravel()]


def test_blockwise_results_stay_on_the_device(gpu_backend_on_host):
    dev = gpu_backend_on_host
    x = np.random.default_rng(0).standard_normal((40, 6)).astype(np.float32)
    f = jitlib.jit(lambda x, b: np.tanh(x) * 2.0 + b, backend="gpu")
    y = f(on_device(dev, x, (16, 6)), np.float32(0.5))      # blocks of 16, 16 and 8 rows
    before = dev.to_host
    parts = blocks_of(y)
    assert [type(p) for p in parts] == [Array] * 3
    assert dev.to_host == before, "a device block went through the host"
    np.testing.assert_allclose(np.concatenate([view(p) for p in parts]),
                               np.tanh(x) * 2.0 + 0.5, rtol=1e-6, atol=1e-6)


def test_reductions_over_device_blocks_stay_on_the_device(gpu_backend_on_host):
    dev = gpu_backend_on_host
    x = np.random.default_rng(1).standard_normal((50, 4))
    dx = on_device(dev, x, (16, 4))
    before = dev.to_host
    total = jitlib.jit(lambda x: (x * x).sum(), backend="gpu")(dx).compute(scheduler="sync")
    means = blocks_of(jitlib.jit(lambda x: x.mean(axis=0), backend="gpu")(dx))
    assert type(total) is Array and [type(m) for m in means] == [Array]
    assert dev.to_host == before
    np.testing.assert_allclose(view(total), (x * x).sum(), rtol=1e-12)
    np.testing.assert_allclose(view(means[0]), x.mean(axis=0), rtol=1e-12)


def test_host_blocks_still_come_back_as_numpy(gpu_backend_on_host):
    x = np.arange(12.0).reshape(6, 2)
    y = jitlib.jit(lambda x: x + 1.0, backend="gpu")(da.from_array(x, chunks=(4, 2)))
    parts = blocks_of(y)
    assert [type(p) for p in parts] == [np.ndarray, np.ndarray]
    np.testing.assert_array_equal(np.concatenate(parts), x + 1.0)
