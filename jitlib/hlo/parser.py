"""Read the IR text that `printer` writes back into a Module.

Grammar, one construct a line (blank lines and lines starting with `#` or `//` are skipped):

    module   := 'module' NAME '(' [param {',' param}] ')' [writes] '{'
                instr*
                'return' '(' [ref {',' ref}] ')'
                '}'
    param    := ref ':' type
    writes   := 'writes' '(' ref {',' ref} ')'    (the parameters the last results update)
    instr    := ref '=' type OP '(' args ')' {',' NAME '=' value} [loc] [body]
    body     := '{' module+ '}'      (a fusion's body; a loop's cond and body; a conditional's
                                      branches: the ops with regions, and only those)
    args     := [ref {',' ref}]  |  literal            (a literal only for constant)
    type     := DTYPE '[' [INT {',' INT}] ']'  |  '(' type ',' type {',' type} ')'
    value    := INT | 'true' | 'false' | NAME | STRING | '[' [value {',' value}] ']'
    literal  := scalar | '{' [scalar {',' scalar}] '}' | 'hex' STRING
    scalar   := INT | FLOAT | 'nan' | 'inf' | '-inf' | 'true' | 'false'
              | '(' scalar ',' scalar ')'                         (complex: re, im)
    loc      := 'loc(' STRING ':' INT ' ' FUNCTION ')'        (to the end of the line or `{`)
    ref      := '%' NAME-or-INT

A fusion's line ends with `{` (after its loc, if any); its body, a module of its own
whose values are named independently, follows on the next lines, and a `}` line closes
it. The tuple type belongs to a fusion with several results. Every instruction is built
with `build.make`, so it is type-checked, and its printed type must equal the inferred
one. Attributes the type restates (`printer.implied_attrs`) may be left out; they are
restored from the type. STRINGs are JSON string literals. Instructions are interned: text
equal to IR that already exists parses to the existing objects, which keep the locations
they were first built with.
"""
import json
import re

import numpy as np

from jitlib.errors import SourceLocation
from jitlib.hlo import build, dtypes
from jitlib.hlo.ir import Literal, Module, output_types
from jitlib.hlo.ops import Op
from jitlib.hlo.printer import REGION_ATTRS, float_value, format_type, implied_attrs
from jitlib.hlo.shape_rules import IRTypeError
from jitlib.hlo.verifier import attr_error


class ParseError(ValueError):
    """Malformed IR text; the message names the line number and shows the line."""

    def __init__(self, message, lineno=None, line=None):
        self.lineno = lineno
        self.line = line
        if lineno is not None:
            message = f"line {lineno}: {message}\n  {line.strip()}"
        super().__init__(message)


_TOKEN = re.compile(r"""
    (?P<string>"(?:[^"\\]|\\.)*")
  | (?P<ref>%[A-Za-z0-9_.]+)
  | (?P<number>[-+]?(?:(?:inf|nan)\b|(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?))
  | (?P<name>[A-Za-z_][A-Za-z0-9_.]*)
  | (?P<punct>[()\[\]{},=:])
""", re.VERBOSE)
_SPACE = re.compile(r"\s*")
_LOC = re.compile(r'loc\(("(?:[^"\\]|\\.)*"):(\d+) (.*)\)\s*\Z')
_INT = re.compile(r"[-+]?\d+\Z")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*\Z")


class _Line:
    """A cursor over the tokens of one line."""

    def __init__(self, lineno, text):
        self.lineno, self.text, self.pos = lineno, text, 0
        self.shown = text   # `text` loses a fusion's trailing `{`; messages show it all
        self._peeked = None   # (pos, kind, token, end): peek is asked several times a token

    def error(self, message):
        return ParseError(message, self.lineno, self.shown)

    def opens_block(self):
        """Whether the line ends with `{`; if so, drop it from the tokens."""
        stripped = self.text.rstrip()
        if not stripped.endswith("{"):
            return False
        self.text = stripped[:-1]
        self._peeked = None
        return True

    def _start(self):
        return _SPACE.match(self.text, self.pos).end()

    def _token(self):
        peeked = self._peeked
        if peeked is not None and peeked[0] == self.pos:
            return peeked
        start = self._start()
        if start == len(self.text):
            peeked = (self.pos, None, "", start)
        else:
            m = _TOKEN.match(self.text, start)
            if m is None:
                raise self.error(f"unexpected character {self.text[start]!r}")
            peeked = (self.pos, m.lastgroup, m.group(), m.end())
        self._peeked = peeked
        return peeked

    def peek(self):
        """(kind, text) of the next token, or (None, '') at the end of the line."""
        _, kind, text, _ = self._token()
        return kind, text

    def next(self):
        _, kind, text, end = self._token()
        if kind is None:
            raise self.error("unexpected end of line")
        self.pos = end
        return kind, text

    def accept(self, text):
        if self.peek()[1] == text:
            self.next()
            return True
        return False

    def expect(self, text):
        kind, got = self.peek()
        if got != text:
            raise self.error(f"expected {text!r}, got {got or 'end of line'!r}")
        self.next()

    def expect_kind(self, kind, what):
        got_kind, got = self.peek()
        if got_kind != kind:
            raise self.error(f"expected {what}, got {got or 'end of line'!r}")
        return self.next()[1]

    def end(self):
        kind, got = self.peek()
        if kind is not None:
            raise self.error(f"unexpected {got!r} at end of line")

    def rest(self):
        return self.text[self._start():]


class _Lines:
    """A cursor over the non-blank, non-comment lines of a text."""

    def __init__(self, text):
        self.lines = [_Line(i + 1, s) for i, s in enumerate(text.splitlines())
                      if s.strip() and not s.lstrip().startswith(("#", "//"))]
        self.pos = 0

    def next(self, missing):
        """The next line; at the end of the text, an error `missing` on the last line."""
        if self.pos == len(self.lines):
            raise self.lines[-1].error(missing)
        self.pos += 1
        return self.lines[self.pos - 1]

    def peek_text(self):
        return self.lines[self.pos].text.strip() if self.pos < len(self.lines) else None


def parse_module(text: str) -> Module:
    """Parse a module printed by `printer.print_module`; raises `ParseError`."""
    lines = _Lines(text)
    if not lines.lines:
        raise ParseError("empty module text")
    # Locations come from the text alone, never from a trace that happens to be active.
    with build.locations(lambda: None):
        module = _parse_module(lines)
    if lines.peek_text() is not None:
        raise lines.next("").error("text after the end of the module")
    return module


def _parse_module(lines):
    """One module, from its header line to its closing `}` line."""
    name, params, env, writes = _parse_header(lines.next("expected a module header"))
    while True:
        line = lines.next("missing 'return' line")
        word = line.peek()[1]
        if word == "return":
            results = _parse_return(line, env)
            break
        if word == "}":
            raise line.error("missing 'return' line before '}'")
        parsed = _parse_plain_instr(line, env)
        label, instr = parsed or _parse_instr(line, env, lines)
        if label in env:
            raise line.error(f"%{label} is defined twice")
        env[label] = instr
    _expect_close(lines, "the module")
    try:
        return Module(name, params, results, writes)
    except ValueError as e:
        raise ParseError(str(e)) from None


def _next_is_module(lines):
    text = lines.peek_text()
    return text is not None and text.startswith("module ")


def _expect_close(lines, what):
    message = f"expected '}}' closing {what}"
    line = lines.next(message)
    if line.text.strip() != "}":
        raise line.error(message)


def _parse_header(line):
    line.expect("module")
    name = line.expect_kind("name", "a module name")
    line.expect("(")
    params, env = [], {}
    while not line.accept(")"):
        if params:
            line.expect(",")
        label = line.expect_kind("ref", "a parameter like %x")[1:]
        line.expect(":")
        shape, dtype = _parse_type(line)
        if label in env:
            raise line.error(f"parameter %{label} is declared twice")
        param = build.parameter(len(params), shape, dtype, name=label)
        params.append(param)
        env[label] = param
    writes = []
    if line.accept("writes"):
        line.expect("(")
        while not line.accept(")"):
            if writes:
                line.expect(",")
            label = line.expect_kind("ref", "a parameter like %x")[1:]
            if label not in env:
                raise line.error(f"writes(%{label}) names no parameter")
            writes.append(params.index(env[label]))
    line.expect("{")
    line.end()
    return name, params, env, writes


def _parse_return(line, env):
    line.expect("return")
    line.expect("(")
    results = []
    while not line.accept(")"):
        if results:
            line.expect(",")
        results.append(_parse_ref(line, env))
    line.end()
    return results


def _parse_ref(line, env):
    label = line.expect_kind("ref", "a value like %0")[1:]
    if label not in env:
        raise line.error(f"%{label} is not defined (values must be defined before use)")
    return env[label]


def _parse_types(line):
    """A type, or a tuple of them; returns a list of (shape, dtype) and whether a tuple."""
    if not line.accept("("):
        return [_parse_type(line)], False
    types = [_parse_type(line)]
    while not line.accept(")"):
        line.expect(",")
        types.append(_parse_type(line))
    if len(types) < 2:
        raise line.error("a tuple type needs two types or more")
    return types, True


def _parse_type(line):
    name = line.expect_kind("name", "a type like f32[4]")
    try:
        dtype = dtypes.from_name(name)
    except ValueError as e:
        raise line.error(str(e)) from None
    line.expect("[")
    shape = []
    while not line.accept("]"):
        if shape:
            line.expect(",")
        shape.append(_parse_int(line, "a dimension"))
    return tuple(shape), dtype


def _parse_int(line, what):
    kind, text = line.next()
    if kind != "number" or not _INT.match(text):
        raise line.error(f"expected {what} (an integer), got {text!r}")
    return int(text)


def _parse_instr(line, env, lines):
    label = line.expect_kind("ref", "an instruction like %0 = ...")[1:]
    line.expect("=")
    types, is_tuple = _parse_types(line)
    shape, dtype = types[0]
    op_name = line.expect_kind("name", "an op name")
    try:
        op = Op(op_name)
    except ValueError:
        raise line.error(f"unknown op {op_name!r}") from None
    if op is Op.PARAMETER:
        raise line.error("parameters are declared in the module header")
    has_regions = op in REGION_ATTRS
    if is_tuple and not has_regions:
        raise line.error(f"{op} gives one value, not a tuple")
    if has_regions != line.opens_block():
        raise line.error("a fusion, while or conditional line ends with '{' opening its "
                         "regions; no other line does")
    line.expect("(")
    operands, attrs = [], {}
    if op is Op.CONSTANT:
        attrs["value"] = _parse_literal(line, shape, dtype)
        line.expect(")")
    else:
        while not line.accept(")"):
            if operands:
                line.expect(",")
            operands.append(_parse_ref(line, env))
    while line.accept(","):
        key = line.expect_kind("name", "an attribute name")
        line.expect("=")
        if key in attrs:
            raise line.error(f"attribute {key!r} given twice")
        attrs[key] = _parse_value(line)
    loc = _parse_loc(line)
    for key, value in implied_attrs(op, shape, dtype).items():
        attrs.setdefault(key, value)
    if has_regions:
        keys = REGION_ATTRS[op]
        if any(k in attrs for k in keys):
            raise line.error(f"a {op}'s {' and '.join(keys)}: the modules below it, "
                             "not an attribute")
        modules = _parse_regions(lines, op)
        if op is Op.CONDITIONAL:
            attrs["branches"] = tuple(modules)
        elif len(modules) != len(keys):
            raise line.error(f"a {op} has {len(keys)} module(s) below it "
                             f"({', '.join(keys)}), not {len(modules)}")
        else:
            attrs.update(zip(keys, modules))
    problem = attr_error(op, attrs)
    if problem:
        raise line.error(problem)
    try:
        instr = build.make(op, operands, attrs, loc)
    except IRTypeError as e:
        raise line.error(str(e)) from None
    given, actual = _show_types(types, is_tuple), _show_types(output_types(instr))
    if given != actual:
        raise line.error(f"the line says {instr.op} gives {given}, but it gives {actual}")
    return label, instr


# A plain instruction line (one result type, operands, flat attributes, a location) in
# one match: most lines of a module are plain, and a token at a time costs ~3x as much.
_PLAIN = re.compile(r"""
    \s*%([A-Za-z0-9_.]+)\ =\ ([a-z0-9]+)\[([0-9,]*)\]\ ([a-z0-9_]+)
    \(((?:%[A-Za-z0-9_.]+(?:,\ )?)*)\)
    ((?:,\ [a-z_]+=(?:\[[-0-9,\ ]*\]|[-A-Za-z0-9_.]+))*)
    \s*(loc\(.*\))?\s*\Z
""", re.VERBOSE)
_PLAIN_ATTR = re.compile(r", ([a-z_]+)=(\[[-0-9, ]*\]|[-A-Za-z0-9_.]+)")


def _parse_plain_instr(line, env):
    """(label, instr) of a plain line, or None: the token parser then reads it, and
    reports whatever is wrong with it."""
    m = _PLAIN.match(line.text)
    if m is None:
        return None
    label, dtype_name, dims, op_name, args, attr_text, loc_text = m.groups()
    try:
        dtype = dtypes.from_name(dtype_name)
        op = Op(op_name)
    except ValueError:
        return None
    if op in (Op.PARAMETER, Op.CONSTANT) or op in REGION_ATTRS:
        return None
    shape = tuple(int(d) for d in dims.split(",")) if dims else ()
    operands = []
    for ref in args.split(", ") if args else ():
        operand = env.get(ref[1:])
        if operand is None:
            return None
        operands.append(operand)
    attrs = {}
    for key, text in _PLAIN_ATTR.findall(attr_text):
        value = _plain_value(text)
        if key in attrs or value is None:
            return None
        attrs[key] = value
    loc = None
    if loc_text is not None:
        lm = _LOC.match(loc_text)
        if lm is None:
            return None
        loc = _location(lm)
    for key, value in implied_attrs(op, shape, dtype).items():
        attrs.setdefault(key, value)
    if attr_error(op, attrs):
        return None
    try:
        instr = build.make(op, operands, attrs, loc)
    except IRTypeError:
        return None
    if (instr.shape, instr.dtype) != (shape, dtype):   # one value: fusions go the long way
        return None
    return label, instr


def _plain_value(text):
    """An attribute value as `_parse_value` reads it: ints, a list of them, true/false or
    a name; None for anything else (the token parser then explains it)."""
    if text.startswith("["):
        items = [v.strip() for v in text[1:-1].split(",")]
        if items == [""]:
            return ()
        return tuple(int(v) for v in items) if all(_INT.match(v) for v in items) else None
    if _INT.match(text):
        return int(text)
    if text in ("true", "false"):
        return text == "true"
    return text if _NAME.match(text) and text not in ("inf", "nan") else None


def _parse_regions(lines, op):
    """The modules below a region op's line, up to the `}` that closes them."""
    modules = [_parse_module(lines)]
    while _next_is_module(lines):
        modules.append(_parse_module(lines))
    _expect_close(lines, f"the {op}")
    return modules


def _show_types(types, is_tuple=None):
    text = ", ".join(format_type(shape, dtype) for shape, dtype in types)
    return f"({text})" if (len(types) > 1 if is_tuple is None else is_tuple) else text


def _parse_value(line):
    kind, text = line.next()
    if text == "[":
        items = []
        while not line.accept("]"):
            if items:
                line.expect(",")
            items.append(_parse_value(line))
        return tuple(items)
    if kind == "number" and _INT.match(text):
        return int(text)
    if kind == "name" and text in ("true", "false"):
        return text == "true"
    if kind == "name":
        return text
    if kind == "string":
        return json.loads(text)
    raise line.error(f"bad attribute value {text!r}")


def _parse_loc(line):
    if line.peek() != ("name", "loc"):
        line.end()
        return None
    m = _LOC.match(line.rest())
    if not m:
        raise line.error('bad location; expected loc("FILE":LINE FUNCTION)')
    return _location(m)


def _location(m):
    """The SourceLocation of a `_LOC` match."""
    return SourceLocation(json.loads(m.group(1)), int(m.group(2)), m.group(3))


# -- constants

def _parse_literal(line, shape, dtype):
    size = int(np.prod(shape, dtype=np.int64))
    if line.accept("hex"):
        return Literal(_from_hex(line, json.loads(line.expect_kind("string", "a hex string")),
                                 shape, dtype))
    if not line.accept("{"):
        if shape:
            raise line.error(f"a constant of shape {list(shape)} needs a {{...}} list")
        return Literal(_parse_scalar(line, dtype))
    values = []
    while not line.accept("}"):
        if values:
            line.expect(",")
        values.append(_parse_scalar(line, dtype))
    if len(values) != size:
        raise line.error(f"constant has {len(values)} elements; its type needs {size}")
    array = np.array(values, dtype=dtype) if values else np.zeros(0, dtype)
    return Literal(array.reshape(shape))


def _parse_scalar(line, dtype):
    if dtypes.is_complex(dtype):
        part = dtypes.part_type(dtype)
        line.expect("(")
        re = _parse_scalar(line, part)
        line.expect(",")
        im = _parse_scalar(line, part)
        line.expect(")")
        out = np.zeros((), dtype)
        out.real, out.imag = re, im
        return out
    kind, text = line.next()
    if dtype == dtypes.BOOL:
        if text not in ("true", "false"):
            raise line.error(f"expected true or false, got {text!r}")
        return np.array(text == "true")
    if kind != "number":
        raise line.error(f"expected a number, got {text!r}")
    if dtypes.is_float(dtype):
        return float_value(float(text), dtype)
    if not _INT.match(text):
        raise line.error(f"expected an integer, got {text!r}")
    info = dtypes.iinfo(dtype)
    if not info.min <= int(text) <= info.max:
        raise line.error(f"{text} is out of range for {dtypes.name(dtype)}")
    return np.array(int(text), dtype=dtype)


def _from_hex(line, digits, shape, dtype):
    try:
        raw = bytes.fromhex(digits)
    except ValueError:
        raise line.error("bad hex constant") from None
    stored = dtypes.part_type(dtype) if dtypes.is_complex(dtype) else dtype
    width = stored.itemsize
    size = int(np.prod(shape, dtype=np.int64))
    if len(raw) != size * dtype.itemsize:
        raise line.error(f"hex constant has {len(raw)} bytes; its type needs "
                         f"{size * dtype.itemsize}")
    array = np.frombuffer(raw, dtype=f"<u{width}").astype(f"u{width}").view(stored)
    array = array.view(dtype)
    if dtype == dtypes.BOOL and raw.translate(None, b"\0\1"):
        raise line.error("bool constant bytes must be 00 or 01")
    return array.reshape(shape)
