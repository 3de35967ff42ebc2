"""Small matrix products run on the calling thread, not on OpenBLAS's threads; a large
stack of products is shared out between jitlib's threads, one product at a time each.

NumPy's OpenBLAS splits any product past a few tens of thousands of multiply-adds
between its threads. When the machine is busy, waiting for those threads to be
scheduled costs far more than the product: on a loaded 2-core machine a float32
(100, 64) @ (64, 256) took 12-30 ms threaded against 0.1 ms on one thread (measured).
OpenBLAS 0.3.27+ has `openblas_set_num_threads_local`; despite its name, in NumPy's
build it sets the count of the whole process (set on one thread, another thread reads
it back and its products run on one core: measured). So `one_thread()` keeps one count
of the sections that want one thread: the first to start sets 1, the last to end gives
the count back. Saving and restoring it per call, two threads' calls interleaved
(set, set, restore, restore) and left it at 1 for good: every later large product on
one core. Where the setter cannot be found (another BLAS, no /proc), `matmul` is plain
np.matmul.

A stack ([batch, m, k] @ [batch, k, n], attention's q @ k^T and p @ v) goes to NumPy's
matmul as one gemm call per product, each of which OpenBLAS splits between its threads
and waits for all of them: when another thread holds a core (jax's or numba's pools
spinning after their own calls, a test run beside), every one of the 32 products of
the benchmark's attention waits for a time slice, and the stack took 230-580 ms instead
of 7-11 ms (measured in the benchmark's order, after jax's mlp). So a large stack is
split into groups of whole products that jitlib's threads claim one after another
(parallel.py), each product on one OpenBLAS thread: a thread that is not scheduled
just does fewer groups. The products, and so the bits, are the same as one thread's.
"""
import contextlib
import ctypes
import itertools
import os
import threading

import numpy as np

from jitlib.backends.llvm import parallel

# below this many multiply-adds (~0.5 ms on one core) threads cost more than they save
SMALL_PRODUCT = 1 << 23


def _openblas_paths():
    """The OpenBLAS files this process has mapped (NumPy's first: loaded at import)."""
    try:
        with open("/proc/self/maps") as f:
            paths = {line.split()[-1] for line in f if "openblas" in line.lower()}
    except OSError:
        return []
    return sorted(p for p in paths if os.path.isabs(p))


def _find_setter():
    """(path, OpenBLAS's per-thread setter) of the copy NumPy loaded, or (None, None)."""
    for path in _openblas_paths():
        try:
            setter = ctypes.CDLL(path).openblas_set_num_threads_local
        except (OSError, AttributeError):
            continue
        setter.restype, setter.argtypes = ctypes.c_int, [ctypes.c_int]
        return path, setter
    return None, None


np.dot(np.ones((2, 2)), np.ones((2, 2)))   # NumPy loads its BLAS on first use
_path, _set_threads = _find_setter()


_sections_lock = threading.Lock()
_sections = 0          # `one_thread` sections running
_saved_count = None    # the count before the first of them


@contextlib.contextmanager
def one_thread():
    """NumPy's OpenBLAS on one thread while any such section runs (the count is the
    process's: see the module docstring)."""
    global _sections, _saved_count
    with _sections_lock:
        if _sections == 0:
            _saved_count = _set_threads(1)
        _sections += 1
    try:
        yield
    finally:
        with _sections_lock:
            _sections -= 1
            if _sections == 0:
                _set_threads(_saved_count)


def library_path():
    """The file of NumPy's OpenBLAS, or None where it was not found."""
    return _path


def matmul(left, right, out, multiply_adds):
    """np.matmul(left, right, out=out) for C-contiguous [..., m, k] @ [..., k, n] with the
    same leading dimensions: on this thread alone when the product is small, a large
    stack's products shared between jitlib's threads, else OpenBLAS's threads."""
    if _set_threads is None:
        return np.matmul(left, right, out=out)
    if multiply_adds < SMALL_PRODUCT:
        with one_thread():
            return np.matmul(left, right, out=out)
    count = out.size // (out.shape[-2] * out.shape[-1]) if out.size else 0
    pool = parallel.get_pool()
    if count < 2 or pool.threads < 2:
        return np.matmul(left, right, out=out)
    m, k, n = left.shape[-2], left.shape[-1], right.shape[-1]
    stack = _Stack(left.reshape(count, m, k), right.reshape(count, k, n),
                   out.reshape(count, m, n), min(count, GROUPS_PER_THREAD * pool.threads))
    with one_thread():     # for both threads' products: the count is the process's
        pool.run(_stack_part, (stack,))
    if stack.error is not None:
        raise stack.error
    return out


# groups per thread a stack is cut into: enough that a late thread's share is small, few
# enough that a group is many products (one NumPy call each, ~10 us of Python)
GROUPS_PER_THREAD = 4


class _Stack:
    """A stack of products cut into `groups` runs of whole products, claimed in order."""

    def __init__(self, left, right, out, groups):
        self.left, self.right, self.out = left, right, out
        self.groups = groups
        self.claims = itertools.count()    # next() is atomic under the GIL
        self.lock = threading.Lock()
        self.finished = 0
        self.done = threading.Event()
        self.error = None

    def run(self, group):
        count = self.out.shape[0]
        lo, hi = group * count // self.groups, (group + 1) * count // self.groups
        np.matmul(self.left[lo:hi], self.right[lo:hi], out=self.out[lo:hi])


def _stack_part(stack, part, parts):
    """Claim and run groups of the stack until none is left (OpenBLAS on one thread: the
    caller's `one_thread` section). The caller's part (0) returns 1 once every group is
    written (parallel.Pool then waits for no late worker: it finds nothing to claim)."""
    while (group := next(stack.claims)) < stack.groups:
        try:
            stack.run(group)
        except BaseException as e:   # `matmul` raises it, once
            stack.error = e
            stack.done.set()
            return None
        with stack.lock:
            stack.finished += 1
            if stack.finished == stack.groups:
                stack.done.set()
    if part != 0:
        return None
    stack.done.wait()
    return 1
