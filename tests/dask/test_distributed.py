"""Stages shipped to workers: plain data and object code, checksummed, mapped once."""
import pickle

import numpy as np
import pytest

import jitlib
from jitlib import errors
from jitlib.dask import programs

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")


def softmax0(x):
    e = np.exp(x - x.max(axis=0))
    return e / e.sum(axis=0)


@pytest.fixture
def x():
    return da.from_array(np.random.default_rng(2).standard_normal((20, 5)), chunks=(6, 5))


def test_in_process_cluster(x):
    with distributed.Client(processes=False, n_workers=1, threads_per_worker=2,
                            dashboard_address=None) as client:
        f = jitlib.jit(lambda x: (softmax0(x), (x * x).sum()))
        y, total = f(x)
        got_y, got_total = client.compute([y, total], sync=True)
    xn = x.compute()
    np.testing.assert_allclose(got_y, softmax0(xn), rtol=1e-12)
    np.testing.assert_allclose(got_total, (xn * xn).sum(), rtol=1e-12)


def test_worker_maps_the_object_code_without_compiling(tmp_path, monkeypatch, x):
    monkeypatch.setenv("JITLIB_CACHE_DIR", str(tmp_path))   # the client saves programs
    program = _a_stage_program(x, monkeypatch)
    data = pickle.dumps(program)
    programs.forget()
    before = programs.counts()
    worker_copy = pickle.loads(data)
    block = x.blocks[0].compute()
    np.testing.assert_array_equal(worker_copy(block)[0], block * 2.0 + 1.0)
    after = programs.counts()
    name = program.name
    assert after["mapped"].get(name, 0) == before["mapped"].get(name, 0) + 1
    assert after["compiled"].get(name, 0) == before["compiled"].get(name, 0)


def test_worker_on_another_target_compiles_once(tmp_path, monkeypatch, x):
    monkeypatch.setenv("JITLIB_CACHE_DIR", str(tmp_path))
    program = _a_stage_program(x, monkeypatch)
    key, text, digest, _ = program._ship()
    program.shipped = (key, text, digest, "another cpu")
    data = pickle.dumps(program)
    programs.forget()
    before = programs.counts()["compiled"].get(program.name, 0)
    worker_copy = pickle.loads(data)
    block = x.blocks[0].compute()

    def no_optimizer(module):
        raise AssertionError("the worker optimized the module again")
    monkeypatch.setattr("jitlib.backends.llvm.optimize", no_optimizer)
    np.testing.assert_array_equal(worker_copy(block)[0], block * 2.0 + 1.0)
    worker_copy(block)
    assert programs.counts()["compiled"][program.name] == before + 1


def test_a_corrupted_shipment_is_refused(tmp_path, monkeypatch, x):
    monkeypatch.setenv("JITLIB_CACHE_DIR", str(tmp_path))
    program = _a_stage_program(x, monkeypatch)
    key, text, digest, context = program._ship()
    program.shipped = (key, text.replace('"', "'", 1), digest, context)
    data = pickle.dumps(program)
    programs.forget()
    with pytest.raises(errors.JitlibError, match="checksum"):
        pickle.loads(data)(x.blocks[0].compute())


def _a_stage_program(x, monkeypatch):
    """The first stage Program a call compiles on the client (for the first block)."""
    from jitlib.dask.graph import _Builder
    captured = []
    original = _Builder._compile

    def capture(self, program):
        captured.append(program)
        original(self, program)
    monkeypatch.setattr(_Builder, "_compile", capture)
    programs.forget()   # compiled afresh, so saved in this test's disk cache
    jitlib.jit(lambda x: x * 2.0 + 1.0)(x)
    return captured[0]


def test_worker_process_maps_every_program(tmp_path, monkeypatch, x):
    monkeypatch.setenv("JITLIB_CACHE_DIR", str(tmp_path))   # workers inherit it
    programs.forget()
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        y = jitlib.jit(softmax0)(x)
        np.testing.assert_allclose(y.compute(), softmax0(x.compute()), rtol=1e-12)
        (info,) = client.run(jitlib.dask.worker_info).values()
    assert info["compiled"] == {}
    assert set(info["mapped"]) == {"softmax0_stage0", "softmax0_combine0",
                                   "softmax0_stage1", "softmax0_combine1", "softmax0_stage2"}
