"""A scatter kernel for the GPU: integer add, max and min with atomics.

An opaque fusion of one scatter (x, idx, upd) becomes one program: it copies x into the
output, waits for every thread of the block (a barrier makes the copies visible), then
walks the updates a tile at a time, each element an atomic read-modify-write of its
target. Integer add (wrapping), max and min give the same bits in any order, so the
atomics' order does not show and the result is the interpreter's. Float sums depend on
the order (NumPy's is the index order), float max/min on NaN rules atomics do not keep,
and 8/16-bit atomics do not exist: those scatters stay on the interpreter.

A scatter of one index (a scan's `ys[i] = y`, `x[k] += v` with a traced k) has no
duplicates, so no order to keep: any mode and dtype but bf16 arithmetic (which could
round twice through f32) is generated as plain read-modify-writes.

One program keeps the copy before the updates without a second launch; the updates of
a tile still run in parallel across its threads.
"""
import numpy as np

from jitlib.backends.triton import configs
from jitlib.backends.triton.source import Unsupported, Writer
from jitlib.hlo import dtypes
from jitlib.hlo.ops import Op

_ATOMIC = {"add": "tl.atomic_add", "max": "tl.atomic_max", "min": "tl.atomic_min"}
_ATOMIC_DTYPES = {np.dtype(t) for t in (np.int32, np.int64, np.uint32, np.uint64)}
BLOCK = 1024


def scatter_of(body):
    """The body's one scatter, or raise Unsupported."""
    ops = [i for i in body.instructions if i.op is not Op.PARAMETER]
    if len(ops) != 1 or ops[0].op is not Op.SCATTER or list(body.results) != ops:
        raise Unsupported("opaque kernels other than one scatter, sort or scan are not generated")
    (instr,) = ops
    mode, dt = instr.attrs["mode"], np.dtype(instr.dtype)
    if instr.operands[1].size == 1 and (mode == "set" or not (
            dt == dtypes.BOOL or dtypes.is_bfloat16(dt))):
        return instr     # one index: nothing to order
    if mode not in _ATOMIC or dt not in _ATOMIC_DTYPES:
        raise Unsupported(f"an opaque scatter-{mode} of {dtypes.name(dt)} depends on the "
                          "order (float sums, set) or needs atomics Triton lacks (8/16 "
                          "bits); it runs on the interpreter")
    return instr


def _body(instr, params):
    x, idx, upd = (params[o] for o in instr.operands)
    axis = instr.attrs["axis"]
    shape = instr.shape
    before = int(np.prod(shape[:axis], dtype=np.int64))
    n, after = shape[axis], int(np.prod(shape[axis + 1:], dtype=np.int64))
    count = instr.operands[1].size
    total, updates = before * n * after, before * count * after
    w = Writer()
    w.line("lane = tl.arange(0, BLOCK).to(tl.int64)")
    w.line(f"# out = x: {total} elements")
    w.line(f"for start in range(0, {total}, BLOCK):")
    w.line("    i = start + lane")
    w.line(f"    tl.store(out0 + i, tl.load({x} + i, mask=i < {total}), mask=i < {total})")
    w.line("tl.debug_barrier()   # the copies land before any update reads them")
    w.line(f"# {updates} updates: out[b, idx[j], a] op= upd[b, j, a]")
    w.line(f"for start in range(0, {updates}, BLOCK):")
    w.line("    e = start + lane")
    w.line(f"    live = e < {updates}")
    w.line(f"    b = e // {count * after}")
    w.line(f"    j = (e // {after}) % {count}")
    w.line(f"    a = e % {after}")
    w.line(f"    target = tl.load({idx} + j, mask=live, other=-1).to(tl.int64)")
    w.line(f"    inside = live & (target >= 0) & (target < {n})   # the others are dropped")
    w.line(f"    at = b * {n * after} + target * {after} + a")
    w.line(f"    value = tl.load({upd} + e, mask=inside)")
    mode = instr.attrs["mode"]
    if count > 1:
        w.line(f"    {_ATOMIC[mode]}(out0 + at, value, mask=inside)")
    elif mode == "set":
        w.line("    tl.store(out0 + at, value, mask=inside)")
    else:   # one index: each target is written once, after its copy (the barrier)
        w.line(f"    old = tl.load({x} + at, mask=inside)")
        w.line(f"    tl.store(out0 + at, {_combine(mode, instr.dtype)}, mask=inside)")
    return w


def _combine(mode, dt):
    if mode == "add":
        return "old + value"
    if mode == "mul":
        return "old * value"
    nan = ", propagate_nan=tl.PropagateNan.ALL" if dtypes.is_float(dt) else ""
    return f"tl.{'maximum' if mode == 'max' else 'minimum'}(old, value{nan})"


def source(body):
    """(the kernel body's Writer, its launch config) for an opaque fusion holding one
    integer add/max/min scatter; raises Unsupported for any other opaque body."""
    instr = scatter_of(body)
    w = _body(instr, {p: f"in{i}" for i, p in enumerate(body.params)})
    return w, configs.Config({"BLOCK": BLOCK}, num_warps=4)
