"""A `while` as one native loop: the body's kernels called from an LLVM loop, with no
return to Python between trips.

The host-driven loop (backends/control.py) costs a few microseconds of Python per kernel
per trip, more than a small body's kernels take. Where the body (and the condition, when
the trip count is not known) has a program driver (program.py: every kernel compiled and
small), this module renders one function

    void @loop(ptr %table, ptr %init0, ..., ptr %res0, ..., ptr %arena)

that runs the condition's and the body's kernel calls in an LLVM loop. The carry lives
in pointers that change each trip:

  invariant  a body result that is the body's own parameter at the same position (a
             weight, the sequence scanned over): the caller's array, read in place.
  ping-pong  a kernel output: written into one of two arena buffers, the one the carry
             does not hold now (trip 0 writes the first, never the caller's array), so
             no kernel writes memory that its inputs are still read from.
  moved      another position's parameter (`a, b = b, a`): copied at the trip's start
             into ping-pong buffers of its own, so no buffer is read two trips later.
  in place   a scatter that updates its own carry (scan's stacked ys): the carry is
             copied into an arena buffer once, then each trip's scatter writes only the
             rows it sets, from a variant of its kernel without the operand copy.

After the last trip each carry that is not invariant is copied into a fresh result. The
GIL stays held, as for a program driver: the loop's kernels are small ones.
"""
import numpy as np

from jitlib.backends.llvm import opaque, program
from jitlib.backends.llvm.buffers import ALIGN, Slot
from jitlib.backends.llvm.compiler import get_compiler
from jitlib.hlo.ops import Op


def build(instr, body, cond, host):
    """The NativeLoop of `while` instruction `instr`, or None where its carry or its
    regions do not allow one. `body`, `cond`: the regions' LLVMExecutables (`cond` is not
    used when the trip count is known); `host` runs the loop for carries the native one
    cannot take (not C-contiguous, another type)."""
    trips = instr.attrs.get("trip_count")
    if body.program is None or (trips is None and cond.program is None):
        return None
    layout = _carry_layout(body.program)
    if layout is None:
        return None
    if trips is None and cond.program.plan.results[0][0] != "fresh":
        return None   # a condition that hands back a carried bool as it is: rare
    return NativeLoop(instr, body.program, None if trips is not None else cond.program,
                      layout, host)


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
    """Whether `kernel` is a scatter into carry `param` that may write the carry's own
    memory: it reads `param` only as the scatter's operand, and no later step reads it."""
    body = kernel.attrs["body"]
    root = body.results[0] if len(body.results) == 1 else None
    if kernel.attrs["kind"] != "opaque" or root is None or root.op is not Op.SCATTER:
        return False
    operand = root.operands[0]
    if operand.op is not Op.PARAMETER or kernel.operands[operand.attrs["index"]] is not param:
        return False
    if sum(o is param for o in kernel.operands) != 1:
        return False
    return not any(param in step.operands for step in later_steps)


class NativeLoop:
    """A `while` run by one native call: `__call__(values)` gives the final carry."""

    writes_into = False   # it allocates the carry's results itself

    def __init__(self, instr, body, cond, layout, host):
        self._host = host
        self.trips = instr.attrs.get("trip_count")
        self._layout = layout
        carry = [(p.shape, p.dtype) for p in body.module.params]
        self._carry = carry
        self._nbytes = [int(np.prod(s, dtype=np.int64)) * np.dtype(d).itemsize
                        for s, d in carry]
        # in-place scatters run a variant of their kernel that does not copy the operand
        self._variants = {}
        for entry in layout:
            if entry[0] == "in place":
                kernel = body.plan.steps[entry[2]]
                native = opaque.render(kernel.attrs["name"] + "_in_place",
                                       kernel.attrs["body"], in_place=True)
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
            self._buffers[k] = [at + c * _aligned(self._nbytes[k]) for c in range(copies)]
            at += copies * _aligned(self._nbytes[k])
        self.arena_bytes = at
        self._body, self._cond = body, cond
        self._table = np.concatenate(
            [body._table] + ([cond._table] if cond is not None else [])
            + [np.array([c.address for c in self._variants.values()], np.uint64)])
        self.ir = self._render()
        self._code = get_compiler().load(self.ir, "loop")
        self._moving = [k for k, e in enumerate(layout) if e != "invariant"]
        self._fn = program._driver_type(2 + len(carry) + len(self._moving))(self._code.address)

    def __call__(self, values, outs=None):
        if self.trips == 0 or not self._body.accepts(values):
            return self._host(values)
        results = [np.empty(*self._carry[k]) for k in self._moving]
        arena = np.empty(max(self.arena_bytes, 1), np.uint8)
        self._fn(self._table, *values, *results, arena)
        out = list(values)
        for k, r in zip(self._moving, results):
            out[k] = r
        return out

    # -- the LLVM text

    def _render(self):
        body, cond, layout = self._body, self._cond, self._layout
        n = len(self._carry)
        args = ["ptr %table"] + [f"ptr %init{k}" for k in range(n)]
        args += [f"ptr %res{k}" for k in self._moving_positions()] + ["ptr %arena"]
        lines = ["declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)",
                 f'define void @"loop"({", ".join(args)}) nounwind {{', "entry:"]
        table = program.data_pointer(lines, "table")
        init = [program.data_pointer(lines, f"init{k}") for k in range(n)]
        arena = program.data_pointer(lines, "arena")

        def at(offset, name):
            lines.append(f"  %{name} = getelementptr i8, ptr {arena}, i64 {offset}")
            return f"%{name}"

        buffers = {k: [at(o, f"buf{k}.{c}") for c, o in enumerate(offsets)]
                   for k, offsets in self._buffers.items()}
        for k, entry in enumerate(layout):
            if entry != "invariant" and entry[0] == "in place":
                lines.append(f"  call void @llvm.memcpy.p0.p0.i64(ptr {buffers[k][0]}, "
                             f"ptr {init[k]}, i64 {self._nbytes[k]}, i1 false)")
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
        offset = len(body.plan.steps) + len(body.plan.constants)
        if self.trips is not None:
            lines.append(f"  %go = icmp ult i64 %t, {self.trips}")
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
                             f"ptr {current[entry[1]]}, i64 {self._nbytes[k]}, i1 false)")
            elif entry != "invariant":
                written[entry[1]] = f"%w{k}" if entry[0] == "ping-pong" else buffers[k][0]
        variant_base = offset + (len(cond.plan.steps) + len(cond.plan.constants)
                                 if cond is not None else 0)
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
        for r, k in enumerate(self._moving_positions()):
            result = program.data_pointer(lines, f"res{k}")
            lines.append(f"  call void @llvm.memcpy.p0.p0.i64(ptr {result}, "
                         f"ptr {current[k]}, i64 {self._nbytes[k]}, i1 false)")
        lines += ["  ret void", "}", ""]
        return "\n".join(lines)

    def _moving_positions(self):
        return [k for k, e in enumerate(self._layout) if e != "invariant"]

    @staticmethod
    def _emit_module(lines, prog, table, first, params, arena, arena_at, results, prefix,
                     variants=None):
        """The calls of program `prog`'s kernels, its table entries from `first` on: its
        parameters at `params`, its fresh results at `results`, its temporaries in the
        arena from `arena_at` on. `variants`: step -> table entry of a kernel to call
        instead."""
        plan, variants = prog.plan, variants or {}
        consts = [program.table_entry(lines, table, first + len(plan.steps) + c,
                                      f"{prefix}const{c}") for c in range(len(plan.constants))]

        def pointer(slot, name):
            if slot.kind == "arena":
                lines.append(f"  %{name} = getelementptr i8, ptr {arena}, "
                             f"i64 {arena_at + slot.at}")
                return f"%{name}"
            if slot.kind == "const":
                return consts[slot.at]
            return params[slot.at] if slot.kind == "param" else results[slot.at]

        def kernel(s):
            return program.table_entry(lines, table, variants.get(s, first + s),
                                       f"{prefix}kernel{s}")

        program.emit_calls(lines, plan, prog.kernels, pointer, kernel, prefix)


def _aligned(nbytes):
    return -(-nbytes // ALIGN) * ALIGN
