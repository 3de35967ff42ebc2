"""The verifier: is a Module well formed and well typed?

`verify(module)` checks that
  - the module's parameters are parameter instructions with indices 0, 1, 2, ... in order,
    and no other parameter is reachable from the results;
  - every op is known and has exactly the attributes `ATTRS` lists, of the right kinds;
  - every instruction's (shape, dtype) is what `shape_rules.infer` gives.
It raises `VerifierError` whose message shows the offending instruction as one line of
IR text and the whole module below it.
"""
from jitlib.errors import VerifierError
from jitlib.hlo import dtypes
from jitlib.hlo import ops as O
from jitlib.hlo.ir import Literal
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
_DTYPE_NAMES = tuple(map(dtypes.name, dtypes.SUPPORTED))
DTYPE = ("a dtype name (" + ", ".join(_DTYPE_NAMES) + ")",
         lambda v: isinstance(v, str) and v in _DTYPE_NAMES)
LITERAL = ("a Literal of a supported dtype",
           lambda v: isinstance(v, Literal) and dtypes.is_supported(v.dtype))
DIRECTION = ("one of " + ", ".join(O.COMPARE_DIRECTIONS), lambda v: v in O.COMPARE_DIRECTIONS)
MODE = ("one of " + ", ".join(O.SCATTER_MODES), lambda v: v in O.SCATTER_MODES)

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
}
ATTRS.update({op: {} for op in (O.UNARY | O.BINARY) - set(ATTRS)})
ATTRS.update({op: dict(dims=INTS) for op in O.REDUCE})
ATTRS.update({op: dict(axis=INT, dtype=DTYPE) for op in O.ARG_REDUCE})
ATTRS.update({op: dict(axis=INT, reverse=BOOL) for op in O.CUMULATIVE})
assert set(ATTRS) == set(Op), sorted(set(Op) - set(ATTRS))


def attr_error(op, attrs):
    """What is wrong with `attrs` for `op` (missing, unexpected, wrong kind), or None."""
    expected = ATTRS[Op(op)]
    missing = sorted(set(expected) - set(attrs))
    if missing:
        return f"{op} is missing attribute(s) {', '.join(missing)}"
    unexpected = sorted(set(attrs) - set(expected))
    if unexpected:
        return f"{op} has unexpected attribute(s) {', '.join(unexpected)}"
    for key, (what, test) in expected.items():
        if not test(attrs[key]):
            return f"{op} attribute {key}={attrs[key]!r} should be {what}"
    return None


def verify(module) -> None:
    """Raise `VerifierError` unless `module` is well formed and well typed."""
    params = set()
    for i, p in enumerate(module.params):
        if p.op is not Op.PARAMETER:
            _fail(module, p, f"module parameter {i} is a {p.op}, not a parameter")
        index = p.attrs.get("index")
        if p in params:
            _fail(module, p, f"module parameter {i} is listed twice")
        if index != i:
            _fail(module, p, f"module parameter {i} has index {index!r}")
        params.add(p)
    for instr in module.instructions:
        problem = _instr_error(instr, params)
        if problem:
            _fail(module, instr, problem)


def _instr_error(instr, params):
    try:
        op = Op(instr.op)
    except ValueError:
        return f"unknown op {instr.op!r}"
    if op is Op.PARAMETER and instr not in params:
        return "a parameter that is not among the module's parameters is reachable"
    problem = attr_error(op, instr.attrs)
    if problem:
        return problem
    try:
        shape, dtype = infer(op, instr.operands, instr.attrs)
    except (TypeError, ValueError, KeyError, IndexError) as e:
        return f"ill-typed {op}: {e}"
    if (shape, dtype) != (instr.shape, instr.dtype):
        return (f"{op} should give {dtypes.name(dtype)}[{','.join(map(str, shape))}], "
                f"but the instruction says {dtypes.name(instr.dtype)}"
                f"[{','.join(map(str, instr.shape))}]")
    return None


def _fail(module, instr, problem):
    names = value_names(module)
    line = print_instr(instr, names, short_locs=True)
    text = print_module(module, short_locs=True)
    raise VerifierError(f"verifier: {problem}\n  {line}\nin module:\n{text}",
                        location=instr.loc)
