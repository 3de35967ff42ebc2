"""A Module as plain data (JSON-ready lists and dicts), and back, for the disk cache.

The IR text is what people read, and the parser checks every token of it; a cache entry
that is read back on every warm start wants a form that is cheap to load instead. Here
each instruction is one list, `[op, dtype, shape, operands, attrs, loc]`, operands being
positions in the module's instruction list, so loading is one `Instr.make` per
instruction with no tokens and no type inference (the module was verified when it was
made; entries are checksummed by the disk cache). A two-kernel MLP loads in a fraction of
the time its text parses in.

Attribute values are JSON's own types where those say exactly what the value is (int,
str, bool; a tuple of ints as a list); other tuples, a constant's `Literal` and a
fusion's body `Module` are tagged dicts. Anything else is a `TypeError` from `to_data`:
the caller keeps the module out of the cache rather than store something it could not
read back.
"""
import numpy as np

from jitlib.errors import SourceLocation
from jitlib.hlo import dtypes
from jitlib.hlo.ir import Instr, Literal, Module, all_ints
from jitlib.hlo.ops import Op

VERSION = 2
# what `from_data` raises on data it did not write
READ_ERRORS = (ValueError, KeyError, IndexError, TypeError, AttributeError)
# decoding looks names up here: Op(name) and canonicalize(name) cost a few calls each
_OPS = {op.value: op for op in Op}


class _Lookup(dict):
    """A dict that fills a missing key from `find` (bfloat16, loaded on first need)."""
    def __init__(self, find, items):
        super().__init__(items)
        self._find = find

    def __missing__(self, key):
        value = self[key] = self._find(key)
        return value


_DTYPES = _Lookup(dtypes.from_name, {dtypes.name(dt): dt for dt in dtypes.SUPPORTED})
# and encoding here: an Op's `.value` and `dtypes.name` are Python calls each
_OP_NAMES = {op: name for name, op in _OPS.items()}
_DTYPE_NAMES = _Lookup(dtypes.name, {dt: name for name, dt in _DTYPES.items()})
_PLAIN = (bool, int, str)


def to_data(module):
    """`module` as plain data: `from_data(to_data(m)) == m`."""
    locs = {}
    return {"version": VERSION, "module": _module_data(module, locs),
            "locs": [[loc.file, loc.line, loc.function] for loc in locs]}


def dumps(module):
    """`to_data(module)` as one string, for a disk cache key to hash: its repr, which
    says as much as JSON text (plain lists, dicts, strings and ints, in a fixed order)
    in half the time."""
    return repr(to_data(module))


def from_data(data):
    """The Module `to_data` described. Raises ValueError, KeyError, IndexError,
    TypeError or AttributeError on data it did not write (`READ_ERRORS`)."""
    if not isinstance(data, dict) or data.get("version") != VERSION:
        version = data.get("version") if isinstance(data, dict) else None
        raise ValueError(f"module data of version {version!r}, this jitlib reads {VERSION}")
    locs = [SourceLocation(str(f), int(line), str(fn)) for f, line, fn in data["locs"]]
    return _module(data["module"], locs)


def _module_data(module, locs):
    index = {}
    rows = []
    for instr in module.instructions:
        index[instr] = len(rows)
        loc = instr.loc
        if loc is not None and loc not in locs:
            locs[loc] = len(locs)
        rows.append([_OP_NAMES[instr.op], _DTYPE_NAMES[instr.dtype], list(instr.shape),
                     [index[o] for o in instr.operands],
                     {k: v if v.__class__ in _PLAIN else _attr_data(v, locs)
                      for k, v in instr.attrs.items()},
                     None if loc is None else locs[loc]])
    return {"name": module.name, "instrs": rows,
            "params": [index[p] for p in module.params],
            "results": [index[r] for r in module.results], "writes": list(module.writes)}


def _attr_data(value, locs):
    cls = value.__class__
    if cls is bool or cls is int or cls is str:
        return value
    if cls is tuple:
        if all_ints(value):
            return list(value)   # the common case (axes, shapes): read back in one call
        return {"tuple": [_attr_data(v, locs) for v in value]}
    if cls is Literal:
        array = value.array
        return {"literal": [dtypes.name(array.dtype), list(array.shape),
                            np.ascontiguousarray(array).tobytes().hex()]}
    if cls is Module:
        return {"module": _module_data(value, locs)}
    raise TypeError(f"no plain-data form for attribute value {value!r}")


def _module(data, locs):
    instrs = []
    for op, dtype, shape, operands, attrs, loc in data["instrs"]:
        instrs.append(Instr.make(
            _OPS[op], tuple(shape), _DTYPES[dtype], tuple([instrs[i] for i in operands]),
            {k: v if v.__class__ in _PLAIN else tuple(v) if v.__class__ is list
             else _attr(v, locs) for k, v in attrs.items()} if attrs else None,
            None if loc is None else locs[loc], typed=True))
    return Module(data["name"], [instrs[i] for i in data["params"]],
                  [instrs[i] for i in data["results"]], data["writes"])


def _attr(value, locs):
    cls = value.__class__
    if cls is list:
        return tuple(value)
    if cls is dict:
        if "tuple" in value:
            return tuple([_attr(v, locs) for v in value["tuple"]])
        if "literal" in value:
            dtype, shape, hex_bytes = value["literal"]
            dtype = _DTYPES[dtype]
            array = np.frombuffer(bytes.fromhex(hex_bytes), dtype).reshape(shape)
            return Literal(array, dtype)
        return _module(value["module"], locs)
    if cls is bool or cls is int or cls is str:
        return value
    raise TypeError(f"no attribute value is written as {value!r}")
