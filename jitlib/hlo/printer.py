"""The IR's text form: XLA-like, one instruction a line, the full type on every line.

    module f(%x: f32[4,8], %b: f32[8]) {
      %0 = f32[4] reduce_sum(%x), dims=[1]                      loc("/src/model.py":12 f)
      %1 = f32[] constant(8.0)
      return (%0, %1)
    }

Parameters print in the header under their `name` attribute; every other value is
numbered %0, %1, ... in `Module.instructions` order. A fusion's body is a module nested
below its line, two spaces further in, with its own names; the fusion's `}` closes it:

      %0 = (f32[4], f32[4]) fusion(%x), kind=loop, name=fused_exp_0 {
        module fused_exp_0(%p0: f32[4]) {
          %0 = f32[4] exp(%p0)
          %1 = f32[4] neg(%0)
          return (%0, %1)
        }
      }
      %1 = f32[4] get_output(%0), index=1

A loop prints its cond and then its body below its line, and a conditional its
branches in order, the same way:

      %2 = (f32[4], i64[]) while(%x, %1), trip_count=10 {
        module cond(%c0: f32[4], %c1: i64[]) { ... return (%k) }
        module body(%c0: f32[4], %c1: i64[]) { ... return (%y, %j) }
      }

A multi-output fusion's (or loop's, or conditional's) type is the tuple of its results'
types. Attributes follow the
operands as `, key=value`, sorted by key, except those the result type restates (see
`implied_attrs`); the parser restores those from the type. `parser.parse_module` reads
this text back, and printing what it returns gives the same text.
"""
import json
import re

import numpy as np

from jitlib.hlo import dtypes
from jitlib.hlo.ir import Literal, Module, regions, result_module
from jitlib.hlo.ops import Op

# Constants with more elements than this print as the hex of their little-endian bytes.
MAX_DECIMAL_ELEMENTS = 64
# Column at which a trailing loc(...) starts, counting the module's two-space indent.
LOC_COLUMN = 60
INDENT = "  "

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
# Bare words the parser reads as something other than a string.
_RESERVED = frozenset({"true", "false", "nan", "inf", "hex", "loc"})


def print_module(module, short_locs=False) -> str:
    """The module as text; `short_locs` prints file basenames (not parseable back exactly)."""
    return "\n".join(_module_lines(module, short_locs))


def _module_lines(module, short_locs):
    names = value_names(module)
    header = ", ".join(f"%{names[p]}: {format_type(p.shape, p.dtype)}" for p in module.params)
    writes = ", ".join(f"%{names[module.params[i]]}" for i in module.writes)
    writes = f" writes({writes})" if writes else ""
    lines = [f"module {sanitize(module.name)}({header}){writes} {{"]
    params = set(module.params)
    for instr in module.instructions:
        if instr in params:
            continue
        lines.append(INDENT + print_instr(instr, names, short_locs))
        inner = regions(instr)
        if inner:
            for region in inner:
                lines += [INDENT * 2 + line for line in _module_lines(region, short_locs)]
            lines.append(INDENT + "}")
    results = ", ".join(f"%{names[r]}" for r in module.results)
    lines.append(f"{INDENT}return ({results})")
    lines.append("}")
    return lines


def value_names(module) -> dict:
    """Instr -> printed name (without the `%`): parameters by name, the rest numbered."""
    names, taken = {}, set()
    for p in module.params:
        if p in names:
            continue
        base = sanitize(str(p.attrs.get("name", "p")))
        name, k = base, 0
        while name in taken:
            k += 1
            name = f"{base}_{k}"
        names[p] = name
        taken.add(name)
    counter = 0
    for instr in module.instructions:
        if instr not in names:
            names[instr] = str(counter)
            counter += 1
    return names


def sanitize(name: str) -> str:
    """`name` as an identifier: other characters become `_`; never starts with a digit."""
    ident = re.sub(r"[^A-Za-z0-9_]", "_", name)
    return ident if ident and not ident[0].isdigit() else "_" + ident


def print_instr(instr, names, short_locs=False) -> str:
    """One instruction as one line, e.g. `%3 = f32[4] div(%0, %2)`, with its loc if set.

    `names` maps instructions to their names (see `value_names`); the line has no indent.
    A fusion's line ends with the `{` that opens its body, which `print_module` prints
    below it; a multi-output fusion's type is the tuple of its results' types.
    """
    op = instr.op
    attrs = dict(instr.attrs)
    has_body = bool(regions(instr))
    if has_body:
        body = result_module(instr)
        for key in REGION_ATTRS.get(op, ()):
            attrs.pop(key)
    if op is Op.CONSTANT and _printable_literal(attrs.get("value"), instr):
        args = format_literal(attrs.pop("value").array)
    else:
        # "?" only in a broken module whose instructions miss an operand.
        args = ", ".join(f"%{names.get(o, '?')}" for o in instr.operands)
    implied = implied_attrs(op, instr.shape, instr.dtype)
    type_ = format_type(instr.shape, instr.dtype)
    if has_body and len(body.results) > 1:
        type_ = "(" + ", ".join(format_type(r.shape, r.dtype) for r in body.results) + ")"
    text = f"%{names[instr]} = {type_} {op}({args})"
    for key in sorted(attrs):
        value = format_attr(attrs[key])
        if key in implied and value == format_attr(implied[key]):
            continue
        text += f", {key}={value}"
    if instr.loc is not None:
        width = LOC_COLUMN - len(INDENT) - 2
        text = f"{text.ljust(width)}  {format_loc(instr.loc, short_locs)}"
    return text + " {" if has_body else text


# The attributes that hold an op's regions, printed as the modules below its line.
REGION_ATTRS = {Op.FUSION: ("body",), Op.WHILE: ("cond", "body"),
                Op.CONDITIONAL: ("branches",)}


def implied_attrs(op, shape, dtype) -> dict:
    """The attributes of `op` that its result type (shape, dtype) restates, and their values."""
    name = dtypes.name(dtype)
    if op in (Op.PARAMETER, Op.IOTA):
        return {"shape": tuple(shape), "dtype": name}
    if op in (Op.BROADCAST_IN_DIM, Op.RESHAPE):
        return {"shape": tuple(shape)}
    if op is Op.DYNAMIC_SLICE:
        return {"sizes": tuple(shape)}
    if op in (Op.CONVERT, Op.ARGMAX, Op.ARGMIN):
        return {"dtype": name}
    return {}


def format_type(shape, dtype) -> str:
    return f"{dtypes.name(dtype)}[{','.join(str(d) for d in shape)}]"


def format_attr(value) -> str:
    """An attribute value: ints, true/false, bare or quoted strings, [lists]."""
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, str):
        if _IDENT.match(value) and value not in _RESERVED:
            return value
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, (tuple, list)):
        return "[" + ",".join(format_attr(v) for v in value) + "]"
    if isinstance(value, Literal) and dtypes.is_supported(value.dtype):
        return format_literal(value.array)
    # Not a valid attribute; printed readably so the verifier's message can show it.
    return " ".join(repr(value).split())


def format_loc(loc, short=False) -> str:
    """`loc("FILE":LINE FUNCTION)`; `short` keeps only the file's basename."""
    path = loc.file
    if short:
        path = re.split(r"[\\/]", path)[-1]
    return f"loc({json.dumps(path, ensure_ascii=False)}:{loc.line} {loc.function})"


def _printable_literal(value, instr):
    return (isinstance(value, Literal) and dtypes.is_supported(value.dtype)
            and value.shape == instr.shape)


# -- constants

def format_literal(array) -> str:
    """A constant's value: a scalar, a flat `{a, b, ...}` list, or `hex"..."` when large."""
    dt = array.dtype
    if array.ndim == 0:
        return format_scalar(array[()], dt)
    if array.size > MAX_DECIMAL_ELEMENTS:
        return f'hex"{literal_bytes(array).hex()}"'
    return "{" + ", ".join(format_scalar(v, dt) for v in array.reshape(-1)) + "}"


def literal_bytes(array) -> bytes:
    """The array's elements in row-major order as little-endian bytes (complex: each
    element's real part, then its imaginary part)."""
    if dtypes.is_complex(array.dtype):
        array = np.ascontiguousarray(array).view(dtypes.part_type(array.dtype))
    width = array.dtype.itemsize
    return np.ascontiguousarray(array).view(f"u{width}").astype(f"<u{width}").tobytes()


def format_scalar(value, dtype) -> str:
    """The shortest text the parser turns back into exactly `value` (via `float_value`).

    NaNs print as `nan` (payloads are not kept).
    """
    dt = np.dtype(dtype)
    if dt == dtypes.BOOL:
        return "true" if value else "false"
    if dtypes.is_complex(dt):
        part = dtypes.part_type(dt)
        z = complex(value)
        return f"({format_scalar(z.real, part)}, {format_scalar(z.imag, part)})"
    if not dtypes.is_float(dt):
        return str(int(value))
    x = float(value)
    if np.isnan(x):
        return "nan"
    if dt == np.float64:
        return repr(x)
    bits = np.array(value, dtype=dt).tobytes()
    # The fewest significant digits that land on the same value of `dt`; repr() then
    # gives the canonical spelling of that decimal (e.g. 1e-05, 0.1, 8.0, -inf).
    for digits in range(1, 18):
        text = f"{x:.{digits}g}"
        if float_value(float(text), dt).tobytes() == bits:
            return repr(float(text))
    return repr(x)


def float_value(x: float, dtype) -> np.ndarray:
    """A 0-d array of float dtype `dtype` nearest to the Python float `x`."""
    with np.errstate(over="ignore"):
        return np.array(x, dtype=np.float64).astype(dtype)
