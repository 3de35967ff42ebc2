"""One native entry per small program: an LLVM driver that calls its kernels in order.

On small inputs the Python loop around the kernels costs more than the kernels: each
`ndarray.ctypes.data` alone takes about a microsecond. So where every kernel compiles
and is small (under parallel.min_parallel_bytes()), the executable calls one function

    void @program(ptr %table, ptr %arg0, ..., ptr %res0, ..., ptr %arena)

through ctypes with `py_object` arguments: each is the ndarray object itself, and the
driver reads its data pointer from the object (`DATA_OFFSET` bytes in, measured at
import by `_data_offset`; where it cannot be found no driver is made). The GIL stays
held: these calls last microseconds. `table` is a uint64 array of the kernels' addresses
then the constants' data pointers, so the text holds no address and means the same in
any process. Results are allocated once per call by the caller; intermediates live in
an arena at offsets planned by liveness (buffers.py).
"""
import ctypes
import functools

import numpy as np

from jitlib.backends.llvm.buffers import BufferPlan
from jitlib.backends.llvm.compiler import get_compiler
from jitlib.backends.llvm.pointers import DATA_OFFSET
from jitlib.hlo.ir import is_multi_output
from jitlib.hlo.ops import Op


class Program:
    """The driver of one optimised module whose FUSION steps all run compiled kernels:
    `kernels` maps each FUSION instruction to its runner (`.outputs`, the kernel's output
    instructions, and `.address`). `run(arrays)` takes arrays `accepts` approved."""

    def __init__(self, module, kernels):
        self.module = module
        plan = BufferPlan(module, {f: [(o.shape, o.dtype) for o in r.outputs]
                                   for f, r in kernels.items()})
        self.plan, self.arena_bytes = plan, plan.arena_bytes
        self._params = [(p.shape, p.dtype) for p in module.params]
        self._table = np.array([kernels[f].address for f in plan.steps] +
                               [c.ctypes.data for c in plan.constants], np.uint64)
        self.ir = self._render(plan, kernels)
        # straight-line calls through a table: nothing for LLVM's optimizer to do, so
        # -O0 (a tenth of O3's time on a first call); keeps the driver mapped
        self._code = get_compiler().load(self.ir, "program", quick=True)
        self.kernels = kernels   # the runners it calls (their code stays mapped)
        address = self._code.address
        self._fn = _driver_type(2 + len(self._params) + len(plan.fresh))(address)

    def _render(self, plan, kernels):
        n_args, n_res = len(self._params), len(plan.fresh)
        args = ["ptr %table"] + [f"ptr %arg{i}" for i in range(n_args)]
        args += [f"ptr %res{j}" for j in range(n_res)] + ["ptr %arena"]
        lines = [f'define void @"program"({", ".join(args)}) nounwind {{', "entry:"]
        table = data_pointer(lines, "table")
        base = {"param": [data_pointer(lines, f"arg{i}") for i in range(n_args)],
                "result": [data_pointer(lines, f"res{j}") for j in range(n_res)]}
        arena = data_pointer(lines, "arena")   # the table when the arena is empty
        consts = [table_entry(lines, table, len(plan.steps) + k, f"const{k}")
                  for k in range(len(plan.constants))]

        def pointer(slot, name):
            if slot.kind == "arena":
                lines.append(f"  %{name} = getelementptr i8, ptr {arena}, i64 {slot.at}")
                return f"%{name}"
            return consts[slot.at] if slot.kind == "const" else base[slot.kind][slot.at]

        emit_calls(lines, plan, kernels, pointer,
                   lambda s: table_entry(lines, table, s, f"kernel{s}"), "")
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

    def run(self, arrays, passes_params=False):
        """The results on `arrays`; `passes_params`: a result that is a parameter is
        its array itself, not a copy."""
        empty, plan = np.empty, self.plan
        fresh = [empty(shape, dtype) for shape, dtype in plan.fresh]
        table = self._table
        self._fn(table, *arrays, *fresh,
                 empty(self.arena_bytes, np.uint8) if self.arena_bytes else table)
        return fresh if plan.just_fresh else plan.results_of(arrays, fresh, passes_params)


def data_pointer(lines, obj):
    """Load ndarray `%obj`'s data pointer (the object's field at DATA_OFFSET)."""
    lines.append(f"  %{obj}.d = getelementptr i8, ptr %{obj}, i64 {DATA_OFFSET}")
    lines.append(f"  %{obj}.data = load ptr, ptr %{obj}.d")
    return f"%{obj}.data"


def table_entry(lines, table, n, name):
    """Load entry n of the uint64 table at `table` as a pointer named %name."""
    lines.append(f"  %{name}.p = getelementptr i64, ptr {table}, i64 {n}")
    lines.append(f"  %{name} = load ptr, ptr %{name}.p")
    return f"%{name}"


def emit_calls(lines, plan, kernels, pointer, kernel, prefix):
    """The calls of `plan`'s steps, in order: step s calls the function pointer
    `kernel(s)` gives on the pointers `pointer(slot, name)` gives for its operands' and
    outputs' slots (whole: part 0 of 1). `prefix` keeps the names of two modules apart."""
    slots, key = plan.slots, plan.key
    for s, f in enumerate(plan.steps):
        ptrs = [pointer(slots[key(o)], f"{prefix}s{s}.in{i}")
                for i, o in enumerate(f.operands)]
        ptrs += [pointer(slots[(f, j)], f"{prefix}s{s}.out{j}")
                 for j in range(len(kernels[f].outputs))]
        callee = kernel(s)
        call_args = ", ".join([f"ptr {p}" for p in ptrs] + ["i64 0", "i64 1"])
        lines.append(f"  call void {callee}({call_args})")


@functools.lru_cache(maxsize=None)
def _driver_type(n_args):
    # ctypes.PYFUNCTYPE makes a new class on every call (CFUNCTYPE caches, it does not):
    # one per program would grow a process that compiles for ever
    return ctypes.PYFUNCTYPE(None, *[ctypes.py_object] * n_args)


def eligible(module, loops=False):
    """Whether a driver can run `module`: only its parameters, constants, kernels and
    their outputs at the top level (and `while` loops, for a native loop's region, which
    checks their runners), and an ndarray layout the driver can read."""
    if DATA_OFFSET is None:
        return False
    allowed = {Op.PARAMETER, Op.CONSTANT, Op.FUSION, Op.GET_OUTPUT} | (
        {Op.WHILE} if loops else set())
    return all(i.op in allowed for i in module.instructions) and not any(
        is_multi_output(r) for r in module.results)
