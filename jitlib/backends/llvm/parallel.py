"""Both cores for one kernel: a small persistent pool of Python threads.

Every compiled kernel takes `(part, parts)` and does only its share of the outermost loop
(kernels.py); claiming.py's entry runs a splittable one chunk after chunk until none is
left. A large call runs on the calling thread and the pool's workers at the same time,
each thread claiming chunks: ctypes releases the GIL for the length of a native call, so
the threads really run in parallel, and a worker that wakes late does less of the work
instead of holding the call up. The caller returns once every chunk is finished; the
workers report afterwards, and their reports are collected before their next job (an
error one met after the caller returned is raised by the next split call). Small calls
never come here: waking a worker costs tens of microseconds.

JITLIB_NUM_THREADS sets the number of threads (default: os.cpu_count()); 1 turns it off.
"""
import contextlib
import contextvars
import os
import queue
import threading
import weakref

from jitlib.backends.llvm import claiming

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
    try:
        n = int(os.environ.get("JITLIB_NUM_THREADS", ""))
    except ValueError:
        n = 0
    return n if n > 0 else (os.cpu_count() or 1)


class _Worker:
    """A daemon thread that runs `fn(*args)` for each job, answering on `done`; `pending`
    counts the answers not yet collected (the pool's caller keeps it)."""

    def __init__(self, index):
        self.jobs = queue.SimpleQueue()
        self.done = queue.SimpleQueue()
        self.pending = 0
        thread = threading.Thread(target=self._serve, name=f"jitlib-cpu-{index}", daemon=True)
        thread.start()

    def submit(self, fn, args, keep=None):
        """Queue fn(*args); `keep` (what its native code reads) lives as long as the job."""
        self.pending += 1
        self.jobs.put((fn, args, keep))

    def collect(self):
        """Wait for every answer not yet collected; the errors among them."""
        errors = []
        while self.pending:
            error = self.done.get()
            self.pending -= 1
            if error is not None:
                errors.append(error)
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
            self._collect()    # the workers' last jobs are over: they may take new ones
            work = None
            if claim is None:
                jobs = [(fn, (*args, part, self.threads)) for part in range(self.threads)]
            else:
                work = claiming.work_area(chunks, self.threads)
                jobs = [(claim, (*args, work.ctypes.data, t)) for t in range(self.threads)]
            for worker, (job_fn, job_args) in zip(self._workers, jobs[1:]):
                worker.submit(job_fn, job_args, keep=(work, code))
            finished = 0
            try:
                finished = jobs[0][0](*jobs[0][1])   # a claiming entry: 1 once all are done
            finally:   # the workers write into the caller's buffers: wait unless all done
                if finished != 1:
                    self._collect()
        finally:
            self._lock.release()

    def _collect(self):
        errors = [e for worker in self._workers for e in worker.collect()]
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
