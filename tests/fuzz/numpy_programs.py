"""Random NumPy-level programs: Python source over `np`, and the arguments to call it on.

    numpy_programs(max_steps=6) -> strategy of NumpyProgram(source, args)

A program grows one line at a time, each line a NumPy expression over earlier values:
ufuncs (unary and binary, with broadcasting and Python scalars, which are weak under
NEP 50), reductions with axis and keepdims, reshape, transpose, basic slicing with
negative steps and None, integer and array indexing, matmul, where, concatenate, cumsum,
clip and astype; and writes, as real NumPy code makes them: into an argument (a slice
assigned, an in-place operator, np.copyto) or into a buffer made inside with np.zeros or
np.empty, whose later reads must see the write. Each line is evaluated eagerly as it is
drawn, so every later choice knows the real shape and dtype (and what earlier writes
left), and a line NumPy itself rejects is simply not kept.
Arguments mix shapes (0-d, empty, broadcastable) and dtypes, and values of several
flavours: ordinary, halves (ties for rounding and argmax), sprinkled with NaN, +-inf and
-0.0, huge and tiny magnitudes. The function returns the values no later line used.

About 30% of programs also hold one loop of 1 to 4 trips over a carried value: either
`jnp.fori_loop(0, K, lambda i, c: BODY, x)` (jitlib.numpy's, one `while` op when traced;
the body keeps the carry's shape and dtype, as fori_loop requires, through an astype of
the same kind where NumPy would promote) or a plain `for i in range(K):` that rebinds a
value (the tracer unrolls it; NumPy's promotions from trip to trip are kept). BODY is one
or two steps on the carry (now and then on the value it started from, dropping the
carry): ufuncs with earlier values and the counter, where, a
reduction broadcast back, a rotation, a cumulative sum.
"""
import dataclasses
import linecache
import math
import textwrap
import warnings

import numpy as np
from hypothesis import strategies as st

import jitlib.numpy as jnp

DTYPES = ("bool", "int8", "int32", "int64", "uint8", "float16", "float32", "float64")
# the numpy_complex generator's: complex values beside every other kind (a third of them)
COMPLEX_DTYPES = DTYPES + ("complex64", "complex128") * 2
_FLOATS = ("float16", "float32", "float64")
_COMPLEX = ("complex64", "complex128")
_DIMS = (3, 1, 2, 4, 0, 5)
_FLAVOURS = ("normal", "halves", "specials", "huge", "tiny")
_HUGE = {"float16": 3e4, "float32": 1e30, "float64": 1e300}
_TINY = {"float16": 1e-3, "float32": 1e-30, "float64": 1e-300}

_UNARY_FLOAT = ("negative", "abs", "exp", "log", "sqrt", "sin", "cos", "tanh", "floor",
                "ceil", "rint", "sign", "square", "expm1", "log1p", "isfinite", "isnan",
                "reciprocal")
_UNARY_INT = ("negative", "abs", "square", "sign", "invert")
_UNARY_COMPLEX = ("negative", "abs", "exp", "log", "sqrt", "sin", "cos", "tanh", "sign",
                  "square", "expm1", "log1p", "isfinite", "isnan", "reciprocal", "conjugate",
                  "real", "imag", "sinh", "cosh", "tan", "log10", "exp2")
_UNARY_BOOL = ("logical_not", "invert")
_BINARY_ANY = ("add", "multiply", "maximum", "minimum", "equal", "less", "greater_equal",
               "not_equal")
_BINARY_NUM = ("subtract", "true_divide", "floor_divide", "remainder")
_BINARY_FLOAT = ("power", "arctan2", "fmod")
_BINARY_INT = ("bitwise_and", "bitwise_or", "bitwise_xor")
_BINARY_BOOL = ("logical_and", "logical_or", "logical_xor")
_OPERATORS = {"add": "+", "subtract": "-", "multiply": "*", "true_divide": "/",
              "less": "<", "equal": "==", "bitwise_and": "&"}
_REDUCTIONS = ("sum", "prod", "max", "min", "mean", "any", "all", "argmax", "argmin")
LOOP_PERCENT = 30   # programs that hold a loop
_SCALARS = ("2", "-1", "0", "3", "0.5", "-0.0", "2.5", "1e30", "1e-30", "float('nan')",
            "float('inf')", "True")


@dataclasses.dataclass
class NumpyProgram:
    source: str
    args: list

    def function(self):
        """The program as a Python function; its lines show in tracebacks and IR locs."""
        filename = f"<fuzz numpy program {abs(hash(self.source)):x}>"
        linecache.cache[filename] = (len(self.source), None,
                                     self.source.splitlines(True), filename)
        namespace = {"np": np, "jnp": jnp}
        exec(compile(self.source, filename, "exec"), namespace)   # noqa: S102 - our own text
        return namespace["f"]

    def __str__(self):
        with np.printoptions(threshold=32, edgeitems=3, linewidth=100):
            shown = "\n".join(f"  a{i}: {a.dtype}{list(a.shape)} = "
                              + np.array2string(a).replace("\n", "\n    ")
                              for i, a in enumerate(self.args))
        return f"{self.source}args:\n{shown}"


def numpy_programs(max_steps=6, dtypes=DTYPES):
    """A strategy of `NumpyProgram`s of 1 to `max_steps` lines, their arguments and
    conversions of `dtypes`."""
    @st.composite
    def draw(draw_fn):
        return _Builder(draw_fn, dtypes).program(max_steps)
    return draw()


def _unary_names(dt):
    if dt == bool:
        return _UNARY_BOOL
    return {"f": _UNARY_FLOAT, "c": _UNARY_COMPLEX}.get(dt.kind, _UNARY_INT)


class _Builder:
    def __init__(self, draw, dtypes=DTYPES):
        self.draw = draw
        self.dtypes = dtypes
        self.args, self.lines = [], []
        self.values = {}          # name -> eager value (args and lines)
        self.used = set()
        self.rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))

    # -- drawing

    def choice(self, seq):
        return self.draw(st.sampled_from(tuple(seq)))

    def integer(self, lo, hi):
        return self.draw(st.integers(lo, hi))

    def chance(self, percent):
        return self.integer(0, 99) < percent

    def shape(self, max_ndim=3):
        return tuple(self.choice(_DIMS) for _ in range(self.integer(0, max_ndim)))

    # -- values

    def arg(self, shape, dtype, lo=None, hi=None):
        """A new argument; with `lo`/`hi`, integers in [lo, hi] (indices)."""
        name = f"a{len(self.args)}"
        if lo is not None:
            value = self.rng.integers(lo, hi, shape, endpoint=True).astype(dtype)
        else:
            value = self._values(shape, dtype, self.choice(_FLAVOURS))
        self.args.append(value.copy())   # the call's input; `values` follows the writes
        self.values[name] = value
        return name

    def _values(self, shape, dtype, flavour):
        rng, n = self.rng, math.prod(shape)
        if dtype in _COMPLEX:   # each part of the flavour
            part = "float32" if dtype == "complex64" else "float64"
            value = np.empty(shape, dtype)
            value.real = self._values(shape, part, flavour)
            value.imag = self._values(shape, part, flavour if self.chance(50) else "normal")
            return value
        if dtype == "bool":
            return rng.random(shape) < 0.5
        if dtype not in _FLOATS:
            info = np.iinfo(dtype)
            if flavour in ("huge", "specials"):   # near the ends: overflow wraps
                picks = [info.min, info.max, 0, -1 if info.min else 1, info.max - 1]
                return rng.choice(np.array(picks, dtype=dtype), shape)
            return rng.integers(max(info.min, -9), min(info.max, 9), shape,
                                endpoint=True).astype(dtype)
        base = {"normal": rng.standard_normal(n) * 2,
                "halves": rng.integers(-6, 6, n, endpoint=True) / 2,
                "huge": rng.standard_normal(n) * _HUGE[dtype],
                "tiny": rng.standard_normal(n) * _TINY[dtype]}.get(flavour)
        if base is None:   # specials sprinkled among ordinary values
            specials = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 1.0])
            base = np.where(rng.random(n) < 0.4, rng.choice(specials, n),
                            rng.standard_normal(n))
        with np.errstate(over="ignore"):
            return base.astype(dtype).reshape(shape)

    def operand(self, accept=lambda v: True):
        """An earlier value that `accept`s, or a new argument."""
        names = [n for n, v in self.values.items() if accept(v)]
        made = [n for n in names if n.startswith("v")][-2:]
        if made and self.chance(50):   # chain: programs deeper than they are wide
            return self.choice(made)
        if names and self.chance(70):
            return self.choice(names)
        for _ in range(4):
            name = self.arg(self.shape(), self.choice(self.dtypes))
            if accept(self.values[name]):
                return name
        return None

    def partner(self, x):
        """A value broadcastable against `x`: earlier, new, or a Python scalar."""
        shape = self.values[x].shape
        kind = self.integer(0, 9)
        if kind < 3:
            return self.choice(_SCALARS)
        fits = [n for n, v in self.values.items() if _broadcasts(v.shape, shape)]
        if kind < 7 and fits:
            return self.choice(fits)
        dims = list(shape[self.integer(0, len(shape)):])   # trailing dims, some set to 1
        dims = [1 if self.chance(30) else d for d in dims]
        if self.chance(20):
            dims = [self.choice((1, 2))] + dims
        return self.arg(tuple(dims), self.choice(self.dtypes))

    # -- lines

    def program(self, max_steps):
        steps = self.integer(1, max_steps)
        loop_at = self.integer(0, steps - 1) if self.chance(LOOP_PERCENT) else None
        for n in range(steps):
            for _attempt in range(3):
                if self.step(loop=n == loop_at):
                    break
        if not self.lines:
            self.emit(f"np.negative({self.arg(self.shape(), 'float32')})")
        results = [n for n in self.values if n.startswith("v") and n not in self.used]
        params = ", ".join(f"a{i}" for i in range(len(self.args)))
        body = "".join(textwrap.indent(line, "    ") + "\n" for line in self.lines)
        ret = results[0] if len(results) == 1 and self.chance(50) else \
            "(" + ", ".join(results) + ",)"
        source = f"def f({params}):\n{body}    return {ret}\n"
        return NumpyProgram(source, self.args)

    def step(self, loop=False):
        if loop:
            return self._loop()
        kind = self.choice(("unary", "binary", "binary", "reduce", "reshape", "transpose",
                            "slice", "index", "take", "matmul", "where", "astype",
                            "concatenate", "cumsum", "clip", "write", "buffer"))
        if kind in ("write", "buffer"):
            return getattr(self, f"_{kind}")()
        expr = getattr(self, f"_{kind}")()
        return expr is not None and self.emit(expr)

    def statement(self, text):
        """Add the statement `text` (a write) if NumPy runs it without error."""
        env = {"np": np, "jnp": jnp, **self.values}
        try:
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("error", np.exceptions.ComplexWarning)
                warnings.simplefilter("ignore", RuntimeWarning)
                exec(text, env)   # noqa: S102 - our own text; writes into self.values' arrays
        except Exception:   # noqa: BLE001 - NumPy rejects it: not a program to test
            return False
        self.lines.append(text)
        return True

    def _write_value(self, target_dtype, shape):
        """A value NumPy writes into `shape` of `target_dtype` without an unsafe cast."""
        if self.chance(30):
            return self.choice(_SCALARS)
        fits = [n for n, v in self.values.items() if _broadcasts(v.shape, shape)
                and np.broadcast_shapes(v.shape, shape) == tuple(shape)
                and np.can_cast(v.dtype, target_dtype, "same_kind")]
        return self.choice(fits) if fits else self.choice(_SCALARS)

    def _write(self):
        """A write into an argument: a slice assigned, an in-place operator, np.copyto."""
        args = [n for n in self.values if n.startswith("a") and self.values[n].ndim >= 1]
        if not args:
            return False
        target = self.choice(args)
        v = self.values[target]
        kind = self.choice(("slice", "slice", "inplace", "copyto"))
        if kind == "slice":
            d = v.shape[0]
            start, stop = sorted((self.integer(0, d), self.integer(0, d)))
            step = self.choice(("", ":2", ":-1")) if stop > start else ""
            index = f"{start}:{stop}{step}" if step != ":-1" else f"{stop - 1 if stop else 0}::-1"
            shape = np.empty(v.shape)[eval(f"np.s_[{index}]")].shape   # noqa: S307
            return self.statement(f"{target}[{index}] = {self._write_value(v.dtype, shape)}")
        if kind == "inplace":
            op = self.choice(("+=", "*=", "-=")) if v.dtype != bool else "|="
            return self.statement(f"{target} {op} {self._write_value(v.dtype, v.shape)}")
        return self.statement(f"np.copyto({target}, {self._write_value(v.dtype, v.shape)})")

    def _buffer(self):
        """A buffer made inside (np.zeros / np.empty), filled through a slice, then read."""
        x = self.operand(lambda v: v.ndim >= 1 and v.dtype != bool)
        if x is None:
            return False
        v = self.values[x]
        rows = v.shape[0] + self.integer(0, 2)
        make = self.choice(("zeros", "empty"))
        if not self.emit(f"np.{make}(({rows},) + {x}.shape[1:], dtype={x}.dtype)"):
            return False
        buf = f"v{len(self.lines) - 1}"
        if make == "empty" and not self.statement(f"{buf}[...] = 0"):
            return False   # NumPy's empty holds garbage: fill it before any read
        return self.statement(f"{buf}[:{v.shape[0]}] = {x}")

    def emit(self, expr):
        """Add `v = expr` if NumPy evaluates it without error; whether it was added."""
        env = {"np": np, "jnp": jnp, **self.values}
        try:
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)   # the mean of an empty slice
                value = np.asarray(eval(expr, env))   # noqa: S307 - our own text
        except Exception:   # noqa: BLE001 - NumPy rejects it: not a program to test
            return False
        if value.dtype == object:
            return False
        name = f"v{len(self.lines)}"
        self.lines.append(f"{name} = {expr}")
        self.used.update(n for n in self.values if _mentions(expr, n))
        self.values[name] = value
        return True

    # -- loops

    def _loop(self):
        """One loop over a carried value: jnp.fori_loop or a plain Python for."""
        x = self.operand()
        if x is None:
            return False
        trips = self.integer(1, 4)
        if self.chance(50):
            body = self._loop_body(x, "c", keep_type=True)
            return body is not None and self.emit(
                f"jnp.fori_loop(0, {trips}, lambda i, c: {body}, {x})")
        name = f"v{len(self.lines)}"
        body = self._loop_body(x, name, keep_type=False)
        if body is None:
            return False
        return self._block(name, f"{name} = {x}\nfor i in range({trips}):\n    {name} = {body}",
                           mentions=body + " " + x)

    def _loop_body(self, x, carry, keep_type):
        """An expression of `carry` (standing for x's value) and the counter `i`, one or
        two steps deep; with `keep_type`, of x's shape and dtype; None if none was found."""
        value = self.values[x]
        # now and then a body that recomputes from the closed-over value and drops the
        # carry (the fusion cycle in tests/test_control_flow_regressions.py needs one)
        start = x if keep_type and self.chance(15) else carry
        for _attempt in range(4):
            expr = start
            for _ in range(self.integer(1, 2)):
                expr = self._carry_step(expr, value)
            env = {"np": np, "jnp": jnp, **self.values, carry: value, "i": 0}
            try:
                with np.errstate(all="ignore"), warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)
                    out = np.asarray(eval(expr, env))   # noqa: S307 - our own text
            except Exception:   # noqa: BLE001 - NumPy rejects it: draw another
                continue
            if out.shape != value.shape or out.dtype == object:
                continue
            if not keep_type or out.dtype == value.dtype:
                return expr
            if _kind(out.dtype) == _kind(value.dtype):   # never float -> int: NaN has no int
                return f"({expr}).astype(np.{value.dtype})"
        return None

    def _carry_step(self, c, value):
        """One step on the carry expression `c` (whose first trip's value is `value`)."""
        dt, nd = value.dtype, value.ndim
        kind = self.choice(("unary", "binary", "binary", "counter", "where", "centre",
                            "rotate", "cumsum"))
        if kind == "unary":
            fns = _unary_names(dt)
            return f"np.{self.choice(fns)}({c})"
        if kind == "counter" and dt != bool:
            return f"{c} {self.choice(('+', '*', '-'))} {self.choice(('i', '(i + 1)', '0.5 * i'))}"
        if kind == "where":
            return f"np.where({c} > 0, {c}, {self.partner_of(value)})"
        if kind == "centre" and nd >= 1 and dt.kind == "f":
            return f"{c} - {c}.mean(axis={self.integer(-nd, nd - 1)}, keepdims=True)"
        if kind == "rotate" and nd >= 1 and value.shape[0] > 0:
            return f"np.concatenate([{c}[1:], {c}[:1]])"
        if kind == "cumsum" and nd >= 1 and dt != bool:
            return f"np.cumsum({c}, axis={self.integer(0, nd - 1)})"
        fns = list(_BINARY_ANY) + (list(_BINARY_BOOL) if dt == bool else list(_BINARY_NUM))
        fn = self.choice(fns)
        other = self.partner_of(value)
        return f"np.{fn}({c}, {other})" if self.chance(50) else f"np.{fn}({other}, {c})"

    def partner_of(self, value):
        """`partner` for a value that has no name yet (a loop's carry)."""
        self.values["_carry"] = value
        try:
            other = self.partner("_carry")
        finally:
            del self.values["_carry"]
        return other if other != "_carry" else self.choice(_SCALARS)

    def _block(self, name, text, mentions):
        """Add the statements `text`, which bind `name`, if NumPy runs them."""
        env = {"np": np, "jnp": jnp, **self.values}
        try:
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("error", np.exceptions.ComplexWarning)
                warnings.simplefilter("ignore", RuntimeWarning)
                exec(text, env)   # noqa: S102 - our own text
            value = np.asarray(env[name])
        except Exception:   # noqa: BLE001 - NumPy rejects it: not a program to test
            return False
        if value.dtype == object:
            return False
        self.lines.append(text)
        self.used.update(n for n in self.values if _mentions(mentions, n))
        self.values[name] = value
        return True

    def _unary(self):
        x = self.operand()
        dt = self.values[x].dtype
        return f"np.{self.choice(_unary_names(dt))}({x})"

    def _binary(self):
        x = self.operand()
        y = self.partner(x)
        dt = self.values[x].dtype
        fns = list(_BINARY_ANY)
        if dt == bool:
            fns += _BINARY_BOOL
        else:
            fns += _BINARY_NUM
            fns += {"f": _BINARY_FLOAT, "c": ("power",)}.get(dt.kind, _BINARY_INT)
        fn = self.choice(fns)
        if self.chance(50):
            x, y = y, x
        if fn in _OPERATORS and self.chance(50):
            return f"{x} {_OPERATORS[fn]} {y}"
        return f"np.{fn}({x}, {y})"

    def _axis(self, ndim, many=True):
        if ndim == 0 or self.chance(25):
            return "None"
        if many and self.chance(30):
            axes = sorted({self.integer(-ndim, ndim - 1) % ndim for _ in range(2)})
            return "(" + ", ".join(map(str, axes)) + ",)"
        return str(self.integer(-ndim, ndim - 1))

    def _reduce(self):
        x = self.operand()
        fn = self.choice(_REDUCTIONS)
        ndim = self.values[x].ndim
        axis = self._axis(ndim, many=fn not in ("argmax", "argmin"))
        keep = ", keepdims=True" if self.chance(30) else ""
        return f"np.{fn}({x}, axis={axis}{keep})"

    def _reshape(self):
        x = self.operand()
        shape = _factor(self.values[x].size, self)
        if shape and self.chance(30):
            shape[self.integer(0, len(shape) - 1)] = -1
        return f"{x}.reshape({tuple(shape)})"

    def _transpose(self):
        x = self.operand(lambda v: v.ndim >= 2)
        if x is None:
            return None
        ndim = self.values[x].ndim
        if self.chance(30):
            return f"{x}.T"
        perm = self.draw(st.permutations(range(ndim)))
        return f"np.transpose({x}, {tuple(perm)})"

    def _slice(self):
        x = self.operand(lambda v: v.ndim >= 1)
        if x is None:
            return None
        parts = []
        for d in self.values[x].shape:
            start = self.integer(-d - 1, d + 1) if self.chance(50) else ""
            stop = self.integer(-d - 1, d + 1) if self.chance(50) else ""
            step = self.choice(("", "", "2", "-1", "-2", "3"))
            parts.append(f"{start}:{stop}" + (f":{step}" if step else ""))
        if self.chance(30):
            parts.insert(self.integer(0, len(parts)), "None")
        if self.chance(20) and parts:
            parts[0] = "..."
        return f"{x}[{', '.join(parts)}]"

    def _index(self):
        x = self.operand(lambda v: v.ndim >= 1 and v.shape[0] > 0)
        if x is None:
            return None
        d = self.values[x].shape[0]
        return f"{x}[{self.integer(-d, d - 1)}]"

    def _take(self):
        x = self.operand(lambda v: v.ndim >= 1 and 0 not in v.shape)
        if x is None:
            return None
        d = self.values[x].shape[0]
        idx = self.arg(self.shape(max_ndim=2), self.choice(("int32", "int64")), -d, d - 1)
        return f"{x}[{idx}]"

    def _matmul(self):
        x = self.operand(lambda v: v.ndim >= 1 and v.dtype != bool)
        if x is None:
            return None
        xs = self.values[x].shape
        k = xs[-1]
        if self.values[x].ndim == 1 or self.chance(40):
            yshape = (k,) if self.chance(30) else (k, self.choice(_DIMS))
        else:
            yshape = xs[:-2] + (k, self.choice(_DIMS))
        fits = [n for n, v in self.values.items() if v.shape == yshape and v.dtype != bool]
        y = self.choice(fits) if fits and self.chance(50) else self.arg(
            yshape, self.choice(("float32", "float64", "int32", "float16")))
        return f"{x} @ {y}"

    def _where(self):
        x = self.operand()
        cond = self.operand(lambda v: v.dtype == bool and _broadcasts(v.shape,
                                                                     self.values[x].shape))
        if cond is None:
            cond = f"{x} > 0"
        return f"np.where({cond}, {x}, {self.partner(x)})"

    def _astype(self):
        x = self.operand()
        target = self.choice(self.dtypes)
        v = self.values[x]
        if v.dtype.kind == "c" and target not in _COMPLEX:
            x = f"{x}.real"   # NumPy drops the imaginary part, with a warning
            v = v.real
        if v.dtype.kind == "f" and target not in _FLOATS and target != "bool":
            # float -> int of NaN, inf or out of range is undefined in C; NumPy just warns
            low = 0 if target.startswith("u") else -100
            x = f"np.clip(np.where(np.isnan({x}), 0, {x}), {low}, 100)"
        return f"{x}.astype(np.{target})"

    def _concatenate(self):
        x = self.operand(lambda v: v.ndim >= 1)
        if x is None:
            return None
        v = self.values[x]
        axis = self.integer(0, v.ndim - 1)
        shape = list(v.shape)
        shape[axis] = self.choice(_DIMS)
        fits = [n for n, w in self.values.items() if list(w.shape) == shape]
        y = self.choice(fits) if fits and self.chance(50) else self.arg(tuple(shape),
                                                                        self.choice(self.dtypes))
        return f"np.concatenate([{x}, {y}], axis={axis})"

    def _cumsum(self):
        x = self.operand(lambda v: v.ndim >= 1)
        if x is None:
            return None
        fn = self.choice(("cumsum", "cumprod"))
        return f"np.{fn}({x}, axis={self.integer(0, self.values[x].ndim - 1)})"

    def _clip(self):
        x = self.operand(lambda v: v.dtype != bool)
        return f"np.clip({x}, {self.choice(('-1', '0', '-2.5'))}, {self.choice(('1', '3'))})"


def _kind(dtype):
    return "b" if dtype == bool else dtype.kind if dtype.kind in "fc" else "i"


def _broadcasts(a, b):
    try:
        np.broadcast_shapes(a, b)
        return True
    except ValueError:
        return False


def _mentions(expr, name):
    import re
    return re.search(rf"\b{name}\b", expr) is not None


def _factor(size, builder):
    if size == 0:
        return [builder.choice((0, 2)), 0] if builder.chance(50) else [0]
    dims = []
    n, p = size, 2
    while n > 1:
        while n % p == 0:
            if dims and builder.chance(50):
                dims[-1] *= p
            else:
                dims.append(p)
            n //= p
        p += 1
    if builder.chance(30):
        dims.insert(builder.integer(0, len(dims)), 1)
    return dims
