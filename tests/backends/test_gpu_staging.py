"""The pinned staging pipeline (jitlib/backends/triton/staging.py) against a stand-in
copy engine that copies only when waited for, as a GPU's engine runs behind the host: a
staging buffer refilled before its copy ran would show up as wrong bytes. The same
pipeline on the GPU: tests/backends/triton/test_device.py.
"""
import ctypes

import numpy as np
import pytest

from jitlib.backends.triton import staging


class LazyCopyEngine:
    """Device memory as a host array; queued copies run at `wait` or `drain`."""

    def __init__(self, nbytes):
        self.memory = np.zeros(nbytes, np.uint8)
        self.queue, self.done, self.marks = [], 0, {}

    def pinned_alloc(self, nbytes):
        self.pinned = np.zeros(nbytes, np.uint8)
        return self.pinned.ctypes.data

    def queue_copy(self, dst, src, nbytes):
        self.queue.append((dst, src, nbytes))

    def record(self, slot):
        self.marks[slot] = len(self.queue)

    def wait(self, slot):
        self.drain(self.marks.get(slot, 0))

    def drain(self, upto=None):
        upto = len(self.queue) if upto is None else upto
        for dst, src, nbytes in self.queue[self.done:upto]:
            self.memory[dst:dst + nbytes] = np.frombuffer(ctypes.string_at(src, nbytes),
                                                          np.uint8)
        self.done = max(self.done, upto)


@pytest.fixture
def small_chunks(monkeypatch):
    monkeypatch.setattr(staging, "CHUNK_BYTES", 4096)
    monkeypatch.setattr(staging, "COPY_PIECE_BYTES", 1024)


def pipeline(engine, threads):
    return staging.Staging(engine.pinned_alloc, engine.queue_copy, engine.record,
                           engine.wait, threads=threads)


@pytest.mark.parametrize("threads", [1, 3])
@pytest.mark.parametrize("nbytes", [8, 4096, 4096 * 3, 4096 * 7 + 40])
def test_every_byte_arrives_in_place(small_chunks, threads, nbytes):
    engine = LazyCopyEngine(nbytes + 64)
    host = np.random.default_rng(nbytes).integers(0, 256, nbytes, dtype=np.uint8)
    stager = pipeline(engine, threads)
    stager.copy_in(32, host.view(np.uint8))
    engine.drain()
    np.testing.assert_array_equal(engine.memory[32:32 + nbytes], host)
    assert engine.memory[:32].sum() == engine.memory[32 + nbytes:].sum() == 0
    assert stager.chunks_copied == -(-nbytes // 4096)


def test_the_callers_array_is_free_once_copy_in_returns(small_chunks):
    engine = LazyCopyEngine(4096 * 8)
    first = np.arange(4096 * 5 // 8, dtype=np.float64)          # 5 chunks: slots reused
    second = -np.arange(4096 * 2 // 4, dtype=np.float32)
    expected = first.copy()
    stager = pipeline(engine, 2)
    stager.copy_in(0, first)
    first[:] = 7.0                                     # the caller writes its array again
    stager.copy_in(4096 * 5, second)                   # and the next call reuses the slots
    engine.drain()
    np.testing.assert_array_equal(engine.memory[:4096 * 5].view(np.float64), expected)
    np.testing.assert_array_equal(engine.memory[4096 * 5:4096 * 7].view(np.float32), second)


def test_multidimensional_arrays_go_in_c_order(small_chunks):
    engine = LazyCopyEngine(4096 * 4)
    host = np.arange(4096 * 4 // 2, dtype=np.int16).reshape(64, -1)
    pipeline(engine, 2).copy_in(0, host)
    engine.drain()
    np.testing.assert_array_equal(engine.memory.view(np.int16).reshape(64, -1), host)
