"""A cumulative kernel for the GPU: cumsum, cumprod, cummax and cummin along one axis.

NumPy accumulates in order (out[k] = out[k-1] op x[k], rounded to the dtype at every
step), and so does the interpreter; a parallel prefix (tl.cumsum's tree) adds floats in
another order and rounds differently. So each lane (one position of the axes before and
after the scanned one) walks its axis in order, and the parallelism is across lanes: a
program takes BLOCK neighbouring lanes, whose loads are contiguous where the scanned
axis is not the last. The result is the interpreter's to the bit.

Not generated (the interpreter runs them): bool and bfloat16 scans (a bf16 step rounded
through f32 could round twice), and empty ones.
"""
import numpy as np

from jitlib.backends.triton import configs
from jitlib.backends.triton.source import Unsupported, Writer
from jitlib.hlo import dtypes
from jitlib.hlo import ops as O
from jitlib.hlo.ops import Op

BLOCK = 128
_STEP = {Op.CUMSUM: "acc + x", Op.CUMPROD: "acc * x",
         Op.CUMMAX: "tl.maximum(acc, x{})", Op.CUMMIN: "tl.minimum(acc, x{})"}


def scan_of(body):
    """The body's one cumulative op, or raise Unsupported saying why it is not generated."""
    ops = [i for i in body.instructions if i.op is not Op.PARAMETER]
    if len(ops) != 1 or ops[0].op not in O.CUMULATIVE or list(body.results) != ops:
        raise Unsupported("not one cumulative op")
    (instr,) = ops
    dt = np.dtype(instr.dtype)
    if dt == dtypes.BOOL or dtypes.is_bfloat16(dt):
        raise Unsupported(f"a {dtypes.name(dt)} scan runs on the interpreter")
    if instr.size == 0:
        raise Unsupported("an empty scan runs on the interpreter")
    return instr


def source(body):
    """(the kernel body's Writer, its launch config, its program count) for an opaque
    fusion holding one cumulative op; raises Unsupported for any other."""
    instr = scan_of(body)
    dt = np.dtype(instr.dtype)
    axis = instr.attrs["axis"]
    shape = instr.shape
    before = int(np.prod(shape[:axis], dtype=np.int64))
    n, after = shape[axis], int(np.prod(shape[axis + 1:], dtype=np.int64))
    lanes = before * after
    (x,) = instr.operands
    src = f"in{body.params.index(x)}"
    move = f"at -= {after}" if instr.attrs["reverse"] else f"at += {after}"
    # np.maximum/minimum.accumulate keep a NaN from where it first appears
    nan = ", propagate_nan=tl.PropagateNan.ALL" if dtypes.is_float(dt) else ""
    first = 0 if not instr.attrs["reverse"] else (n - 1) * after
    w = Writer()
    w.line(f"# {instr.op} along axis {axis} of {list(shape)}: {lanes} lanes of {n}, "
           f"{'from the end' if instr.attrs['reverse'] else 'in order'}")
    w.line("lane = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)")
    w.line(f"live = lane < {lanes}")
    w.line(f"at = (lane // {after}) * {n * after} + lane % {after} + {first}")
    w.line(f"acc = tl.load({src} + at, mask=live)")
    w.line("tl.store(out0 + at, acc, mask=live)")
    w.line(f"for k in range(1, {n}):")
    w.line(f"    {move}")
    w.line(f"    x = tl.load({src} + at, mask=live)")
    w.line(f"    acc = {_STEP[instr.op].format(nan)}")
    w.line("    tl.store(out0 + at, acc, mask=live)")
    programs = -(-lanes // BLOCK)
    return w, configs.Config({"BLOCK": BLOCK}, num_warps=4), programs
