"""Which results of a module every correct backend must reproduce bit for bit.

Each value of a module gets one class, from its op and its operands' classes:

    EXACT     computed by ops whose answer is fixed by IEEE rounding of each step
              (integer, comparison, select, data movement, +-*/, sqrt...): bitwise
    APPROX    a float that an approximate op fed (libm math, sums and dots whose order
              of accumulation is free) through continuous ops: equal within tolerance
    UNSTABLE  anything an approximate value reaches through a jump (a comparison,
              floor, a float-to-integer convert, an index): one ulp upstream can flip
              it, so only its shape and dtype are comparable

The sign of a zero is also free where the order of combining is: max/min reductions and
scans, and scatters, may pick either of -0.0 and 0.0 (`order_free_zero_sign`).
"""
from jitlib.hlo import dtypes
from jitlib.hlo import ops as O
from jitlib.hlo.ops import Op

EXACT, APPROX, UNSTABLE = "exact", "approx", "unstable"

# Float ops whose results depend on the implementation or on the order of accumulation.
APPROXIMATE_OPS = frozenset({
    Op.EXP, Op.EXPM1, Op.LOG, Op.LOG1P, Op.RSQRT, Op.TANH, Op.LOGISTIC, Op.SIN, Op.COS,
    Op.TAN, Op.POW, Op.ATAN2, Op.REDUCE_SUM, Op.REDUCE_PROD, Op.DOT_GENERAL, Op.CUMSUM,
    Op.CUMPROD,
})
# Float ops that jump: a tiny change of the operand can change the result by a lot.
DISCONTINUOUS = frozenset({Op.FLOOR, Op.CEIL, Op.ROUND, Op.SIGN, Op.REM})
# Ops on complex values that every backend computes to the bit: the parts' own IEEE
# steps (the rest, products included, round differently where NumPy's loops fuse an fma
# or call glibc's complex functions).
COMPLEX_EXACT_OPS = frozenset({
    Op.ADD, Op.SUB, Op.NEG, Op.CONJ, Op.REAL, Op.IMAG, Op.COMPLEX, Op.SELECT, Op.CONVERT,
    Op.COMPARE, Op.BROADCAST_IN_DIM, Op.RESHAPE, Op.TRANSPOSE, Op.SLICE, Op.PAD,
    Op.CONCATENATE, Op.REVERSE, Op.DYNAMIC_SLICE, Op.DYNAMIC_UPDATE_SLICE, Op.GATHER,
    Op.SCATTER, Op.CONSTANT, Op.PARAMETER,
})
# Ops whose zero sign depends on the order in which they combine elements.
ORDER_FREE_SIGN = O.REDUCE | O.CUMULATIVE | {Op.SCATTER}
_RANK = {EXACT: 0, APPROX: 1, UNSTABLE: 2}


def classify(module, param_classes=None):
    """{value: class} for every instruction of `module` (fusions, loops and conditionals
    analysed inside)."""
    classes = {}
    for n, p in enumerate(module.params):
        classes[p] = param_classes[n] if param_classes else EXACT
    for instr in module.instructions:
        if instr in classes:
            continue
        classes[instr] = _class_of(instr, [classes[o] for o in instr.operands])
    return classes


def regions(instr):
    """The modules nested in `instr`: a fusion's body, a loop's condition and body, a
    conditional's branches."""
    if instr.op is Op.FUSION:
        return [instr.attrs["body"]]
    if instr.op is Op.WHILE:
        return [instr.attrs["cond"], instr.attrs["body"]]
    if instr.op is Op.CONDITIONAL:
        return list(instr.attrs["branches"])
    return []


def _join(classes):
    return max(classes, key=_RANK.get, default=EXACT)


def _while_classes(instr, carry):
    """A loop's results: each carry's class joined with what the body makes of it, until
    nothing rises (a class only rises, so this ends within len(carry) + 1 rounds). A trip
    count decided by an approximate value can change by one trip: everything is then
    UNSTABLE."""
    cond, body = instr.attrs["cond"], instr.attrs["body"]
    carry = list(carry)
    for _ in range(len(carry) + 1):
        inner = classify(body, carry)
        risen = [_join((c, inner[r])) for c, r in zip(carry, body.results)]
        if risen == carry:
            break
        carry = risen
    if classify(cond, carry)[cond.results[0]] != EXACT:
        carry = [UNSTABLE] * len(carry)
    return tuple(carry) if len(carry) > 1 else carry[0]


def _conditional_classes(instr, operand_classes):
    """A conditional's results: the join over its branches; all UNSTABLE when the index
    is not exact (another branch may run)."""
    branches = instr.attrs["branches"]
    n = len(branches[0].results)
    if operand_classes[0] != EXACT:
        outs = [UNSTABLE] * n
    else:
        per = [classify(b, operand_classes[1:]) for b in branches]
        outs = [_join(p[b.results[k]] for p, b in zip(per, branches)) for k in range(n)]
    return tuple(outs) if n > 1 else outs[0]


def _class_of(instr, operand_classes):
    if instr.op is Op.WHILE:
        return _while_classes(instr, operand_classes)
    if instr.op is Op.CONDITIONAL:
        return _conditional_classes(instr, operand_classes)
    if instr.op is Op.FUSION:
        body = instr.attrs["body"]
        inner = classify(body, operand_classes)
        outs = [inner[r] for r in body.results]
        return tuple(outs) if len(outs) > 1 else outs[0]
    if instr.op is Op.GET_OUTPUT:   # of a multi-output fusion or loop: a tuple of classes
        kernel = operand_classes[0]
        return kernel[instr.attrs["index"]] if isinstance(kernel, tuple) else kernel
    worst = max(operand_classes, key=_RANK.get, default=EXACT)
    if worst == UNSTABLE:
        return UNSTABLE
    approx_in = worst == APPROX
    complex_op = any(dtypes.is_complex(x.dtype) for x in (instr, *instr.operands))
    if complex_op and instr.op not in COMPLEX_EXACT_OPS:
        if not _inexact(instr.dtype) or instr.op in DISCONTINUOUS:
            return UNSTABLE   # a comparison, sign or integer from complex math
        return APPROX
    if approx_in:
        if not _inexact(instr.dtype) or instr.op in DISCONTINUOUS:
            return UNSTABLE
        if instr.op in (Op.SELECT, Op.GATHER, Op.DYNAMIC_SLICE, Op.DYNAMIC_UPDATE_SLICE,
                        Op.SCATTER) and _index_is_approx(instr, operand_classes):
            return UNSTABLE
        return APPROX
    if instr.op in APPROXIMATE_OPS and _inexact(instr.dtype):
        return APPROX
    return EXACT


def _inexact(dtype):
    return dtypes.is_float(dtype) or dtypes.is_complex(dtype)


def _index_is_approx(instr, operand_classes):
    # The data operands may be approximate; a predicate or index may not.
    data = {Op.SELECT: (1, 2), Op.GATHER: (0,), Op.DYNAMIC_SLICE: (0,),
            Op.DYNAMIC_UPDATE_SLICE: (0, 1), Op.SCATTER: (0, 2)}[instr.op]
    return any(c != EXACT for i, c in enumerate(operand_classes) if i not in data)


def result_classes(module):
    """One class per result of `module`."""
    classes = classify(module)
    return [classes[r] for r in module.results]


def accumulates(module):
    """Whether `module` (nested regions included) sums products or runs of values, where a
    fused multiply-add may turn an overflow's NaN into an inf."""
    for instr in module.instructions:
        if instr.op in (Op.DOT_GENERAL, Op.REDUCE_SUM, Op.CUMSUM):
            return True
        if any(accumulates(r) for r in regions(instr)):
            return True
    return False


def order_free_zero_sign(module):
    """Whether some op of `module` (nested regions included) may pick either zero sign."""
    for instr in module.instructions:
        if instr.op in ORDER_FREE_SIGN:
            return True
        if any(order_free_zero_sign(r) for r in regions(instr)):
            return True
    return False
