"""The check mode: run a reference beside the compiled program and report how far apart.

    f = jitlib.jit(fn, check="numpy", check_rate=0.1, check_raise=False)

`check` names the reference: "numpy" (`fn` run eagerly), "interpreter" (the traced
program on the reference interpreter) or "jax" (the traced program on the JAX backend).
`check_rate` is the fraction of calls checked, spread evenly and starting with the first
(1.0: every call). Each check makes a `CheckReport`, kept as `f.last_check`: per output,
the largest error in ulps and in relative terms, and whether it is within
`jitlib.testing.tolerance` for its dtype (exact for integers and bools; NaNs must sit in
the same places). A report within tolerance is logged at DEBUG on the "jitlib" logger.

A mismatch is a `CheckWarning` (a UserWarning), or with `check_raise=True` a
`jitlib.errors.CheckError`; either way its text names the culprit found by `bisect`:

  1. the traced program on the interpreter differs already: the tracer (or the
     reference) is at fault, no optimizer or backend is involved;
  2. the optimized program on the interpreter differs: the optimizer is rerun with each
     rewrite rule, then each pass, turned off in turn (`Options.disabled`); the first one
     whose absence restores the answer is named;
  3. else the backend's code for a kernel is wrong: each kernel of the optimized program
     runs alone, on the backend and on the interpreter, on the values that reach it
     (inside a loop, trip by trip; inside a conditional, the branch taken); the first
     that disagrees is named with the user lines it covers (`kernel_summary`).

Checking costs a reference run per checked call (a trace too), and a bisection on a
mismatch; calls of a jit without `check` take the usual path and pay nothing.
"""
from __future__ import annotations

import copy
import dataclasses
import logging
import math
import warnings

import numpy as np

from jitlib import tree
from jitlib.api import Jitted
from jitlib.errors import CheckError
from jitlib.hlo import dtypes
from jitlib.testing import tolerance
from jitlib.trace.context import current_trace

log = logging.getLogger("jitlib")

REFERENCES = ("numpy", "interpreter", "jax")


class CheckWarning(UserWarning):
    """A checked call's result differs from the reference beyond tolerance."""


@dataclasses.dataclass(frozen=True)
class OutputError:
    """How far one output is from the reference."""
    path: str
    type: str
    max_ulps: float
    max_rel: float
    nan_mismatches: int
    ok: bool

    def __str__(self):
        verdict = "ok" if self.ok else "MISMATCH"
        nans = f", NaN in {self.nan_mismatches} other places" if self.nan_mismatches else ""
        return (f"output {self.path}: {self.type} max {self.max_ulps:g} ulp, "
                f"rel {self.max_rel:.3g}{nans}: {verdict}")


@dataclasses.dataclass
class CheckReport:
    function: str
    reference: str
    backend: str
    outputs: list
    culprit: str | None = None

    @property
    def ok(self):
        return all(o.ok for o in self.outputs)

    def __str__(self):
        lines = [f"check of {self.function} on {self.backend} against {self.reference}:"]
        lines += [f"  {o}" for o in self.outputs]
        if self.culprit:
            lines.append(f"  culprit: {self.culprit}")
        return "\n".join(lines)


class CheckedJitted(Jitted):
    """A `Jitted` that checks a fraction of its calls against a reference."""

    def __init__(self, fn, *, check, check_rate=1.0, check_raise=False, **options):
        if check not in REFERENCES:
            raise ValueError(f"check must be one of {', '.join(REFERENCES)}, got {check!r}")
        if not 0.0 <= check_rate <= 1.0:
            raise ValueError(f"check_rate must be in [0, 1], got {check_rate!r}")
        super().__init__(fn, **options)
        self.check, self.check_rate, self.check_raise = check, check_rate, check_raise
        self._calls = 0
        self._modules = {}      # signature -> its traced module (traced once more)
        self._references = {}   # traced module -> its compiled jax reference
        self.last_check = None

    def __call__(self, *args, **kwargs):
        if current_trace() is not None:
            return self.fn(*args, **kwargs)
        n, rate = self._calls, self.check_rate
        self._calls += 1
        # call n is checked when it takes ceil(n * rate) to the next integer: the first
        # call, then one in every 1/rate, spread evenly
        if math.ceil(n * rate) == math.ceil((n + 1) * rate):
            return super().__call__(*args, **kwargs)
        # the reference runs on the arguments as they were: the call may write into them
        before = copy.deepcopy((args, kwargs))
        out = super().__call__(*args, **kwargs)
        self.last_check = self._check(*before, out)
        return out

    def _check(self, args, kwargs, out):
        key, _, flat = self._key(self._bind(args, kwargs))
        arrays = [np.asarray(x, dtype=leaf[1]) for x, leaf in zip(flat, key.leaves)]
        module = self._modules.get(key)
        if module is None:
            module = self._modules[key] = self.lower(*args, **kwargs).module
        if module.effects is not None:
            arrays += module.effects.call_inputs()   # globals read at call time
        expected = self._reference(module, arrays, args, kwargs)
        actual = tree.leaves(out)
        # the compiled program's results past the function's own are argument writes
        expected = expected[:len(actual)] if module.writes else expected
        paths = _paths(len(actual))
        report = CheckReport(self.__name__, self.check, key.backend,
                             [measure(p, a, e) for p, a, e in zip(paths, actual, expected)])
        if len(expected) != len(actual):
            report.culprit = (f"the reference returned {len(expected)} outputs, the "
                              f"compiled program {len(actual)}")
        elif not report.ok:
            report.culprit = bisect(module, arrays, expected, key.backend)
        if report.ok and report.culprit is None:
            log.debug("%s", report)
        elif self.check_raise:
            raise CheckError(str(report),
                             hint="run with check_raise=False to get a warning instead; "
                                  "jitlib.jit(..., backend='interpreter') avoids the "
                                  "optimizer and the compiled backends")
        else:
            warnings.warn(str(report), CheckWarning, stacklevel=3)
        return report

    def _reference(self, module, arrays, args, kwargs):
        if self.check == "numpy":
            with np.errstate(all="ignore"):
                result = self.fn(*copy.deepcopy(args), **copy.deepcopy(kwargs))
            return [np.asarray(x) for x in tree.leaves(result)]
        if self.check == "interpreter":
            from jitlib.hlo.interpreter import evaluate
            return evaluate(module, arrays)
        if module not in self._references:
            from jitlib.backends import get_backend
            self._references[module] = get_backend("jax").compile(module)
        return self._references[module](*arrays)


def _paths(n):
    return ["[0]"] if n == 1 else [f"[{i}]" for i in range(n)]


# -- measuring

def measure(path, actual, expected):
    """An `OutputError` for one output against its reference."""
    a, e = np.asarray(actual), np.asarray(expected)
    type_ = _type(a)
    if a.dtype != e.dtype or a.shape != e.shape:
        return OutputError(path, f"{type_} (reference {_type(e)})", np.inf, np.inf, 0, False)
    if dtypes.is_complex(e.dtype):
        return _measure_complex(path, type_, a, e)
    if not dtypes.is_float(e.dtype):
        wrong = int(np.sum(a != e))
        return OutputError(path, type_, np.inf if wrong else 0.0, np.inf if wrong else 0.0,
                           0, wrong == 0)
    a64, e64 = a.astype(np.float64), e.astype(np.float64)
    nan_mismatch = np.isnan(a64) != np.isnan(e64)
    both = ~np.isnan(a64) & ~np.isnan(e64)
    ulps = ulp_distance(a, e)[both]
    with np.errstate(all="ignore"):
        err = np.abs(a64 - e64)[both]
        rel = np.where(err == 0, 0.0, err / np.abs(e64[both]))
    rtol, atol = tolerance(e.dtype)
    with np.errstate(invalid="ignore"):
        close = (err <= atol + rtol * np.abs(e64[both])) | (a64[both] == e64[both])
    return OutputError(path, type_, float(ulps.max(initial=0.0)), float(rel.max(initial=0.0)),
                       int(nan_mismatch.sum()), bool(close.all() and not nan_mismatch.any()))


def _measure_complex(path, type_, a, e):
    """Each part measured as a float; close where |a - e| is within the tolerance of |e|
    (a part may cancel far below the value's magnitude)."""
    parts = [measure(path, x, y) for x, y in ((a.real, e.real), (a.imag, e.imag))]
    rtol, atol = tolerance(e.dtype)
    finite = np.isfinite(a) & np.isfinite(e)
    with np.errstate(all="ignore"):
        close = np.abs(a[finite] - e[finite]) <= atol + rtol * np.abs(e[finite])
    ok = bool(close.all()) and all(p.nan_mismatches == 0 for p in parts) and bool(
        np.array_equal(a[~finite], e[~finite], equal_nan=True))
    return OutputError(path, type_, max(p.max_ulps for p in parts),
                       max(p.max_rel for p in parts),
                       sum(p.nan_mismatches for p in parts), ok)


def ulp_distance(a, b):
    """Elementwise distance in units in the last place between two float arrays of one
    dtype: how many representable values lie between them (0 for -0.0 and 0.0)."""
    bits = f"i{a.dtype.itemsize}"
    def ordered(x):
        i = np.ascontiguousarray(x).view(bits).astype(np.float64)
        return np.where(i < 0, -(i + 2.0 ** (8 * x.dtype.itemsize - 1)), i)
    return np.abs(ordered(a) - ordered(b))


def _type(array):
    """`f32[8,16]`, as the IR prints types."""
    name = dtypes.name(array.dtype) if dtypes.is_supported(array.dtype) else str(array.dtype)
    return f"{name}[{','.join(map(str, array.shape))}]"


def _agrees(results, expected):
    return len(results) == len(expected) and all(
        measure("", a, e).ok for a, e in zip(results, expected))


# -- bisecting

def bisect(module, inputs, expected, backend):
    """Name what changed the answer of `module` on `inputs` away from `expected`."""
    from jitlib.fusion import optimize
    from jitlib.fusion.options import Options
    from jitlib.hlo.interpreter import evaluate

    if not _agrees(evaluate(module, inputs), expected):
        return ("the traced program already differs on the interpreter: the tracer, or the "
                "reference, is at fault, not the optimizer or the backend")
    if backend in ("interpreter", "jax"):   # these run the traced program unoptimized
        return f"the {backend} backend itself (it runs the traced program as is)"
    optimized = optimize(module)
    if not _agrees(evaluate(optimized, inputs), expected):
        for name in _optimizer_parts():
            variant = optimize(module, Options(disabled={name}))
            if variant.results == optimized.results:
                continue   # this rule or pass changed nothing here
            if _agrees(evaluate(variant, inputs), expected):
                return f"the optimizer: with {name!r} turned off the answer is right"
        return "the optimizer, but turning off no single rewrite rule or pass fixes it"
    kernel = _wrong_kernel(optimized, inputs, backend)
    if kernel is not None:
        from jitlib.fusion.fuse import kernel_summary
        return f"the {backend} backend's code for {kernel_summary(kernel)}"
    return f"the {backend} backend, though every kernel alone agrees with the interpreter"


def _optimizer_parts():
    """Rewrite rules first (the narrowest), then whole passes."""
    from jitlib.fusion.pipeline import BY_NAME
    from jitlib.fusion.simplify import ALGEBRAIC, FOLD
    return list(dict.fromkeys(ALGEBRAIC.names() + FOLD.names() + list(BY_NAME) + ["fuse"]))


# a loop's kernels are checked trip by trip for at most this many trips
MAX_TRIPS_CHECKED = 64


def _wrong_kernel(optimized, inputs, backend, compiled=None):
    """The first kernel of `optimized` whose code on `backend` disagrees with the
    interpreter on the values that reach it, or None. Kernels inside a loop's or a
    conditional's regions are checked on the values that reach them there."""
    from jitlib.backends import get_backend
    from jitlib.hlo import ops as O
    from jitlib.hlo.interpreter import evaluate
    from jitlib.hlo.ir import Module, is_multi_output
    from jitlib.hlo.ops import Op

    compiled = {} if compiled is None else compiled   # kernel -> executable, across trips
    values = [i for i in optimized.instructions if not is_multi_output(i)]
    env = dict(zip(values, evaluate(Module("all", optimized.params, values), inputs)))
    for kernel in optimized.instructions:
        if kernel.op in O.CONTROL:
            found = _wrong_in_regions(kernel, [env[o] for o in kernel.operands], backend,
                                      compiled)
            if found is not None:
                return found
        if kernel.op is not Op.FUSION:
            continue
        body = kernel.attrs["body"]
        operands = [env[o] for o in kernel.operands]
        if kernel not in compiled:
            compiled[kernel] = get_backend(backend).compile(body)
        if not _agrees(compiled[kernel](*operands), evaluate(body, operands)):
            return kernel
    return None


def _wrong_in_regions(instr, operands, backend, compiled):
    """`_wrong_kernel` over the regions a loop or conditional runs on `operands`: the
    branch taken; the condition and body of each trip, up to MAX_TRIPS_CHECKED."""
    from jitlib.hlo.interpreter import evaluate
    from jitlib.hlo.ops import Op

    if instr.op is Op.CONDITIONAL:
        branches = instr.attrs["branches"]
        k = min(max(int(operands[0]), 0), len(branches) - 1)
        return _wrong_kernel(branches[k], operands[1:], backend, compiled)
    cond, body = instr.attrs["cond"], instr.attrs["body"]
    trips = instr.attrs.get("trip_count")
    carry = list(operands)
    for trip in range(MAX_TRIPS_CHECKED):
        if trips is not None:
            if trip >= trips:
                break
        else:
            found = _wrong_kernel(cond, carry, backend, compiled)
            if found is not None:
                return found
            if not bool(evaluate(cond, carry)[0]):
                break
        found = _wrong_kernel(body, carry, backend, compiled)
        if found is not None:
            return found
        carry = list(evaluate(body, carry))
    return None
