"""Eager NumPy on `jitlib.Array`: each operation on device Arrays runs as a small jitted
program on their device, so `arr[-1] * 2` and `np.argmax(arr)` never leave the GPU.

An operation is a NumPy call split in two: the parts that pick the program (the ufunc or
function, axes, dtypes, slices, where the arrays sit in the arguments) key a table of
jitted functions, one per distinct program; the arrays, and the Python numbers a ufunc
takes as operands, are that function's arguments, so its own cache keys them by shape
and dtype (numbers by type, weakly, as NEP 50 promotes them). A second `arr * 2.0` on
another array of the same shape and dtype compiles nothing. Each program traces the same
NumPy call the user made, so it means what the tracer says NumPy means.

`cache_info()` adds up the counters of every program made so far.
"""
import threading
from collections import OrderedDict
from typing import Any, Callable

import numpy as np

from jitlib import tree
from jitlib.array import Array
from jitlib.errors import JitlibTypeError, UnsupportedError
from jitlib.trace.context import current_trace

# Arrays come only from the gpu backend's device: its programs are the ones they run.
BACKEND = "gpu"
# Programs kept compiled; the least recently used goes first.
MAX_PROGRAMS = 1024

_programs: "OrderedDict[Any, Any]" = OrderedDict()
_lock = threading.Lock()
_NUMBERS = (bool, int, float, complex, np.generic)


def program(key: Any, make: Callable[[], Callable[..., Any]], name: str) -> Any:
    """The jitted function for `key`, made from `make()` on first use."""
    with _lock:
        jitted = _programs.get(key)
        if jitted is not None:
            _programs.move_to_end(key)
            return jitted
    from jitlib.api import jit
    fn = make()
    fn.__name__ = fn.__qualname__ = name   # what JITLIB_LOG=compiles calls it
    jitted = jit(fn, backend=BACKEND, device_results=True)   # type: ignore[call-overload]
    with _lock:
        jitted = _programs.setdefault(key, jitted)
        while len(_programs) > MAX_PROGRAMS:
            _programs.popitem(last=False)
    return jitted


def cache_info() -> Any:
    """Hits, misses (compiles) and entries, summed over every eager program."""
    from jitlib.api import CacheInfo
    with _lock:
        infos = [j.cache_info() for j in _programs.values()]
    return CacheInfo(*(sum(column) for column in zip((0, 0, 0), *infos)))


def clear_cache() -> None:
    with _lock:
        _programs.clear()


def static_key(value: Any) -> Any:
    """A hashable stand-in for a value that selects the program. The type is part of it:
    1, 1.0 and True are equal in Python but trace differently."""
    if isinstance(value, slice):   # unhashable before Python 3.12
        return (slice, static_key(value.start), static_key(value.stop),
                static_key(value.step))
    try:
        hash(value)
    except TypeError:
        raise JitlibTypeError(
            f"a {type(value).__name__} argument cannot select a jitlib.Array program "
            "(it is not hashable)",
            hint="pass a tuple for a list of numbers, an array for an array") from None
    return (type(value), value)


def call(head: Any, fn: Callable[..., Any], args: tuple[Any, ...],
         kwargs: dict[str, Any], operands_dynamic: bool = False) -> Any:
    """`fn(*args, **kwargs)` as a jitted program keyed by `head` and the non-array leaves.

    Arrays (device or host) anywhere in the arguments are the program's inputs; with
    `operands_dynamic`, so are numbers passed positionally (a ufunc's operands), which
    would otherwise be compiled in as constants (an axis, a clip bound)."""
    if current_trace() is not None:
        # an Array a traced function reached as a constant (an attribute, not a global
        # or closure variable): NumPy runs on its host copy, which the trace bakes in
        return fn(*host_copies(args), **host_copies(kwargs))
    arg_leaves, arg_tree = tree.flatten(args)
    kw_leaves, kw_tree = tree.flatten(kwargs)
    leaves = arg_leaves + kw_leaves
    dynamic = [i for i, x in enumerate(leaves)
               if isinstance(x, (Array, np.ndarray))
               or (operands_dynamic and i < len(arg_leaves) and isinstance(x, _NUMBERS))]
    # an array passed twice (`a += a` is np.add(a, a, out=(a,))) is one input: jit
    # refuses two arguments that share memory when one is written
    inputs: list[Any] = []
    slots: dict[int, int] = {}
    for i in dynamic:
        if id(leaves[i]) not in slots:
            slots[id(leaves[i])] = len(inputs)
            inputs.append(leaves[i])
    which = tuple(slots[id(leaves[i])] for i in dynamic)
    fixed = list(leaves)
    for i in dynamic:
        fixed[i] = None   # the program must not keep the caller's arrays alive
    dynamic_set = set(dynamic)
    key = (head, arg_tree, kw_tree, which, tuple(
        (i, static_key(x)) for i, x in enumerate(leaves) if i not in dynamic_set))
    n_args = len(arg_leaves)

    def make() -> Callable[..., Any]:
        def run(*arrays: Any) -> Any:
            full = list(fixed)
            for i, k in zip(dynamic, which):
                full[i] = arrays[k]
            return fn(*tree.unflatten(arg_tree, full[:n_args]),
                      **tree.unflatten(kw_tree, full[n_args:]))
        return run
    jitted = program(key, make, _name(head))
    try:
        return jitted(*inputs)
    except UnsupportedError as e:
        # the tracer's hint speaks of jitted functions; here the user wrote no jit
        raise UnsupportedError(
            f"{e.message} (an operation on a jitlib.Array runs as a jitted program on its "
            "device)", location=e.location,
            hint="copy the Array to the host first, np.asarray(arr), to run this in "
                 "NumPy") from None


def host_copies(x: Any) -> Any:
    """`x` with each Array in it copied to a host NumPy array."""
    return tree.tree_map(lambda leaf: np.asarray(leaf) if isinstance(leaf, Array) else leaf,
                         x)


def _name(head: Any) -> str:
    parts = head if isinstance(head, tuple) else (head,)
    return "eager_" + "_".join(getattr(p, "__name__", str(p)) for p in parts)


# ---------------------------------------------------------------------------- protocols

def array_ufunc(ufunc: np.ufunc, method: str, inputs: tuple[Any, ...],
                kwargs: dict[str, Any]) -> Any:
    """`Array.__array_ufunc__`: `getattr(ufunc, method)(*inputs, **kwargs)` on the device.
    `out=` arrays are written as NumPy writes them (the program writes into its argument;
    jit carries the write to the caller's Array, or host array)."""
    if "out" in kwargs:
        out = kwargs["out"]
        out = out if isinstance(out, tuple) else (out,)
        if all(o is None for o in out):
            del kwargs["out"]
        else:
            kwargs["out"] = out
    for x in inputs + tuple(kwargs.get("out", ())):
        if not isinstance(x, (Array, np.ndarray) + _NUMBERS) and x is not None \
                and hasattr(x, "__array_ufunc__"):
            return NotImplemented   # another array type: let it answer (NEP 13)
    inputs = tuple(np.asarray(x) if isinstance(x, list) else x for x in inputs)
    return call((ufunc, method), getattr(ufunc, method), inputs, kwargs,
                operands_dynamic=method == "__call__")


# NumPy functions that read only shapes and dtypes: answered on the host from stand-ins
# (an array of the same shape and dtype, with no memory behind it), as NumPy answers them
_METADATA = {np.shape, np.ndim, np.size, np.result_type, np.iscomplexobj, np.isrealobj,
             np.min_scalar_type, np.can_cast}


def array_function(func: Any, types: Any, args: tuple[Any, ...],
                   kwargs: dict[str, Any]) -> Any:
    """`Array.__array_function__`: the NumPy function `func` on the device."""
    if not all(issubclass(t, (Array, np.ndarray)) for t in types):
        return NotImplemented
    if func in _METADATA:
        args, kwargs = tree.tree_map(
            lambda x: stand_in(x) if isinstance(x, Array) else x, (args, kwargs))
        return func(*args, **kwargs)
    return call(func, func, args, kwargs)


def stand_in(array: Array) -> np.ndarray[Any, Any]:
    """A host array with `array`'s shape and dtype and no memory (every element aliases
    one zero): what NumPy needs to answer questions about shapes and dtypes."""
    return np.lib.stride_tricks.as_strided(np.zeros((), array.dtype), shape=array.shape,
                                           strides=(0,) * array.ndim, writeable=False)


__all__ = ["call", "array_ufunc", "array_function", "cache_info", "clear_cache",
           "program", "static_key", "stand_in"]
