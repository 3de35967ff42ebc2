"""Dask arrays of CuPy blocks (what dask-cuda's workers hold) through jitted functions on
a real GPU: each block's stage program runs on the worker's device and its results stay
CuPy arrays there; in a worker process (one GPU, as a one-worker LocalCUDACluster would
give) too. Marked `gpu`; the same paths on a stand-in device: test_device_blocks.py.
"""
import numpy as np
import pytest

import jitlib
from cuda_marks import NEEDS_CUDA

pytestmark = NEEDS_CUDA
da = pytest.importorskip("dask.array")
cupy = pytest.importorskip("cupy")


def layernorm(x, g, b):
    mu = x.mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(x.var(axis=-1, keepdims=True) + 1e-5) * g + b


def host_layernorm(x, g, b):
    return layernorm(x.astype(np.float64), g, b)


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1000, 64)).astype(np.float32)
    return x, rng.standard_normal(64).astype(np.float32), np.float32(0.25)


def test_cupy_blocks_run_on_the_device_and_stay_there(data):
    x, g, b = data
    dx = da.from_array(cupy.asarray(x), chunks=(300, 64))           # a ragged last block
    y = jitlib.jit(layernorm, backend="gpu")(dx, g, b)
    assert isinstance(y._meta, cupy.ndarray)
    got = y.compute(scheduler="threads")
    assert isinstance(got, cupy.ndarray)
    np.testing.assert_allclose(cupy.asnumpy(got), host_layernorm(x, g, b), rtol=1e-4,
                               atol=1e-4)
    total = jitlib.jit(lambda x: (x * x).sum(), backend="gpu")(dx).compute()
    assert isinstance(total, cupy.ndarray)
    np.testing.assert_allclose(float(total), float((x.astype(np.float64) ** 2).sum()),
                               rtol=1e-5)


def test_a_gpu_worker_process_runs_the_blocks(data, tmp_path, monkeypatch):
    distributed = pytest.importorskip("distributed")
    x, g, b = data
    monkeypatch.setenv("JITLIB_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")   # one GPU per worker, as dask-cuda
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        dx = da.from_array(cupy.asarray(x), chunks=(300, 64))
        f = jitlib.jit(layernorm, backend="gpu")
        y, total = client.compute([f(dx, g, b),
                                   jitlib.jit(lambda x: x.max(axis=0), backend="gpu")(dx)],
                                  sync=True)
        (info,) = client.run(jitlib.dask.worker_info).values()
        kinds = client.run(lambda: type(__import__("cupy").zeros(1)).__module__)
    assert isinstance(y, cupy.ndarray) and isinstance(total, cupy.ndarray)
    np.testing.assert_allclose(cupy.asnumpy(y), host_layernorm(x, g, b), rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(cupy.asnumpy(total), x.max(axis=0))
    assert list(kinds.values()) == ["cupy"]
    assert "layernorm_stage0" in {**info["compiled"], **info["mapped"]}, info
