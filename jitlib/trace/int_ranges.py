"""What a trace knows of Python int values, so that integer types behave as in NumPy 2.

NumPy 2 (NEP 50) converts a Python int into an integer array's type only where the
type holds the *value*, and raises OverflowError otherwise; Python int arithmetic
before that is exact. A jitted function sees a Python int argument as a traced int64
scalar, and the cache keys it by a range between two integer-type bounds
(`context.int_range`), so every int of the range is held, or missed, by each type alike.

Arithmetic on such scalars (`t + 200`) gives a derived range, followed here op by op.
Where a derived range decides nothing (it straddles a type's bound, it may leave int64,
or an op's range is not followed), the trace cannot know what NumPy would do, and
raises `NeedsIntValues`: jit then keys those arguments by their value (`ExactInt`) and
traces again, with the ints as plain Python ints, so Python and NumPy do the rest.
"""
from typing import NamedTuple

import numpy as np

from jitlib import errors

_INT64 = np.iinfo(np.int64)


class ExactInt(NamedTuple):
    """The `weak` of a Python int argument keyed by its value, not its range."""
    value: int

    def __repr__(self):
        return f"={self.value}"


class NeedsIntValues(errors.JitlibError):
    """The trace needs the values of its Python int arguments (see the module docstring).

    jit catches it and traces again; it reaches a user only from a trace that cannot
    key by value (a transform traced outside jit)."""


def needs_values(what):
    return NeedsIntValues(
        f"{what} depends on the value of a Python int argument, which this trace "
        "knows only as a range", hint="mark the int argument static (static_argnames)")


def placement(bounds, dtype):
    """"inside" when every int of `bounds` (lo, hi) is a value of integer `dtype`,
    "below" / "above" when none is, None when the range straddles a bound."""
    info = np.iinfo(dtype)
    lo, hi = bounds
    if lo is not None and hi is not None and info.min <= lo and hi <= info.max:
        return "inside"
    if hi is not None and hi < info.min:
        return "below"
    if lo is not None and lo > info.max:
        return "above"
    return None


def result_range(ufunc, bounds):
    """The (lo, hi) range of `ufunc` on Python ints in `bounds` (one (lo, hi) per input),
    or None where it is not followed. Raises NeedsIntValues where int64 arithmetic
    could differ from Python's (a result that may leave int64, an op not followed that
    can overflow)."""
    rule = _RULES.get(ufunc)
    known = all(b is not None and None not in b for b in bounds)
    result = rule(*bounds) if rule is not None and known else None
    if result is None:
        if ufunc in _MAY_OVERFLOW:
            raise needs_values(f"np.{ufunc.__name__} of Python ints")
        return None
    lo, hi = result
    if lo < _INT64.min or hi > _INT64.max:
        raise needs_values(f"np.{ufunc.__name__} of Python ints (past int64 here)")
    return result


def _corners(fn, a, b):
    values = [fn(x, y) for x in a for y in b]
    return min(values), max(values)


def _floor_divide(a, b):
    if b[0] <= 0 <= b[1]:
        return None   # Python raises on zero, NumPy gives 0: only the value tells
    return _corners(lambda x, y: x // y, a, b)


def _remainder(a, b):
    if b[0] > 0:
        return (0, b[1] - 1)
    if b[1] < 0:
        return (b[0] + 1, 0)
    return None


def _power(a, b):
    if b[0] < 0 or b[1] > 64:
        return None   # a negative power is a float in Python; big ones leave int64
    exps = {b[0], b[1], min(b[0] + 1, b[1]), max(b[1] - 1, b[0])}   # both parities
    bases = {a[0], a[1]} | {v for v in (-1, 0, 1) if a[0] <= v <= a[1]}
    values = [x ** y for x in bases for y in exps]
    return min(values), max(values)


def _absolute(a):
    if a[0] >= 0:
        return a
    if a[1] <= 0:
        return (-a[1], -a[0])
    return (0, max(-a[0], a[1]))


def _left_shift(a, b):
    if a[0] < 0 or b[0] < 0 or b[1] > 63:
        return None
    return (a[0] << b[0], a[1] << b[1])


_RULES = {
    np.add: lambda a, b: (a[0] + b[0], a[1] + b[1]),
    np.subtract: lambda a, b: (a[0] - b[1], a[1] - b[0]),
    np.multiply: lambda a, b: _corners(lambda x, y: x * y, a, b),
    np.negative: lambda a: (-a[1], -a[0]),
    np.positive: lambda a: a,
    np.absolute: _absolute,
    np.floor_divide: _floor_divide,
    np.remainder: _remainder,
    np.power: _power,
    np.left_shift: _left_shift,
    np.maximum: lambda a, b: (max(a[0], b[0]), max(a[1], b[1])),
    np.minimum: lambda a, b: (min(a[0], b[0]), min(a[1], b[1])),
}
# ops whose int64 result can differ from the exact Python int (wrap-around, or an
# error Python raises): an unknown range there needs the values
_MAY_OVERFLOW = frozenset({np.add, np.subtract, np.multiply, np.negative, np.absolute,
                           np.floor_divide, np.remainder, np.power, np.left_shift})
