"""Both cores for one kernel: a small persistent pool of Python threads.

Every compiled kernel takes `(part, parts)` and does only its share of the outermost loop
(kernels.py); claiming.py's entry runs a splittable one chunk after chunk until none is
left. A large call runs on the calling thread and the pool's workers at the same time,
each thread claiming chunks: ctypes releases the GIL for the length of a native call, so
the threads really run in parallel, and a worker that wakes late does less of the work
instead of holding the call up. The caller returns once every chunk is finished; the
workers report afterwards (an error one met after the caller returned is raised by the
next split call). A worker still busy with an earlier call's job is not waited for: the
caller claims its chunks. After a job a worker lingers, spinning on its mailbox without
the GIL (claiming.linger), so the next kernel is posted to it through memory instead of
a wake-up, which costs 15-100 us on a VM. Small calls never come here.

JITLIB_NUM_THREADS sets the number of threads (default: os.cpu_count()); 1 turns it off.
"""
import contextlib
import contextvars
import os
import queue
import threading
import time
import weakref

from jitlib import config
from jitlib.backends.llvm import claiming
from jitlib.backends.llvm.pointers import data_pointer

# Below this many bytes read and written a kernel runs on the calling thread alone: at
# memory speed 1 MiB takes tens of microseconds, about what handing work to another
# thread costs.
MIN_PARALLEL_BYTES = 1 << 20

# Inside a loop's body the handoff is paid every trip, and a body of small kernels runs
# as one native loop (native_loop.py) only if none is shared out: a 256x256 float64
# Jacobi sweep (1.5 MB a kernel) took 294 us a trip on two threads, 67 us on one.
MIN_LOOP_PARALLEL_BYTES = 8 << 20

_in_loop_body = contextvars.ContextVar("jitlib_in_loop_body", default=False)


def min_parallel_bytes():
    """The bytes a kernel must move to be shared between threads, where it is compiled
    now: MIN_PARALLEL_BYTES, or MIN_LOOP_PARALLEL_BYTES inside `loop_body()`."""
    if _in_loop_body.get():
        return max(MIN_LOOP_PARALLEL_BYTES, MIN_PARALLEL_BYTES)
    return MIN_PARALLEL_BYTES


@contextlib.contextmanager
def loop_body():
    """Kernels compiled inside are a loop body's: shared out only when larger."""
    token = _in_loop_body.set(True)
    try:
        yield
    finally:
        _in_loop_body.reset(token)


def num_threads():
    """JITLIB_NUM_THREADS if it is a positive integer, else the number of CPUs."""
    return config.num_threads()


class _Worker:
    """A daemon thread that runs `fn(*args)` for each job, answering on `done`, then
    lingers on its mailbox for posted jobs; `pending` counts the answers not yet
    collected (the pool's caller keeps it)."""

    def __init__(self, index):
        self.jobs = queue.SimpleQueue()
        self.done = queue.SimpleQueue()
        self.pending = 0
        self.box = claiming.mailbox()
        self.posted = None       # a posted job's arrays and code, kept while it may run
        thread = threading.Thread(target=self._serve, name=f"jitlib-cpu-{index}", daemon=True)
        thread.start()

    def submit(self, fn, args, keep=None):
        """Queue fn(*args); `keep` (what its native code reads) lives as long as the job.
        A lingering worker is sent back to its queue first."""
        claiming.kick(self.box)
        self.pending += 1
        self.jobs.put((fn, args, keep))

    def post(self, claim, args, keep):
        """claim(*args) by the lingering worker, if it is idle there: whether it took it."""
        job = claim.post(self.box, args)
        if job is None:
            return False
        self.posted = (job, keep)
        return True

    def posted_running(self):
        return claiming.state(self.box) == claiming.POSTED

    def collect(self, wait=True):
        """The answers not yet collected (waiting for all of them, or taking those that
        are there); the errors among them. A posted job is waited out too."""
        errors = []
        while self.pending and (wait or not self.done.empty()):
            error = self.done.get()
            self.pending -= 1
            if error is not None:
                errors.append(error)
        while wait and self.posted_running():
            time.sleep(20e-6)
        if not self.posted_running():
            self.posted = None   # done with: its code may be unmapped
        return errors

    def _serve(self):
        while True:
            job = self.jobs.get()
            error = None
            try:
                job[0](*job[1])
            except BaseException as e:   # handed back to the caller, who raises it
                error = e
            # drop the job (its kernel's code among it) before answering: held while
            # idle, it kept a program's engine mapped after its eviction
            del job
            self.done.put(error)
            claiming.linger(self.box)


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

    def run(self, fn, args, claim=None, chunks=0, code=None):
        """The whole kernel `fn` over `args`: each thread claiming chunks of `chunks`
        through `claim`, the kernel's claiming entry; without one, fn(*args, part,
        parts) for every part. Returns when every element is written. `code`, the
        handle that keeps the kernel mapped, stays with a worker's job: the worker may
        still be in the claiming entry (finding nothing left) after this returns."""
        if self.threads == 1 or not self._lock.acquire(blocking=False):
            fn(*args, 0, 1)    # another thread is mid-split: do the whole call here
            return
        try:
            self._ensure_workers()
            if claim is None:
                self._split_statically(fn, args)
            else:
                self._claim_chunks(claim, args, chunks, code)
        finally:
            self._lock.release()

    def _split_statically(self, fn, args):
        """Part t on thread t: every worker must take its part, so each is waited for."""
        self._collect()
        for part, worker in enumerate(self._workers, 1):
            worker.submit(fn, (*args, part, self.threads))
        try:
            fn(*args, 0, self.threads)
        finally:
            self._collect()

    def _claim_chunks(self, claim, args, chunks, code):
        self._collect(wait=False)   # reports already in; a worker's error is raised
        work = claiming.work_area(chunks, self.threads)
        keep, work_at = (work, code), data_pointer(work)
        for t, worker in enumerate(self._workers, 1):
            job_args = (*args, work_at, t)
            if isinstance(claim, claiming.Claim) and worker.post(claim, job_args, keep):
                continue
            if worker.pending == 0 and not worker.posted_running():
                worker.submit(claim, job_args, keep=keep)
            # else still on an earlier call's job: the caller claims its chunks
        finished = 0
        try:
            finished = claim(*args, work_at, 0)   # 1 once every chunk is done
        finally:   # the workers write into the caller's buffers: wait unless all done
            if finished != 1:
                self._collect()

    def _collect(self, wait=True):
        errors = [e for worker in self._workers for e in worker.collect(wait)]
        if errors:
            raise errors[0]


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
