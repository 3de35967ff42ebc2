"""`arr[index]` and `arr[index] = value` on a `jitlib.Array`, as eager jitted programs.

The index is checked here, on the host, as NumPy checks it (an integer out of range is an
IndexError naming the axis), then split: integers and integer arrays are the program's
inputs, so `for t in range(n): x[t]` compiles once; slices, None and `...` select the
program. A boolean mask selects by value, so its True positions are found on the host
(`np.nonzero`; a mask that is a device Array is copied there first) and index as the
integer arrays NumPy would make of it. An integer index that is itself a device Array is
not read back: out of range, it is clamped, as inside jit (docs/bad_input.md).
"""
import operator
from typing import Any

import numpy as np

from jitlib import eager
from jitlib.array import Array
from jitlib.errors import JitlibIndexError, JitlibTypeError
from jitlib.trace.context import current_trace

_VALID = ("only integers, slices (`:`), ellipsis (`...`), numpy.newaxis (`None`) and "
          "integer or boolean arrays are valid indices")

# how a part of the index appears in a program's key
_INT, _ARRAY = "int", "array"


def getitem(array: Array, index: Any) -> Any:
    if current_trace() is not None:   # a constant of the trace (see eager.call)
        return np.asarray(array)[eager.host_copies(index)]
    structure, inputs = split(array, index)
    return eager.program(("getitem", structure), lambda: _reader(structure),
                         "eager_getitem")(array, *inputs)


def setitem(array: Array, index: Any, value: Any) -> None:
    if current_trace() is not None:
        raise JitlibTypeError(
            "a jitted function wrote into a jitlib.Array it reached as a constant",
            hint="pass the Array as an argument (or read it as a global): writes into "
                 "arguments reach the caller")
    structure, inputs = split(array, index)
    if isinstance(value, (list, tuple)):
        value = np.asarray(value)
    eager.program(("setitem", structure), lambda: _writer(structure),
                  "eager_setitem")(array, value, *inputs)


def _rebuild(structure: tuple[Any, ...], inputs: tuple[Any, ...]) -> tuple[Any, ...]:
    it = iter(inputs)
    return tuple(next(it) if part in (_INT, _ARRAY) else _unkey(part) for part in structure)


def _reader(structure: tuple[Any, ...]) -> Any:
    def read(x: Any, *inputs: Any) -> Any:
        return x[_rebuild(structure, inputs)]
    return read


def _writer(structure: tuple[Any, ...]) -> Any:
    def write(x: Any, value: Any, *inputs: Any) -> None:
        x[_rebuild(structure, inputs)] = value
    return write


def _unkey(part: Any) -> Any:
    if type(part) is tuple and part[0] is slice:
        return slice(*(None if p is None else p[1] for p in part[1:]))
    return part[1]


def split(array: Array, index: Any) -> tuple[tuple[Any, ...], list[Any]]:
    """(the index's structure, its integer inputs), checked against `array.shape`."""
    parts = index if type(index) is tuple else (index,)
    expanded: list[Any] = []
    for part in parts:
        if isinstance(part, list):
            part = np.asarray(part)
        if _is_mask(part):
            expanded.extend(np.nonzero(np.asarray(part)))
        else:
            expanded.append(part)
    axes = _axes(array.ndim, expanded)
    structure: list[Any] = []
    inputs: list[Any] = []
    for part, axis in zip(expanded, axes):
        if isinstance(part, (bool, np.bool_)) or part is None or part is Ellipsis:
            structure.append(eager.static_key(part))
        elif isinstance(part, slice):
            structure.append(eager.static_key(slice(*(
                None if v is None else _as_int(v) for v in (part.start, part.stop,
                                                             part.step)))))
        elif isinstance(part, (int, np.integer)):
            structure.append(_INT)
            inputs.append(_in_range(int(part), array.shape[axis], axis))
        elif isinstance(part, np.ndarray) and part.dtype.kind in "iu":
            if part.size:
                _in_range(int(part.min()), array.shape[axis], axis)
                _in_range(int(part.max()), array.shape[axis], axis)
            structure.append(_ARRAY)
            inputs.append(part)
        elif isinstance(part, Array) and part.dtype.kind in "iu":
            structure.append(_ARRAY)
            inputs.append(part)
        else:
            raise JitlibIndexError(_VALID)
    return tuple(structure), inputs


def _is_mask(part: Any) -> bool:
    return (isinstance(part, (np.ndarray, Array)) and part.dtype == np.bool_
            and part.ndim > 0)


def _as_int(value: Any) -> int:
    try:
        return operator.index(value)
    except TypeError:
        raise JitlibIndexError("slice indices must be integers or None or have an "
                               "__index__ method") from None


def _axes(ndim: int, parts: list[Any]) -> list[int]:
    """The array axis each index part addresses (None and `...` address none: -1)."""
    consuming = sum(1 for p in parts if p is not None and p is not Ellipsis
                    and not isinstance(p, (bool, np.bool_)))
    if sum(1 for p in parts if p is Ellipsis) > 1:
        raise JitlibIndexError("an index can only have a single ellipsis ('...')")
    if consuming > ndim:
        raise JitlibIndexError(f"too many indices for array: array is {ndim}-dimensional, "
                               f"but {consuming} were indexed")
    axes, axis = [], 0
    for p in parts:
        if p is Ellipsis:
            axes.append(-1)
            axis += ndim - consuming
        elif p is None or isinstance(p, (bool, np.bool_)):
            axes.append(-1)
        else:
            axes.append(axis)
            axis += 1
    return axes


def _in_range(i: int, size: int, axis: int) -> int:
    """`i` counted from the start; an IndexError where NumPy raises one."""
    if not -size <= i < size:
        raise JitlibIndexError(f"index {i} is out of bounds for axis {axis} with size {size}")
    return i + size if i < 0 else i


__all__ = ["getitem", "setitem", "split"]
