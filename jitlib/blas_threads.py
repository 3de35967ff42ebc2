"""Small matrix products run on the calling thread, not on OpenBLAS's threads.

NumPy's OpenBLAS splits any product past a few tens of thousands of multiply-adds
between its threads. When the machine is busy, waiting for those threads to be
scheduled costs far more than the product, by two orders of magnitude on a loaded
2-core machine (docs/performance.md).
OpenBLAS 0.3.27+ has `openblas_set_num_threads_local`; despite its name, in NumPy's
build it sets the count of the whole process (set on one thread, another thread reads
it back and its products run on one core: measured). So the sections that want one
thread (`_enter` ... `_leave`) share one count: the first to start sets 1, the last to
end gives the count back, unless someone else (the user, threadpoolctl) set one of their
own meanwhile. Saving and restoring it per call, two threads' calls interleaved (set,
set, restore, restore) and left it at 1 for good: every later large product on one
core. So the change is scoped to jitlib's own small products and restored after them;
NumPy calls made by other threads while one runs see a count of 1 (threadpoolctl's
limits are process-wide too: it would scope nothing tighter). Where the setter cannot be found (another BLAS, no /proc),
`matmul` is plain np.matmul.
"""
import contextlib
import ctypes
import os

import numpy as np

from jitlib import forksafe

# below this many multiply-adds (well under a millisecond on one core) threads cost
# more than they save
SMALL_PRODUCT = 1 << 23
# ... and a matrix times a vector, which reads its matrix once at memory speed: one core
# streams ~1.5 G float64 multiply-adds a second, so the same time is 32x fewer
SMALL_MATVEC = SMALL_PRODUCT >> 5
# below this OpenBLAS runs every product on the calling thread by itself (its gemm's
# SMP_THRESHOLD_MIN * GEMM_MULTITHREAD_THRESHOLD; gemv's is lower still): setting the
# count to 1 and back would cost more than an 8x8 product
OPENBLAS_ALONE = 1 << 13


def _openblas_paths():
    """The OpenBLAS files this process has mapped (NumPy's first: loaded at import)."""
    try:
        with open("/proc/self/maps") as f:
            paths = {line.split()[-1] for line in f if "openblas" in line.lower()}
    except OSError:
        return []
    return sorted(p for p in paths if os.path.isabs(p))


def _find_setter():
    """(path, OpenBLAS's per-thread setter, its getter) of the copy NumPy loaded, or
    (None, None, None)."""
    for path in _openblas_paths():
        try:
            lib = ctypes.CDLL(path)
            setter = lib.openblas_set_num_threads_local
        except (OSError, AttributeError):
            continue
        # scipy-openblas (NumPy's wheels) prefixes the getter's name
        getter = getattr(lib, "scipy_openblas_get_num_threads64_", None) or getattr(
            lib, "openblas_get_num_threads", None)
        if getter is None:
            continue
        setter.restype, setter.argtypes = ctypes.c_int, [ctypes.c_int]
        getter.restype, getter.argtypes = ctypes.c_int, []
        return path, setter, getter
    return None, None, None


np.dot(np.ones((2, 2)), np.ones((2, 2)))   # NumPy loads its BLAS on first use
_path, _set_threads, _get_threads = _find_setter()


_sections_lock = forksafe.lock()
_sections = 0          # one-thread sections running
_saved_count = None    # the count before the first of them


def _enter():
    """Start a section that wants NumPy's OpenBLAS on one thread (the count is the
    process's: see the module docstring); `_leave` ends it."""
    global _sections, _saved_count
    with _sections_lock:
        if _sections == 0:
            _saved_count = _set_threads(1)
        _sections += 1


def _leave():
    global _sections
    with _sections_lock:
        _sections -= 1
        # a count someone else set meanwhile (threadpoolctl, the user) is theirs to keep
        if _sections == 0 and _get_threads() == 1:
            _set_threads(_saved_count)


def _after_fork_in_child():
    # a section another thread was in at the fork never ends in the child: give the
    # count back now
    global _sections
    if _sections:
        _sections = 0
        _set_threads(_saved_count)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def library_path():
    """The file of NumPy's OpenBLAS, or None where it was not found."""
    return _path


@contextlib.contextmanager
def single_threaded():
    """NumPy's OpenBLAS on the calling thread alone inside the block (a native loop's
    small products call its gemm directly)."""
    if _set_threads is None:
        yield
        return
    _enter()
    try:
        yield
    finally:
        _leave()


def matmul(left, right, out, multiply_adds):
    """np.matmul(left, right, out=out), on this thread alone when the product is small
    (a matrix-vector product, one operand 1-D, by its own measure)."""
    small = SMALL_MATVEC if min(left.ndim, right.ndim) == 1 else SMALL_PRODUCT
    if _set_threads is None or multiply_adds >= small or multiply_adds < OPENBLAS_ALONE:
        return np.matmul(left, right, out=out)
    _enter()
    try:
        return np.matmul(left, right, out=out)
    finally:
        _leave()
