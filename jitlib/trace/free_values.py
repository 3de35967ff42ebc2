"""Globals and closure variables a jitted function reads: read at call time, not frozen.

Eager NumPy reads a global array when the line runs, so a later `W[...] = ...` or
`W = new_array` changes what the next call computes. A trace that baked `W` in as a
constant would silently keep the old values. So while jit traces a plain Python
function, the function runs over a view of its globals and a copy of its closure cells
that hand out, per name:

- a large array (more than `SMALL_ARRAY` elements), or a device `jitlib.Array` of any
  size: a traced *implicit input*, a
  parameter the call fills with the same array object each time (so in-place updates
  are seen, and writes into it reach it like writes into an argument);
- a small array: the array itself (so `int(TABLE[3])` works while tracing), kept as a
  constant with a guard on its contents;
- anything else (numbers, tuples, strings...): itself, with a guard on its identity.

Before each call the guards are checked: a rebound name, or a small array whose
contents changed, makes jit trace the function again (`JITLIB_LOG=recompiles` says
which name). The jitted function's helpers are seen the same way: a plain Python function
of the user's (or a jitted one, which inlines) that the function reads from its globals
or closure runs over a view of its own globals too. Functions reached otherwise (a
method, an attribute of a module: `mymodule.helper`) read their globals as they are,
whose arrays then become constants (docs/numpy_support.md).
"""
import types

import numpy as np

from jitlib import errors
from jitlib.array import Array
from jitlib.trace import host_random, loop_capture

SMALL_ARRAY = 64
_MISSING = object()
# values whose identity is the whole story: code, not data
_CODE_TYPES = (types.ModuleType, types.FunctionType, types.BuiltinFunctionType, type,
               types.MethodType, np.ufunc)


class FreeValues:
    """The guards and implicit inputs of one trace of a function."""

    def __init__(self, trace):
        self.trace = trace
        self.guards = []      # (description, check(): bool)
        self._seen = {}       # id(value) -> (value, what the function got for it)
        self.guarded = set()  # the names whose binding is guarded
        self.containers = []  # (name, list or dict) read: where a tracer may escape to
        self.view = None      # the globals as the trace ran them
        self._clones = {}     # function -> its clone in this trace

    def value_for(self, name, value, source):
        """What the traced function sees for `value`, read from `source` as `name`."""
        got = self._seen.get(id(value))
        if got is not None:
            return got[1]
        if isinstance(value, np.ndarray) and value.dtype != object \
                and value.size > SMALL_ARRAY or isinstance(value, Array):
            # a device Array, of any size, stays where it is: reading its values while
            # tracing would copy it to the host
            seen = self._implicit_input(name, value)
        elif isinstance(value, host_random.GENERATOR_TYPES):
            # its draws replay at each call on this very generator (guarded by identity)
            seen = host_random.RecordingGenerator(self.trace, lambda env: value, name)
        elif isinstance(value, np.ndarray):
            snapshot = value.copy()
            self.guards.append((f"the contents of {source} {name!r} changed",
                                lambda v=value, s=snapshot: v.shape == s.shape
                                and v.dtype == s.dtype and np.array_equal(v, s, equal_nan=True)))
            seen = value
        else:
            if isinstance(value, (list, dict)):
                self.containers.append((name, value))
            seen = value
        self._seen[id(value)] = (value, seen)   # the value too: its id must stay its own
        return seen

    def _implicit_input(self, name, array):
        from jitlib.hlo import dtypes
        if not dtypes.is_supported(array.dtype):
            return array   # NumPy's own ops will meet it; jit refuses it where traced
        tracer = self.trace.new_parameter(array.shape, dtypes.canonicalize(array.dtype), name,
                                          array=True)
        self.trace.call_inputs.append((tracer._param, lambda env: array))
        return tracer

    def guard_identity(self, description, read, value):
        self.guards.append((description, lambda: read() is value))

    def clone(self, fn):
        """`fn` as the trace runs it: over a view of its globals and copies of its closure
        cells that hand out what `value_for` says (one clone per function a trace)."""
        found = self._clones.get(fn)
        if found is None:
            found = self._clones[fn] = _clone(fn, self)
        return found


class _GlobalsView(dict):
    """The function's globals as the trace reads them (LOAD_GLOBAL calls __getitem__ on a
    dict subclass). Names the function assigns (`global x; x = ...`) stay in this dict."""

    def __init__(self, real, free):
        super().__init__()
        self._real, self._free = real, free

    def __getitem__(self, name):
        if dict.__contains__(self, name):
            return dict.__getitem__(self, name)
        value = self._real[name]   # KeyError: Python goes on to the builtins
        helper = _user_function(value)
        if helper is None and (isinstance(value, _CODE_TYPES) or callable(value)
                               and not isinstance(value, np.ndarray)):
            return value
        free = self._free
        if name not in free.guarded:
            free.guarded.add(name)
            real = self._real
            free.guard_identity(f"global {name!r} was rebound",
                                lambda: real.get(name, _MISSING), value)
        if helper is not None:
            # a helper function of the user's: its globals are read at call time too
            return free.clone(helper)
        return free.value_for(name, value, "global")


def traced_function(fn, trace):
    """(fn as the trace should run it, its FreeValues), or (fn, None) for callables that
    are not plain Python functions (their globals are read as they are)."""
    if type(fn) is not types.FunctionType:
        return fn, None
    free = FreeValues(trace)
    clone = free.clone(fn)
    free.view = clone.__globals__
    return clone, free


def _user_function(value):
    """The plain Python function of the user's behind `value` (a function, or a jitted
    one, which inlines inside a trace), or None."""
    fn = getattr(value, "fn", None) if type(value).__name__ in ("Jitted", "CheckedJitted") \
        else value
    if type(fn) is types.FunctionType and errors.is_user_file(fn.__code__.co_filename):
        return fn
    return None


def _clone(fn, free):
    cells = None
    if fn.__closure__:
        cells = []
        for name, cell in zip(fn.__code__.co_freevars, fn.__closure__):
            try:
                value = cell.cell_contents
            except ValueError:     # not yet assigned
                cells.append(cell)
                continue
            helper = _user_function(value)
            if helper is None and (isinstance(value, _CODE_TYPES) or callable(value)
                                   and not isinstance(value, np.ndarray)):
                cells.append(cell)
                continue
            free.guard_identity(f"closure variable {name!r} was rebound",
                                lambda c=cell: _cell_value(c), value)
            seen = free.clone(helper) if helper is not None else \
                free.value_for(name, value, "closure variable")
            cells.append(types.CellType(seen))
        cells = tuple(cells)
    code = loop_capture.function_code(fn)
    if code is None:
        code = fn.__code__
    else:
        cells = loop_capture.closure_for(code, fn.__code__, cells)
    clone = types.FunctionType(code, _GlobalsView(fn.__globals__, free), fn.__name__,
                               fn.__defaults__, cells)
    clone.__kwdefaults__ = fn.__kwdefaults__
    clone.__dict__.update(fn.__dict__)
    clone.__qualname__ = fn.__qualname__
    return clone


def _cell_value(cell):
    try:
        return cell.cell_contents
    except ValueError:
        return _MISSING


def escaped(free):
    """The name of a global the trace left one of its tracers in (assigned with `global`,
    appended to a global list, set in a global dict), or None."""
    from jitlib.trace.tracer import Tracer

    def live(x):
        return isinstance(x, Tracer) and x._live is free.trace.live
    for name, value in dict.items(free.view):
        if live(value):
            return name
    for name, container in free.containers:
        items = container.values() if isinstance(container, dict) else container
        if any(live(x) for x in list(items)[-64:]):
            return name
    return None
