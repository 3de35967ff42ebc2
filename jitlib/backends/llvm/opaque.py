"""The kernels no other kernel can hold: scans (cumsum, cumprod, cummax, cummin) and
scatter, each a fusion of that one op over its operands (and small LU factors and
triangular solves: lapack.py).

Both are sequential where NumPy is, and in NumPy's order, so the bits are NumPy's:

  scan     out[..., k, ...] = op(out[..., k-1, ...], x[..., k, ...]) along the axis
           (from the end with `reverse`), reading back the element just written, in
           its own type: an f16/bf16 partial is rounded at each step as NumPy rounds it,
           ints wrap, max/min keep np.maximum's NaN and tie rules. The loop nest is
           (before the axis, along it, after it): the innermost loop runs across
           independent scans and vectorizes; a scan along the last axis is a scalar
           loop per row, as fast as the add's latency allows, as NumPy's is.
  scatter  out = x, then for each index j in order: out[..., idx[j], ...] op=
           upd[..., j, ...], skipping indices outside [0, n) (no wrap-around, as the
           interpreter's rule): duplicates combine in order and the last "set" wins.

Either splits across threads by the dims before the axis, else by those after it: each
element is then computed whole by one thread, so any split gives the same bits.
"""
import functools
import math

from jitlib.backends.llvm.emitter import (
    I64, NARROW, Unsupported, convert, iadd, imul, load, minmax, narrow, scalar_rules, store)
from jitlib.backends.llvm import lapack
from jitlib.backends.llvm.kernels import _function, _native, loop, runs_whole, share
from jitlib.hlo import ops as O
from jitlib.hlo.ops import Op

_SCAN_STEP = {Op.CUMSUM: Op.ADD, Op.CUMPROD: Op.MUL, Op.CUMMAX: Op.MAX, Op.CUMMIN: Op.MIN}
_SCATTER_STEP = {"add": Op.ADD, "mul": Op.MUL, "max": Op.MAX, "min": Op.MIN}


def render(name, body, in_place=False):
    """The NativeKernel of an opaque fusion's body; raises Unsupported for anything else.
    `in_place`: a scatter whose caller passes its operand's memory as the output, so
    the copy of the operand is left out (native_loop.py uses it for scan's stacked ys)."""
    ops = [i for i in body.instructions if i.op is not Op.PARAMETER]
    if len(ops) != 1 or list(body.results) != ops:
        raise Unsupported("an opaque kernel of more than one op")
    (instr,) = ops
    if instr.size == 0:
        raise Unsupported("an empty scan or scatter")
    pointers = {p: f"%in{i}" for i, p in enumerate(body.params)}
    if instr.op in O.CUMULATIVE:
        emit = _scan
    elif instr.op is Op.SCATTER:
        emit = functools.partial(_scatter, copy_operand=not in_place)
    elif instr.op in O.LINALG:
        lapack.check(instr)    # small LU factors and triangular solves compile
        emit = lapack.emit
    else:
        raise Unsupported(f"{instr.op} kernels run on the interpreter")
    fn = _function(name, len(body.params), 1, runs_whole(body.params, body.results))
    emit(fn, instr, [pointers[o] for o in instr.operands])
    fn.emit("ret void")
    splittable = fn.split_extent > 0
    return _native(fn, fn.render(), body.params, body.results, splittable)


def _combine(fn, step, instr, acc, value):
    """`step` (ADD, MUL, MAX, MIN) of two compute values of instr's type, rounded to it."""
    if step in (Op.MAX, Op.MIN):
        return minmax(fn, instr.dtype, acc, value, step is Op.MAX)
    out = scalar_rules[step](fn, instr, acc, value)
    return narrow(fn, out, instr.dtype) if instr.dtype in NARROW else out


def _around(shape, axis):
    """(elements before the axis, along it, after it)."""
    return math.prod(shape[:axis]), shape[axis], math.prod(shape[axis + 1:])


def _split_loops(fn, before, after, body):
    """Emit `body(b, across)` for each b in range(before); `body` emits its own loops
    (along the axis) around `across(emit)`, the loop over range(after) calling emit(a).
    This call's share is taken from `before` where it has more than one element, else
    from every loop over `after` (the same share each time)."""
    if before > 1:
        share(fn, before, lambda b: body(b, lambda emit: loop(fn, after, emit)))
    elif after > 1:
        body(0, lambda emit: share(fn, after, emit))
    else:
        body(0, lambda emit: emit(0))


def _scan(fn, instr, operands):
    (x,) = operands
    dt, step = instr.dtype, _SCAN_STEP[instr.op]
    before, n, after = _around(instr.shape, instr.attrs["axis"])
    order = range(n - 1, -1, -1) if instr.attrs["reverse"] else range(n)
    first, direction = order[0], (-1 if instr.attrs["reverse"] else 1)

    def rows(b, across):
        base = imul(fn, b, n * after)

        def start(a):   # the scan's first element is the input's
            at = iadd(fn, base, iadd(fn, a, first * after))
            store(fn, load(fn, x, at, dt), "%out0", at, dt)

        across(start)
        if n == 1:
            return

        def along(t):
            # k = first + direction * (t + 1): the t-th step after the first
            k = iadd(fn, imul(fn, t, direction), first + direction)

            def element(a):
                at = iadd(fn, base, iadd(fn, a, imul(fn, k, after)))
                before_at = iadd(fn, at, -direction * after)
                acc = load(fn, "%out0", before_at, dt)
                store(fn, _combine(fn, step, instr, acc, load(fn, x, at, dt)),
                      "%out0", at, dt)
            across(element)
        loop(fn, n - 1, along)

    _split_loops(fn, before, after, rows)


def _scatter(fn, instr, operands, copy_operand=True):
    x, idx, upd = operands
    dt, mode = instr.dtype, instr.attrs["mode"]
    axis = instr.attrs["axis"]
    before, n, after = _around(instr.shape, axis)
    index = instr.operands[1]
    count = index.size
    idx_dt = index.dtype

    def rows(b, across):
        base = imul(fn, b, n * after)

        def copy(t):
            def element(a):
                at = iadd(fn, base, iadd(fn, imul(fn, t, after), a))
                store(fn, load(fn, x, at, dt), "%out0", at, dt)
            across(element)
        if copy_operand:
            loop(fn, n, copy)

        def update(j):
            raw = convert(fn, load(fn, idx, j, idx_dt), idx_dt, I64)
            # negative (as unsigned: huge) and past-the-end indices are skipped
            inside = fn.op(f"icmp ult i64 {raw}, {n}", "c")
            then, done = fn.label("hit"), fn.label("next")
            fn.emit(f"br i1 {inside}, label %{then}, label %{done}")
            fn.start_block(then)
            row = iadd(fn, base, imul(fn, raw, after))
            from_row = iadd(fn, imul(fn, b, count * after), imul(fn, j, after))

            def element(a):
                at = iadd(fn, row, a)
                value = load(fn, upd, iadd(fn, from_row, a), dt)
                if mode != "set":
                    value = _combine(fn, _SCATTER_STEP[mode], instr,
                                     load(fn, "%out0", at, dt), value)
                store(fn, value, "%out0", at, dt)
            across(element)
            fn.emit(f"br label %{done}")
            fn.start_block(done)
        loop(fn, count, update)

    _split_loops(fn, before, after, rows)
