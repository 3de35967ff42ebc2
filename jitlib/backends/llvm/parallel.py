"""Both cores for one kernel: a small persistent pool of Python threads.

Every compiled kernel takes `(part, parts)` and does only its share of the outermost loop
(kernels.py). A large call runs part 0 on the calling thread and parts 1.. on the pool's
workers at the same time: ctypes releases the GIL for the length of a native call, so the
threads really run in parallel. Small calls never come here: waking a worker costs tens
of microseconds.

JITLIB_NUM_THREADS sets the number of parts (default: os.cpu_count()); 1 turns it off.
"""
import os
import queue
import threading
import weakref

# Below this many bytes read and written a kernel runs on the calling thread alone: at
# memory speed 1 MiB takes ~50 us, about what handing work to another thread costs.
MIN_PARALLEL_BYTES = 1 << 20


def num_threads():
    """JITLIB_NUM_THREADS if it is a positive integer, else the number of CPUs."""
    try:
        n = int(os.environ.get("JITLIB_NUM_THREADS", ""))
    except ValueError:
        n = 0
    return n if n > 0 else (os.cpu_count() or 1)


class _Worker:
    """A daemon thread that runs `fn(*args)` for each job, answering on `done`."""

    def __init__(self, index):
        self.jobs = queue.SimpleQueue()
        self.done = queue.SimpleQueue()
        thread = threading.Thread(target=self._serve, name=f"jitlib-cpu-{index}", daemon=True)
        thread.start()

    def _serve(self):
        while True:
            fn, args = self.jobs.get()
            try:
                fn(*args)
                self.done.put(None)
            except BaseException as e:   # handed back to the caller, who raises it
                self.done.put(e)


class Pool:
    """Runs a kernel's parts on the caller's thread and `threads - 1` workers."""

    def __init__(self, threads):
        self.threads = threads
        self._workers = []
        self._lock = threading.Lock()   # one split call at a time owns the workers
        _pools.add(self)

    def _after_fork(self):
        # a forked child has none of the parent's threads: start its own when needed
        self._workers = []
        self._lock = threading.Lock()

    def _ensure_workers(self):
        while len(self._workers) < self.threads - 1:
            self._workers.append(_Worker(len(self._workers) + 1))

    def run(self, fn, args):
        """fn(*args, part, parts) for every part; returns when all are done."""
        if self.threads == 1 or not self._lock.acquire(blocking=False):
            fn(*args, 0, 1)    # another thread is mid-split: do the whole call here
            return
        try:
            self._ensure_workers()
            parts = self.threads
            for part, worker in enumerate(self._workers, start=1):
                worker.jobs.put((fn, (*args, part, parts)))
            try:
                fn(*args, 0, parts)
            finally:   # the workers write into the caller's buffers: always wait
                errors = [worker.done.get() for worker in self._workers]
        finally:
            self._lock.release()
        for error in errors:
            if error is not None:
                raise error


_pool = None
_pool_lock = threading.Lock()
_pools = weakref.WeakSet()


def _after_fork_in_child():
    global _pool_lock
    _pool_lock = threading.Lock()
    for pool in list(_pools):
        pool._after_fork()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def get_pool():
    """The process's pool, sized by JITLIB_NUM_THREADS when first used."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = Pool(num_threads())
        return _pool
