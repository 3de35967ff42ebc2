"""The Tracer: a stand-in for an ndarray that records operations as IR.

NumPy hands control to a Tracer through its own protocols: operators,
`__array_ufunc__` (every ufunc), `__array_function__` (np.sum, np.reshape, ...)
and `__getitem__`/`__setitem__`. So unmodified NumPy code traces.

In-place NumPy idioms keep their meaning: a Tracer's value can be replaced
(`x += 1`, `x[i] = v`, `out=`), and every name bound to the same Tracer sees the
new value. A *view* (basic slicing, transpose, reshape, ...) re-derives its value
from its base whenever the base changed, and a write through a basic-slicing
view is written back into the base, as in NumPy. Writes through views NumPy
could not have written through (or that we cannot map back) raise instead.
"""
import operator

import numpy as np

from jitlib import errors
from jitlib.hlo import build, dtypes
from jitlib.hlo.ir import Instr
from jitlib.hlo.ops import Op
from jitlib.trace import int_ranges
from jitlib.trace.context import current_liveness


class View:
    """How a view's value follows its base: `derive(base_instr) -> instr`, and for
    writable views `write(base_instr, new_view_instr) -> new base instr`."""

    __slots__ = ("derive", "write", "what")

    def __init__(self, derive, write=None, what="this view"):
        self.derive, self.write, self.what = derive, write, what


# NumPy converts a value written into an ndarray with float()/int()/__array__, so each
# conversion error may come from writing into a global array: say so
_GLOBAL_WRITE_HINT = ("; if this line writes a traced value into a NumPy array from outside "
                      "the function (a global), pass that array as an argument instead "
                      "(writes into arguments reach the caller)")


# `if`/`while` on a traced value: the three ways to say it that trace, one line each
_CONTROL_FLOW_HINT = (
    "choose elementwise with np.where(x > 0, a, b); branch with "
    "jnp.cond(pred, lambda v: v * 2, lambda v: -v, x); loop until a condition holds with "
    "jnp.while_loop(lambda s: s[1] > 1e-8, step, (x, err)) (import jitlib.numpy as jnp); "
    "or mark the argument static with static_argnums")


def _real_part(z):
    return build.unary(Op.REAL, z)


def _imag_part(z):
    return build.unary(Op.IMAG, z)


def _with_real_part(z, re):
    return build.binary(Op.COMPLEX, re, build.unary(Op.IMAG, z))


def _with_imag_part(z, im):
    return build.binary(Op.COMPLEX, build.unary(Op.REAL, z), im)


class Tracer:
    __slots__ = ("_instr", "_base", "_view", "_derived_from", "_weak", "_array0d", "_param",
                 "_live", "__weakref__")
    __array_priority__ = 1000
    __hash__ = None  # like ndarray: mutable, compares elementwise

    def __init__(self, instr, *, base=None, view=None, weak=False, array0d=False):
        assert isinstance(instr, Instr), instr
        self._instr = instr
        self._base = base
        self._view = view
        self._derived_from = base.instr if base is not None else None
        self._weak = weak
        # NumPy hands back a 0-d result as a scalar, which `+=` rebinds rather than
        # writes; only 0-d *arrays* (np.array(1.0), a 0-d argument) are written in place
        self._array0d = array0d
        self._param = None   # the parameter index of an argument's own tracer
        # the trace's liveness flag ([True] until it ends): a tracer that escaped its
        # trace (stored in a global, on an object) must say so when it is used later
        self._live = current_liveness()

    # -- value and in-place update

    @property
    def instr(self):
        """The current IR value (re-derived from the base if this is a view)."""
        if self._base is not None:
            base_value = self._base.instr
            if base_value is not self._derived_from:
                self._instr = self._view.derive(base_value)
                self._derived_from = base_value
        return self._instr

    def _assign(self, new):
        """Replace this array's value in place (NumPy's write semantics)."""
        new = as_instr(new)
        _check_region_write(self)
        if new.shape != self.shape:
            new = broadcast(new, self.shape)
        new = build.convert(new, self.dtype)
        if self._base is None:
            if self._param is not None:
                from jitlib.trace.context import current_trace
                current_trace().note_write(self._param)
            self._instr = new
            return
        if self._view.write is None:
            raise errors.UnsupportedError(
                f"writing into {self._view.what} is not supported inside jit: NumPy would "
                "write through to the array it views, which jitlib cannot reproduce here",
                hint="take a .copy() of the view before writing to it, or write into the "
                     "original array with an index")
        self._base._assign(self._view.write(self._base.instr, new))
        # the view now reads `new`: keep it rather than re-deriving it from the base
        self._instr, self._derived_from = new, self._base.instr

    def _check_live(self):
        if self._live is not None and not self._live[0]:
            loc = self._instr.loc
            raise errors.EscapedTracerError(
                f"this traced value ({self._instr.type_str}"
                + (f", made at {loc.short()}" if loc else "") + ") escaped the trace of "
                "the function it belongs to: it was stored outside (in a global, a list or "
                "an object) and is used after jit finished tracing, when it has no value",
                hint="return the value from the jitted function and use the result; a "
                     "value made while tracing exists only inside that trace")

    def _is_scalar(self):
        """Whether this stands for a NumPy scalar (immutable: in-place operators rebind)."""
        return not self.shape and not self._array0d and self._base is None

    def _make_view(self, derive, write=None, what="this view"):
        return Tracer(derive(self.instr), base=self, view=View(derive, write, what))

    # -- array attributes

    @property
    def shape(self):
        return self.instr.shape

    @property
    def dtype(self):
        return self.instr.dtype

    @property
    def ndim(self):
        return len(self.instr.shape)

    @property
    def size(self):
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def itemsize(self):
        return self.dtype.itemsize

    @property
    def nbytes(self):
        return self.size * self.itemsize

    @property
    def T(self):
        return _method("transpose")(self)

    @property
    def mT(self):
        return _method("swapaxes")(self, -1, -2)

    @property
    def real(self):
        if dtypes.is_complex(self.dtype):
            return self._make_view(_real_part, _with_real_part, "the real part")
        return _method("real")(self)

    @real.setter
    def real(self, value):
        # NumPy: a complex array's real part is a writable view; a real array's is itself
        (self.real if dtypes.is_complex(self.dtype) else self)._assign(value)

    @property
    def imag(self):
        if dtypes.is_complex(self.dtype):
            return self._make_view(_imag_part, _with_imag_part, "the imaginary part")
        return _method("imag")(self)

    @imag.setter
    def imag(self, value):
        if not dtypes.is_complex(self.dtype):
            raise errors.JitlibTypeError("array does not have imaginary part to set",
                                         hint="make the array complex first (x.astype("
                                              "np.complex128)), as NumPy needs too")
        self.imag._assign(value)

    @property
    def at(self):
        from jitlib.trace.indexing import AtIndexer
        return AtIndexer(self)

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self.shape[0]))

    def __repr__(self):
        return f"Tracer<{self.instr.type_str}>"

    def __str__(self):
        # print() inside a jitted function runs once, while tracing, not at each call
        known = self._known() if self._live is None or self._live[0] else None
        value = f" = {known!s}" if known is not None and known.size <= 100 else ""
        return (f"Tracer<{self.instr.type_str}{value}> (printed while jit traces the "
                "function, once: not at each call)")

    # -- conversions that need a concrete value: known values answer, else a user error

    def _known(self):
        """This array's value where the trace knows it (no argument reaches it), else None."""
        from jitlib.trace.context import current_trace
        from jitlib.trace.known import known_value
        trace = current_trace()
        return known_value(self.instr, trace.known if trace is not None else None)

    def _concrete(self, what, hint):
        self._check_live()
        value = self._known()
        if value is not None:
            return value
        if type(self._weak) is tuple:
            # a Python int argument (or arithmetic on them): jit traces again, keyed by
            # the ints' values, so range(n) and friends see a Python int
            raise int_ranges.needs_values(what)
        self._concrete_error(what, hint + _GLOBAL_WRITE_HINT)

    def __bool__(self):
        return bool(self._concrete(
            "Python control flow on an array (if/while/and/or/not, bool())",
            _CONTROL_FLOW_HINT))

    def __float__(self):
        return float(self._concrete("float()", "keep the value an array (x[()] or "
                                               "x.reshape(()))"))

    def __int__(self):
        return int(self._concrete("int()", "keep the value an array, or make the argument "
                                           "static"))

    def __complex__(self):
        return complex(self._concrete("complex()", "keep the value an array (x[()] or "
                                                   "x.reshape(()))"))

    def __index__(self):
        return operator.index(self._concrete(
            "Using an array as a Python index",
            "index with the array itself (x[idx] with an integer array works)"))

    def __array__(self, dtype=None, copy=None):
        self._concrete_error(
            "Converting to a NumPy array (np.asarray/np.array, or writing it into a NumPy "
            "array)",
            "arrays made inside the function with np.zeros/np.empty/np.array (or "
            "jitlib.numpy) take traced writes, and so do arguments (the caller's array "
            "receives them); a NumPy array from outside the function (a global) cannot: "
            "return the value and write it outside. To index a NumPy array with a traced "
            "index, wrap it first: jnp.asarray(table)[idx]. A list or tuple passed to a "
            "jitted function is a pytree of separately traced values, not one array: pass "
            "np.asarray(the_list) instead")

    def _concrete_error(self, what, hint):
        raise errors.TracerConversionError(
            f"{what} needs a concrete value, but this array ({self.instr.type_str}) is "
            "traced: its value is not known while jit traces the function", hint=hint)

    def item(self, *args):
        return self._concrete(".item()", "keep the value an array").item(*args)

    def tolist(self):
        return self._concrete(".tolist()", "keep the value an array").tolist()

    # -- NumPy protocols

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        self._check_live()
        if any(getattr(type(v), "_jitlib_masked", False) for v in inputs):
            return NotImplemented   # a masked selection (x[mask]) handles the call
        from jitlib.trace import ufuncs
        return ufuncs.dispatch(ufunc, method, inputs, kwargs)

    def __array_function__(self, func, types, args, kwargs):
        self._check_live()
        if any(getattr(t, "_jitlib_masked", False) for t in types):
            return NotImplemented   # a masked selection (x[mask]) handles the call
        from jitlib.trace.registry import FUNCTIONS, lookup
        lookup("sum")   # make sure the function table is loaded
        impl = FUNCTIONS.get(func)
        if impl is None:
            name = getattr(func, "__module__", "numpy").replace("numpy._core.", "numpy.")
            raise errors.UnsupportedError(
                f"{name}.{func.__name__} is not supported on traced arrays",
                hint="see docs/numpy_support.md for what jitlib traces; jitlib.numpy may "
                     "have an equivalent")
        return impl(*args, **kwargs)

    def __array_namespace__(self, *, api_version=None):
        import jitlib.numpy
        return jitlib.numpy

    # -- indexing

    def __getitem__(self, index):
        self._check_live()
        from jitlib.trace import indexing
        return indexing.getitem(self, index)

    def __setitem__(self, index, value):
        self._check_live()
        from jitlib.trace import indexing
        indexing.setitem(self, index, value)

    # -- methods: the implementations are NumPy's functions, by name

    def astype(self, dtype, copy=True):
        self._check_live()
        return _method("astype")(self, dtype)

    def copy(self):
        return Tracer(self.instr, array0d=self._array0d)

    def __copy__(self):
        return self.copy()

    def __deepcopy__(self, memo):
        return self.copy()


class StackedRow(Tracer):
    """Row `row` of a captured loop's stacked output `stack` (the values a list gained
    each trip), made as an IR value only when something reads it: `np.stack` of the
    whole run of rows takes the stacked output itself (joining.stack), so a loop of
    1,000 trips does not build 1,000 slices to join them again."""
    __slots__ = ("stack", "row", "_row_shape", "_loc")

    def __init__(self, stack, row, row_shape, loc):
        # every slot but `_instr`, which `__getattr__` fills on first use
        self._base = self._view = self._derived_from = self._param = None
        self._weak = self._array0d = False
        self._live = current_liveness()
        self.stack, self.row, self._row_shape, self._loc = stack, row, row_shape, loc

    def __getattr__(self, name):
        if name != "_instr":
            raise AttributeError(name)
        self._instr = self._made()
        return self._instr

    def _made(self):
        start = (self.row,) + (0,) * len(self._row_shape)
        limit = (self.row + 1,) + self._row_shape
        return build.reshape(build.slice(self.stack, start, limit, loc=self._loc),
                             self._row_shape, loc=self._loc)

    def as_stacked(self):
        """Whether the row still holds its place in the stacked output (never made, or
        made and not written into since: instructions are interned)."""
        try:
            current = object.__getattribute__(self, "_instr")
        except AttributeError:
            return True
        return current is self._made()


def _method(name):
    from jitlib.trace.registry import lookup
    return lookup(name)


def _forward(name):
    def method(self, *args, **kwargs):
        self._check_live()
        return _method(name)(self, *args, **kwargs)
    method.__name__ = name
    return method


for _name in ("sum", "prod", "mean", "var", "std", "max", "min", "argmax", "argmin",
              "any", "all", "cumsum", "cumprod", "reshape", "ravel", "flatten", "transpose",
              "swapaxes", "squeeze", "clip", "round", "dot", "take", "repeat", "nonzero",
              "sort", "argsort", "diagonal", "trace", "conj", "ptp", "fill", "put"):
    if not hasattr(Tracer, _name):
        setattr(Tracer, _name, _forward(_name))


def _ufunc_operator(ufunc, reflected=False, inplace=False):
    def op(self, other):
        from jitlib.trace import ufuncs
        self._check_live()
        if not _is_operand(other):
            return NotImplemented
        if inplace and not self._is_scalar():
            return ufuncs.apply(ufunc, (self, other), out=(self,), operator=True)
        operands = (other, self) if reflected else (self, other)
        return ufuncs.apply(ufunc, operands, operator=True)
    return op


def _is_operand(x):
    # Let Python try the other operand's reflected method for things we do not know.
    return isinstance(x, (Tracer, np.ndarray, np.generic, bool, int, float, complex, list,
                          tuple))


_BINARY_OPERATORS = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "truediv": np.true_divide,
    "floordiv": np.floor_divide, "mod": np.remainder, "pow": np.power,
    "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor,
    "lshift": np.left_shift, "rshift": np.right_shift,
}
for _name, _uf in _BINARY_OPERATORS.items():
    setattr(Tracer, f"__{_name}__", _ufunc_operator(_uf))
    setattr(Tracer, f"__r{_name}__", _ufunc_operator(_uf, reflected=True))
    setattr(Tracer, f"__i{_name}__", _ufunc_operator(_uf, inplace=True))
for _name, _uf in {"lt": np.less, "le": np.less_equal, "gt": np.greater,
                   "ge": np.greater_equal, "eq": np.equal, "ne": np.not_equal}.items():
    setattr(Tracer, f"__{_name}__", _ufunc_operator(_uf))


def _unary_operator(ufunc):
    def op(self):
        from jitlib.trace import ufuncs
        self._check_live()
        return ufuncs.apply(ufunc, (self,), operator=True)
    return op


Tracer.__neg__ = _unary_operator(np.negative)
Tracer.__pos__ = _unary_operator(np.positive)
Tracer.__abs__ = _unary_operator(np.absolute)
Tracer.__invert__ = _unary_operator(np.invert)


def _matmul(self, other):
    return _method("matmul")(self, other) if _is_operand(other) else NotImplemented


def _rmatmul(self, other):
    return _method("matmul")(other, self) if _is_operand(other) else NotImplemented


def _imatmul(self, other):
    if self._is_scalar():
        return _method("matmul")(self, other)
    self._assign(_method("matmul")(self, other))
    return self


def _divmod(self, other):
    from jitlib.trace import ufuncs
    return ufuncs.apply(np.divmod, (self, other))


def _rdivmod(self, other):
    from jitlib.trace import ufuncs
    return ufuncs.apply(np.divmod, (other, self))


Tracer.__matmul__, Tracer.__rmatmul__, Tracer.__imatmul__ = _matmul, _rmatmul, _imatmul
Tracer.__divmod__, Tracer.__rdivmod__ = _divmod, _rdivmod


# -- coercion helpers shared by every implementation

def is_tracer(x):
    return isinstance(x, Tracer)


# Python's scalar types: weak in promotion (NEP 50); NumPy scalars subclass some of them
PY_SCALARS = (bool, int, float, complex)


def is_weak(x):
    """Python scalars, and tracers standing for Python scalar arguments, are weak (NEP 50)."""
    if isinstance(x, Tracer):
        return x._weak
    return isinstance(x, PY_SCALARS) and not isinstance(x, np.generic)


def promotion_key(x):
    """What np.result_type / ufunc.resolve_dtypes should see for `x`."""
    if isinstance(x, Tracer):
        return _weak_type(x.dtype) if x._weak else x.dtype
    if isinstance(x, PY_SCALARS) and not isinstance(x, np.generic):
        return type(x)
    return concrete(x).dtype


def _weak_type(dtype):
    if dtypes.is_bool(dtype):
        return bool
    if dtypes.is_complex(dtype):
        return complex
    return int if dtypes.is_integer(dtype) else float


def result_type(*xs):
    """NumPy 2 promotion of arrays, tracers and (weak) Python scalars."""
    keys = [promotion_key(x) for x in xs]
    if all(isinstance(k, type) for k in keys):
        # only weak values: NumPy's default types (bool, int64, float64)
        return dtypes.result_type(*[np.asarray(k()).dtype for k in keys])
    return dtypes.result_type(*[k if isinstance(k, np.dtype) else k() for k in keys])


def concrete(x, dtype=None):
    """A concrete (non-traced) value as an ndarray, rejecting what jitlib cannot handle."""
    try:
        arr = np.asarray(x, dtype=dtype)
    except (ValueError, TypeError) as e:
        raise errors.JitlibTypeError(f"cannot use {type(x).__name__} value as an array: {e}",
                                     hint="pass rectangular numeric arrays") from None
    if not dtypes.is_supported(arr.dtype):
        raise errors.JitlibTypeError(
            f"arrays of dtype {arr.dtype} are not supported inside jit",
            hint="use a numeric or bool dtype")
    return arr


def _check_region_write(tracer):
    """A loop body or branch (a region trace) may not write into an array of the trace
    around it: the write would happen once, at trace time, not at each trip."""
    from jitlib.trace.context import current_trace
    trace = current_trace()
    if trace is None or not getattr(trace, "region", False):
        return
    while tracer._base is not None:
        tracer = tracer._base
    if tracer._live is not trace.live:
        raise errors.UnsupportedError(
            f"{trace.name} writes into an array from outside it ({tracer.instr.type_str}); "
            "a loop body or branch is a function of its operands",
            hint="carry the array through the loop (pass it in the carry and return its "
                 "new value), or write into a copy made inside")


def known_int_bounds(x):
    """(lo, hi) holding the value of `x` where it is known to be a Python int in a range
    (a concrete one, or an argument that was one), else None."""
    if isinstance(x, Tracer):
        return x._weak if type(x._weak) is tuple else None
    if isinstance(x, int) and not isinstance(x, (bool, np.generic)):
        return (x, x)
    return None


def fits(bounds, dtype):
    """Whether every int in `bounds` (lo, hi) is a value of integer `dtype`."""
    return int_ranges.placement(bounds, dtype) == "inside"


def as_instr(x, dtype=None):
    """The IR value of a tracer or a concrete value, optionally converted to `dtype`.

    A Python int (an argument, or arithmetic on arguments) converted to an integer type
    that cannot hold it raises, as NumPy 2 does; where its range does not tell, the
    trace asks for the values (int_ranges.NeedsIntValues)."""
    if isinstance(x, Tracer):
        live = x._live
        if live is not None and not live[0]:
            x._check_live()   # made in a loop body or branch, and kept outside it
        instr = x.instr
        if dtype is None:
            return instr
        if x._weak and dtypes.is_integer(x.dtype) and dtypes.is_integer(dtype):
            bounds = known_int_bounds(x)
            if bounds is None and np.dtype(dtype) == dtypes.INDEX:
                return build.convert(instr, dtype)   # int64 already: no op has wrapped it
            where = int_ranges.placement(bounds, dtype) if bounds is not None else None
            if where is None:
                raise int_ranges.needs_values(
                    f"converting a Python int to {np.dtype(dtype).name}")
            if where != "inside":
                raise errors.IntegerOverflowError(
                    f"a Python int (between {bounds[0]} and {bounds[1]} at this call) is "
                    f"out of bounds for {np.dtype(dtype).name}, which NumPy refuses too",
                    hint=f"convert the array to a wider type first, or pass a value that "
                         f"fits {np.dtype(dtype).name}")
        return build.convert(instr, dtype)
    if isinstance(x, Instr):
        return build.convert(x, dtype) if dtype is not None else x
    if dtype is not None and is_weak(x):
        # NumPy 2 refuses Python ints that do not fit the target integer type.
        try:
            return build.constant(np.asarray(x, dtype=dtype))
        except OverflowError as e:
            raise errors.IntegerOverflowError(
                str(e), hint=f"convert the array to a wider type first, or use a value "
                             f"that fits {np.dtype(dtype).name}") from None
    arr = concrete(x)
    if dtype is not None:
        arr = arr.astype(dtype)
    return build.constant(arr)


def shape_of(x):
    if isinstance(x, (Tracer, Instr)):
        return x.shape
    return np.shape(x)


def broadcast_shapes(*shapes):
    first = shapes[0]
    if all(s == first for s in shapes):   # the common case, without NumPy's machinery
        return tuple(first)
    if len(shapes) == 2:   # the next most common: NumPy's rule, without its arrays
        a, b = shapes
        n = max(len(a), len(b))
        a, b = (1,) * (n - len(a)) + tuple(a), (1,) * (n - len(b)) + tuple(b)
        out = tuple(x if y == 1 or x == y else y if x == 1 else -1 for x, y in zip(a, b))
        if -1 not in out:
            return out
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        raise errors.ShapeError(
            "operands could not be broadcast together with shapes "
            + " ".join(str(tuple(s)) for s in shapes),
            hint="broadcasting aligns trailing dimensions, which must be equal or 1; "
                 "reshape or add an axis (x[:, None]) to line them up") from None


def broadcast(instr, shape):
    """NumPy-style broadcast of an IR value to `shape`."""
    shape = tuple(shape)
    if instr.shape == shape:
        return instr
    if broadcast_shapes(instr.shape, shape) != shape:
        raise errors.ShapeError(f"cannot broadcast shape {instr.shape} to {shape}",
                                hint="the target must have the array's trailing "
                                     "dimensions, or 1s where it stretches")
    offset = len(shape) - instr.ndim
    keep = [i for i, d in enumerate(instr.shape) if d == shape[i + offset]]
    if len(keep) != instr.ndim:   # drop the size-1 dims that stretch, then broadcast
        instr = build.reshape(instr, [instr.shape[i] for i in keep])
    return build.broadcast_in_dim(instr, shape, [i + offset for i in keep])


def wrap(instr):
    return Tracer(instr)


def normalize_axis(axis, ndim, what="axis"):
    if isinstance(axis, Tracer):
        axis = axis._concrete("an axis argument", "axes must be Python ints")[()]
    if not isinstance(axis, (int, np.integer)) or isinstance(axis, bool):
        raise errors.JitlibTypeError(f"{what} must be an int, got {type(axis).__name__}")
    axis = operator.index(axis)
    if not -ndim <= axis < ndim:
        raise errors.ShapeError(f"{what} {axis} is out of bounds for array of dimension {ndim}")
    return axis % ndim


def normalize_axes(axis, ndim):
    """None -> all axes; int or tuple -> sorted tuple of non-negative axes."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (tuple, list)):
        axes = tuple(normalize_axis(a, ndim) for a in axis)
        if len(set(axes)) != len(axes):
            raise errors.ShapeError("repeated axis")
        return tuple(sorted(axes))
    return (normalize_axis(axis, ndim),)
