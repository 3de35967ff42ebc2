"""Where each value of an optimised module lives during a call.

`BufferPlan` gives every kernel output a `Slot`: a result (a fresh array per call, handed
to the caller), or a place in one arena shared by the intermediates, at an offset that
`plan_arena` chose by liveness: memory is reused once the step after a buffer's last
reader starts. Parameters and constants keep their own arrays (results that are one of
them are copied: they are not ours to hand out). Large results come from `ResultPool`,
which reuses their memory once the caller has let go of every array over it.
"""
import ctypes
import dataclasses
import math
import os
import time
import weakref

import numpy as np

from jitlib import forksafe
from jitlib.hlo import dtypes
from jitlib.hlo import ops as O
from jitlib.hlo.ops import Op

ALIGN = 64     # a cache line: neighbouring buffers never share one


@dataclasses.dataclass(frozen=True)
class Slot:
    """Where a value lives during a call: kind is "param", "const", "result" or "arena";
    `at` is the parameter, constant or result number, or the arena byte offset."""
    kind: str
    at: int


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
    (shape, dtype); `results_of(arrays, fresh)` assembles the returned list.

    `aliases` maps the key of a value that is a view (a reshape) to the key of the value
    whose memory it sees: a view has no slot, its root lives as long as the view is read,
    and a root whose view is a result is kept out of the arena (fresh memory)."""

    def __init__(self, module, outputs_of, placeable=lambda fusion, j: True, aliases=None):
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

        self.aliases = aliases or {}
        step_of = {f: s for s, f in enumerate(self.steps)}
        last = {}
        for f in self.steps:
            for o in f.operands:
                last[self.root(self.key(o))] = step_of[f]
        escaping = {self.root(self.key(r)) for r in module.results}
        temps = [(f, j) for f in self.steps for j in range(len(outputs_of[f]))
                 if (f, j) not in slots and (f, j) not in self.aliases
                 and (f, j) not in escaping and placeable(f, j)]
        sizes = [dtypes.nbytes(*outputs_of[f][j]) for f, j in temps]
        lives = [(step_of[f], last.get((f, j), step_of[f])) for f, j in temps]
        offsets, self.arena_bytes = plan_arena(sizes, lives)
        slots.update({t: Slot("arena", at) for t, at in zip(temps, offsets)})
        self.slots = slots

    @staticmethod
    def key(instr):
        if instr.op is Op.GET_OUTPUT:
            return instr.operands[0], instr.attrs["index"]
        return (instr, 0) if instr.op is Op.FUSION or instr.op in O.CONTROL else instr

    def root(self, key):
        """The key of the value whose memory `key`'s value lives in."""
        while key in self.aliases:
            key = self.aliases[key]
        return key

    def results_of(self, arrays, fresh, passes_params=False):
        results = []
        for kind, at in self.results:
            if kind == "fresh":
                results.append(fresh[at])
            elif passes_params and at.kind == "param":
                results.append(arrays[at.at])
            else:
                source = arrays[at.at] if at.kind == "param" else self.constants[at.at]
                results.append(np.array(source, order="C"))
        return results


# Outputs smaller than this come from malloc's heap anyway (glibc maps a block anew
# each time only above its largest mmap threshold, 32 MiB): nothing to gain, and the
# pool's Python costs more than it saves (Zen 3 VM, `x * 2.0` into 1 MiB: 83 -> 67 us
# a call without it, 16 MiB 966 -> 814).
RECYCLE_MIN_BYTES = 32 << 20


def _pool_capacity():
    """JITLIB_RESULT_POOL_BYTES if set, else a quarter of the memory, at most 4 GiB."""
    try:
        return max(int(os.environ["JITLIB_RESULT_POOL_BYTES"]), 0)
    except (KeyError, ValueError):
        pass
    total = _meminfo().get("MemTotal", 0)
    return min(total // 4, 4 << 30) if total else 1 << 30


def _meminfo():
    """/proc/meminfo's fields in bytes, or {} where there is none."""
    try:
        with open("/proc/meminfo") as f:
            return {k: int(v.split()[0]) * 1024 for k, v in
                    (line.split(":", 1) for line in f) if v.strip().endswith("kB")}
    except (OSError, ValueError):
        return {}


class ResultPool:
    """Memory for large results, back in the pool once no array over it is left.

    A fresh 64 MB result costs its page faults on every call: glibc maps blocks over
    32 MB anew each time, and a caller that keeps its last results (a solver's state, a
    training loop's parameters) never lets the last call's memory be reused. Each
    result here is an array over a ctypes window on a block of raw memory; NumPy's
    views, memoryviews and `.ctypes` of the result all keep the window alive, and when
    the last of them dies a finalizer hands the block back for the next result of the
    same size. Blocks are kept up to `capacity` bytes (oldest dropped first), and none is
    kept while the machine is short of memory."""

    def __init__(self, capacity=None):
        self.capacity = _pool_capacity() if capacity is None else capacity
        self._free = {}          # nbytes -> [block]
        self._order = []         # (nbytes, id(block)), oldest first
        self._held = 0
        self._lock = forksafe.lock()

    def array(self, shape, dtype):
        """A C-contiguous array of `shape` and `dtype` over pooled memory."""
        dtype = np.dtype(dtype)
        nbytes = dtypes.nbytes(shape, dtype)
        block = None
        with self._lock:
            blocks = self._free.get(nbytes)
            if blocks:
                block = blocks.pop()
                self._order.remove((nbytes, id(block)))
                self._held -= nbytes
        if block is None:
            block = np.empty(nbytes, np.uint8)
        window = (ctypes.c_char * nbytes).from_buffer(block)
        weakref.finalize(window, self._give_back, block).atexit = False
        return np.frombuffer(window, dtype).reshape(shape)

    def _give_back(self, block):
        nbytes = block.nbytes
        if nbytes > self.capacity or _short_of_memory():
            return
        with self._lock:
            while self._held + nbytes > self.capacity and self._order:
                size, old = self._order.pop(0)
                self._free[size] = [b for b in self._free[size] if id(b) != old]
                self._held -= size
            self._free.setdefault(nbytes, []).append(block)
            self._order.append((nbytes, id(block)))
            self._held += nbytes

    def clear(self):
        with self._lock:
            self._free, self._order, self._held = {}, [], 0


# How long an answer of `_short_of_memory` stands: reading /proc/meminfo costs 30-50 us,
# as much as the kernel of a 1 MiB result (Zen 3 VM: x * 2.0 on 2^18 float32 took 177 us
# a call reading it per returned block, against NumPy's 31).
_MEMORY_CHECK_EVERY_S = 0.25
_memory_checked = [-math.inf, False]     # [when, answer]


def _short_of_memory():
    now = time.monotonic()
    if now - _memory_checked[0] >= _MEMORY_CHECK_EVERY_S:
        info = _meminfo()
        total, available = info.get("MemTotal"), info.get("MemAvailable")
        _memory_checked[:] = now, bool(total and available is not None
                                      and available < total // 8)
    return _memory_checked[1]


RESULTS = ResultPool()
