"""Where each value of an optimised module lives during a call.

`BufferPlan` gives every kernel output a `Slot`: a result (a fresh array per call, handed
to the caller), or a place in one arena shared by the intermediates, at an offset that
`plan_arena` chose by liveness: memory is reused once the step after a buffer's last
reader starts. Parameters and constants keep their own arrays (results that are one of
them are copied: they are not ours to hand out). `Recycler` hands a large result back to
the next call once its caller has dropped it.
"""
import dataclasses
import math
import sys

import numpy as np

from jitlib import forksafe
from jitlib.hlo import ops as O
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
        self.steps = [i for i in module.instructions
                      if i.op is Op.FUSION or i.op in O.CONTROL]
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
        return (instr, 0) if instr.op is Op.FUSION or instr.op in O.CONTROL else instr

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
        self._lock = forksafe.lock()

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
