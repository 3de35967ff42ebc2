"""Large host arrays to the GPU through pinned staging buffers.

A copy from pageable memory (every NumPy array) runs at a fraction of the link's speed:
the driver pins a small buffer of its own, fills it and waits for it, one piece at a
time. Large arguments go through jitlib's own page-locked buffers instead, in chunks:
host threads fill one buffer while the copy engine drains another, so the link runs at
close to its pinned rate and the caller's array is free again when the call returns.

`Staging` holds the pipeline; the driver calls it needs (queue a copy, record and wait
for an event) come from the device, so the pipeline itself runs in tests without a GPU.
"""
import ctypes
import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

CHUNK_BYTES = 16 << 20     # one staging buffer; large enough that a chunk's fixed costs
#                            (an event wait, a queued copy, thread hand-offs) stay small
SLOTS = 3                  # one being filled, one in flight, one spare for jitter
MIN_BYTES = 4 << 20        # below this the driver's own staging is as fast
COPY_PIECE_BYTES = 2 << 20  # a host thread's share of a chunk


def copy_threads():
    """Host threads that fill a staging buffer: enough to outrun the copy engine (one
    core's memcpy into pinned memory is ~10 GB/s, a PCIe 5 link ~50), never all cores."""
    return max(1, min(8, (os.cpu_count() or 2) // 2))


class Staging:
    """Pinned chunks between host arrays and device memory.

    `pinned_alloc(nbytes) -> address` makes the page-locked memory (once, on the first
    large copy); `queue_copy(device_address, host_address, nbytes)` queues one copy on
    the stream; `record(slot)` marks the point on the stream after the copy out of
    `slot`'s buffer, `wait(slot)` blocks until that point has passed.
    """

    def __init__(self, pinned_alloc, queue_copy, record, wait, threads=None):
        self._pinned_alloc = pinned_alloc
        self._queue_copy = queue_copy
        self._record = record
        self._wait = wait
        self._threads = threads or copy_threads()
        self._pool = None
        self._buffers = None
        self._lock = threading.Lock()   # one pipeline per device: calls from threads queue
        self.chunks_copied = 0

    def copy_in(self, device_address, host):
        """Copy the C-contiguous array `host` to `device_address`. Returns once every
        byte of `host` has been read: the caller may change or free it."""
        data = host.reshape(-1).view(np.uint8)
        with self._lock:
            buffers = self._staging_buffers()
            for k, start in enumerate(range(0, data.size, CHUNK_BYTES)):
                slot = k % SLOTS
                chunk = data[start:start + CHUNK_BYTES]
                self._wait(slot)            # the copy that last read this slot is done
                self._fill(buffers[slot][:chunk.size], chunk)
                self._queue_copy(device_address + start, buffers[slot].ctypes.data,
                                 chunk.size)
                self._record(slot)
                self.chunks_copied += 1

    def _fill(self, dst, src):
        pieces = range(0, src.size, COPY_PIECE_BYTES)
        if self._threads == 1 or len(pieces) == 1:
            np.copyto(dst, src)
            return
        # np.copyto drops the GIL for plain bytes, so the pieces copy in parallel
        list(self._executor().map(
            lambda i: np.copyto(dst[i:i + COPY_PIECE_BYTES], src[i:i + COPY_PIECE_BYTES]),
            pieces))

    def _executor(self):
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self._threads, thread_name_prefix="jitlib-h2d")
        return self._pool

    def _staging_buffers(self):
        if self._buffers is None:
            address = self._pinned_alloc(SLOTS * CHUNK_BYTES)
            raw = (ctypes.c_uint8 * (SLOTS * CHUNK_BYTES)).from_address(address)
            whole = np.frombuffer(raw, np.uint8)
            self._buffers = [whole[i * CHUNK_BYTES:(i + 1) * CHUNK_BYTES]
                             for i in range(SLOTS)]
        return self._buffers
