"""One native entry per small program: an LLVM driver that calls its kernels in order.

On small inputs the Python loop around the kernels costs more than the kernels: each
`ndarray.ctypes.data` alone takes about a microsecond. So where every kernel compiles
and none is large enough to share between threads, the executable calls one function

    void @program(ptr %table, ptr %arg0, ..., ptr %res0, ..., ptr %arena)

through ctypes with `py_object` arguments: each is the ndarray object itself, and the
driver reads its data pointer from the object (`DATA_OFFSET` bytes in, measured at
import by `_data_offset`; where it cannot be found no driver is made). The GIL stays
held: these calls last microseconds. `table` is a uint64 array of the kernels' addresses
then the constants' data pointers, so the text holds no address and means the same in
any process. Results are allocated once per call by the caller; intermediates live in
the arena at offsets planned by liveness (`plan_arena`).
"""
import ctypes
import dataclasses

import numpy as np

from jitlib.backends.llvm.compiler import get_compiler
from jitlib.hlo.ir import is_multi_output
from jitlib.hlo.ops import Op

ALIGN = 64     # a cache line: neighbouring buffers never share one


def _data_offset():
    """Where an ndarray object keeps its data pointer, in bytes, or None if not found."""
    probes = [np.empty(3), np.empty((2, 5), np.int8)]
    offsets = None
    for a in probes:
        words = (ctypes.c_size_t * 6).from_address(id(a))
        found = {8 * i for i, w in enumerate(words) if w == a.ctypes.data}
        offsets = found if offsets is None else offsets & found
    return min(offsets) if offsets else None


DATA_OFFSET = _data_offset()


@dataclasses.dataclass(frozen=True)
class Slot:
    """Where a value lives during a call: kind is "param", "const", "result" or "arena";
    `at` is the parameter, constant or result number, or the arena byte offset."""
    kind: str
    at: int


def _nbytes(shape, dtype):
    return int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize


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


class Program:
    """The driver of one optimised module whose FUSION steps all run compiled kernels:
    `kernels` maps each FUSION instruction to its runner (`.outputs`, the kernel's output
    instructions, and `.address`). `run(arrays)` takes arrays `accepts` approved.""" 

    def __init__(self, module, kernels):
        self.module = module
        steps = [i for i in module.instructions if i.op is Op.FUSION]
        self._params = [(p.shape, p.dtype) for p in module.params]
        self._constants = [np.asarray(i.attrs["value"].array, order="C")   # keeps 0-d
                           for i in module.instructions if i.op is Op.CONSTANT]
        const_of = {i: k for k, i in enumerate(
            i for i in module.instructions if i.op is Op.CONSTANT)}
        slots = {p: Slot("param", p.attrs["index"]) for p in module.params}
        slots.update({c: Slot("const", k) for c, k in const_of.items()})

        # each kernel output is (fusion, j); a get_output names one of them
        def key(instr):
            if instr.op is Op.GET_OUTPUT:
                return instr.operands[0], instr.attrs["index"]
            return (instr, 0) if instr.op is Op.FUSION else instr

        outputs = [(f, j) for f in steps for j in range(len(kernels[f].outputs))]
        self._results, result_of = [], {}
        for r in module.results:
            k = key(r)
            if r.op in (Op.PARAMETER, Op.CONSTANT):
                self._results.append(("copy", slots[r]))
            else:
                if k not in result_of:
                    result_of[k] = len(result_of)
                self._results.append(("fresh", result_of[k]))
        self._fresh = [None] * len(result_of)
        # the common case: every result is a kernel output of its own, in order
        self._just_fresh = self._results == [("fresh", n) for n in range(len(result_of))]
        for (f, j), n in result_of.items():
            out = kernels[f].outputs[j]
            self._fresh[n] = (out.shape, out.dtype)
            slots[(f, j)] = Slot("result", n)

        step_of = {f: s for s, f in enumerate(steps)}
        last = {}
        for instr in module.instructions:
            if instr.op is Op.FUSION:
                for o in instr.operands:
                    last[key(o)] = step_of[instr]
        temps = [o for o in outputs if o not in slots]
        sizes = [_nbytes(kernels[f].outputs[j].shape, kernels[f].outputs[j].dtype)
                 for f, j in temps]
        lives = [(step_of[f], last.get((f, j), step_of[f])) for f, j in temps]
        offsets, self.arena_bytes = plan_arena(sizes, lives)
        slots.update({t: Slot("arena", at) for t, at in zip(temps, offsets)})

        self._table = np.array([kernels[f].address for f in steps] +
                               [c.ctypes.data for c in self._constants], np.uint64)
        self.ir = self._render(steps, kernels, slots, key)
        address = get_compiler().compile(self.ir, "program")
        n_args = 2 + len(self._params) + len(self._fresh)
        self._fn = ctypes.PYFUNCTYPE(None, *[ctypes.py_object] * n_args)(address)

    def _render(self, steps, kernels, slots, key):
        n_args, n_res = len(self._params), len(self._fresh)
        args = ["ptr %table"] + [f"ptr %arg{i}" for i in range(n_args)]
        args += [f"ptr %res{j}" for j in range(n_res)] + ["ptr %arena"]
        lines = [f'define void @"program"({", ".join(args)}) nounwind {{', "entry:"]

        def data(obj):
            lines.append(f"  %{obj}.d = getelementptr i8, ptr %{obj}, i64 {DATA_OFFSET}")
            lines.append(f"  %{obj}.data = load ptr, ptr %{obj}.d")
            return f"%{obj}.data"

        table = data("table")
        base = {"param": [data(f"arg{i}") for i in range(n_args)],
                "result": [data(f"res{j}") for j in range(n_res)]}
        arena = data("arena") if self.arena_bytes else None

        def entry(n, name):
            lines.append(f"  %{name}.p = getelementptr i64, ptr {table}, i64 {n}")
            lines.append(f"  %{name} = load ptr, ptr %{name}.p")
            return f"%{name}"

        consts = [entry(len(steps) + k, f"const{k}") for k in range(len(self._constants))]

        def pointer(slot, name):
            if slot.kind == "arena":
                lines.append(f"  %{name} = getelementptr i8, ptr {arena}, i64 {slot.at}")
                return f"%{name}"
            return consts[slot.at] if slot.kind == "const" else base[slot.kind][slot.at]

        for s, f in enumerate(steps):
            ptrs = [pointer(slots[key(o)], f"s{s}.in{i}") for i, o in enumerate(f.operands)]
            ptrs += [pointer(slots[(f, j)], f"s{s}.out{j}")
                     for j in range(len(kernels[f].outputs))]
            kernel = entry(s, f"kernel{s}")
            call_args = ", ".join([f"ptr {p}" for p in ptrs] + ["i64 0", "i64 1"])
            lines.append(f"  call void {kernel}({call_args})")
        lines += ["  ret void", "}", ""]
        return "\n".join(lines)

    def accepts(self, arrays):
        """Whether `arrays` are C-contiguous ndarrays of exactly the parameters' types."""
        if len(arrays) != len(self._params):
            return False
        for a, (shape, dtype) in zip(arrays, self._params):
            if type(a) is not np.ndarray or a.shape != shape or a.dtype != dtype \
                    or not a.flags.c_contiguous:
                return False
        return True

    def run(self, arrays):
        empty = np.empty
        fresh = [empty(shape, dtype) for shape, dtype in self._fresh]
        table = self._table
        self._fn(table, *arrays, *fresh,
                 empty(self.arena_bytes, np.uint8) if self.arena_bytes else table)
        if self._just_fresh:
            return fresh
        results = []
        for kind, at in self._results:
            if kind == "fresh":
                results.append(fresh[at])
            else:   # arguments and constants are not ours to hand out
                source = arrays[at.at] if at.kind == "param" else self._constants[at.at]
                results.append(np.array(source, order="C"))
        return results


def eligible(module):
    """Whether a driver can run `module`: only its parameters, constants, kernels and
    their outputs at the top level, and an ndarray layout the driver can read."""
    if DATA_OFFSET is None:
        return False
    allowed = {Op.PARAMETER, Op.CONSTANT, Op.FUSION, Op.GET_OUTPUT}
    return all(i.op in allowed for i in module.instructions) and not any(
        is_multi_output(r) for r in module.results)
