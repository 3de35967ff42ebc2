"""A `while` as one native loop: the body's kernels called from an LLVM loop, with no
return to Python between trips.

The host-driven loop (backends/control.py) costs a few microseconds of Python per kernel
per trip, more than a small body's kernels take. Where every kernel of the body (and
of the condition, when the trip count is not known) is compiled and small, or a plain
float matrix product, this module renders one function

    void @loop(ptr %table, ptr %init0, ..., ptr %res0, ..., ptr %arena)

that runs the condition's and the body's kernel calls in an LLVM loop (small float
matrix products call NumPy's OpenBLAS gemm directly, on this thread; a loop in the body
that runs natively itself is called as one more step, so nests stay native). Python
calls a small wrapper that reads the arrays' data pointers and calls the loop through
the table's first entry; an enclosing loop calls the same function with raw pointers.
The carry lives in pointers that change each trip:

  invariant  a body result that is the body's own parameter at the same position (a
             weight, the sequence scanned over): the caller's array, read in place.
  ping-pong  a kernel output: written into one of two arena buffers, the one the carry
             does not hold now (trip 0 writes the first, never the caller's array), so
             no kernel writes memory that its inputs are still read from.
  moved      another position's parameter (`a, b = b, a`): copied at the trip's start
             into ping-pong buffers of its own, so no buffer is read two trips later.
  in place   a scatter or a windowed dynamic_update_slice that updates its own carry
             (scan's stacked ys, a stencil's interior): the carry is copied into an
             arena buffer once, then each trip's kernel writes only the rows or the
             window it sets, from a variant of its kernel without the operand copy.

After the last trip each carry that is not invariant is copied into a fresh result. The
GIL stays held, as for a program driver: the loop's kernels are small ones.
"""
import ctypes
import math

import numpy as np

from jitlib import blas_threads
from jitlib.backends.llvm import kernels, opaque, program
from jitlib.backends.llvm.buffers import ALIGN, BufferPlan, Slot
from jitlib.backends.llvm.compiler import get_compiler
from jitlib.hlo.ir import output_types
from jitlib.hlo.ops import Op


def build(instr, body, cond, host):
    """The NativeLoop of `while` instruction `instr`, or None where its carry or its
    regions do not allow one. `body`, `cond`: the regions' LLVMExecutables (`cond` is not
    used when the trip count is known); `host` runs the loop for carries the native one
    cannot take (not C-contiguous, another type)."""
    trips = instr.attrs.get("trip_count")
    body = Steps.of(body)
    cond = Steps.of(cond) if trips is None else None
    if body is None or (trips is None and cond is None):
        return None
    layout = _carry_layout(body)
    if layout is None:
        return None
    if cond is not None and cond.plan.results[0][0] != "fresh":
        return None   # a condition that hands back a carried bool as it is: rare
    return NativeLoop(instr, body, cond, layout, host)


class Steps:
    """A region's kernels as the calls a native loop makes: compiled kernels (small
    ones: a loop of large ones gains nothing here and would lose the threads), and
    plain float matrix products, which call NumPy's BLAS gemm directly (the same
    library the host-driven loop reaches through np.matmul), then their compiled
    epilogue. `table` lists the function addresses (per step: its kernel, or gemm and
    epilogue), then the constants' data; `entry[s]` is step s's first."""

    @classmethod
    def of(cls, executable):
        """The Steps of an LLVMExecutable, or None where some step is neither."""
        if executable is None or not program.eligible(executable.optimized, loops=True):
            return None
        try:
            return cls(executable)
        except _NotNative:
            return None

    def __init__(self, executable):
        from jitlib.backends.llvm.executable import DotRunner, NativeRunner
        self.module = module = executable.optimized
        self.runners = {i: r for i, r in executable._steps if r is not None}
        plan = BufferPlan(module, {f: output_types(f) for f in self.runners})
        self.plan, self._params = plan, [(p.shape, p.dtype) for p in module.params]
        self.dots, self.loops, self.entry, addresses = {}, {}, [], []
        at = plan.arena_bytes
        for f in plan.steps:
            runner = self.runners[f]
            self.entry.append(len(addresses))
            if type(runner) is NativeRunner and runner.small:
                addresses.append(runner.address)
            elif type(runner) is NativeLoop:
                # its raw entry point, its own table past the wrapper's entry, and arena
                addresses += [runner.raw_address, runner.table_pointer]
                self.loops[f], at = at, at + _aligned(runner.arena_bytes)
            elif type(runner) is DotRunner:
                dot = _plain_product(f, runner)
                addresses.append(dot.gemm)
                if runner._epilogue is not None:
                    addresses.append(runner._epilogue.address)
                if dot.scratch:
                    dot.at, at = at, at + _aligned(dot.nbytes)
                self.dots[f] = dot
            else:
                raise _NotNative()
        self.arena_bytes = at
        self.products = bool(self.dots) or any(
            self.runners[f].products for f in self.loops)
        # outputs that some later step or the region's results read
        read = {plan.key(o) for f in plan.steps for o in f.operands}
        self._read = read | {plan.key(r) for r in module.results}
        self.n_entries = len(addresses)
        self.table = np.array(addresses + [c.ctypes.data for c in plan.constants], np.uint64)

    def accepts(self, arrays):
        """Whether `arrays` are C-contiguous ndarrays of exactly the parameters' types."""
        return len(arrays) == len(self._params) and all(
            type(a) is np.ndarray and a.shape == shape and a.dtype == dtype
            and a.flags.c_contiguous for a, (shape, dtype) in zip(arrays, self._params))

    def emit(self, lines, table, first, pointer, prefix, variants):
        """The calls of the steps, the table's entries from `first` on; `pointer(slot,
        name)` gives a slot's pointer; `variants`: step -> table entry to call instead."""
        plan, slots, key = self.plan, self.plan.slots, self.plan.key
        consts = [program.table_entry(lines, table, first + self.n_entries + c,
                                      f"{prefix}const{c}") for c in range(len(plan.constants))]

        def slot_pointer(slot, name):
            return consts[slot.at] if slot.kind == "const" else pointer(slot, name)

        def call(n, name, pointers):
            callee = program.table_entry(lines, table, n, name)
            args = ", ".join([f"ptr {p}" for p in pointers] + ["i64 0", "i64 1"])
            lines.append(f"  call void {callee}({args})")

        for s, f in enumerate(plan.steps):
            ins = [slot_pointer(slots[key(o)], f"{prefix}s{s}.in{i}")
                   for i, o in enumerate(f.operands)]
            outs = [slot_pointer(slots[(f, j)], f"{prefix}s{s}.out{j}")
                    for j in range(len(output_types(f)))]
            n = variants.get(s, first + self.entry[s])
            if f in self.loops:
                self._emit_loop(lines, table, n, f, ins, outs, pointer, f"{prefix}s{s}.")
                continue
            if f not in self.dots:
                call(n, f"{prefix}kernel{s}", ins + outs)
                continue
            dot, runner = self.dots[f], self.runners[f]
            product = (pointer(Slot("arena", dot.at), f"{prefix}s{s}.product")
                       if dot.scratch else outs[runner._results.index(None)])
            t, m, k, nn = dot.scalar, dot.m, dot.k, dot.n
            gemm = program.table_entry(lines, table, n, f"{prefix}gemm{s}")
            lines.append(
                f"  call void {gemm}(i32 101, i32 {dot.trans_a}, i32 {dot.trans_b}, i64 {m}, "
                f"i64 {nn}, i64 {k}, {t} 1.0, ptr {ins[dot.lhs]}, i64 {dot.lda}, "
                f"ptr {ins[dot.rhs]}, i64 {dot.ldb}, {t} 0.0, ptr {product}, i64 {nn})")
            if runner._epilogue is not None:
                params = [ins[p.attrs["index"]] for p in runner._epilogue_params]
                results = [None] * len(runner._epilogue.outputs)
                for j, r in enumerate(runner._results):
                    if r is not None:
                        results[r] = outs[j]
                call(n + 1, f"{prefix}epilogue{s}", params + [product] + results)


    def _emit_loop(self, lines, table, n, f, ins, outs, pointer, prefix):
        """A nested native loop's call: its raw function on the operands, the outputs of
        the carries it changes and its part of the arena; a carry it leaves as it is
        (`invariant`) is copied to its output where something reads that."""
        loop = self.runners[f]
        fn = program.table_entry(lines, table, n, f"{prefix}loop")
        loop_table = program.table_entry(lines, table, n + 1, f"{prefix}table")
        arena = pointer(Slot("arena", self.loops[f]), f"{prefix}arena")
        args = [loop_table] + ins + [outs[k] for k in loop.moving] + [arena]
        lines.append(f"  call void {fn}({', '.join(f'ptr {a}' for a in args)})")
        for k, entry in enumerate(loop.layout):
            if entry == "invariant" and (f, k) in self._read:
                lines.append(f"  call void @llvm.memcpy.p0.p0.i64(ptr {outs[k]}, "
                             f"ptr {ins[k]}, i64 {loop.nbytes[k]}, i1 false)")


class _NotNative(Exception):
    pass


class _Product:
    """A dot kernel's product as one row-major gemm: operand numbers of the kernel for
    the left and right matrices, sizes, the scalar type, and where the product goes."""

    def __init__(self, **fields):
        self.__dict__.update(fields)


_NO_TRANS, _TRANS = 111, 112   # CBLAS_TRANSPOSE


def _gemm_operand(ndim, contract, first):
    """(trans, free dims) of a C-contiguous operand that is one row-major matrix: its free dims then its contract dims ([m, k] for the left, `first` ==
    "free") or the other way round, each block in order; else raise _NotNative."""
    free = tuple(d for d in range(ndim) if d not in contract)
    if tuple(sorted(contract)) != tuple(contract):
        raise _NotNative()
    order = tuple(range(ndim))
    if (free + contract if first == "free" else contract + free) == order:
        return _NO_TRANS, free
    if (contract + free if first == "free" else free + contract) == order:
        return _TRANS, free
    raise _NotNative()


def _plain_product(kernel, runner):
    """The _Product of a DotRunner whose product is one gemm, [m, k] @ [k, n] in f32 or
    f64 with either operand transposed (a matrix-vector or vector-vector product
    included), over kernel operands (reshaped at most), else raise _NotNative."""
    dot = runner._dot
    a = dot.attrs
    lhs, rhs = dot.operands
    if np.dtype(dot.dtype) not in _GEMM or lhs.dtype != dot.dtype or rhs.dtype != dot.dtype \
            or a["lhs_batch"] or _GEMM_ADDRESS.get(np.dtype(dot.dtype)) is None:
        raise _NotNative()
    trans_a, lhs_free = _gemm_operand(lhs.ndim, tuple(a["lhs_contract"]), "free")
    trans_b, rhs_free = _gemm_operand(rhs.ndim, tuple(a["rhs_contract"]), "contract")
    if runner._epilogue is not None and not runner._epilogue.small:
        raise _NotNative()
    if any(r is not None and r >= len(runner._epilogue.outputs) for r in runner._results) \
            or (runner._epilogue is not None and sorted(
                r for r in runner._results if r is not None)
                != list(range(len(runner._epilogue.outputs)))):
        raise _NotNative()

    def operand(value):
        # a reshape of a C-contiguous array is the same memory
        while value.op is Op.RESHAPE:
            value = value.operands[0]
        if value.op is not Op.PARAMETER:
            raise _NotNative()
        return value.attrs["index"]

    if any(i.op not in (Op.RESHAPE, Op.DOT_GENERAL) for i in runner._steps):
        raise _NotNative()
    m = math.prod(lhs.shape[d] for d in lhs_free)
    n = math.prod(rhs.shape[d] for d in rhs_free)
    k = math.prod(lhs.shape[d] for d in a["lhs_contract"])
    if 0 in (m, n, k):
        raise _NotNative()
    dt = np.dtype(dot.dtype)
    return _Product(lhs=operand(lhs), rhs=operand(rhs), m=m, k=k, n=n, scalar=_GEMM[dt],
                    trans_a=trans_a, trans_b=trans_b,
                    lda=k if trans_a == _NO_TRANS else m, ldb=n if trans_b == _NO_TRANS else k,
                    gemm=_GEMM_ADDRESS[dt], scratch=None not in runner._results,
                    nbytes=m * n * dt.itemsize, at=0)


_GEMM = {np.dtype(np.float32): "float", np.dtype(np.float64): "double"}


def _gemm_addresses():
    """NumPy's OpenBLAS cblas_?gemm (ILP64, scipy-openblas names) by dtype, where found."""
    path = blas_threads.library_path()
    found = {}
    if path is None:
        return found
    try:
        lib = ctypes.CDLL(path)
        for dt, name in ((np.float32, "sgemm"), (np.float64, "dgemm")):
            fn = getattr(lib, f"scipy_cblas_{name}64_")
            found[np.dtype(dt)] = ctypes.cast(fn, ctypes.c_void_p).value
    except (OSError, AttributeError):
        return {}
    return found


_GEMM_ADDRESS = _gemm_addresses()


def _carry_layout(body):
    """Per carry position: "invariant", ("moved", m) (the body returns its parameter m
    there: `a, b = b, a`), ("ping-pong", n) or ("in place", n, step), n the body
    result's fresh slot; None if some result is none of these (a constant, one kernel
    output carried twice)."""
    module, plan = body.module, body.plan
    layout, seen = [], set()
    position = {f: s for s, f in enumerate(plan.steps)}
    for k, (kind, at) in enumerate(plan.results):
        if kind == "copy":
            if at.kind != "param":
                return None
            layout.append("invariant" if at.at == k else ("moved", at.at))
            continue
        if at in seen:
            return None
        seen.add(at)
        f, j = next(key for key, slot in plan.slots.items()
                    if slot == Slot("result", at))
        step = position[f]
        if j == 0 and _updates_in_place(f, module.params[k], plan.steps[step + 1:]):
            layout.append(("in place", at, step))
        else:
            layout.append(("ping-pong", at))
    return layout


def _updates_in_place(kernel, param, later_steps):
    """Whether `kernel` is a scatter or a windowed dynamic_update_slice into carry `param`
    that may write the carry's own memory: it reads `param` only as that op's operand,
    and no later step reads it."""
    if kernel.op is not Op.FUSION:   # a loop nested in the body
        return False
    body = kernel.attrs["body"]
    root = body.results[0] if len(body.results) == 1 else None
    if root is None:
        return False
    scatter = kernel.attrs["kind"] == "opaque" and root.op is Op.SCATTER
    window = kernel.attrs["kind"] == "loop" and kernels.windowed_update(
        root, list(body.params), kernels.runs_whole(list(body.params), [root]))
    if not (scatter or window):
        return False
    operand = root.operands[0]
    if operand.op is not Op.PARAMETER or kernel.operands[operand.attrs["index"]] is not param:
        return False
    if sum(o is param for o in kernel.operands) != 1:
        return False
    # inside the kernel too, the carry is only the operand: the window's values read
    # from it (x[1:-1] = x[:-2] + x[2:]) would see their own writes
    readers = [i for i in body.instructions if operand in i.operands]
    if readers != [root] or list(root.operands).count(operand) != 1:
        return False
    return not any(param in step.operands for step in later_steps)


class NativeLoop:
    """A `while` run by one native call: `__call__(values)` gives the final carry."""

    writes_into = False   # it allocates the carry's results itself

    def __init__(self, instr, body, cond, layout, host):
        self._host = host
        self.trips = instr.attrs.get("trip_count")
        self.layout = layout
        carry = [(p.shape, p.dtype) for p in body.module.params]
        self._carry = carry
        self.nbytes = [int(np.prod(s, dtype=np.int64)) * np.dtype(d).itemsize
                        for s, d in carry]
        # in-place scatters and window updates run a variant of their kernel that does
        # not copy the operand
        self._variants = {}
        for entry in layout:
            if entry[0] == "in place":
                kernel = body.plan.steps[entry[2]]
                name, region = kernel.attrs["name"] + "_in_place", kernel.attrs["body"]
                native = (opaque.render(name, region, in_place=True)
                          if kernel.attrs["kind"] == "opaque" else
                          kernels.render_loop(name, list(region.params), list(region.results),
                                              stream=False, in_place=True))
                self._variants[entry[2]] = get_compiler().load(native.ir, native.name)
        # arena: the body's, the condition's, the condition's result, then the carries'
        at = _aligned(body.arena_bytes)
        self._cond_arena = at
        if cond is not None:
            at += _aligned(cond.arena_bytes)
            self._cond_result = at
            at += ALIGN
        self._buffers = {}
        for k, entry in enumerate(layout):
            if entry == "invariant":
                continue
            copies = 1 if entry[0] == "in place" else 2
            self._buffers[k] = [at + c * _aligned(self.nbytes[k]) for c in range(copies)]
            at += copies * _aligned(self.nbytes[k])
        self.arena_bytes = at
        self._body, self._cond = body, cond
        self.products = body.products or (cond is not None and cond.products)
        self.moving = [k for k, e in enumerate(layout) if e != "invariant"]
        # entry 0: the raw loop, which the wrapper calls with the table past it. The trip
        # count is the last entry, not a literal: loops that differ only in it (an inner
        # loop of j trips for each j) share one compiled loop
        self._table = np.concatenate(
            [np.zeros(1, np.uint64), body.table]
            + ([cond.table] if cond is not None else [])
            + [np.array([c.address for c in self._variants.values()], np.uint64),
               np.array([self.trips or 0], np.uint64)])
        self.ir = self._render()
        self._code = get_compiler().load(self.ir, "loop")
        self.raw_address = self._table[0] = self._code.address
        self.table_pointer = self._table.ctypes.data + self._table.itemsize
        arity = 2 + len(carry) + len(self.moving)
        self._fn = program._driver_type(arity)(_wrapper(arity).address)

    def __call__(self, values, outs=None):
        if self.trips == 0 or not self._body.accepts(values):
            return self._host(values)
        results = [np.empty(*self._carry[k]) for k in self.moving]
        arena = np.empty(max(self.arena_bytes, 1), np.uint8)
        if self.products:
            with blas_threads.single_threaded():
                self._fn(self._table, *values, *results, arena)
        else:
            self._fn(self._table, *values, *results, arena)
        out = list(values)
        for k, r in zip(self.moving, results):
            out[k] = r
        return out

    # -- the LLVM text

    def _render(self):
        body, cond, layout = self._body, self._cond, self.layout
        n = len(self._carry)
        args = ["ptr %table"] + [f"ptr %init{k}" for k in range(n)]
        args += [f"ptr %res{k}" for k in self.moving] + ["ptr %arena"]
        lines = ["declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)",
                 f'define void @"loop"({", ".join(args)}) nounwind {{', "entry:"]
        table, arena = "%table", "%arena"
        init = [f"%init{k}" for k in range(n)]

        def at(offset, name):
            lines.append(f"  %{name} = getelementptr i8, ptr {arena}, i64 {offset}")
            return f"%{name}"

        buffers = {k: [at(o, f"buf{k}.{c}") for c, o in enumerate(offsets)]
                   for k, offsets in self._buffers.items()}
        for k, entry in enumerate(layout):
            if entry != "invariant" and entry[0] == "in place":
                lines.append(f"  call void @llvm.memcpy.p0.p0.i64(ptr {buffers[k][0]}, "
                             f"ptr {init[k]}, i64 {self.nbytes[k]}, i1 false)")
        if self.trips is not None:
            lines.append(f"  %trips.p = getelementptr i64, ptr {table}, "
                         f"i64 {len(self._table) - 2}")
            lines.append("  %trips = load i64, ptr %trips.p")
        lines += ["  br label %head", "head:", "  %t = phi i64 [0, %entry], [%t.next, %latch]"]
        # where each carry is now, and where a ping-pong carry's next value goes
        current = {}
        for k, entry in enumerate(layout):
            if entry == "invariant":
                current[k] = init[k]
            elif entry[0] == "in place":
                current[k] = buffers[k][0]
            else:   # ping-pong, moved
                lines.append(f"  %c{k} = phi ptr [{init[k]}, %entry], [%w{k}, %latch]")
                lines.append(f"  %w{k} = phi ptr [{buffers[k][0]}, %entry], "
                             f"[%w{k}.next, %latch]")
                current[k] = f"%c{k}"
        offset = len(body.table)
        if self.trips is not None:
            lines.append("  %go = icmp ult i64 %t, %trips")
        else:
            self._emit_module(lines, cond, table, offset, current, arena, self._cond_arena,
                              {0: at(self._cond_result, "cond.out")}, "c.")
            lines.append("  %go.byte = load i8, ptr %cond.out")
            lines.append("  %go = icmp ne i8 %go.byte, 0")
        lines += ["  br i1 %go, label %trip, label %exit", "trip:"]
        written = {}
        for k, entry in enumerate(layout):
            if entry != "invariant" and entry[0] == "moved":
                # copied first: a scatter in place may write the source later this trip
                lines.append(f"  call void @llvm.memcpy.p0.p0.i64(ptr %w{k}, "
                             f"ptr {current[entry[1]]}, i64 {self.nbytes[k]}, i1 false)")
            elif entry != "invariant":
                written[entry[1]] = f"%w{k}" if entry[0] == "ping-pong" else buffers[k][0]
        variant_base = offset + (len(cond.table) if cond is not None else 0)
        variants = {step: variant_base + v for v, step in enumerate(self._variants)}
        self._emit_module(lines, body, table, 0, current, arena, 0, written, "b.", variants)
        lines += ["  br label %latch", "latch:", "  %t.next = add i64 %t, 1",
                  "  %first = icmp eq i64 %t, 0"]
        for k, entry in enumerate(layout):
            if entry != "invariant" and entry[0] != "in place":
                # the buffer this trip read becomes the next one's to write
                lines.append(f"  %w{k}.next = select i1 %first, ptr {buffers[k][1]}, "
                             f"ptr %c{k}")
        lines += ["  br label %head", "exit:"]
        for k in self.moving:
            lines.append(f"  call void @llvm.memcpy.p0.p0.i64(ptr %res{k}, "
                         f"ptr {current[k]}, i64 {self.nbytes[k]}, i1 false)")
        lines += ["  ret void", "}", ""]
        return "\n".join(lines)

    @staticmethod
    def _emit_module(lines, steps, table, first, params, arena, arena_at, results, prefix,
                     variants=None):
        """The calls of region `steps`, its table entries from `first` on: its
        parameters at `params`, its fresh results at `results`, its temporaries in the
        arena from `arena_at` on. `variants`: step -> table entry of a kernel to call
        instead."""
        def pointer(slot, name):
            if slot.kind == "arena":
                lines.append(f"  %{name} = getelementptr i8, ptr {arena}, "
                             f"i64 {arena_at + slot.at}")
                return f"%{name}"
            return params[slot.at] if slot.kind == "param" else results[slot.at]

        steps.emit(lines, table, first, pointer, prefix, variants or {})


_WRAPPERS = {}   # arity -> KernelCode: one wrapper per number of arguments, kept


def _wrapper(arity):
    """`void @loop_py(table, arrays...)` for Python's call (ndarray objects in): the
    arrays' data pointers to the raw loop at the table's entry 0, with the table past
    it. The same text for every loop of this arity: compiled once per process."""
    code = _WRAPPERS.get(arity)
    if code is None:
        params = ", ".join(f"ptr %a{i}" for i in range(arity))
        lines = [f'define void @"loop_py"({params}) nounwind {{', "entry:"]
        data = [program.data_pointer(lines, f"a{i}") for i in range(arity)]
        lines += [f"  %fn = load ptr, ptr {data[0]}",
                  f"  %rest = getelementptr i64, ptr {data[0]}, i64 1"]
        args = ", ".join(["ptr %rest"] + [f"ptr {d}" for d in data[1:]])
        lines += [f"  call void %fn({args})", "  ret void", "}", ""]
        code = _WRAPPERS[arity] = get_compiler().load("\n".join(lines), "loop_py",
                                                      quick=True)
    return code


def _aligned(nbytes):
    return -(-nbytes // ALIGN) * ALIGN
