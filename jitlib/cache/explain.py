"""Why a call missed the cache: its signature against the nearest cached one.

A signature is jit's `_Signature` (argument names, pytree structure, per leaf
(shape, dtype, weak), static values, backend). The nearest cached signature is the
one with the fewest differing parts; each difference names the argument and what to
do so the next call hits.
"""
from typing import NamedTuple

import numpy as np


class Difference(NamedTuple):
    kind: str       # "shape", "dtype", "weak", "static", "structure", "backend", "new"
    arg: str        # the argument (leaf) name, or "" for whole-call parts
    old: object
    new: object
    axes: tuple = ()   # for shapes: the axes whose size changed

    def describe(self):
        if self.kind == "new":
            return "first call: nothing cached yet"
        if self.kind == "shape":
            axes = ", ".join(f"axis {a}: {self.old[a]} -> {self.new[a]}" for a in self.axes) \
                if self.axes else "rank changed"
            return f"argument {self.arg!r}: shape {_shape(self.old)} -> {_shape(self.new)} " \
                   f"({axes})"
        if self.kind == "dtype":
            return f"argument {self.arg!r}: dtype {self.old} -> {self.new}"
        if self.kind == "weak":
            if type(self.new).__name__ == "ExactInt":
                return (f"argument {self.arg!r}: a Python int {self.old!r} -> {self.new!r} "
                        "(keyed by value: arithmetic on it needs the value)")
            if type(self.old) is tuple and type(self.new) is tuple:
                return (f"argument {self.arg!r}: a Python int in {_range(self.old)} -> "
                        f"{_range(self.new)} (the range decides which integer types hold it)")
            return f"argument {self.arg!r}: a Python scalar (weak type) vs an array"
        if self.kind == "static":
            return f"static argument {self.arg!r}: {self.old!r} -> {self.new!r}"
        if self.kind == "backend":
            return f"backend {self.old!r} -> {self.new!r}"
        return f"argument structure changed: {self.old} -> {self.new}"

    def fix(self, fn_name):
        if self.kind == "shape" and self.axes:
            axis = self.axes[0]
            return (f"add a bucket rule so sizes of {self.arg!r} axis {axis} share one "
                    f"program: jit({fn_name}, buckets={{'arg': {self.arg!r}, 'axis': {axis}, "
                    f"'policy': 'pow2'}})")
        if self.kind == "static":
            return (f"stop varying static argument {self.arg!r}, or make it dynamic "
                    f"(drop it from static_argnums/static_argnames)")
        if self.kind == "weak" and type(self.old) is tuple and type(self.new) is tuple:
            return (f"a Python int {self.arg!r} compiles once per range of values; pass it "
                    f"as a NumPy array or scalar of a fixed dtype if it ranges widely")
        if self.kind in ("dtype", "weak"):
            return f"pass {self.arg!r} with one dtype on every call (cast before calling)"
        if self.kind == "shape":
            return f"pass {self.arg!r} with one rank on every call"
        return "call with the same argument structure every time"


def differences(old, new):
    """What differs between two signatures (old cached, new called)."""
    if old is None:
        return [Difference("new", "", None, None)]
    diffs = []
    if old.backend != new.backend:
        diffs.append(Difference("backend", "", old.backend, new.backend))
    if old.names != new.names or old.in_tree != new.in_tree:
        return diffs + [Difference("structure", "", old.names, new.names)]
    names = leaf_names(new)
    for name, (s0, d0, w0), (s1, d1, w1) in zip(names, old.leaves, new.leaves):
        if s0 != s1:
            axes = tuple(a for a in range(len(s0)) if s0[a] != s1[a]) \
                if len(s0) == len(s1) else ()
            diffs.append(Difference("shape", name, s0, s1, axes))
        if np.dtype(d0) != np.dtype(d1):
            diffs.append(Difference("dtype", name, np.dtype(d0).name, np.dtype(d1).name))
        elif w0 != w1:
            diffs.append(Difference("weak", name, w0, w1))
    old_static, new_static = dict(old.static), dict(new.static)
    for name in sorted(set(old_static) | set(new_static), key=str):
        if old_static.get(name) != new_static.get(name):
            diffs.append(Difference("static", str(name), old_static.get(name),
                                    new_static.get(name)))
    return diffs


def nearest(key, cached):
    """The cached signature with the fewest differences from `key` (None if empty)."""
    best, best_score = None, None
    for other in cached:
        score = sum(10 if d.kind == "structure" else 1 for d in differences(other, key))
        if best_score is None or score < best_score:
            best, best_score = other, score
    return best


def explain(fn_name, key, cached):
    """One line per difference, for the log and for budget errors."""
    diffs = differences(nearest(key, cached), key)
    return diffs, f"{fn_name}: " + "; ".join(d.describe() for d in diffs)


def format_call(fn_name, key):
    """A call signature as a user reads it: `f(x: f32[8,16], n: int in [0, 255], k=3)`,
    then the backend: an array argument with its type and shape, a Python scalar by its
    type (an int by the range it is keyed by, or its value once keyed by value), static
    arguments by value."""
    from jitlib.hlo import dtypes
    parts = []
    for name, (shape, dtype, weak) in zip(leaf_names(key), key.leaves):
        if type(weak) is tuple:
            parts.append(f"{name}: int in {_range(weak)}")
        elif type(weak).__name__ == "ExactInt":
            parts.append(f"{name}={weak.value}")
        elif weak:
            parts.append(f"{name}: {_PYTHON_TYPES.get(np.dtype(dtype).kind, 'scalar')}")
        else:
            parts.append(f"{name}: {dtypes.name(dtype)}[{','.join(map(str, shape))}]")
    parts += [f"{name}={_short_repr(value)}" for name, value in key.static]
    return f"{fn_name}({', '.join(parts)}) on {key.backend}"


_PYTHON_TYPES = {"b": "bool", "i": "int", "u": "int", "f": "float", "c": "complex"}


def _short_repr(value, limit=40):
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def leaf_names(key):
    from jitlib.api import _leaf_names
    return _leaf_names(key.names, key.in_tree)


def _shape(shape):
    return "(" + ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"


def _range(bounds):
    lo, hi = bounds
    return f"[{'-inf' if lo is None else lo}, {'inf' if hi is None else hi}]"
