"""The verifier: is a Module well formed and well typed?

`verify(module)` checks that
  - the module's parameters are parameter instructions with indices 0, 1, 2, ... in order,
    and no other parameter is reachable from the results;
  - every op is known and has exactly the attributes `ATTRS` lists, of the right kinds;
  - every instruction's (shape, dtype) is what `shape_rules.infer` gives;
  - every fusion's body passes all of this too, holds no fusion, and takes parameters
    matching the fusion's operands one to one;
  - every loop's cond and body and every conditional's branches pass all of this too
    (they may hold fusions and loops; a fusion body holds neither);
  - a multi-output op is used only by get_output, and is not a result.
It raises `VerifierError` whose message shows the offending instruction as one line of
IR text (a line of a fusion body, if the problem is there) and the whole module below it.
"""
from jitlib.errors import VerifierError
from jitlib.hlo import dtypes
from jitlib.hlo import ops as O
from jitlib.hlo.ir import Literal, Module, is_multi_output, regions
from jitlib.hlo.ops import Op
from jitlib.hlo.printer import print_instr, print_module, value_names
from jitlib.hlo.shape_rules import infer


def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


# Attribute kinds: (what the message calls it, test).
INT = ("an int", _is_int)
BOOL = ("a bool", lambda v: isinstance(v, bool))
STR = ("a str", lambda v: isinstance(v, str))
INTS = ("a tuple of ints", lambda v: isinstance(v, tuple) and all(_is_int(x) for x in v))
_DTYPE_NAMES = dtypes.IR_NAMES
DTYPE = ("a dtype name (" + ", ".join(_DTYPE_NAMES) + ")",
         lambda v: isinstance(v, str) and v in _DTYPE_NAMES)
LITERAL = ("a Literal of a supported dtype",
           lambda v: isinstance(v, Literal) and dtypes.is_supported(v.dtype))
DIRECTION = ("one of " + ", ".join(O.COMPARE_DIRECTIONS), lambda v: v in O.COMPARE_DIRECTIONS)
MODE = ("one of " + ", ".join(O.SCATTER_MODES), lambda v: v in O.SCATTER_MODES)
FFT_TYPE = ("one of " + ", ".join(O.FFT_TYPES), lambda v: v in O.FFT_TYPES)
KIND = ("one of " + ", ".join(O.FUSION_KINDS), lambda v: v in O.FUSION_KINDS)
REDUCTION = ("one of " + ", ".join(O.ALL_REDUCE_KINDS), lambda v: v in O.ALL_REDUCE_KINDS)
PAIRS = ("a tuple of (int, int) pairs", lambda v: isinstance(v, tuple) and all(
    isinstance(p, tuple) and len(p) == 2 and all(_is_int(x) for x in p) for p in v))
MODULE = ("a Module", lambda v: isinstance(v, Module))
MODULES = ("a non-empty tuple of Modules", lambda v: isinstance(v, tuple) and len(v) > 0
           and all(isinstance(m, Module) for m in v))

# The attributes of every op: name -> kind. The contract every rule table relies on.
ATTRS = {
    Op.PARAMETER: dict(index=INT, name=STR, shape=INTS, dtype=DTYPE),
    Op.CONSTANT: dict(value=LITERAL),
    Op.IOTA: dict(shape=INTS, dtype=DTYPE, dimension=INT),
    Op.CONVERT: dict(dtype=DTYPE),
    Op.COMPARE: dict(direction=DIRECTION),
    Op.SELECT: {}, Op.CLAMP: {},
    Op.BROADCAST_IN_DIM: dict(shape=INTS, dims=INTS),
    Op.RESHAPE: dict(shape=INTS),
    Op.TRANSPOSE: dict(perm=INTS),
    Op.SLICE: dict(start=INTS, limit=INTS, strides=INTS),
    Op.PAD: dict(low=INTS, high=INTS, interior=INTS),
    Op.CONCATENATE: dict(dim=INT),
    Op.REVERSE: dict(dims=INTS),
    Op.DYNAMIC_SLICE: dict(sizes=INTS),
    Op.DYNAMIC_UPDATE_SLICE: {},
    Op.GATHER: dict(axis=INT),
    Op.SCATTER: dict(axis=INT, mode=MODE),
    Op.DOT_GENERAL: dict(lhs_contract=INTS, rhs_contract=INTS, lhs_batch=INTS, rhs_batch=INTS),
    Op.FUSION: dict(body=MODULE, kind=KIND, name=STR),
    Op.GET_OUTPUT: dict(index=INT),
    Op.WHILE: dict(cond=MODULE, body=MODULE),
    Op.CONDITIONAL: dict(branches=MODULES),
    Op.SORT: dict(dimension=INT, indices=BOOL),
    Op.FFT: dict(fft_type=FFT_TYPE, fft_length=INTS),
    Op.ALL_REDUCE: dict(axis_name=STR, axis_size=INT, reduction=REDUCTION),
    Op.ALL_GATHER: dict(axis_name=STR, axis_size=INT, axis=INT),
    Op.REDUCE_SCATTER: dict(axis_name=STR, axis_size=INT, axis=INT),
    Op.COLLECTIVE_PERMUTE: dict(axis_name=STR, axis_size=INT, pairs=PAIRS),
    Op.AXIS_INDEX: dict(axis_name=STR, axis_size=INT),
    Op.CHOLESKY: {},
    Op.TRIANGULAR_SOLVE: dict(left_side=BOOL, lower=BOOL, transpose_a=BOOL,
                              unit_diagonal=BOOL),
    Op.LU: dict(output=STR), Op.EIGH: dict(output=STR),
    Op.QR: dict(output=STR, full_matrices=BOOL), Op.SVD: dict(output=STR, full_matrices=BOOL),
}
ATTRS.update({op: {} for op in (O.UNARY | O.BINARY) - set(ATTRS)})
ATTRS.update({op: dict(dims=INTS) for op in O.REDUCE})
ATTRS.update({op: dict(axis=INT, dtype=DTYPE) for op in O.ARG_REDUCE})
ATTRS.update({op: dict(axis=INT, reverse=BOOL) for op in O.CUMULATIVE})
assert set(ATTRS) == set(Op), sorted(set(Op) - set(ATTRS))
# Attributes an op may carry or leave out: a kernel's outputs that may overwrite an
# operand's memory, or fill a written parameter's (fusion/in_place.py).
# A loop's trip count, where it is known (fori_loop, scan, a rolled Python loop): what
# reverse-mode differentiation and the backends' counted loops need.
# A product's precision where it is below NumPy's (jit's matmul_precision).
PRECISION = ("one of " + ", ".join(O.PRECISIONS[1:]), lambda v: v in O.PRECISIONS[1:])
OPTIONAL = {Op.FUSION: dict(overwrites=PAIRS, fills=PAIRS), Op.WHILE: dict(trip_count=INT),
            Op.DOT_GENERAL: dict(precision=PRECISION)}


def attr_error(op, attrs):
    """What is wrong with `attrs` for `op` (missing, unexpected, wrong kind), or None."""
    expected = ATTRS[Op(op)]
    missing = sorted(set(expected) - set(attrs))
    if missing:
        return f"{op} is missing attribute(s) {', '.join(missing)}"
    optional = OPTIONAL.get(Op(op), {})
    unexpected = sorted(set(attrs) - set(expected) - set(optional))
    if unexpected:
        return f"{op} has unexpected attribute(s) {', '.join(unexpected)}"
    for key, (what, test) in list(expected.items()) + [
            (k, v) for k, v in optional.items() if k in attrs]:
        if not test(attrs[key]):
            return f"{op} attribute {key}={attrs[key]!r} should be {what}"
    return None


def verify(module) -> None:
    """Raise `VerifierError` unless `module` is well formed and well typed."""
    _verify(module, module, None)


def _verify(module, top, fusion):
    """Check `module`: `top` itself, or a region of the instruction `fusion` (a fusion,
    loop or conditional) within `top`."""
    def fail(instr, problem):
        _fail(top, module, fusion, instr, problem)

    params = set()
    for i, p in enumerate(module.params):
        if p.op is not Op.PARAMETER:
            fail(p, f"module parameter {i} is a {p.op}, not a parameter")
        index = p.attrs.get("index")
        if p in params:
            fail(p, f"module parameter {i} is listed twice")
        if index != i:
            fail(p, f"module parameter {i} has index {index!r}")
        params.add(p)
    for instr in module.instructions:
        in_kernel = fusion is not None and fusion.op is Op.FUSION
        problem = _instr_error(instr, params, in_kernel)
        if problem:
            fail(instr, problem)
        if instr.op is Op.FUSION or instr.op in O.CONTROL:
            for region in regions(instr):
                _verify(region, top, instr)
            problem = _type_error(instr)
            if problem:
                fail(instr, problem)
    for i, result in enumerate(module.results):
        if is_multi_output(result):
            fail(result, f"result {i} is a multi-output {result.op}: "
                         "return its results through get_output")


def _instr_error(instr, params, in_body):
    try:
        op = Op(instr.op)
    except ValueError:
        return f"unknown op {instr.op!r}"
    if op is Op.PARAMETER and instr not in params:
        return "a parameter that is not among the module's parameters is reachable"
    if op in O.KERNEL and in_body:
        return f"a {op} inside a fusion body: fusions do not nest"
    if op in O.CONTROL and in_body:
        return f"a {op} inside a fusion body: a fusion is straight-line code"
    problem = attr_error(op, instr.attrs)
    if problem:
        return problem
    if op is not Op.GET_OUTPUT:
        for i, x in enumerate(instr.operands):
            if is_multi_output(x):
                return (f"operand {i} is a multi-output {x.op}, which only get_output "
                        "may use")
    # A fusion is typed after its body is checked, so a problem there names the body's line.
    # The builder's instructions were typed by `infer` when made: only raw ones are checked.
    return None if op is Op.FUSION or op in O.CONTROL else _type_error(instr)


def _type_error(instr):
    if instr.typed:
        return None
    op = instr.op
    try:
        shape, dtype = infer(op, instr.operands, instr.attrs)
    except (TypeError, ValueError, KeyError, IndexError) as e:
        return f"ill-typed {op}: {e}"
    if (shape, dtype) != (instr.shape, instr.dtype):
        return (f"{op} should give {dtypes.name(dtype)}[{','.join(map(str, shape))}], "
                f"but the instruction says {dtypes.name(instr.dtype)}"
                f"[{','.join(map(str, instr.shape))}]")
    return None


def _fail(top, module, fusion, instr, problem):
    line = print_instr(instr, value_names(module), short_locs=True)
    if fusion is None:
        where = ""
    elif fusion.op is Op.FUSION:
        where = f" (in the body of fusion {fusion.attrs['name']!r})"
    else:
        where = f" (in a region of the {fusion.op} {_short(fusion)})"
    text = print_module(top, short_locs=True)
    raise VerifierError(f"verifier: {problem}{where}\n  {line}\nin module:\n{text}",
                        location=instr.loc)


def _short(instr):
    return f"at {instr.loc.short()}" if instr.loc is not None \
        else f"with {len(instr.operands)} operands"
