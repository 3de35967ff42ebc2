"""Loop nests per kernel kind: the LLVM IR text of one FUSION kernel.

Every kernel is `void @name(ptr %in0, ..., ptr %out0, ..., i64 %part, i64 %parts)`:
C-contiguous buffers, one per body parameter (or per input) then one per result, then
which share of the work to do. Shapes are static, so every stride and almost every trip
count is a constant and LLVM sees plain counted loops. The outermost loop that has more
than one iteration runs over its share, [n*part/parts, n*(part+1)/parts): threads calling
the kernel with parts = 2 and part = 0, 1 split it between them, and since each element
(loop kernels) or each row (reduction kernels) is computed whole by one thread, the
results are the same bits for any number of parts. A reduction with a single row cannot
be split (`splittable`): its order would change.

  loop       a nest over the output shape; one flat loop when every op maps the output
             index to itself or to a scalar, so the vectorizer sees one simple loop.
  reduction  per kept index k: each reduction in body order as a loop over the reduced
             dims R; then one loop over R writing the S-shaped outputs; then the
             K-shaped outputs. Float sums add blocks of SUM_BLOCK elements in vector
             lanes (`reassoc`; in kernels that prefetch, explicit vector accumulators
             fed a group at a time: `grouped_block`) and the block sums in order with
             compensation (`float_sum`); products run through one `reassoc`
             accumulator. Orders and error bounds against NumPy's pairwise sum:
             docs/cpu_reductions.md. f16/bf16 accumulate in f32 and round once.
             max/min give the left fold of
             np.maximum's rule (NaN wins, NumPy's tie rule); floats get there through a
             vectorized pass (`float_extreme`), without its NaN detector where no
             output can show the max of a NaN row (`_nan_blind_maxima`: softmax,
             logsumexp). argmax/argmin keep the first extreme, NaN first. A costly
             summed value that the write pass needs again (softmax's exp) is stored
             into an output row by the sum pass and read back by the write pass
             (`_kept_in_outputs`): evaluated once per element.
             Any other costly value that several of the row's loops read (chained
             row stages: each stage's loops read the last one's output) is computed
             once per row into a stack row buffer (`_row_buffer_plan`).
             Over large data the sum pass prefetches the next row (`prefetch_ahead`)
             and the one row-shaped output is streamed (below), the kept value then
             living in a row buffer on the stack.
  dot        `DotKernel`: the executable runs the dot_general in NumPy (its BLAS), then
             the elementwise epilogue here as a loop kernel reading the dot's result.
             First step only: the target is BLAS plus the epilogue fused in one pass
             over the output, chosen by benchmark.
  opaque     a scan or a scatter: rendered by opaque.py (`rendered.render_fusion` picks it).

Kernels that move at least streaming.STREAM_MIN_BYTES write a flat loop kernel's one
output, or a row kernel's one row-shaped output, with non-temporal stores in line-aligned
blocks (`_streamed_range`, streaming.py), and fence them before returning.

Anything the emitter cannot express raises `Unsupported`: the kernel then falls back to
the interpreter instead of guessing.
"""
import dataclasses
import platform
import re

import numpy as np

from jitlib.backends.elemental import Index
from jitlib.backends.llvm import parallel, streaming
from jitlib.backends.llvm.emitter import (
    NARROW, Elemental, FunctionText, Unsupported, compute_type, iadd, imul, isub, literal, load,
    memory_type, minmax, narrow, store)
from jitlib.fusion.reduction_form import plan_reduction
from jitlib.hlo import dtypes
from jitlib.hlo import ops as O
from jitlib.hlo.ops import Op

# Float sums add this many elements in vector lanes, then add the block's sum to the
# row's total with compensation: the error bound no longer grows with the row length.
SUM_BLOCK = 256
# argmax/argmin search a row this many elements at a time (`arg_extreme`); rows no
# longer keep the in-order fold
ARG_BLOCK = 64
_ARG_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
# In kernels that prefetch, a full block is summed by SUM_VECTORS explicit accumulators
# of 64 bytes each (`grouped_block`), one group of SUM_VECTORS vectors at a time, each
# group prefetching its own lines ahead.
SUM_VECTORS = 4
# Row kernels prefetch the inputs' next row (`prefetch_ahead`) when one row of all their
# full-size inputs is at most PREFETCH_MAX_ROW_BYTES (further ahead would not stay in L2
# until used), and at least PREFETCH_MIN_BYTES ahead (short rows: several rows on).
PREFETCH_MAX_ROW_BYTES = 64 << 10
PREFETCH_MIN_BYTES = 2 << 10
# On hosts that take L1 prefetches well (streaming.l1_prefetch_host: AMD Zen), rows of at
# most this many bytes (all full-size inputs) are prefetched into L1 as well
# (prefetcht0), longer ones into L2 (prefetcht1): the row ahead then sits beside the row
# being computed in the 48 KiB L1, and the row's first pass reads it from L1 instead of
# L2 (docs/performance.md). Elsewhere every row goes to L2.
PREFETCH_L1_MAX_ROW_BYTES = 16 << 10


@dataclasses.dataclass
class NativeKernel:
    """One LLVM function: `inputs` and `outputs` are body instructions, in argument order."""
    name: str
    ir: str
    inputs: list
    outputs: list
    splittable: bool = True     # whether calls with parts > 1 are allowed
    split_extent: int = 0       # trip count of the loop that (part, parts) splits


@dataclasses.dataclass
class DotKernel:
    """A dot_general run in NumPy, then `epilogue` (or nothing) over its result."""
    dot: object
    epilogue: NativeKernel | None
    results: list     # per body result: None for the dot itself, else an epilogue output


# -- loops

def loop(fn, n, body, scalar=False):
    """Emit `for i in range(n): body(i)` (n static); nothing for n == 0, no loop for 1."""
    if n == 0:
        return
    if n == 1:
        body(0)
        return
    _counted_loop(fn, "loop", "0", n, body, scalar=scalar)


def share(fn, n, body):
    """Emit `for i in range(lo, hi): body(i)` over this call's share of range(n); in a
    kernel that always runs whole (`fn.whole`), the plain static loop over range(n)."""
    if fn.whole:
        loop(fn, n, body)
        return
    if n == 0:
        return
    lo, hi = share_bounds(fn, n)
    # a share may be empty (more parts than iterations): test before the first trip
    _counted_loop(fn, "share", lo, hi, body, guard=f"icmp ult i64 {lo}, {hi}")


# A split flat loop runs over blocks of SHARE_BLOCK elements (`share_blocks`): the inner
# loop's trip count is a constant the vectorizer covers with no remainder loop, and only
# the last share runs the n % SHARE_BLOCK elements left: half the code, compiled faster.
SHARE_BLOCK = 64


def share_blocks(fn, n, body):
    """`share(fn, n, body)` for a flat elementwise loop, by blocks."""
    if fn.whole or n < 2 * SHARE_BLOCK:
        share(fn, n, body)
        return
    blocks, rest = divmod(n, SHARE_BLOCK)
    share(fn, blocks, lambda b: loop(
        fn, SHARE_BLOCK, lambda j: body(iadd(fn, imul(fn, b, SHARE_BLOCK), j))))
    if rest:   # the last share (part + 1 == parts) takes the elements past the blocks
        last = fn.op(f"icmp eq i64 {fn.op('add nuw nsw i64 %part, 1', 'p')}, %parts", "c")
        tail, done = fn.label("tail"), fn.label("done")
        fn.emit(f"br i1 {last}, label %{tail}, label %{done}")
        fn.start_block(tail)
        loop(fn, rest, lambda j: body(iadd(fn, j, blocks * SHARE_BLOCK)))
        fn.emit(f"br label %{done}")
        fn.start_block(done)


def share_bounds(fn, n):
    """This call's share [lo, hi) of range(n), as i64 values."""
    fn.split_extent = max(fn.split_extent, n)
    lo = fn.op(f"udiv i64 {fn.op(f'mul nuw nsw i64 %part, {n}', 'lo')}, %parts", "lo")
    end = fn.op(f"add nuw nsw i64 %part, 1", "hi")
    hi = fn.op(f"udiv i64 {fn.op(f'mul nuw nsw i64 {end}, {n}', 'hi')}, %parts", "hi")
    return lo, hi


def _counted_loop(fn, name, start, end, body, guard=None, scalar=False):
    """The loop blocks both helpers emit: `for (i = start; i < end; ++i) body(i)`, entered
    unconditionally, or only when `guard` holds; `scalar` asks LLVM to keep it a plain
    loop (fn.scalar_hint)."""
    head, latch, done = fn.label(name), fn.label("latch"), fn.label("done")
    pred = fn.block
    if guard is None:
        fn.emit(f"br label %{head}")
    else:
        fn.emit(f"br i1 {fn.op(guard, 'c')}, label %{head}, label %{done}")
    fn.start_block(head)
    i = fn.tmp("i")
    fn.emit(f"{i} = phi i64 [{start}, %{pred}], [{i}.next, %{latch}]")
    math_calls, loops = fn.math_calls, fn.loops
    fn.loops += 1
    body(i)
    fn.emit(f"br label %{latch}")
    fn.start_block(latch)
    fn.emit(f"{i}.next = add nuw nsw i64 {i}, 1")
    more = fn.op(f"icmp ult i64 {i}.next, {end}", "c")
    hint = ""
    if scalar:
        hint = f", !llvm.loop {fn.scalar_hint()}"
    elif fn.math_calls == math_calls + 1:
        # copies of one inlined exp/tanh cost compile time only; a body with several is
        # left to LLVM, which interleaves it less than the 4 stated here (the stated 4
        # made long chains of row stages compile much slower)
        hint = f", !llvm.loop {fn.math_loop_hint()}"
    elif fn.loops > loops + 1 and isinstance(end, int):
        # an outer loop of few iterations: LLVM unrolled it fully, copying the vectorized
        # inner loop each time: far more code and LLVM time, and no faster
        hint = f", !llvm.loop {fn.rolled_hint()}"
    fn.emit(f"br i1 {more}, label %{head}, label %{done}{hint}")
    fn.start_block(done)


def nest(fn, sizes, body, split=False, scalar=False):
    """Loops over `sizes` (outermost first); `body(indices)`. With `split`, the
    outermost real loop (or, where every size is 1, a loop of one) runs over this
    call's share only. With `scalar`, every
    loop asks LLVM to leave it as it is (a rarely taken path: compile time only)."""
    sizes = list(sizes)
    if 0 in sizes:
        return
    real = [i for i, n in enumerate(sizes) if n > 1]
    outer = min(real, default=0) if split and sizes else None

    def level(k, done):
        if k == len(sizes):
            body(done)
            return
        step = lambda i: level(k + 1, done + [i])   # noqa: E731
        if k == outer:
            share(fn, sizes[k], step)
        else:
            loop(fn, sizes[k], step, scalar=scalar)
    if split and not sizes:
        share(fn, 1, lambda i: body([]))
    else:
        level(0, [])


def _moved(inputs, outputs):
    """Bytes a kernel over these instructions reads and writes."""
    return sum(i.size * i.dtype.itemsize for i in list(inputs) + list(outputs))


def runs_whole(inputs, outputs):
    """Whether a kernel over these instructions always runs in one call (part 0 of 1):
    the runners never share out one that moves under parallel.min_parallel_bytes()."""
    return _moved(inputs, outputs) < parallel.min_parallel_bytes()


def _function(name, n_in, n_out, whole):
    """The kernel's signature. A `whole` kernel ignores %part and %parts: its loops get
    static bounds, which LLVM optimises and compiles several times faster into code with
    no runtime remainder handling."""
    name = re.sub(r"[^A-Za-z0-9_.]", "_", name) or "kernel"   # a plain LLVM identifier
    params = [("ptr", f"%in{i}", "noalias readonly") for i in range(n_in)]
    params += [("ptr", f"%out{j}", "noalias") for j in range(n_out)]
    params += [("i64", "%part", ""), ("i64", "%parts", "")]
    fn = FunctionText(name, params)
    fn.whole = whole
    fn.split_extent = 0
    return fn


def _native(fn, ir, inputs, outputs, splittable):
    """The NativeKernel of function `fn` rendered as `ir`."""
    return NativeKernel(fn.name, ir, list(inputs), list(outputs), splittable,
                        fn.split_extent if splittable else 0)


# -- loop kernels

def _flat(outputs, inputs):
    """Whether every value reaching the outputs is at the output index or a scalar."""
    shape = outputs[0].shape
    seen, stack = set(), list(outputs)
    while stack:
        instr = stack.pop()
        if instr in seen or instr in inputs or instr.size == 1:
            continue
        seen.add(instr)
        if instr.op is Op.BROADCAST_IN_DIM and instr.operands[0].size == 1:
            continue
        if instr.shape != shape or instr.op not in O.ELEMENTWISE:
            return False
        stack.extend(instr.operands)
    return True


def _streamed_share(fn, el, shape, j, out):
    """This call's share of a flat loop kernel with one output, its stores streamed."""
    size = int(np.prod(shape, dtype=np.int64))
    lo, hi = share_bounds(fn, size)
    # the inputs read element for element with the output (flat: same shape)
    full = [(ptr, instr.dtype.itemsize) for instr, ptr in el.inputs.items()
            if instr.size == size]
    _streamed_range(fn, el, f"%out{j}", out.dtype, lo, hi,
                    lambda i: el.value(out, Index(shape, lin=i)), prefetched=full)


def _streamed_range(fn, el, ptr, dt, lo, hi, value_at, prefetched=()):
    """ptr[i] = value_at(i) for i in [lo, hi), with streaming stores (streaming.py):
    blocks that start on a line of the output, each computed into a block buffer in a
    constant-trip loop (vectorized, the buffer kept in registers) and stored with
    non-temporal vector stores; the elements before the first block and after the last
    one in one loop of plain stores. value_at runs inside a fresh scope of `el`.
    `prefetched`: [(pointer, itemsize)] of inputs read at the output's index, which each
    block prefetches ahead (`streaming.prefetch_block`)."""
    buffer, per = streaming.block_buffer(fn, dt)
    start = streaming.aligned_start(fn, ptr, dt, lo, hi)
    blocks = fn.op(f"udiv i64 {fn.op(f'sub i64 {hi}, {start}', 's')}, {per}", "s")
    end = fn.op(f"add i64 {start}, {imul(fn, blocks, per)}", "s")

    def block(b):
        base = fn.op(f"add nsw i64 {start}, {imul(fn, b, per)}", "s")
        streaming.prefetch_block(fn, prefetched, base, per)

        def element(k):
            el.push()
            store(fn, value_at(iadd(fn, base, k)), buffer, k, dt)
            el.pop()
        loop(fn, per, element)
        streaming.store_block(fn, dt, ptr, base, buffer)
    _counted_loop(fn, "blocks", "0", blocks, block, guard=f"icmp ult i64 0, {blocks}")

    # the unaligned ends: t < head is lo + t, the rest is end + (t - head)
    head = fn.op(f"sub i64 {start}, {lo}", "s")
    ends = fn.op(f"add i64 {head}, {fn.op(f'sub i64 {hi}, {end}', 's')}", "s")

    def edge(t):
        el.push()
        in_head = fn.op(f"icmp ult i64 {t}, {head}", "c")
        later = fn.op(f"add i64 {end}, {fn.op(f'sub i64 {t}, {head}', 's')}", "s")
        i = fn.op(f"select i1 {in_head}, i64 {fn.op(f'add i64 {lo}, {t}', 's')}, i64 {later}",
                  "s")
        store(fn, value_at(i), ptr, i, dt)
        el.pop()
    # fewer than two blocks' worth of elements: vectorizing this loop would only cost
    # compile time
    _counted_loop(fn, "edges", "0", ends, edge, guard=f"icmp ult i64 0, {ends}",
                  scalar=True)


def render_loop(name, inputs, outputs, stream=True, in_place=False, interleaved=None):
    """A loop kernel: each output computed per element, one loop per output shape (the
    fuser may add a scalar output to a kernel over a larger shape). `stream`: large
    outputs may use streaming stores. `in_place`: the caller passes a dynamic_update_slice
    output the memory of its operand, so only the window is stored (native_loop.py).
    `interleaved`: {output number: (re, im)} for an output that is a complex value's parts
    side by side (complex_lowering.py): both are evaluated at each element and stored at
    2i and 2i + 1, where the output's own loop would run over a last axis of 2."""
    interleaved = interleaved or {}
    whole = runs_whole(inputs, outputs)
    streamed = stream and not whole and streaming.streams(_moved(inputs, outputs))
    fn = _function(name, len(inputs), len(outputs), whole)
    el = Elemental(fn, {instr: f"%in{i}" for i, instr in enumerate(inputs)})
    by_shape = {}
    for j, out in enumerate(outputs):
        if j in interleaved:
            by_shape.setdefault(interleaved[j][0].shape, []).append((j, out))
            continue
        if windowed_update(out, inputs, whole):
            _dynamic_update(fn, el, j, out, copy_operand=not in_place)
            continue
        by_shape.setdefault(out.shape, []).append((j, out))
    for shape, group in by_shape.items():
        def body(index, group=group):
            el.push()
            stores = []
            for j, out in group:
                if j in interleaved:
                    at = el.im.mul(el.linear(index), 2)
                    stores += [(el.value(part, index), f"%out{j}", el.im.add(at, k), part.dtype)
                               for k, part in enumerate(interleaved[j])]
                else:
                    stores.append((el.value(out, index), f"%out{j}", el.linear(index),
                                   out.dtype))
                if not interleaved:   # (else every value first: see below)
                    store(fn, *stores.pop())
            # a complex kernel written over its input (fusion/in_place.py) reads both parts
            # of element i for either part of its output: all loads come before any store
            for args in stores:
                store(fn, *args)
            el.pop()

        values = [v for j, out in group for v in interleaved.get(j, (out,))]
        flat = len(shape) <= 1 or _flat(values, set(inputs))
        if flat and streamed and len(group) == 1 and group[0][0] not in interleaved:
            _streamed_share(fn, el, shape, *group[0])
        elif flat:
            share_blocks(fn, int(np.prod(shape, dtype=np.int64)),
                         lambda i, shape=shape, body=body: body(Index(shape, lin=i)))
        else:
            nest(fn, shape, lambda dims, shape=shape, body=body: body(Index(shape, dims)),
                 split=True)
    if streamed:
        streaming.fence(fn)
    fn.emit("ret void")
    return _native(fn, fn.render(), inputs, outputs, not whole)


def windowed_update(out, inputs, whole):
    """Whether output `out` is a dynamic_update_slice `_dynamic_update` emits: a
    non-empty update, over rows (2-D and up) or in a kernel that runs whole."""
    return out.op is Op.DYNAMIC_UPDATE_SLICE and out not in inputs \
        and out.operands[1].size > 0 and (out.ndim >= 2 or (out.ndim == 1 and whole))


def _dynamic_update(fn, el, j, out, copy_operand=True):
    """out{j} = x with the update stored over its window (starts clamped as the op
    clamps them): x copied, then the update stored at the window's offset, each a plain
    loop that vectorizes. The elemental form picks per element between the two, reading
    the update at a clamped index (a gather): about 3x slower on a Jacobi sweep.

    2-D and up, row by row along dim 0 (this call's share of the rows): a row is copied,
    then its part of the window stored, so the thread that owns an output row writes
    all of it. 1-D, in a kernel that runs whole: the copy, then the window. Without
    `copy_operand` the output is the operand's own memory: the window alone is stored."""
    x, update, *starts = out.operands
    ptr, dt = f"%out{j}", out.dtype
    begin = [el.as_index(el.value(s, Index.zero(())), s.dtype, n - u)
             for s, u, n in zip(starts, update.shape, out.shape)]

    def put(value_of, dims):
        el.push()
        store(fn, value_of(), ptr, el.linear(Index(out.shape, dims)), dt)
        el.pop()

    def copy(dims):
        put(lambda: el.value(x, Index(out.shape, dims)), dims)

    def window(dims):
        at = [iadd(fn, b, d) for b, d in zip(begin, dims)]
        put(lambda: el.value(update, Index(update.shape, dims)), at)

    if out.ndim == 1:
        if copy_operand:
            loop(fn, out.shape[0], lambda i: copy([i]))
        loop(fn, update.shape[0], lambda i: window([i]))
        return

    def row(r):
        if copy_operand:
            nest(fn, out.shape[1:], lambda rest: copy([r] + list(rest)))
        rel = isub(fn, r, begin[0])
        inside = fn.op(f"icmp ult i64 {rel}, {update.shape[0]}", "c")   # also rel < 0
        then, done = fn.label("window"), fn.label("next")
        fn.emit(f"br i1 {inside}, label %{then}, label %{done}")
        fn.start_block(then)
        nest(fn, update.shape[1:], lambda rest: window([rel] + list(rest)))
        fn.emit(f"br label %{done}")
        fn.start_block(done)
    share(fn, out.shape[0], row)


# -- reduction kernels

def _identity(op, dt):
    return {Op.REDUCE_SUM: 0, Op.REDUCE_PROD: 1, Op.REDUCE_MAX: dtypes.lowest(dt),
            Op.REDUCE_MIN: dtypes.highest(dt), Op.ARGMAX: dtypes.lowest(dt),
            Op.ARGMIN: dtypes.highest(dt), Op.REDUCE_OR: 0,
            Op.REDUCE_AND: True if dt == dtypes.BOOL else -1}[op]


def _combine(fn, op, dt, acc, x):
    """acc `op` x for a plain reduction."""
    t = compute_type(dt)
    is_float, is_bool = dtypes.is_float(dt), dt == dtypes.BOOL
    if op is Op.REDUCE_SUM:
        return fn.op(f"fadd reassoc {t} {acc}, {x}" if is_float else
                     f"{'or' if is_bool else 'add'} {t} {acc}, {x}", "a")
    if op is Op.REDUCE_PROD:
        return fn.op(f"fmul reassoc {t} {acc}, {x}" if is_float else
                     f"{'and' if is_bool else 'mul'} {t} {acc}, {x}", "a")
    if op in (Op.REDUCE_MAX, Op.REDUCE_MIN):
        return minmax(fn, dt, acc, x, op is Op.REDUCE_MAX)
    return fn.op(f"{'and' if op is Op.REDUCE_AND else 'or'} {t} {acc}, {x}", "a")


def _better(fn, op, dt, acc, x):
    """Whether x replaces acc in argmax/argmin: strictly better, or the first NaN."""
    t = compute_type(dt)
    if dtypes.is_float(dt):
        better = fn.op(f"fcmp {'ogt' if op is Op.ARGMAX else 'olt'} {t} {x}, {acc}", "c")
        first_nan = fn.op(f"and i1 {fn.op(f'fcmp uno {t} {x}, 0.0', 'c')}, "
                          f"{fn.op(f'fcmp ord {t} {acc}, 0.0', 'c')}", "c")
        return fn.op(f"or i1 {better}, {first_nan}", "c")
    sign = "s" if dtypes.is_signed(dt) else "u"
    return fn.op(f"icmp {sign}{'gt' if op is Op.ARGMAX else 'lt'} {t} {x}, {acc}", "c")


# Ops worth a store and a load (in L1: the row was just read) rather than a second
# evaluation in the write pass: the polynomial math functions and division.
_COSTLY = frozenset({Op.EXP, Op.EXPM1, Op.LOG, Op.LOG1P, Op.TANH, Op.LOGISTIC, Op.SIN,
                     Op.COS, Op.TAN, Op.POW, Op.ATAN2, Op.DIV, Op.REM})


def _s_chain(x, plan):
    """The S-shaped instructions computed elementwise at x's index to produce x."""
    seen, stack = set(), [x]
    while stack:
        m = stack.pop()
        if m in seen or m.shape != plan.S or m.op not in O.ELEMENTWISE:
            continue
        seen.add(m)
        stack.extend(m.operands)
    return seen


def _kept_in_outputs(plan):
    """{float-sum reduction: S-output position} where the summed value x is costly and the
    write pass needs it again (softmax's exp(x - max)): the sum pass stores x into that
    output's row and the write pass loads it back, so x is evaluated once per element.
    The output must hold x's dtype exactly (same dtype, not a 16-bit one widened in the
    kernel); each output caches at most one x."""
    free = [(j, out) for j, out in plan.s_outputs
            if out.dtype not in NARROW and dtypes.is_float(out.dtype)]
    needed = set()
    for _, out in plan.s_outputs:
        needed |= _s_chain(out, plan)
    kept = {}
    for red in plan.reductions:
        x = red.operands[0]
        if red.op is not Op.REDUCE_SUM or x not in needed or x.dtype in NARROW:
            continue
        if not any(m.op in _COSTLY for m in _s_chain(x, plan)):
            continue
        j = next((j for j, out in free if out.dtype == x.dtype), None)
        if j is not None:
            kept[red] = j
            free = [(i, out) for i, out in free if i != j]
    return kept


_X86 = platform.machine().lower() in ("x86_64", "amd64")
# Ops whose result is NaN wherever an operand is, whatever the others hold (np.maximum
# keeps NaN; pow(NaN, 0) = 1 and a select or compare can drop one: not here).
_NAN_KEEPING = frozenset({Op.ADD, Op.SUB, Op.MUL, Op.DIV, Op.NEG, Op.EXP, Op.LOG, Op.SQRT,
                          Op.MAX, Op.MIN, Op.BROADCAST_IN_DIM, Op.RESHAPE})


def _nan_blind_maxima(plan, body):
    """The float reduce_max instructions that may skip the max pass's NaN detector
    (`float_extreme`): those whose value in a row holding a NaN no output can show.

    That holds when every output that depends on the maximum m is NaN wherever some
    row sum s is, through NaN-keeping ops, and s sums values that are NaN wherever m's
    own operand x is (softmax: e / sum(e), logsumexp: log(sum(e)) + m, with e = exp(x
    - m)): a NaN in x's row makes s NaN whatever m is, so a wrong m there changes no
    output bit. In rows without NaN the fast pass gives m exactly (the zero check and
    its in-order fold stay)."""
    def keeps_nan(v, sources, seen):
        if v in sources:
            return True
        if v in seen or v.op not in _NAN_KEEPING:
            return False
        seen.add(v)
        return any(keeps_nan(o, sources, seen) for o in v.operands)

    def depends(v, on):
        stack, seen = [v], set()
        while stack:
            u = stack.pop()
            if u is on:
                return True
            if u not in seen:
                seen.add(u)
                stack.extend(u.operands)
        return False

    blind = set()
    for red in plan.reductions:
        x = red.operands[0]
        if red.op is not Op.REDUCE_MAX or not dtypes.is_float(x.dtype):
            continue
        sums = {s for s in plan.reductions
                if s.op is Op.REDUCE_SUM and keeps_nan(s.operands[0], {x}, set())}
        users = [out for out in body.results if depends(out, red)]
        if sums and all(keeps_nan(out, sums, set()) for out in users):
            blind.add(red)
    return blind


# Row buffers (`_row_buffer_plan`): at most this many bytes each, and in all, per row.
ROW_BUFFER_BYTES = 16 << 10
ROW_BUFFERS_BYTES = 128 << 10


def _row_buffer_plan(plan, body, kept_in, fn):
    """{S-level value: (the loop that first reads it, its row buffer)} for the costly
    values (`_COSTLY` results) that more than one of the kernel's loops would evaluate.

    Each loop over R (a reduction's, the write pass) evaluates its operand from the
    inputs, so a chain of row stages (layernorm -> gelu -> softmax, four times: each
    stage's loops start from the previous stage's output) evaluated every earlier tanh
    and exp again in every later loop: quadratic work, and quadratic code for LLVM.
    A chosen value is computed once per row by a loop of its own, just before the first
    loop that reads it, into a buffer on the stack (the row stays in L1), and read back
    from there by every later loop. The bits are the same: the value stored is the one
    each loop computed. Consumers are chosen before their producers, and a value counts
    the loops that reach it through unchosen values only, so a producer whose only
    readers are chosen consumers stays inline. Floats of the kernel's compute type only.
    A summed value kept in an output row for the write pass (`kept_in`: softmax's exp)
    does not count the write pass; where other loops read it too, it takes a row buffer
    instead (the caller drops it from `kept_in`)."""
    row = 1
    for d in plan.R:
        row *= plan.S[d]
    kept = {red.operands[0] for red in kept_in}
    candidates = [m for m in body.instructions
                  if m.shape == plan.S and m.op in _COSTLY and m.op in O.ELEMENTWISE
                  and m.dtype in (np.float32, np.float64)
                  and row * m.dtype.itemsize <= ROW_BUFFER_BYTES]
    if not candidates:
        return {}
    loops = [[red.operands[0]] for red in plan.reductions] + [[o for _, o in plan.s_outputs]]

    def reached(roots, cut):
        """The S-level values a loop evaluating `roots` computes or reads: it stops at
        (but counts) a value in `cut`, and at anything not elementwise at S."""
        seen, stack = set(), list(roots)
        while stack:
            m = stack.pop()
            if m in seen or m.shape != plan.S or m.op not in O.ELEMENTWISE:
                continue
            seen.add(m)
            if m not in cut or m in roots:
                stack.extend(m.operands)
        return seen

    chosen, first, budget = [], {}, ROW_BUFFERS_BYTES
    for m in reversed(candidates):    # body order is topological: consumers first
        cut = set(chosen)
        readers = [i for i, roots in enumerate(loops) if m in reached(roots, cut)
                   and not (m in kept and i == len(plan.reductions))]
        fills = [first[c] for c in chosen if m in reached([c], cut)]
        if len(readers) + len(fills) < 2 or row * m.dtype.itemsize > budget:
            continue
        chosen.append(m)
        first[m] = min(readers + fills)
        budget -= row * m.dtype.itemsize
    order = {m: i for i, m in enumerate(body.instructions)}
    return {m: (first[m], fn.alloca(f"[{row} x {compute_type(m.dtype)}], align 64"))
            for m in sorted(chosen, key=order.get)}


_CARRIED_TYPES = (np.dtype(np.float32), np.dtype(np.float64))   # loaded as they are


def _vector_max(fn, width, t, a, b):
    """max(a, b) lane by lane for `width` lanes of `t`, as vmaxps: b where the compare is
    false (NaN)."""
    vt = f"<{width} x {t}>"
    greater = fn.op(f"fcmp ogt {vt} {a}, {b}", "c")
    return fn.op(f"select <{width} x i1> {greater}, {vt} {a}, {vt} {b}", "a")


def _fold_lanes(fn, v, t, width, combine):
    """Lane 0 of v (`width` lanes of `t`) folded by halves: lanes [0, w/2) combined with
    [w/2, w), down to one. `combine(w, a, b)` emits one step on vectors of w lanes."""
    vt = f"<{width} x {t}>"
    while width > 1:
        width //= 2
        low = ", ".join(f"i32 {i}" for i in range(width))
        high = ", ".join(f"i32 {i + width}" for i in range(width))
        halves = [fn.op(f"shufflevector {vt} {v}, {vt} poison, <{width} x i32> <{m}>", "a")
                  for m in (low, high)]
        vt = f"<{width} x {t}>"
        v = combine(width, *halves)
    return fn.op(f"extractelement {vt} {v}, i64 0", "a")


@dataclasses.dataclass
class _Carry:
    """The next row's maximum, taken during this row's sum pass (`_carry_plan`).

    A row kernel whose first pass is a max (softmax, logsumexp) reads each row twice:
    the max pass, then the sum pass from cache. With the next row prefetched into L2
    while this one sums, the max pass is still a pass over L2 during which memory idles
    and nothing computes. So the sum pass of row r also loads row r + 1 at the same
    columns and folds it into `acc` (vector max lanes); row r + 1 then takes its max from
    `acc` instead of a pass, where `at` says `acc` holds its row (the first row of each
    share, or a row after a gap, still runs the pass). In rows without NaN the lanes'
    maximum is the row's, exactly (a zero result is folded again in order, as after the
    pass); rows with NaN are the blind case, where no output shows the max
    (measurements: docs/performance.md)."""
    red: object        # the max reduction
    sum: object        # the sum reduction whose grouped blocks load the next row
    ptr: str           # the max's input (a kernel parameter)
    row: int           # elements per row
    total: int         # elements of the input
    acc: str           # vector alloca (`vector`): the lanes' maxima of the next row
    at: str            # i64 alloca: the row start whose max `acc` holds (-1: none)

    @property
    def dtype(self):
        return self.red.operands[0].dtype

    @property
    def t(self):
        return compute_type(self.dtype)

    @property
    def width(self):
        """Lanes of a 64-byte vector."""
        return 64 // self.dtype.itemsize

    def vector(self):
        return f"<{self.width} x {self.t}>"

    def fold(self, fn, a, b):
        return _vector_max(fn, self.width, self.t, a, b)

    def reduce(self, fn, v):
        """The maximum of v's lanes."""
        return _fold_lanes(fn, v, self.t, self.width,
                           lambda w, a, b: _vector_max(fn, w, self.t, a, b))


class _ReductionEmitter:
    """Writes one reduction kernel: the loops of kernels.py's docstring, in that order."""

    def __init__(self, name, body):
        self.plan = plan_reduction(body, Unsupported)
        self.fn = _function(name, len(body.params), len(body.results),
                            runs_whole(body.params, body.results))
        self.el = Elemental(self.fn, {p: f"%in{i}" for i, p in enumerate(body.params)})
        self.kept = [d for d in range(len(self.plan.S)) if d not in self.plan.R]
        self.kept_in = _kept_in_outputs(self.plan)
        self.row_buffers = _row_buffer_plan(self.plan, body, self.kept_in, self.fn)
        self.kept_in = {red: j for red, j in self.kept_in.items()
                        if red.operands[0] not in self.row_buffers}
        self.ahead, self.prefetched = self._prefetch_plan(body)
        self.groups = {}   # compute type -> (group buffer, accumulators): `grouped_block`
        # the asm that freezes the max (`float_extreme`) names an x86 register class
        self.nan_blind = _nan_blind_maxima(self.plan, body) if _X86 else set()
        self.stream_row = self._stream_plan(body)
        self.carry = self._carry_plan(body)

    def _stream_plan(self, body):
        """(output position, its row buffer or None) when the kernel streams its one
        S-shaped output, a row at a time (`_streamed_range`): the kernel moves enough
        (streaming.streams), the reduced dim is the last one, so rows are contiguous.
        A summed value kept in that output for the write pass (`kept_in`) goes to a row
        buffer on the stack instead: the output's lines are written once, streamed."""
        plan = self.plan
        if self.fn.whole or len(plan.s_outputs) != 1 or list(plan.R) != [len(plan.S) - 1] \
                or not streaming.streams(_moved(body.params, body.results)):
            return None
        ((j, out),) = plan.s_outputs
        row = plan.S[-1]
        if row * out.dtype.itemsize < streaming.ROW_STREAM_MIN_BYTES:
            return None
        if j not in self.kept_in.values():
            return j, None
        if row * out.dtype.itemsize > streaming.ROW_BUFFER_BYTES:
            return None
        return j, self.fn.alloca(f"[{row} x {memory_type(out.dtype)}], align 64")

    def _carry_plan(self, body):
        """A `_Carry` where the next row's maximum can be taken while this row sums,
        else None: the kernel prefetches (rows contiguous, one reduced dim, full rows in
        grouped blocks), its first reduction is a NaN-blind float max (softmax's,
        logsumexp's) of a float32/float64 input as it is, and a float sum follows it.
        The max pass of a row then reads nothing: the previous row's sum pass loaded
        its elements beside the ones it sums (see `_Carry`)."""
        plan = self.plan
        if self.ahead is None or len(plan.R) != 1 or not plan.reductions:
            return None
        first = plan.reductions[0]
        x = first.operands[0]
        row = plan.S[plan.R[0]]
        if first.op is not Op.REDUCE_MAX or first not in self.nan_blind \
                or x not in body.params or x.shape != plan.S \
                or x.dtype not in _CARRIED_TYPES or row % SUM_BLOCK:
            return None
        sums = [r for r in plan.reductions[1:]
                if r.op is Op.REDUCE_SUM and dtypes.is_float(r.operands[0].dtype)]
        if not sums:
            return None
        vector = f"<{64 // x.dtype.itemsize} x {compute_type(x.dtype)}>"
        return _Carry(first, sums[0], f"%in{body.params.index(x)}", row,
                      int(np.prod(plan.S, dtype=np.int64)),
                      self.fn.alloca(f"{vector}, align 64"), self.fn.alloca("i64"))

    def kept_at(self, j, index):
        """Where the summed value kept in output j's row lives at `index`: the output
        itself, or the row buffer of a streamed output."""
        if self.stream_row and self.stream_row[0] == j:
            return self.stream_row[1], index.dims[self.plan.R[0]]
        return f"%out{j}", self.el.linear(index)

    def s_index(self, kdims, rdims):
        dims = [0] * len(self.plan.S)
        for d, v in zip(self.kept, kdims):
            dims[d] = v
        for d, v in zip(self.plan.R, rdims):
            dims[d] = v
        return Index(self.plan.S, dims)

    def k_index(self, shape, kdims):
        """The index of a K-level value of `shape` (K up to size-1 dims) at kept index k."""
        live = iter([v for d, v in zip(self.kept, kdims) if self.plan.S[d] != 1])
        return Index(shape, [0 if n == 1 else next(live) for n in shape])

    def reduction(self, red, kdims):
        fn, el = self.fn, self.el
        x = red.operands[0]
        dt, t, op = x.dtype, compute_type(x.dtype), red.op
        sizes = [self.plan.S[d] for d in self.plan.R]
        if 0 in sizes:   # an empty reduction is its identity (argmax rejects empty axes)
            el.fixed[red] = literal(_identity(op, dt), dt)
            return
        if op in (Op.REDUCE_MAX, Op.REDUCE_MIN) and dtypes.is_float(dt):
            self.float_extreme(red, kdims, sizes)
            return
        if op is Op.REDUCE_SUM and dtypes.is_float(dt):
            self.float_sum(red, kdims, sizes)
            return
        if op in O.ARG_REDUCE and len(sizes) == 1 and sizes[0] > ARG_BLOCK \
                and (dt in _ARG_FLOATS or dtypes.is_integer(dt)):
            self.arg_extreme(red, kdims, sizes[0])
            return
        acc = fn.alloca(t)
        fn.emit(f"store {t} {literal(_identity(op, dt), dt)}, ptr {acc}")
        arg = op in O.ARG_REDUCE
        if arg:
            pos = fn.alloca("i64")
            fn.emit(f"store i64 0, ptr {pos}")

        def step(rdims):
            el.push()
            v = el.value(x, self.s_index(kdims, rdims))
            a = fn.op(f"load {t}, ptr {acc}", "a")
            if arg:
                take = _better(fn, op, dt, a, v)
                fn.emit(f"store {t} {fn.op(f'select i1 {take}, {t} {v}, {t} {a}', 'a')}, "
                        f"ptr {acc}")
                p = fn.op(f"load i64, ptr {pos}", "a")
                fn.emit(f"store i64 {fn.op(f'select i1 {take}, i64 {rdims[0]}, i64 {p}', 'a')}"
                        f", ptr {pos}")
            else:
                fn.emit(f"store {t} {_combine(fn, op, dt, a, v)}, ptr {acc}")
            el.pop()

        nest(fn, sizes, step)
        if arg:
            p = fn.op(f"load i64, ptr {pos}", "a")
            rt = compute_type(red.dtype)
            el.fixed[red] = p if rt == "i64" else fn.op(f"trunc i64 {p} to {rt}", "a")
        else:
            result = fn.op(f"load {t}, ptr {acc}", "a")
            el.fixed[red] = narrow(fn, result, dt) if dt in NARROW else result

    def float_sum(self, red, kdims, sizes):
        """A float sum in blocks of SUM_BLOCK along the innermost reduced dim. Inside a
        block the adds are `reassoc`, so LLVM keeps L partial sums in vector lanes (in a
        kernel that prefetches, a full block sums in explicit lanes: `grouped_block`); the
        block sums are added in order with Neumaier's compensation (plain IEEE adds). The
        error is then at most about (SUM_BLOCK/L + log2 L + 2) u sum|x|, whatever the row
        length (docs/cpu_reductions.md)."""
        fn, el = self.fn, self.el
        x = red.operands[0]
        dt, t = x.dtype, compute_type(x.dtype)
        minus_zero = literal(-0.0, dt)   # -0.0 + v == v for every v: NumPy's sum of -0.0s
        block, total, comp = fn.alloca(t), fn.alloca(t), fn.alloca(t)
        fn.emit(f"store {t} {minus_zero}, ptr {total}")
        fn.emit(f"store {t} {minus_zero}, ptr {comp}")

        def add_block(outer, start, size):
            fn.emit(f"store {t} {minus_zero}, ptr {block}")

            def step(j):
                el.push()
                v = self.summed_value(red, self.s_index(kdims, outer + [iadd(fn, start, j)]))
                a = fn.op(f"load {t}, ptr {block}", "a")
                fn.emit(f"store {t} {fn.op(f'fadd reassoc {t} {a}, {v}', 'a')}, ptr {block}")
                el.pop()
            if self.ahead is not None and size == SUM_BLOCK:
                b = self.grouped_block(red, kdims, outer, start)
            else:
                self.prefetch_ahead(kdims, outer + [start], size)
                loop(fn, size, step)
                b = fn.op(f"load {t}, ptr {block}", "a")
            s = fn.op(f"load {t}, ptr {total}", "a")
            new = fn.op(f"fadd {t} {s}, {b}", "a")
            # the rounding error of s + b, exact when |s| >= |b| (else swap the roles)
            big = fn.op(f"fcmp oge {t} {fn.intrinsic('fabs', t, s)}, "
                        f"{fn.intrinsic('fabs', t, b)}", "c")
            hi = fn.op(f"select i1 {big}, {t} {s}, {t} {b}", "a")
            lo = fn.op(f"select i1 {big}, {t} {b}, {t} {s}", "a")
            err = fn.op(f"fadd {t} {fn.op(f'fsub {t} {hi}, {new}', 'a')}, {lo}", "a")
            c = fn.op(f"load {t}, ptr {comp}", "a")
            fn.emit(f"store {t} {fn.op(f'fadd {t} {c}, {err}', 'a')}, ptr {comp}")
            fn.emit(f"store {t} {new}, ptr {total}")

        *outer_sizes, m = sizes or [1]   # no reduced dims: one element
        full, rest = divmod(m, SUM_BLOCK)

        def row(outer):
            loop(fn, full, lambda b: add_block(outer, imul(fn, b, SUM_BLOCK), SUM_BLOCK))
            if rest:
                add_block(outer, full * SUM_BLOCK, rest)
        nest(fn, outer_sizes, row) if outer_sizes else row([])
        s = fn.op(f"load {t}, ptr {total}", "a")
        c = fn.op(f"load {t}, ptr {comp}", "a")
        # an infinite or NaN total stays as it is (its compensation is NaN); a zero
        # compensation leaves the sign of a zero total alone
        zero_c = fn.op(f"fcmp oeq {t} {c}, 0.0", "c")
        inf_or_nan = fn.op(f"fcmp ueq {t} {fn.intrinsic('fabs', t, s)}, 0x7FF0000000000000", "c")
        keep = fn.op(f"or i1 {zero_c}, {inf_or_nan}", "c")
        result = fn.op(f"select i1 {keep}, {t} {s}, {t} {fn.op(f'fadd {t} {s}, {c}', 'a')}",
                       "a")
        el.fixed[red] = narrow(fn, result, dt) if dt in NARROW else result

    def summed_value(self, red, index):
        """The value `red` sums at `index`, also stored for the write pass where the
        kernel keeps it (`kept_in`)."""
        x = red.operands[0]
        v = self.el.value(x, index)
        if red in self.kept_in:
            store(self.fn, v, *self.kept_at(self.kept_in[red], index), x.dtype)
        return v

    def grouped_block(self, red, kdims, outer, start):
        """The sum of the SUM_BLOCK elements from `start` of a kernel that prefetches,
        in explicit vectors. The block runs as a loop over groups of SUM_VECTORS * W
        elements (W = 64 bytes of the compute type: 16 f32, 8 f64): each group issues
        the prefetches of its own lines, computes its values in a loop LLVM vectorizes
        into one pass without a reduction (through a group buffer, which LLVM removes),
        and adds vector k of them to accumulator k, lane by lane. At the block's end the
        accumulators are added in order, then halved lane-wise down to one value.
        Prefetching this way, one group at a time, and not all of a block's lines before
        it, keeps the memory stream even (docs/performance.md); for float32 on AVX-512
        the order is the one LLVM's vectorizer chose before (same bits), and now it is
        the same on every host."""
        fn, el = self.fn, self.el
        x = red.operands[0]
        dt, t = x.dtype, compute_type(x.dtype)
        width = 64 // (8 if t == "double" else 4)
        vt, group = f"<{width} x {t}>", SUM_VECTORS * width
        if t not in self.groups:   # a group buffer and the accumulators, per compute type
            self.groups[t] = (fn.alloca(f"[{group} x {t}], align 64"),
                              [fn.alloca(f"{vt}, align 64") for _ in range(SUM_VECTORS)])
        buffer, accumulators = self.groups[t]
        minus_zero = literal(-0.0, dt)
        for acc in accumulators:
            fn.emit(f"store {vt} splat ({t} {minus_zero}), ptr {acc}")
        carry = self.carry if self.carry and red is self.carry.sum else None

        def one_group(g):
            first = iadd(fn, start, imul(fn, g, group))
            self.prefetch_ahead(kdims, outer + [first], group)
            if carry:
                self.carry_group(carry, kdims, first, group)

            def put(j):
                el.push()
                v = self.summed_value(red, self.s_index(kdims, outer + [iadd(fn, first, j)]))
                fn.emit(f"store {t} {v}, ptr "
                        f"{fn.op(f'getelementptr inbounds {t}, ptr {buffer}, i64 {j}', 'p')}")
                el.pop()
            loop(fn, group, put)
            for k, acc in enumerate(accumulators):
                at = fn.op(f"getelementptr inbounds {t}, ptr {buffer}, i64 {k * width}", "p")
                v = fn.op(f"load {vt}, ptr {at}, align 64", "a")
                a = fn.op(f"load {vt}, ptr {acc}", "a")
                fn.emit(f"store {vt} {fn.op(f'fadd {vt} {a}, {v}', 'a')}, ptr {acc}")
        loop(fn, SUM_BLOCK // group, one_group)
        total = fn.op(f"load {vt}, ptr {accumulators[0]}", "a")
        for acc in accumulators[1:]:
            total = fn.op(f"fadd {vt} {total}, {fn.op(f'load {vt}, ptr {acc}', 'a')}", "a")
        return _fold_lanes(fn, total, t, width,
                           lambda w, a, b: fn.op(f"fadd <{w} x {t}> {a}, {b}", "a"))

    def row_start(self, kdims):
        """The linear index of this row's first element (rows are contiguous)."""
        return self.el.linear(self.s_index(kdims, [0]))

    def carry_group(self, carry, kdims, first, group):
        """Fold the next row's elements [first, first + group) into `carry.acc` (the
        last row folds itself again: nothing reads past the input)."""
        fn = self.fn
        start = self.row_start(kdims)
        nxt = fn.op(f"call i64 @llvm.umin.i64(i64 {iadd(fn, start, carry.row)}, "
                    f"i64 {carry.total - carry.row})", "i")
        fn.declare("llvm.umin.i64", "declare i64 @llvm.umin.i64(i64, i64)")
        item = carry.dtype.itemsize
        vectors = []
        for k in range(group // carry.width):
            at = fn.op(f"getelementptr inbounds {carry.t}, ptr {carry.ptr}, "
                       f"i64 {iadd(fn, nxt, iadd(fn, first, k * carry.width))}", "p")
            vectors.append(fn.op(f"load {carry.vector()}, ptr {at}, align {item}", "ld"))
        while len(vectors) > 1:
            vectors = [carry.fold(fn, a, b) for a, b in zip(vectors[::2], vectors[1::2])] \
                + vectors[len(vectors) // 2 * 2:]
        held = fn.op(f"load {carry.vector()}, ptr {carry.acc}", "a")
        fn.emit(f"store {carry.vector()} {carry.fold(fn, vectors[0], held)}, ptr {carry.acc}")

    def prefetch_ahead(self, kdims, rdims, size):
        """Ask for the inputs' elements `ahead` rows on from `size` elements at rdims of
        this row (into L2, and L1 for short rows: `_prefetch_plan`). Called from the
        row's sum blocks: a row kernel makes several passes over a row held in cache,
        and memory would sit idle during all but the first; loading the next row while
        this one computes keeps it busy."""
        if self.ahead is None:
            return
        fn = self.fn
        lin = self.el.linear(self.s_index(kdims, rdims))
        for ptr, item in self.prefetched:
            streaming.prefetch_lines(fn, ptr, imul(fn, iadd(fn, lin, self.ahead), item),
                                     size * item, self.locality)

    def _prefetch_plan(self, body):
        """(elements ahead, [(input pointer, itemsize)]) for prefetch_ahead, or (None, [])
        where it does not apply: a kernel that runs whole (its data is small), reduced
        dims that are not the trailing ones (rows not contiguous), or rows so long that
        the row ahead would not stay in L2 until its turn.
        The prefetches go out from the sum passes. Where another pass reads the row
        first (softmax's and logsumexp's max), they start that much later in the row
        and the next row's first pass comes sooner after them: those kernels lead by
        half a row more (not layernorm, whose first pass is a sum), or by a quarter of
        a row where the kernel writes no row-shaped output (logsumexp; softmax's write
        pass makes a row longer, so it keeps the half). Measured: docs/performance.md."""
        plan = self.plan
        row = int(np.prod([plan.S[d] for d in plan.R], dtype=np.int64))
        full = [(f"%in{i}", p.dtype.itemsize) for i, p in enumerate(body.params)
                if p.shape == plan.S]
        row_bytes = row * sum(item for _, item in full)
        trailing = list(plan.R) == list(range(len(plan.S) - len(plan.R), len(plan.S)))
        if self.fn.whole or not full or not trailing or row == 0 \
                or row_bytes > PREFETCH_MAX_ROW_BYTES:
            return None, []
        self.locality = (streaming.prefetch_locality()
                         if row_bytes <= PREFETCH_L1_MAX_ROW_BYTES else 2)
        rows = -(-PREFETCH_MIN_BYTES // row_bytes)   # short rows: far enough to matter
        late = plan.reductions[0].op is not Op.REDUCE_SUM
        extra = (row // 2 if plan.s_outputs else row // 4) if late else 0
        return rows * row + extra, full

    def arg_extreme(self, red, kdims, size):
        """argmax/argmin of a long row in two vectorized passes where the in-order fold
        (`_better`'s selects, one element a step) does not vectorize: the extreme value
        (`float_extreme`, NaN if the row holds one; a plain min/max for integers), then
        the first element equal to it (the first NaN, for NaN), blocks of ARG_BLOCK at a
        time: an `or` of the block's compares (vectorized), and the in-order search only
        in the block that holds it. The first extreme, NaN first: NumPy's answer."""
        fn, el = self.fn, self.el
        x = red.operands[0]
        dt, t = x.dtype, compute_type(x.dtype)
        is_max = red.op is Op.ARGMAX
        is_float = dtypes.is_float(dt)
        if is_float:
            best = self.float_extreme(red, kdims, [size], is_max)
        else:
            acc = fn.alloca(t)
            value_op = Op.REDUCE_MAX if is_max else Op.REDUCE_MIN
            fn.emit(f"store {t} {literal(_identity(value_op, dt), dt)}, ptr {acc}")

            def fold(rdims):
                el.push()
                v = el.value(x, self.s_index(kdims, rdims))
                a = fn.op(f"load {t}, ptr {acc}", "a")
                fn.emit(f"store {t} {minmax(fn, dt, a, v, is_max)}, ptr {acc}")
                el.pop()
            nest(fn, [size], fold)
            best = fn.op(f"load {t}, ptr {acc}", "a")
        nan = fn.op(f"fcmp uno {t} {best}, 0.0", "c") if is_float else None

        def equal(j):
            v = el.value(x, self.s_index(kdims, [j]))
            if not is_float:
                return fn.op(f"icmp eq {t} {v}, {best}", "c")
            same = fn.op(f"fcmp oeq {t} {v}, {best}", "c")
            return fn.op(f"select i1 {nan}, i1 {fn.op(f'fcmp uno {t} {v}, 0.0', 'c')}, "
                         f"i1 {same}", "c")

        pos, done, hit = fn.alloca("i64"), fn.alloca("i1"), fn.alloca("i8")
        fn.emit(f"store i64 0, ptr {pos}")
        fn.emit(f"store i1 false, ptr {done}")

        def search(start, n):
            # skipped once found; else whether the block holds it, then where
            ahead, skip = fn.label("block"), fn.label("next_block")
            fn.emit(f"br i1 {fn.op(f'load i1, ptr {done}', 'c')}, label %{skip}, "
                    f"label %{ahead}")
            fn.start_block(ahead)
            fn.emit(f"store i8 0, ptr {hit}")

            def any_equal(j):
                el.push()
                eq = fn.op(f"zext i1 {equal(iadd(fn, start, j))} to i8", "a")
                h = fn.op(f"load i8, ptr {hit}", "a")
                fn.emit(f"store i8 {fn.op(f'or i8 {h}, {eq}', 'a')}, ptr {hit}")
                el.pop()
            loop(fn, n, any_equal)
            inside, after = fn.label("found"), fn.label("searched")
            held = fn.op(f"icmp ne i8 {fn.op(f'load i8, ptr {hit}', 'a')}, 0", "c")
            fn.emit(f"br i1 {held}, label %{inside}, label %{after}")
            fn.start_block(inside)
            fn.emit(f"store i64 {iadd(fn, start, n)}, ptr {pos}")

            def first(j):   # from the block's end back: the last store is the first hit
                el.push()
                k = iadd(fn, start, fn.op(f"sub i64 {n - 1}, {j}", "a"))
                p = fn.op(f"load i64, ptr {pos}", "a")
                fn.emit(f"store i64 {fn.op(f'select i1 {equal(k)}, i64 {k}, i64 {p}', 'a')}, "
                        f"ptr {pos}")
                el.pop()
            loop(fn, n, first, scalar=True)
            fn.emit("store i1 true, ptr " + done)
            fn.emit(f"br label %{after}")
            fn.start_block(after)
            fn.emit(f"br label %{skip}")
            fn.start_block(skip)

        full, rest = divmod(size, ARG_BLOCK)
        loop(fn, full, lambda b: search(imul(fn, b, ARG_BLOCK), ARG_BLOCK))
        if rest:
            search(full * ARG_BLOCK, rest)
        p = fn.op(f"load i64, ptr {pos}", "a")
        rt = compute_type(red.dtype)
        el.fixed[red] = p if rt == "i64" else fn.op(f"trunc i64 {p} to {rt}", "a")

    def float_extreme(self, red, kdims, sizes, is_max=None):
        """A float max/min in two tries. First in vector lanes, as cheaply as x86 allows:
        a plain `vmaxps` (`llvm.maxnum` marked `nnan nsz`, which LLVM vectorizes and
        lowers to one instruction) and, in the same loop, a NaN detector: the sum of
        x - x, which is 0 unless some x is NaN or infinite. That equals the in-order fold
        of `minmax` unless the row holds a NaN or an infinity, or the result is a zero
        (which sign, where NumPy keeps the tie rule of its loop): only then is the row
        folded again, in order, as `minmax` does: rare, and at worst one more pass.
        (`nnan` makes the first result poison when a NaN is present: it is looked at only
        when the detector says there was none.)
        A maximum no output shows in rows holding a NaN (`_nan_blind_maxima`: softmax's,
        logsumexp's) skips the detector, two of the pass's three vector operations: its
        result is frozen (a fixed if arbitrary value where a NaN made it poison) and
        folded again only where it is a zero."""
        fn, el = self.fn, self.el
        x = red.operands[0]
        arg = is_max is not None   # argmax/argmin's value pass: the value is returned
        dt, t = x.dtype, compute_type(x.dtype)
        is_max = red.op is Op.REDUCE_MAX if is_max is None else is_max
        blind = red in self.nan_blind and not arg
        acc, odd = fn.alloca(t), fn.alloca(t)
        identity = literal(_identity(Op.REDUCE_MAX if is_max else Op.REDUCE_MIN, dt), dt)

        def fold(combine, detect=False, rare=False):
            fn.emit(f"store {t} {identity}, ptr {acc}")
            if detect:
                fn.emit(f"store {t} 0.0, ptr {odd}")

            def step(rdims):
                el.push()
                v = el.value(x, self.s_index(kdims, rdims))
                fn.emit(f"store {t} {combine(fn.op(f'load {t}, ptr {acc}', 'a'), v)}, "
                        f"ptr {acc}")
                if detect:
                    zero = fn.op(f"fsub {t} {v}, {v}", "a")   # NaN for NaN and +-inf
                    o = fn.op(f"load {t}, ptr {odd}", "a")
                    fn.emit(f"store {t} {fn.op(f'fadd reassoc {t} {o}, {zero}', 'a')}, "
                            f"ptr {odd}")
                el.pop()
            # the in-order refold runs only for a row holding a NaN, an inf or a zero
            # result (a zero only, when blind): not worth LLVM's vectorizer's compile time
            nest(fn, sizes, step, scalar=rare)

        def fast(a, v):
            name = f"llvm.{'maxnum' if is_max else 'minnum'}.{'f64' if t == 'double' else 'f32'}"
            fn.declare(name, f"declare {t} @{name}({t}, {t})")
            return fn.op(f"call nnan nsz {t} @{name}({t} {a}, {t} {v})", "a")

        carry = self.carry if self.carry and red is self.carry.red and not arg else None
        if carry:
            start = self.row_start(kdims)
            held = fn.op(f"icmp eq i64 {fn.op(f'load i64, ptr {carry.at}', 'a')}, {start}",
                         "c")
            carried, passed, joined = fn.label("carried"), fn.label("pass"), fn.label("max")
            fn.emit(f"br i1 {held}, label %{carried}, label %{passed}")
            fn.start_block(carried)
            lanes = fn.op(f"load {carry.vector()}, ptr {carry.acc}", "a")
            fn.emit(f"store {t} {carry.reduce(fn, lanes)}, ptr {acc}")
            fn.emit(f"br label %{joined}")
            fn.start_block(passed)
            fold(fast)
            fn.emit(f"br label %{joined}")
            fn.start_block(joined)
        else:
            fold(fast, detect=not blind)
        if blind:
            # an empty asm as `freeze`: LLVM pushes a real freeze back into the loop,
            # dropping the `nnan` that lets it vectorize the loop
            value = fn.op(f'call {t} asm "", "=x,0"({t} '
                          f"{fn.op(f'load {t}, ptr {acc}', 'a')})", "a")
            fn.emit(f"store {t} {value}, ptr {acc}")
            special = fn.op(f"fcmp oeq {t} {value}, 0.0", "c")
        else:
            found = fn.op(f"fcmp uno {t} {fn.op(f'load {t}, ptr {odd}', 'a')}, 0.0", "c")
            zero = fn.op(f"fcmp oeq {t} {fn.op(f'load {t}, ptr {acc}', 'a')}, 0.0", "c")
            # a select, not an `or`: where a NaN was found, `zero` is poison and not looked
            # at (a `freeze` would do too, but LLVM then drops the `nnan` and stops
            # vectorizing)
            special = fn.op(f"select i1 {found}, i1 true, i1 {zero}", "c")
        in_order, done = fn.label("in_order"), fn.label("extreme")
        fn.emit(f"br i1 {special}, label %{in_order}, label %{done}")
        fn.start_block(in_order)
        fold(lambda a, v: minmax(fn, dt, a, v, is_max), rare=True)
        fn.emit(f"br label %{done}")
        fn.start_block(done)
        result = fn.op(f"load {t}, ptr {acc}", "a")
        if arg:
            return result
        el.fixed[red] = narrow(fn, result, dt) if dt in NARROW else result

    def buffer_rows(self, kdims, loop):
        """The row buffers first read by `loop` (`_row_buffer_plan`), each filled by a
        loop of its own over R; from then on, this row's reads of that value load it."""
        fn, el, plan = self.fn, self.el, self.plan
        for m, (first, buffer) in self.row_buffers.items():
            if first != loop:
                continue
            def fill(rdims, m=m, buffer=buffer):
                el.push()
                index = self.s_index(kdims, rdims)
                store(fn, el.value(m, index), buffer, self.r_offset(index), m.dtype)
                el.pop()
            nest(fn, [plan.S[d] for d in plan.R], fill)
            el.buffered[m] = (buffer, self.r_offset)

    def r_offset(self, index):
        """Where an S index lies in a row buffer: its reduced dims, in C order."""
        dims, offset = self.el.dims(index), 0
        for d in self.plan.R:
            offset = iadd(self.fn, imul(self.fn, offset, self.plan.S[d]), dims[d])
        return offset

    def per_k(self, kdims):
        fn, el, plan = self.fn, self.el, self.plan
        el.push()
        for i, red in enumerate(plan.reductions):
            self.buffer_rows(kdims, i)
            if self.carry and red is self.carry.sum:   # the next row's lanes start empty
                c = self.carry
                lowest = literal(-np.inf, c.dtype)
                fn.emit(f"store {c.vector()} splat ({c.t} {lowest}), ptr {c.acc}")
            self.reduction(red, kdims)
            if self.carry and red is self.carry.sum:
                fn.emit(f"store i64 {iadd(fn, self.row_start(kdims), self.carry.row)}, "
                        f"ptr {self.carry.at}")
        self.buffer_rows(kdims, len(plan.reductions))

        def reload(index):   # the kept summed values, before any store overwrites them
            for red, j in self.kept_in.items():
                x = red.operands[0]
                el.remember(x, index, load(fn, *self.kept_at(j, index), x.dtype))

        if self.stream_row:
            ((j, out),) = plan.s_outputs
            row = fn.op(f"getelementptr inbounds {memory_type(out.dtype)}, ptr %out{j}, "
                        f"i64 {el.linear(self.s_index(kdims, [0]))}", "p")

            def value_at(r):
                index = self.s_index(kdims, [r])
                reload(index)
                return el.value(out, index)
            _streamed_range(fn, el, row, out.dtype, 0, plan.S[-1], value_at)
        elif plan.s_outputs:
            def write(rdims):
                el.push()
                index = self.s_index(kdims, rdims)
                reload(index)
                for j, out in plan.s_outputs:
                    store(fn, el.value(out, index), f"%out{j}", el.linear(index), out.dtype)
                el.pop()
            nest(fn, [plan.S[d] for d in plan.R], write)
        for j, out in plan.k_outputs:
            index = self.k_index(out.shape, kdims)
            store(fn, el.value(out, index), f"%out{j}", el.linear(index), out.dtype)
        el.pop()
        el.fixed.clear()
        el.buffered.clear()

    @property
    def splittable(self):
        """Whether there are several rows to share out (never one row's own loop)."""
        return not self.fn.whole and any(self.plan.S[d] > 1 for d in self.kept)

    def render(self):
        if self.carry:
            self.fn.emit(f"store i64 -1, ptr {self.carry.at}")
        nest(self.fn, [self.plan.S[d] for d in self.kept], self.per_k, split=self.splittable)
        if self.stream_row:
            streaming.fence(self.fn)
        self.fn.emit("ret void")
        return self.fn.render()


def render_reduction(name, body):
    """A reduction kernel over the body's params and results."""
    emitter = _ReductionEmitter(name, body)
    return _native(emitter.fn, emitter.render(), body.params, body.results,
                   emitter.splittable)


# -- dot kernels

def render_dot(name, body):
    """The dot_general (run by NumPy) and its epilogue as a loop kernel on its result."""
    dots = [i for i in body.instructions if i.op is Op.DOT_GENERAL]
    if len(dots) != 1:
        raise Unsupported(f"a dot kernel with {len(dots)} dot_generals")
    (dot,) = dots
    tail = [r for r in dict.fromkeys(body.results) if r is not dot]
    if not tail:
        return DotKernel(dot, None, [None] * len(body.results))
    used, seen, stack = [], set(), list(tail)
    while stack:   # the parameters the epilogue reads (not through the dot)
        instr = stack.pop()
        if instr in seen or instr is dot:
            continue
        seen.add(instr)
        if instr.op is Op.PARAMETER:
            used.append(instr)
        stack.extend(instr.operands)
    inputs = [p for p in body.params if p in used] + [dot]
    epilogue = render_loop(name + "_epilogue", inputs, tail)
    return DotKernel(dot, epilogue, [None if r is dot else tail.index(r) for r in body.results])


def render(fusion):
    """The kernel for one FUSION instruction; raises Unsupported where it cannot."""
    kind, name, body = fusion.attrs["kind"], fusion.attrs["name"], fusion.attrs["body"]
    if kind == "loop":
        # an output written over its input's lines (fusion/in_place.py) is not streamed:
        # the loop has just read those lines into the cache
        return render_loop(name, list(body.params), list(body.results),
                           stream=not fusion.attrs.get("overwrites"))
    if kind == "reduction":
        return render_reduction(name, body)
    if kind == "dot":
        return render_dot(name, body)
    raise Unsupported(f"{kind} kernels are not rendered here (opaque ones: opaque.py)")
