"""Constant folding: evaluate with the reference interpreter what needs no input.

Scalars stay scalars: an elementwise op whose operands are scalar constants or broadcasts
of them is evaluated once, on the scalars, and becomes `broadcast_in_dim(constant)`
however large its shape.

Anything else that computes (elementwise, reductions, scans, dot, gather, pad, ...) from
known operands is evaluated whole, only when the result and every operand have at most
`Options.fold_limit` elements: a huge constant is never made. Known operands are
constants and iotas, and views of them (broadcast, reshape, transpose, slice, reverse).

NumPy's float kernels can round differently on differently laid-out memory (a reversed
view takes a scalar path: f32 tan, f64 exp and log differ in the last bit), so folding
keeps every layout the interpreter would see: operands are evaluated into exactly the
views the interpreter makes, views are never folded into copies, and neither is a result
the interpreter holds as a reversed view.
"""
import numpy as np

from jitlib.errors import InterpretError
from jitlib.fusion.rewrite import RuleTable, scalar_constant
from jitlib.hlo import build
from jitlib.hlo import ops as O
from jitlib.hlo.interpreter import evaluate_instr
from jitlib.hlo.ops import Op

# Movement the interpreter evaluates as a view of its one operand.
VIEWS = frozenset({Op.BROADCAST_IN_DIM, Op.RESHAPE, Op.TRANSPOSE, Op.SLICE, Op.REVERSE})


def _is_known(x):
    while x.op in VIEWS:
        x = x.operands[0]
    return x.op in (Op.CONSTANT, Op.IOTA)


def _value(x):
    """The array the interpreter would hold for known `x` (views included)."""
    if x.op is Op.CONSTANT:
        return x.attrs["value"].array
    return evaluate_instr(x, [_value(o) for o in x.operands])


def fold_scalars(instr, options):
    scalars = [scalar_constant(o) for o in instr.operands]
    if any(s is None for s in scalars):
        return None
    scalar_instr = build.make(instr.op, scalars, instr.attrs)
    value = evaluate_instr(scalar_instr, [s.attrs["value"].array for s in scalars])
    return build.full(value, instr.shape, instr.dtype, loc=instr.loc)


def fold_constants(instr, options):
    limit = options.fold_limit
    if instr.size > limit or not all(_is_known(o) and o.size <= limit
                                     for o in instr.operands):
        return None
    try:
        value = evaluate_instr(instr, [_value(o) for o in instr.operands])
    except InterpretError:
        return None         # the program fails when run, as it did before folding
    if any(stride < 0 for stride in value.strides):   # a reverse scan's flipped view
        return None
    # np.array keeps the memory order (order="K"), and the constant keeps the array
    return build.constant(np.array(value), loc=instr.loc)


# Views (dynamic_slice is one too) are evaluated as operands, never folded into copies.
_COMPUTING = (O.ELEMENTWISE | O.MOVEMENT | O.REDUCE | O.ARG_REDUCE | O.CUMULATIVE
              | {Op.DOT_GENERAL}) - VIEWS - {Op.DYNAMIC_SLICE}

RULES = RuleTable([
    # ** constant folding **
    (O.ELEMENTWISE, fold_scalars),     # f(broadcast(c1), broadcast(c2)) -> broadcast(f(c1, c2))
    (_COMPUTING, fold_constants),      # f(constants) -> constant, at most fold_limit elements
])
