"""Locks that a `fork()` leaves usable in the child.

A child process has only the thread that forked; a lock another thread held at the
fork stays held in the child for good, and its next jit call would hang. Every lock
jitlib creates comes from `lock()` or `rlock()`, which the child re-initializes
(CPython's own `logging` module does the same for its handlers' locks).

LLVM is different: a thread inside an llvmlite call at the fork may leave LLVM's own
mutexes held in the child, where no Python lock can release them. So a fork waits
until no thread is inside llvmlite (`hold_llvm_across_fork`, called where llvmlite is
imported); LLVM calls are short, the optimizer's longest a few hundred milliseconds.
"""
import os
import threading
import weakref

_locks = weakref.WeakSet()


def lock():
    """A threading.Lock, released in a forked child."""
    made = threading.Lock()
    _locks.add(made)
    return made


def rlock():
    """A threading.RLock, released in a forked child."""
    made = threading.RLock()
    _locks.add(made)
    return made


def _reinit_in_child():
    for made in list(_locks):
        made._at_fork_reinit()


_llvm_lock = None   # llvmlite's own lock, held by the forking thread across a fork


def hold_llvm_across_fork(llvm_lock):
    """Make a fork wait for the thread inside llvmlite (if any) to leave: `llvm_lock` is
    the RLock llvmlite takes around each call into LLVM."""
    global _llvm_lock
    if _llvm_lock is None and hasattr(os, "register_at_fork"):
        _llvm_lock = llvm_lock
        os.register_at_fork(before=llvm_lock.acquire, after_in_parent=llvm_lock.release,
                            after_in_child=llvm_lock._at_fork_reinit)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reinit_in_child)
