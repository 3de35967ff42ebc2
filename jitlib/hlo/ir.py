"""Instructions and modules.

An `Instr` is immutable and interned: building the same op on the same
operands with the same attributes returns the same object, so identity is
structural equality, CSE is free, and instructions can key dicts cheaply.
The source location is metadata, not identity: the first builder wins.

A `Module` is a function: typed parameters in order, and a tuple of results.
Its instructions are everything reachable from the results, in a
deterministic topological order. Modules compare and hash by structure
(name, params, results), so a FUSION instruction, whose `body` attribute is a
Module, is interned like any other.
"""
import math
import weakref
from _weakref import _remove_dead_weakref

import numpy as np

from jitlib import forksafe
from jitlib.hlo import dtypes
from jitlib.hlo.ops import Op


class Literal:
    """A constant's value: an immutable NumPy array, hashable by content."""

    __slots__ = ("array", "_hash")

    def __init__(self, value, dtype=None):
        arr = np.array(value, dtype=dtype)
        if not arr.dtype.isnative:   # a byte-swapped constant: the same values, native
            arr = arr.astype(arr.dtype.newbyteorder("="))
        arr.setflags(write=False)
        self.array = arr
        # bytes make NaN payloads and -0.0 distinct, which is what CSE needs.
        self._hash = hash((arr.dtype.str, arr.shape, arr.tobytes()))

    @property
    def shape(self):
        return self.array.shape

    @property
    def dtype(self):
        return self.array.dtype

    def __hash__(self):
        return self._hash

    def __eq__(self, other):
        if not isinstance(other, Literal):
            return NotImplemented
        a, b = self.array, other.array
        return (a.dtype == b.dtype and a.shape == b.shape
                and a.tobytes() == b.tobytes())

    def __repr__(self):
        return f"Literal({self.array!r})"


class Attrs(dict):
    """Read-only attribute dict; values are hashable (ints, strs, tuples, Literals)."""

    def _readonly(self, *a, **k):
        raise TypeError("Instr attributes are immutable")

    __setitem__ = __delitem__ = update = pop = popitem = clear = setdefault = _readonly


_EMPTY_ATTRS = Attrs()


class Instr:
    """One SSA value: `shape dtype op(operands) attrs`.

    Build instructions through `jitlib.hlo.build`, which infers and checks the
    result type; `Instr.make` is the raw, unchecked constructor. `typed` says the
    builder inferred this instruction's type, so the verifier need not infer it again
    (and that op, shape and dtype come as an Op, a tuple of ints and a canonical dtype).
    """

    __slots__ = ("op", "shape", "dtype", "operands", "attrs", "loc", "typed", "__weakref__")
    # key -> _InternRef: a WeakValueDictionary, inlined (its get and set are Python
    # calls, ~140 of a warm start's first call)
    _interned = {}
    # Two threads tracing at once must agree on one object per structure, or CSE (and
    # the identity-based equality of Modules) silently breaks.
    _intern_lock = forksafe.lock()

    @classmethod
    def make(cls, op, shape, dtype, operands=(), attrs=None, loc=None, typed=False):
        if not typed:   # a typed caller (the builder, serial.py) passes them normalized
            op = op if op.__class__ is Op else Op(op)
            if shape.__class__ is not tuple or not all_ints(shape):
                shape = tuple(int(d) for d in shape)
            dtype = dtypes.canonicalize(dtype)
        operands = tuple(operands)
        # typed key: True == 1 == 1.0 in Python, but not as attributes
        attr_items, typed_items = [], []
        if attrs:
            for k in sorted(attrs):   # one pass, the common values inline: this runs
                v = attrs[k]          # for every instruction traced, parsed or rewritten
                c = v.__class__
                if c is int or c is str or c is bool:
                    t = (c, v)
                elif c is tuple and all_ints(v):
                    t = (_INT_TUPLE, v)
                else:
                    v = _normalize_attr(v)
                    t = _typed(v)
                attr_items.append((k, v))
                typed_items.append((k, t))
        attr_items = tuple(attr_items)
        key = (op, shape, dtype, operands, tuple(typed_items))
        with cls._intern_lock:
            ref = cls._interned.get(key)
            if ref is not None:
                found = ref()
                if found is not None:
                    return found
            return cls._new(key, op, shape, dtype, operands, attr_items, loc, typed)

    @classmethod
    def _new(cls, key, op, shape, dtype, operands, attr_items, loc, typed):
        self = object.__new__(cls)
        # the slots are filled past the immutability guard of __setattr__
        _set_op(self, op)
        _set_shape(self, shape)
        _set_dtype(self, dtype)
        _set_operands(self, operands)
        _set_attrs(self, Attrs(attr_items) if attr_items else _EMPTY_ATTRS)
        _set_typed(self, typed)
        _set_loc(self, loc)
        table = cls._interned
        ref = _InternRef(self, _forget)
        ref.key, ref.table = key, table
        table[key] = ref
        return self

    def __setattr__(self, name, value):
        if hasattr(self, "loc"):   # set last by _new: until then, hand-built (tests)
            raise AttributeError("Instr is immutable")
        object.__setattr__(self, name, value)

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        return math.prod(self.shape)

    @property
    def type_str(self):
        return f"{dtypes.name(self.dtype)}[{','.join(map(str, self.shape))}]"

    def __repr__(self):
        args = ", ".join(f"%{id(o) & 0xffff:x}" for o in self.operands)
        attrs = "".join(f" {k}={v}" for k, v in self.attrs.items())
        return f"<{self.type_str} {self.op.value}({args}){attrs}>"


class _InternRef(weakref.ref):
    """An interned instruction's entry: it leaves its table with the instruction."""
    __slots__ = ("key", "table")


def _forget(ref):
    # only if the entry is still this dead one (the C helper WeakValueDictionary uses:
    # atomic, and takes no lock, so it may run while `make` holds the intern lock)
    _remove_dead_weakref(ref.table, ref.key)


# the slots' own setters: filling one costs a C call, not two Python ones
(_set_op, _set_shape, _set_dtype, _set_operands, _set_attrs, _set_typed, _set_loc) = (
    getattr(Instr, name).__set__ for name in
    ("op", "shape", "dtype", "operands", "attrs", "typed", "loc"))


def all_ints(values):
    """Whether every value is a plain Python int (not bool, not a NumPy integer)."""
    for v in values:
        if v.__class__ is not int:
            return False
    return True


def _normalize_attr(value):
    cls = value.__class__
    if cls is int or cls is str or cls is bool or (cls is tuple and all_ints(value)):
        return value   # the common attributes (names, axes, shapes) are already plain
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (tuple, list)):
        return tuple(_normalize_attr(v) for v in value)
    return value


# Marks a tuple of plain ints in an interning key: it stands for ((int, v), ...) without
# building that, and cannot equal a typed tuple (whose items are tuples).
_INT_TUPLE = object()


def _typed(value):
    if value.__class__ is tuple:
        if all_ints(value):
            return (_INT_TUPLE, value)
        return tuple(_typed(v) for v in value)
    return (type(value), value)


class Module:
    """A function in the IR: named, typed parameters and a tuple of results.

    `writes` names the parameters the function writes into (NumPy code that assigns
    into an argument): the last `len(writes)` results are their new contents, in that
    order, which the caller's arrays receive after the call. Like XLA's input/output
    aliasing, it is part of the module's signature, printed in its header."""

    def __init__(self, name, params, results, writes=()):
        self.name = name
        self.params = tuple(params)
        self.results = tuple(results)
        self.writes = tuple(writes)
        for i, p in enumerate(self.params):
            if p.op is not Op.PARAMETER or p.attrs.get("index") != i:
                raise ValueError(f"parameter {i} of module {name!r} is {p!r}")
        if self.writes:
            written = self.results[len(self.results) - len(self.writes):]
            for index, value in zip(self.writes, written):
                if not 0 <= index < len(self.params) or value.shape != self.params[index].shape \
                        or value.dtype != self.params[index].dtype:
                    raise ValueError(f"module {name!r} writes {value!r} into parameter "
                                     f"{index}, which does not have its type")
        self._order = None
        self.effects = None   # what jit's trace noted beside (writeback.Effects)

    def with_results(self, results):
        """This module with other results (as a pass rewrites them), writes kept."""
        return Module(self.name, self.params, results, self.writes)

    @property
    def instructions(self):
        """Every instruction, parameters first, then operands before users."""
        if self._order is None:
            self._order = toposort(self.params, self.results)
        return self._order

    def __eq__(self, other):
        if not isinstance(other, Module):
            return NotImplemented
        # Instructions are interned, so identity of the tuples' items is structural equality.
        return (self.name == other.name and self.params == other.params
                and self.results == other.results and self.writes == other.writes)

    def __hash__(self):
        return hash((self.name, self.params, self.results, self.writes))

    def __str__(self):
        from jitlib.hlo.printer import print_module
        return print_module(self)

    def as_text(self):
        return str(self)

    def __repr__(self):
        return f"<Module {self.name}: {len(self.instructions)} instructions>"


def regions(instr) -> tuple:
    """The Modules `instr` runs: a fusion's body, a loop's (cond, body), a conditional's
    branches in order; () for every other op. The printer, parser, verifier and passes
    walk them through this one function."""
    op = instr.op
    if op is Op.FUSION:
        body = instr.attrs.get("body")
        return (body,) if isinstance(body, Module) else ()
    if op is Op.WHILE:
        cond, body = instr.attrs.get("cond"), instr.attrs.get("body")
        return (cond, body) if isinstance(cond, Module) and isinstance(body, Module) else ()
    if op is Op.CONDITIONAL:
        branches = instr.attrs.get("branches")
        if isinstance(branches, tuple) and branches \
                and all(isinstance(b, Module) for b in branches):
            return branches
    return ()


def result_module(instr):
    """The Module whose results are `instr`'s values (a fusion's or loop's body, a
    conditional's first branch), or None for a plain op."""
    found = regions(instr)
    if not found:
        return None
    return found[0] if instr.op is not Op.WHILE else found[1]


def is_multi_output(instr) -> bool:
    """Whether `instr` gives several values (a fusion, loop or conditional with several
    results), each used only through get_output."""
    if instr.op is not Op.FUSION and instr.op is not Op.WHILE \
            and instr.op is not Op.CONDITIONAL:
        return False
    module = result_module(instr)
    return module is not None and len(module.results) > 1


def is_reshape_only(instr) -> bool:
    """Whether `instr` is a fusion whose body is its one parameter passed through
    reshapes: over a C-contiguous buffer, a view of its operand's memory, not a copy."""
    body = instr.attrs.get("body")
    if instr.op is not Op.FUSION or body is None or len(body.results) != 1:
        return False
    value = body.results[0]
    while value.op is Op.RESHAPE:
        value = value.operands[0]
    return value.op is Op.PARAMETER and value is not body.results[0]


def output_types(instr) -> list:
    """(shape, dtype) of each value `instr` gives: one per result of a multi-output op."""
    if is_multi_output(instr):
        return [(r.shape, r.dtype) for r in result_module(instr).results]
    return [(instr.shape, instr.dtype)]


def toposort(params, results):
    """`params`, then every instruction `results` reach, operands before users."""
    order, seen = list(params), set(params)
    for root in results:
        if root in seen:
            continue
        stack = [(root, False)]   # iterative DFS: deep chains must not hit recursion limits
        while stack:
            node, expanded = stack.pop()
            if node in seen:
                continue
            if expanded:
                seen.add(node)
                order.append(node)
                continue
            stack.append((node, True))
            for operand in reversed(node.operands):
                if operand not in seen:
                    stack.append((operand, False))
    return tuple(order)
