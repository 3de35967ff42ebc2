"""Where each value of an optimised module lives during a call.

`BufferPlan` gives every kernel output a `Slot`: a result (a fresh array per call, handed
to the caller), or a place in one arena shared by the intermediates, at an offset that
`plan_arena` chose by liveness: memory is reused once the step after a buffer's last
reader starts. Parameters and constants keep their own arrays (results that are one of
them are copied: they are not ours to hand out). `Recycler` hands a large result back to
the next call once its caller has dropped it. `Prefault` allocates a first call's
large buffers at compile time and has another thread map their pages meanwhile.
"""
import ctypes
import dataclasses
import errno
import math
import sys
import threading

import numpy as np

from jitlib.hlo.ops import Op

ALIGN = 64     # a cache line: neighbouring buffers never share one


@dataclasses.dataclass(frozen=True)
class Slot:
    """Where a value lives during a call: kind is "param", "const", "result" or "arena";
    `at` is the parameter, constant or result number, or the arena byte offset."""
    kind: str
    at: int


def _nbytes(shape, dtype):
    return math.prod(shape) * np.dtype(dtype).itemsize


def plan_arena(sizes, lives):
    """Byte offsets for buffers of `sizes` alive over steps `lives` [(first, last)], and
    the arena's size. A buffer is reused by one defined after its last reader's step, so
    a kernel never writes over one of its own inputs. First fit, in definition order."""
    order = sorted(range(len(sizes)), key=lambda b: lives[b][0])
    offsets, placed, total = [0] * len(sizes), [], 0
    for b in order:
        first, size = lives[b][0], -(-sizes[b] // ALIGN) * ALIGN
        busy = sorted((offsets[o], offsets[o] + -(-sizes[o] // ALIGN) * ALIGN)
                      for o in placed if lives[o][1] >= first)
        at = 0
        for lo, hi in busy:
            if at + size <= lo:
                break
            at = max(at, hi)
        offsets[b] = at
        placed.append(b)
        total = max(total, at + size)
    return offsets, total


class BufferPlan:
    """The slots of `module`'s values. `outputs_of` maps each FUSION step to its outputs'
    [(shape, dtype)]; `placeable(fusion, j)` says whether output j may be written into
    memory the caller gives (else the runner allocates it and its slot is None).

    `key(instr)` names a value: a kernel output is (fusion, j), a get_output names one,
    anything else is itself. `slots` maps keys to Slots; `fresh` lists the results'
    (shape, dtype); `results_of(arrays, fresh)` assembles the returned list."""

    def __init__(self, module, outputs_of, placeable=lambda fusion, j: True):
        self.steps = [i for i in module.instructions if i.op is Op.FUSION]
        constants = [i for i in module.instructions if i.op is Op.CONSTANT]
        self.constants = [np.asarray(c.attrs["value"].array, order="C")   # keeps 0-d
                          for c in constants]
        slots = {p: Slot("param", p.attrs["index"]) for p in module.params}
        slots.update({c: Slot("const", k) for k, c in enumerate(constants)})

        self.results, result_of = [], {}
        for r in module.results:
            if r.op in (Op.PARAMETER, Op.CONSTANT):
                self.results.append(("copy", slots[r]))
                continue
            k = self.key(r)
            result_of.setdefault(k, len(result_of))
            self.results.append(("fresh", result_of[k]))
        self.fresh = [None] * len(result_of)
        for (f, j), n in result_of.items():
            self.fresh[n] = outputs_of[f][j]
            slots[(f, j)] = Slot("result", n)
        # the common case: every result is a kernel output of its own, in order
        self.just_fresh = self.results == [("fresh", n) for n in range(len(result_of))]

        step_of = {f: s for s, f in enumerate(self.steps)}
        last = {}
        for f in self.steps:
            for o in f.operands:
                last[self.key(o)] = step_of[f]
        temps = [(f, j) for f in self.steps for j in range(len(outputs_of[f]))
                 if (f, j) not in slots and placeable(f, j)]
        sizes = [_nbytes(*outputs_of[f][j]) for f, j in temps]
        lives = [(step_of[f], last.get((f, j), step_of[f])) for f, j in temps]
        offsets, self.arena_bytes = plan_arena(sizes, lives)
        slots.update({t: Slot("arena", at) for t, at in zip(temps, offsets)})
        self.slots = slots

    @staticmethod
    def key(instr):
        if instr.op is Op.GET_OUTPUT:
            return instr.operands[0], instr.attrs["index"]
        return (instr, 0) if instr.op is Op.FUSION else instr

    def results_of(self, arrays, fresh):
        results = []
        for kind, at in self.results:
            if kind == "fresh":
                results.append(fresh[at])
            else:
                source = arrays[at.at] if at.kind == "param" else self.constants[at.at]
                results.append(np.array(source, order="C"))
        return results


# Outputs smaller than this come from malloc's free lists anyway: nothing to gain.
RECYCLE_MIN_BYTES = 1 << 20
PAGE = 4096
# Below this much in all, a first call's faults cost well under a millisecond on memory
# malloc hands back mapped; not worth a thread beside the compile on a busy machine.
PREFAULT_MIN_BYTES = 8 << 20
_MADV_POPULATE_WRITE = 23    # Linux 5.14+: map the pages writable, contents untouched
POPULATE_PIECE = 2 << 20     # one transparent huge page


def _madvise():
    """libc's madvise, or None where there is none (not Linux)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        fn = ctypes.CDLL(None, use_errno=True).madvise
    except (OSError, AttributeError):
        return None
    fn.restype, fn.argtypes = ctypes.c_int, [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    return fn


def populate(address, nbytes):
    """Fault in the pages of [address, address + nbytes) for writing without changing a
    byte (MADV_POPULATE_WRITE): safe while other threads write there. False where the
    kernel cannot (before 5.14, or not Linux); from then on it is not tried again."""
    global _populate_fn
    if _populate_fn is None:
        return False
    start = address - address % PAGE
    if _populate_fn(start, address + nbytes - start, _MADV_POPULATE_WRITE) != 0:
        if ctypes.get_errno() == errno.EINVAL:   # the kernel does not know the advice
            _populate_fn = None
        return False
    return True


_populate_fn = _madvise()
_allocate = np.empty   # the tests make it fail


class Prefault:
    """Fresh arrays of [(shape, dtype)] whose pages a background thread faults in while
    the caller compiles: a first call's arena, product scratch and large results.

    On this 2-core VM a page the process has never had can cost far more than the
    kernel that writes it: 32 MiB of fresh memory took 4-57 ms to touch, 512 MiB 2.8 s
    (guest memory never used before is backed by the host at that moment). LLVM
    compiles a program's kernels on one core, so the other takes the faults meanwhile.
    The arrays are allocated on the caller's thread (from a background thread malloc
    would serve them from that thread's own arena, fresh pages every time, where the
    caller's often has freed memory still mapped), and the thread only asks the kernel
    to map them (`populate`), which changes no byte: `take()` hands the arrays out at
    once, without waiting, and the first call's writes race the thread harmlessly.
    The thread holds addresses, not the arrays (a recycled result must be referenced
    by the recycler alone). An array that could not be allocated is None (the call then
    allocates its own, as without this); where the kernel cannot populate, none is made."""

    def __init__(self, wanted):
        self._made = []
        for shape, dtype in wanted:
            try:
                self._made.append(_allocate(shape, dtype))
            except MemoryError:
                self._made.append(None)
        ranges = [(a.ctypes.data, a.nbytes) for a in self._made if a is not None]
        threading.Thread(target=self._populate, args=(ranges,), name="jitlib-prefault",
                         daemon=True).start()

    @staticmethod
    def _populate(ranges):
        # a piece at a time: the kernel holds the process's memory-map lock for reading
        # through each call, and the compile's own mappings (MCJIT's code, large mallocs)
        # wait to write: beside one call over 68 MiB of fresh pages (196 ms), a program
        # build that takes 27 ms took 200
        for address, nbytes in ranges:
            for at in range(address, address + nbytes, POPULATE_PIECE):
                if not populate(at, min(POPULATE_PIECE, address + nbytes - at)):
                    return

    @staticmethod
    def available():
        """Whether the kernel can populate memory (as far as known: true until tried)."""
        return _populate_fn is not None

    def take(self):
        """The arrays, in the order asked for, at once; this object keeps none of them."""
        made, self._made = self._made, []
        return made


def _refcount_works():
    probe = []
    return hasattr(sys, "getrefcount") and getattr(sys, "_is_gil_enabled", lambda: True)() \
        and sys.getrefcount(probe) == 2


class Recycler:
    """The last call's large results, reused as the next call's when the caller has let
    go of them.

    A fresh 64 MB result costs its page faults on every call (about a third of a
    memory-bound kernel's time here: glibc maps blocks over 32 MB anew each time). An
    array that only this recycler still references (its reference count says so, as
    CPython keeps it exactly under the GIL) cannot be seen by anyone else, so writing
    the next result into it is the same as allocating it. Views, memoryviews and
    `.ctypes` objects all hold a reference to their base, so a result still reachable in
    any of these ways is never reused. Off where reference counts are not exact."""

    enabled = _refcount_works()

    def __init__(self, n):
        self._kept = [None] * n
        self._lock = threading.Lock()

    def take(self, n, shape, dtype):
        """The kept array for result n if nobody else holds it and it still has this
        type and layout, else None."""
        if not self.enabled:
            return None
        with self._lock:
            a, self._kept[n] = self._kept[n], None
        # references: the local `a` and getrefcount's argument
        if a is None or sys.getrefcount(a) != 2:
            return None
        if a.shape != shape or a.dtype != dtype or not a.flags.c_contiguous \
                or not a.flags.writeable:
            return None
        return a

    def keep(self, n, array):
        if self.enabled:
            self._kept[n] = array
