"""Masked selections: `x[mask]` with a traced boolean mask, kept lazy.

How many elements `x[mask]` holds is decided by the data, so it has no static shape. What
code does with it usually has one: `x[mask].sum()`, `.mean()`, `.max()`,
`np.count_nonzero`, `x[mask] = f(x[mask])`, `np.nonzero(m)[0].sum()`. A MaskedSelection
keeps x's values at full shape beside the mask, stays masked through elementwise math,
and turns those uses into reductions with `where=mask` (or a select, for writes).
Anything that needs its shape (returning it, reshape, indexing, concatenation, len())
raises an error naming the line that made it.

Layout: for `x[..., mask, ...]` (the mask covering dims at..at+k-1 of x), `data` has x's
shape pre + mask.shape + post and the selection's logical shape is pre + (count,) + post:
logical axis `at` stands for the k mask dims of the data.

An empty selection: NumPy's max/min raise ValueError, which a traced program cannot do
per call. Float max/min give NaN instead; integer and bool ones need initial= (the
answer for an empty selection, as in NumPy). mean/var/std give NaN, as NumPy does.
"""
import inspect

import numpy as np

from jitlib import errors
from jitlib.hlo import build as B
from jitlib.hlo import dtypes
from jitlib.trace import tracer as T
from jitlib.trace.registry import lookup

NOVALUE = np._NoValue

HINT = ("keep x's shape with np.where(mask, x, 0), or reduce the selection: "
        "x[mask].sum(), .mean(), .max(), np.count_nonzero(mask)")


def _given(value):
    return value is not None and value is not NOVALUE


def is_masked(x):
    return getattr(type(x), "_jitlib_masked", False)


class MaskedSelection:
    """The lazy value of `x[mask]` for a traced mask; see the module docstring."""

    _jitlib_masked = True          # Tracer's protocols step aside for it
    __array_priority__ = 2000      # above Tracer's: operators defer to us
    __hash__ = None
    __slots__ = ("_data", "_mask", "_at", "_made_at", "_what", "nonzero_dim")

    def __init__(self, data, mask, at, made_at, what="x[mask]", nonzero_dim=None):
        # snapshots: later in-place writes to x or to the mask must not reach x[mask]
        self._data, self._mask = T.Tracer(data.instr), T.Tracer(mask.instr)
        self._at = at
        self._made_at, self._what = made_at, what
        # for np.nonzero's results: which dim of the mask this index array counts
        self.nonzero_dim = nonzero_dim

    # -- what has a static answer

    @property
    def dtype(self):
        return self._data.dtype

    @property
    def ndim(self):
        return self._data.ndim - self._mask.ndim + 1

    @property
    def mask(self):
        return self._mask

    @property
    def size(self):
        """The number of elements, as a traced int64 (NumPy's is a Python int)."""
        return np.sum(self._full_mask())

    def _full_mask(self):
        k, at = self._mask.ndim, self._at
        post = self._data.ndim - at - k
        mask = np.reshape(self._mask, (1,) * at + self._mask.shape + (1,) * post)
        return np.broadcast_to(mask, self._data.shape)

    # -- reductions: the registered NumPy reductions with where=mask

    def _axes(self, axis):
        """Logical `axis` as (logical axes, data axes)."""
        logical = T.normalize_axes(axis, self.ndim)
        k = self._mask.ndim
        data = []
        for ax in logical:
            if ax < self._at:
                data.append(ax)
            elif ax == self._at:
                data.extend(range(ax, ax + k))
            else:
                data.append(ax + k - 1)
        return logical, tuple(data)

    def _kept(self, result, logical, keepdims):
        if keepdims is NOVALUE or not keepdims:
            return result
        k, at = self._mask.ndim, self._at
        static = self._data.shape[:at] + (None,) + self._data.shape[at + k:]
        return np.reshape(result, tuple(1 if ax in logical else n
                                        for ax, n in enumerate(static)))

    def _where(self, where):
        full = self._full_mask()
        if not _given(where) or where is True:
            return full
        return np.logical_and(full, np.broadcast_to(self._lift(where), full.shape))

    def _reduce(self, name, axis, keepdims, out, where, **options):
        if out is not None:
            self._escape(f"np.{name}(..., out=) of {self._what}")
        options = {k: v for k, v in options.items() if _given(v)}
        logical, axes = self._axes(axis)
        if self._at not in logical:
            return self._reduce_within(name, logical, axes, keepdims, where, options)
        result = lookup(name)(self._data, axis=axes, where=self._where(where), **options)
        return self._kept(result, logical, keepdims)

    def _reduce_within(self, name, logical, axes, keepdims, where, options):
        """A reduction that leaves the selected axis alone: each selected element reduces
        on its own, so the result is a selection by the same mask."""
        if _given(where) and where is not True:
            options["where"] = self._lift(where)
        keep = keepdims is not NOVALUE and bool(keepdims)
        result = lookup(name)(self._data, axis=axes, keepdims=keep, **options)
        return self._reduced_within(result, logical, keep)

    def _reduced_within(self, result, logical, keepdims, lead=0):
        """`result` of reducing the data over the other `logical` axes, as a selection by
        the same mask (`lead`: dims the result puts first, as quantile does for q's)."""
        at = self._at if keepdims else self._at - sum(ax < self._at for ax in logical)
        return MaskedSelection(result, self._mask, at + lead, self._made_at, self._what)

    def sum(self, axis=None, dtype=None, out=None, keepdims=False, initial=NOVALUE,
            where=NOVALUE):
        return self._reduce("sum", axis, keepdims, out, where, dtype=dtype, initial=initial)

    def prod(self, axis=None, dtype=None, out=None, keepdims=False, initial=NOVALUE,
             where=NOVALUE):
        return self._reduce("prod", axis, keepdims, out, where, dtype=dtype, initial=initial)

    def mean(self, axis=None, dtype=None, out=None, keepdims=False, *, where=NOVALUE):
        return self._reduce("mean", axis, keepdims, out, where, dtype=dtype)

    def var(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=NOVALUE):
        return self._reduce("var", axis, keepdims, out, where, dtype=dtype, ddof=ddof)

    def std(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=NOVALUE):
        return self._reduce("std", axis, keepdims, out, where, dtype=dtype, ddof=ddof)

    def any(self, axis=None, out=None, keepdims=False, *, where=NOVALUE):
        return self._reduce("any", axis, keepdims, out, where)

    def all(self, axis=None, out=None, keepdims=False, *, where=NOVALUE):
        return self._reduce("all", axis, keepdims, out, where)

    def max(self, axis=None, out=None, keepdims=False, initial=NOVALUE, where=NOVALUE):
        return self._extreme("max", -np.inf, axis, out, keepdims, initial, where)

    def min(self, axis=None, out=None, keepdims=False, initial=NOVALUE, where=NOVALUE):
        return self._extreme("min", np.inf, axis, out, keepdims, initial, where)

    def _extreme(self, name, identity, axis, out, keepdims, initial, where):
        """max/min; an empty selection gives initial= if passed, else NaN (floats only:
        NumPy raises there, and a traced program cannot raise per call)."""
        within = self._at not in self._axes(axis)[0]
        if _given(initial) or (within and not _given(where)):
            return self._reduce(name, axis, keepdims, out, where, initial=initial)
        if not dtypes.is_float(self.dtype):
            raise errors.UnsupportedError(
                f"{self._what}.{name}() of {self.dtype} values needs initial= inside jit: "
                "NumPy raises ValueError when the mask selects nothing, which a compiled "
                "program cannot do, and integers have no NaN to return instead",
                hint=f"pass the answer for an empty selection, e.g. {self._what}.{name}"
                     f"(initial=np.iinfo(x.dtype).{_LIMIT[name]}) (it leaves other answers "
                     "alone)")
        result = self._reduce(name, axis, keepdims, out, where, initial=identity)
        empty = np.equal(self._count(axis, keepdims, where), 0)
        return np.where(empty, np.asarray(np.nan, self.dtype), result)

    def _nan_reduce(self, func, name, args, kwargs):
        """np.nansum, np.nanmean, ...: the registered NaN-ignoring reductions, where=mask."""
        bound = inspect.signature(func).bind(self, *args, **kwargs).arguments
        bound.pop("a")
        return self._reduce(name, bound.pop("axis", None), bound.pop("keepdims", False),
                            bound.pop("out", None), bound.pop("where", NOVALUE), **bound)

    def _nan_extreme(self, name, axis=None, out=None, keepdims=False, initial=NOVALUE,
                     where=NOVALUE):
        """np.nanmax/np.nanmin: max/min over the selected non-NaN values (NaN when none)."""
        number = np.logical_not(np.isnan(self))
        if _given(where) and where is not True:
            number = np.logical_and(number, where)
        identity = -np.inf if name == "max" else np.inf
        return self._extreme(name, identity, axis, out, keepdims, initial, number)

    def _average(self, axis=None, weights=None, returned=False, *, keepdims=NOVALUE):
        """np.average: the registered average with weights zeroed outside the mask (the
        mask itself when no weights are given), so only selected elements count."""
        logical, axes = self._axes(axis)
        within = self._at not in logical
        w = None if weights is None else np.broadcast_to(self._lift(weights), self._data.shape)
        if not within:
            zero = np.zeros((), w.dtype) if w is not None else None
            w = self._full_mask() if w is None else np.where(self._full_mask(), w, zero)
        keep = keepdims is not NOVALUE and bool(keepdims)
        out = lookup("average")(self._data, axis=axes, weights=w, returned=True,
                                keepdims=keep and within)
        if within:
            out = tuple(self._reduced_within(r, logical, keep) for r in out)
        else:
            out = tuple(self._kept(r, logical, keep) for r in out)
        return out if returned else out[0]

    def _count(self, axis, keepdims, where):
        """How many elements each result of a reduction over `axis` takes in."""
        ones = self._wrap(T.Tracer(B.full(True, self._data.shape, dtypes.BOOL)))
        return ones.sum(axis, keepdims=keepdims, where=where)

    def count_nonzero(self, axis=None, *, keepdims=False):
        return np.not_equal(self, 0).sum(axis, keepdims=keepdims)

    # -- elementwise: stays a selection by the same mask

    def _same_selection(self, other):
        return (other._mask.instr is self._mask.instr and other._at == self._at
                and other.ndim == self.ndim)

    def _lift(self, v):
        """An operand of elementwise math with this selection, in the data's layout."""
        if is_masked(v):
            if not self._same_selection(v):
                raise errors.UnsupportedError(
                    f"combining {self._what} with a selection by a different mask (or "
                    "along a different axis) is not supported inside jit: their lengths "
                    "depend on the data and may differ",
                    hint="select both by the same mask, or combine full arrays with "
                         "np.where(mask, x, 0)")
            return v._data
        if T.is_weak(v) or v is None:
            return v
        arr = v if isinstance(v, T.Tracer) else np.asarray(v)
        shape, n, at = arr.shape, self.ndim, self._at
        if len(shape) <= n - at - 1:     # ends before the selected axis: aligns as it is
            return arr
        padded = (1,) * (n - len(shape)) + shape
        if len(shape) > n or padded[at] != 1:
            self._escape(f"broadcasting {self._what} against an array of shape {shape}")
        return np.reshape(arr, padded[:at] + (1,) * self._mask.ndim + padded[at + 1:])

    def _wrap(self, result):
        if isinstance(result, tuple):
            return tuple(self._wrap(r) for r in result)
        if not isinstance(result, T.Tracer):
            result = T.Tracer(T.as_instr(result))
        return MaskedSelection(result, self._mask, self._at, self._made_at, self._what)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if method != "__call__" or kwargs.get("out") is not None:
            what = "out=" if method == "__call__" else f".{method}"
            self._escape(f"np.{ufunc.__name__}{what} on {self._what}")
        lifted = [self._lift(v) for v in inputs]
        if "where" in kwargs:
            kwargs["where"] = self._lift(kwargs["where"])
        return self._wrap(ufunc(*lifted, **kwargs))

    def astype(self, dtype, copy=True):
        return self._wrap(self._data.astype(dtype))

    def copy(self):
        return self

    # -- NumPy functions: the reductions above and a few elementwise ones

    def __array_function__(self, func, types, args, kwargs):
        name = _REDUCTIONS.get(func) or _NAN_REDUCTIONS.get(func)
        if name is not None:
            a, rest = args[0], args[1:]
            if not is_masked(a):
                self._escape(f"passing {self._what} to np.{func.__name__} other than as "
                             "the array it reduces")
            if func in (np.nanmax, np.nanmin):
                return a._nan_extreme(name, *rest, **kwargs)
            if func in _NAN_REDUCTIONS:
                return a._nan_reduce(func, name, rest, kwargs)
            return getattr(a, name)(*rest, **kwargs)
        if func in _ORDER_STATISTICS and is_masked(args[0]):
            from jitlib.trace import masked_order
            return getattr(masked_order, func.__name__)(*args, **kwargs)
        if func is np.average and is_masked(args[0]):
            return args[0]._average(*args[1:], **kwargs)
        if func is np.size and len(args) == 1 and not kwargs:
            return args[0].size
        if func in _ELEMENTWISE and not (func is np.where and len(args) == 1):
            lifted = [self._lift(v) for v in args]
            return self._wrap(func(*lifted, **{k: self._lift(v) for k, v in kwargs.items()}))
        self._escape(f"np.{func.__name__} of {self._what}")

    # -- what needs the shape: a clear error

    def _escape(self, what, location=None):
        raise errors.UnsupportedError(
            f"{what} needs the shape of {self._what} (made at {_where_made(self)}), "
            "and that depends on how many elements the mask selects: the data decides it, "
            "so jit cannot trace it", hint=HINT, location=location)

    def escaped_output(self, fn_name, index):
        """The error for returning a selection from the jitted function."""
        self._escape(f"returning {self._what} (output {index} of {fn_name})",
                     location=self._made_at)

    @property
    def shape(self):
        self._escape(f"{self._what}.shape")

    def __len__(self):
        raise errors.UnsupportedError(
            f"len({self._what}) is a Python int in NumPy, but how many elements the mask "
            "selects depends on the data, so jit cannot know it while tracing",
            hint="count with np.count_nonzero(mask) (a traced integer), or use "
                 f"{self._what}.size")

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        self._escape(f"{self._what}.{name}")

    def __bool__(self):
        self._escape(f"bool({self._what}) (an if on it)")

    def __iter__(self):
        self._escape(f"iterating over {self._what}")

    def __getitem__(self, index):
        self._escape(f"indexing {self._what}")

    def __setitem__(self, index, value):
        self._escape(f"writing into {self._what}")

    def __array__(self, dtype=None, copy=None):
        self._escape(f"converting {self._what} to a NumPy array")

    def __repr__(self):
        return f"MaskedSelection<{self._what} of {self._data.instr.type_str}>"


_LIMIT = {"max": "min", "min": "max"}   # the initial= that changes no other answer


def _where_made(selection):
    loc = selection._made_at
    return loc.short() if loc is not None else "an unknown line"


_REDUCTIONS = {np.sum: "sum", np.prod: "prod", np.mean: "mean", np.var: "var",
               np.std: "std", np.max: "max", np.amax: "max", np.min: "min", np.amin: "min",
               np.any: "any", np.all: "all", np.count_nonzero: "count_nonzero"}
_NAN_REDUCTIONS = {np.nansum: "nansum", np.nanprod: "nanprod", np.nanmean: "nanmean",
                   np.nanvar: "nanvar", np.nanstd: "nanstd", np.nanmax: "max",
                   np.nanmin: "min"}
_ORDER_STATISTICS = (np.median, np.quantile, np.percentile)   # in masked_order.py
_ELEMENTWISE = (np.where, np.clip, np.round, np.around, np.nan_to_num, np.real, np.imag,
                np.isclose)


def _operator(ufunc, reflected=False):
    def op(self, other):
        inputs = (other, self) if reflected else (self, other)
        return self.__array_ufunc__(ufunc, "__call__", *inputs)
    return op


def _unary(ufunc):
    def op(self):
        return self.__array_ufunc__(ufunc, "__call__", self)
    return op


for _name, _uf in T._BINARY_OPERATORS.items():
    setattr(MaskedSelection, f"__{_name}__", _operator(_uf))
    setattr(MaskedSelection, f"__r{_name}__", _operator(_uf, reflected=True))
    # x[m] += v: a new selection, which Python then assigns back with x[m] = ...
    setattr(MaskedSelection, f"__i{_name}__", _operator(_uf))
for _name, _uf in {"lt": np.less, "le": np.less_equal, "gt": np.greater,
                   "ge": np.greater_equal, "eq": np.equal, "ne": np.not_equal}.items():
    setattr(MaskedSelection, f"__{_name}__", _operator(_uf))
for _name, _uf in {"neg": np.negative, "pos": np.positive, "abs": np.absolute,
                   "invert": np.invert}.items():
    setattr(MaskedSelection, f"__{_name}__", _unary(_uf))


def select(x, at, mask, what="x[mask]"):
    """`x[..., mask, ...]` (the traced bool Tracer `mask` covering dims at.. of x)."""
    data = T.Tracer(x.instr)     # a copy, as NumPy's x[mask] is: later writes to x miss it
    if mask.ndim == 0:           # a 0-d mask selects a new size-1 dim, or nothing
        data = T.Tracer(np.expand_dims(data, at).instr)
        mask = np.reshape(mask, (1,))
    return MaskedSelection(data, mask, at, errors.user_location(), what)


def as_mask_index(index):
    """An index holding all of np.nonzero(mask)'s arrays, in order, as `mask` itself:
    `x[np.nonzero(m)]` is `x[m]`. Other indices are returned as they are."""
    parts = index if isinstance(index, tuple) else (index,)
    found = [k for k, p in enumerate(parts) if is_masked(p)]
    if not found:
        return index
    first = parts[found[0]]
    k = first.mask.ndim
    run = parts[found[0]:found[0] + k]
    if len(found) == k and len(run) == k and all(
            is_masked(p) and p.nonzero_dim == d and p.mask.instr is first.mask.instr
            for d, p in enumerate(run)):
        return parts[:found[0]] + (first.mask,) + parts[found[0] + k:]
    first._escape(f"indexing an array with {first._what}")
