"""The one differential oracle every fuzz generator, the CI run and the long run share.

`check_program(module, inputs)` runs `module` on the reference interpreter and on every
variant, and raises `Mismatch` (an AssertionError that shows the module as IR text and
its inputs) at the first disagreement:

    optimized   the interpreter on `jitlib.fusion.optimize(module)`: the optimizer alone
    jax         the JAX backend (the oracle backend)
    cpu         the LLVM backend (it optimizes, then compiles each kernel)
    gpu         the Triton backend, where it is registered and a CUDA GPU is visible

`extra` adds results computed elsewhere (eager NumPy, for a traced program) to compare
with the interpreter the same way. What "agree" means per result comes from
`exactness`: bitwise for exact results (any NaN equals any NaN), a per-dtype tolerance
for approximate floats with NaNs and infinities in the same places, only the type for
results an approximate value reaches through a jump.

Known differences that are no bug, and how they are handled:
- XLA on the CPU flushes subnormal f32/f64/bf16 values to zero: when any value the
  interpreter computes is subnormal, the jax variant is skipped for that program.
- A backend may refuse a program with `jitlib.errors.UnsupportedError`: that is
  recorded as a skip with its reason, not a failure. Any other exception is a failure.
- An approximate op may round either way (one ulp is each implementation's freedom),
  and some programs amplify that past any tolerance at some inputs (sin of exp(exp(x)):
  one ulp of exp(2.5) moves exp(exp(2.5)) by 12 ulps, then sin by 3%). The interpreter
  runs again with every approximate op's result one ulp up, then one ulp down; the
  elements of an approximate result that either run moves beyond the tolerance are
  ill-conditioned there, and are not compared (`_ill_conditioned`). So are those a
  third run moves, with every sum and dot over its terms in reverse order: a sum that
  cancels (f64 terms of +-9.2e18 and 1) has no answer any order must reproduce. And so
  are those a fourth run moves, with float16/bfloat16 sums and products accumulated in
  float32 as the compiled backends do, where NumPy rounds every partial sum.
"""
import dataclasses
import re
import traceback

import numpy as np

from jitlib import backends
from jitlib.errors import UnsupportedError
from jitlib.hlo import dtypes
from jitlib.hlo import ops as O
from jitlib.hlo.interpreter import eval_rules, evaluate
from jitlib.hlo.ir import Module, is_multi_output
from jitlib.hlo.ops import Op
from jitlib.hlo.printer import print_module

from . import exactness as X

# (rtol, atol) for approximate float results after a few chained steps: looser than
# jitlib.testing.TOLERANCES, which is for one step.
APPROX_TOLERANCE = {
    np.dtype(np.float16): (1e-2, 1e-2),
    dtypes.bfloat16: (5e-2, 5e-2),
    np.dtype(np.float32): (1e-4, 1e-5),
    np.dtype(np.float64): (1e-9, 1e-12),
}
# Dtypes XLA's CPU code flushes to zero when subnormal.
_FLUSHED = {np.dtype(np.float32), np.dtype(np.float64), dtypes.bfloat16}


def default_variants():
    """The variants this machine can run: optimized, jax, cpu, and gpu where possible."""
    names = ["optimized"]
    available = backends.available_backends()
    names += [b for b in ("jax", "cpu") if b in available]
    if "gpu" in available and backends.default_backend_name() == "gpu":
        names.append("gpu")
    return tuple(names)


class Mismatch(AssertionError):
    """A variant disagreed with the reference (or crashed) on a program."""

    def __init__(self, variant, what, module, inputs, program=None):
        self.variant, self.what, self.module, self.inputs = variant, what, module, inputs
        self.program = program   # the NumPy program, for a failure found at that level
        shown = describe(module, inputs) if program is None else f"NumPy program:\n{program}"
        super().__init__(f"{variant}: {what}\n{shown}")

    @property
    def signature(self):
        """What kind of failure this is, for telling findings apart: the variant and the
        first line of what went wrong (with a compiler's `error:` line, if it printed
        one), without numbers, places or values."""
        lines = self.what.splitlines()
        kept = [lines[0].split(";")[0]]
        kept += [line.strip() for line in lines[1:4] if "error:" in line][:1]
        text = re.sub(r"<[^>]*>(:\d+)*( in \w+)?:? ?", "", " / ".join(kept))
        return f"{self.variant}: {re.sub(r'[0-9]+', 'N', text)}"


@dataclasses.dataclass
class Verdict:
    """What ran: the variants compared, and those skipped with why."""
    compared: list = dataclasses.field(default_factory=list)
    skipped: dict = dataclasses.field(default_factory=dict)


def check_program(module, inputs, variants=None, extra=None):
    """Raise `Mismatch` unless every variant agrees with the interpreter on `module`.

    `extra` maps a name to results computed elsewhere, compared the same way.
    Returns a `Verdict`.
    """
    variants = default_variants() if variants is None else tuple(variants)
    inputs = [np.asarray(x) for x in inputs]
    verdict = Verdict()
    want = _run("interpreter", lambda: evaluate(module, inputs), module, inputs)
    classes = X.result_classes(module)
    free_sign = X.order_free_zero_sign(module)
    fused_sums = X.accumulates(module)
    results = dict(extra or {})
    for name in variants:
        if name == "jax" and has_subnormals(module, inputs):
            verdict.skipped[name] = "a value is subnormal; XLA on the CPU flushes it"
            continue
        if name == "gpu" and _gpu_interpreted() and _computes_bf16(module):
            verdict.skipped[name] = ("bf16 on Triton's interpreter, which truncates f32 to "
                                     "bf16 (the GPU rounds to nearest)")
            continue
        try:
            results[name] = _run(name, lambda: run_variant(name, module, inputs),
                                 module, inputs)
        except _Refused as why:
            verdict.skipped[name] = str(why)
        except Mismatch as crash:
            why = _interpreter_only(name, crash, module)
            if why is None:
                raise
            verdict.skipped[name] = why
    working = _working_tolerance(module)
    loose = _ill_conditioned(module, inputs, want, classes, working) if results else None
    for name, got in results.items():
        _compare_all(name, got, want, classes, free_sign, fused_sums, module, inputs, working,
                     loose)
        verdict.compared.append(name)
    return verdict


def _ill_conditioned(module, inputs, want, classes, working):
    """Per result, the elements that one ulp of an approximate op upstream, or another
    order of a sum's terms, moves beyond the tolerance (on the interpreter: each op's
    result nudged up, then down; then sums and dots reversed)."""
    masks = [np.zeros(np.shape(w), bool) for w in want]
    if X.APPROX not in classes:
        return masks
    complex_ops = [op for op in O.ELEMENTWISE | O.REDUCE | {Op.FFT}
                   if op not in X.APPROXIMATE_OPS and op not in X.COMPLEX_EXACT_OPS
                   and op in eval_rules]
    for change in (np.inf, -np.inf, "reversed", "widened"):
        saved = {op: eval_rules[op] for op in (*X.APPROXIMATE_OPS, *complex_ops)}
        for op, rule in saved.items():
            if op not in X.APPROXIMATE_OPS:   # complex math beyond the parts' IEEE steps
                eval_rules[op] = (_nudged(rule, change, complex_only=True)
                                  if change in (np.inf, -np.inf) else rule)
                continue
            eval_rules[op] = (_reversed(op, rule) if change == "reversed"
                              else _widened(op, rule) if change == "widened"
                              else _nudged(rule, change))
        try:
            moved = evaluate(module, inputs)
        except Exception:   # noqa: BLE001 - no evidence of ill-conditioning, then
            return masks
        finally:
            eval_rules.update(saved)
        for mask, m, w, cls in zip(masks, moved, want, classes):
            if cls == X.APPROX and (dtypes.is_float(w.dtype) or dtypes.is_complex(w.dtype)):
                mask |= compare_mask(np.asarray(m), w, at_least=working)
    return masks


def _reversed(op, rule):
    """A sum or a product over its terms in reverse order (an order is each backend's
    freedom: a sum that cancels can differ by far more than its tolerance)."""
    if op in (Op.REDUCE_SUM, Op.REDUCE_PROD):
        return lambda instr, x: rule(instr, np.flip(x, instr.attrs["dims"]))
    if op is Op.DOT_GENERAL:
        return lambda instr, a, b: rule(instr, np.flip(a, instr.attrs["lhs_contract"]),
                                        np.flip(b, instr.attrs["rhs_contract"]))
    return rule


def _widened(op, rule):
    """A float16 or bfloat16 sum or product accumulated in float32 and rounded once, as
    the compiled backends compute it (docs/cpu_reductions.md). NumPy rounds each partial
    sum to the type: 88 terms of 3.5 in bfloat16 sum to 334 there, and to 308 here."""
    if op not in (Op.REDUCE_SUM, Op.REDUCE_PROD):
        return rule

    def widened(instr, x):
        if x.dtype not in _HALF:
            return rule(instr, x)
        return np.asarray(rule(instr, x.astype(np.float32))).astype(x.dtype)
    return widened


_HALF = (np.dtype(np.float16), dtypes.bfloat16)


def _nudged(rule, direction, complex_only=False):
    def nudged(instr, *xs):
        out = rule(instr, *xs)
        if complex_only and not dtypes.is_complex(np.asarray(out).dtype):
            return out
        out = np.asarray(out)
        if dtypes.is_complex(out.dtype):   # each part an ulp
            step = np.asarray(direction, dtypes.part_type(out.dtype))
            moved = np.empty_like(out)
            moved.real, moved.imag = np.nextafter(out.real, step), np.nextafter(out.imag, step)
            return moved
        if not dtypes.is_float(out.dtype):
            return out
        if out.dtype == dtypes.bfloat16:   # no nextafter: 1.5 ulp of the type's epsilon
            step = 1.5 * float(dtypes.finfo(out.dtype).eps) * (1 if direction > 0 else -1)
            return (out.astype(np.float64) * (1 + step)).astype(out.dtype)
        return np.nextafter(out, np.asarray(direction, out.dtype))
    return nudged


def _gpu_interpreted():
    device = getattr(backends.get_backend("gpu"), "device", None)
    return bool(getattr(device, "interpreted", False))


def _interpreter_only(name, crash, module):
    """Why a gpu crash under Triton's interpreter is its own (its NumPy emulation fails on
    some 0-d bool values), not the kernel's: every kernel still compiles for sm_90. None
    when it is a finding."""
    if name != "gpu" or not _gpu_interpreted() or not crash.what.startswith(
            "raised InterpreterError"):
        return None
    from jitlib.backends.triton import compiler, kernels
    from jitlib.fusion import optimize
    for fusion in optimize(module).instructions:
        if fusion.op is Op.FUSION:
            try:
                compiler.compile_for(kernels.render(fusion))
            except kernels.Unsupported:
                pass
            except Exception:   # noqa: BLE001 - the kernel is broken: a finding
                return None
    return "Triton's interpreter failed where every kernel compiles for sm_90"


def _computes_bf16(module):
    return any(i.dtype == dtypes.bfloat16 or any(_computes_bf16(r) for r in X.regions(i))
               for i in module.instructions)


def run_variant(name, module, inputs):
    """`module`'s results under variant `name`."""
    if name == "optimized":
        from jitlib.fusion import optimize
        return evaluate(optimize(module), inputs)
    return backends.get_backend(name).compile(module)(*inputs)


class _Refused(Exception):
    pass


def _run(name, thunk, module, inputs):
    try:
        return list(thunk())
    except UnsupportedError as e:
        if name == "interpreter":
            raise
        raise _Refused(f"unsupported: {e.message}") from None
    except Exception as e:   # noqa: BLE001 - a crash on a valid program is a finding
        frames = traceback.format_exception(e, limit=-3)
        raise Mismatch(name, f"raised {type(e).__name__}: {e}\n{''.join(frames)}",
                       module, inputs) from e


def _working_tolerance(module):
    """The loosest approximate tolerance of the float types `module` computes in: an f64
    result of f32 work carries f32 rounding (a GPU's f32 sums in another order differ from
    NumPy's by an f32 ulp, which survives the widening)."""
    computed = set()

    def walk(m):
        for i in m.instructions:
            if X.regions(i):
                for r in X.regions(i):
                    walk(r)
            elif i.op not in (Op.PARAMETER, Op.CONVERT) and dtypes.is_float(i.dtype):
                computed.add(np.dtype(i.dtype))
    walk(module)
    tols = [APPROX_TOLERANCE[d] for d in computed if d in APPROX_TOLERANCE]
    return (max(t[0] for t in tols), max(t[1] for t in tols)) if tols else None


def _compare_all(name, got, want, classes, free_sign, fused_sums, module, inputs,
                 working=None, loose=None):
    if len(got) != len(want):
        raise Mismatch(name, f"returned {len(got)} results, expected {len(want)}",
                       module, inputs)
    loose = loose or [None] * len(want)
    for i, (g, w, cls) in enumerate(zip(got, want, classes)):
        why = compare(np.asarray(g), w, cls, zero_sign=not free_sign,
                      overflow_free=not fused_sums, at_least=working, excused=loose[i])
        if why is not None:
            raise Mismatch(name, f"result {i} ({cls}) differs: {why}", module, inputs)


def compare_mask(got, want, at_least=None):
    """Where an approximate float `got` is beyond the tolerance of `want` (`at_least`,
    (rtol, atol), loosens it; NaN and inf must match in place). A complex value: where
    either part is, each part against the tolerance of the larger part's magnitude."""
    if dtypes.is_complex(want.dtype):
        scale = np.maximum(np.abs(want.real), np.abs(want.imag))
        return (_part_mask(got.real, want.real, scale, at_least)
                | _part_mask(got.imag, want.imag, scale, at_least))
    g, w = got.astype(np.float64), want.astype(np.float64)
    rtol, atol = APPROX_TOLERANCE[want.dtype]
    if at_least is not None:
        rtol, atol = max(rtol, at_least[0]), max(atol, at_least[1])
    finite = np.isfinite(g) & np.isfinite(w)
    with np.errstate(all="ignore"):
        close = np.abs(g - w) <= atol + rtol * np.abs(w)
    return np.where(finite, ~close, (g != w) & ~(np.isnan(g) & np.isnan(w)))


def _part_mask(got, want, scale, at_least):
    g, w = got.astype(np.float64), want.astype(np.float64)
    rtol, atol = APPROX_TOLERANCE[want.dtype]
    if at_least is not None:
        rtol, atol = max(rtol, at_least[0]), max(atol, at_least[1])
    finite = np.isfinite(g) & np.isfinite(w)
    with np.errstate(all="ignore"):
        close = np.abs(g - w) <= atol + rtol * np.where(np.isfinite(scale), scale, np.abs(w))
    return np.where(finite, ~close, (g != w) & ~(np.isnan(g) & np.isnan(w)))


def compare(got, want, cls, zero_sign=True, overflow_free=True, at_least=None,
            excused=None):
    """Why `got` does not match the reference `want` for a result of class `cls`, or None.

    Without `overflow_free`, an approximate result may be +-inf where the reference is NaN,
    finite, or the other infinity, or the reverse: a sum that overflows gives inf + -inf =
    NaN when each product rounds, inf when a fused multiply-add keeps the product exact,
    and whether (and which way) it overflows depends on the order of its terms. `at_least` (rtol, atol)
    loosens an approximate result's tolerance to the work it came from. `excused`: the
    elements of an approximate result that are not compared (ill-conditioned there).
    """
    if got.dtype != want.dtype or got.shape != want.shape:
        return (f"type {dtypes.name(got.dtype) if dtypes.is_supported(got.dtype) else got.dtype}"
                f"{list(got.shape)}, expected {dtypes.name(want.dtype)}{list(want.shape)}")
    if cls == X.UNSTABLE:
        return None
    if dtypes.is_complex(want.dtype):
        return _compare_complex(got, want, cls, zero_sign, overflow_free, at_least, excused)
    if not dtypes.is_float(want.dtype):
        bad = got != want
        return _show(bad, got, want, "") if bad.any() else None
    g, w = got.astype(np.float64), want.astype(np.float64)
    g_nan, w_nan = np.isnan(g), np.isnan(w)
    excused = np.zeros(g.shape, bool) if excused is None or cls != X.APPROX else excused
    if cls == X.APPROX and not overflow_free:
        # whether a sum near the overflow threshold overflows, and to which infinity,
        # depends on its order: inf, -inf, NaN or a huge finite value are all correct
        excused = excused | np.isinf(w) | np.isinf(g) | (g_nan & np.isinf(w)) | (w_nan & np.isinf(g))
    nan_differs = (g_nan != w_nan) & ~excused
    if nan_differs.any():
        return _show(nan_differs, got, want, "NaN in different places")
    if cls == X.EXACT:
        bad = (g != w) & ~w_nan
        if zero_sign:
            bad |= (w == 0) & (np.signbit(g) != np.signbit(w))
        return _show(bad, got, want, "not bit-equal") if bad.any() else None
    bad = compare_mask(got, want, at_least) & ~excused
    if not bad.any():
        return None
    rtol, atol = APPROX_TOLERANCE[want.dtype]
    if at_least is not None:   # the tolerance of the least precise type computed in
        rtol, atol = max(rtol, at_least[0]), max(atol, at_least[1])
    return _show(bad, got, want, f"beyond rtol={rtol:g}, atol={atol:g}")


def _compare_complex(got, want, cls, zero_sign, overflow_free, at_least, excused):
    """`compare` of complex values: exact ones part by part; approximate ones where a
    part is NaN or infinite (C99's special values, which either part may show beside a
    NaN: NumPy's loops and a lowering may differ on the other part's NaN), and within
    the tolerance of the value's magnitude elsewhere."""
    if cls == X.EXACT:
        for part in ("real", "imag"):
            why = compare(getattr(got, part), getattr(want, part), cls, zero_sign)
            if why is not None:
                return f"{part} part: {why}"
        return None
    excused = np.zeros(want.shape, bool) if excused is None else excused
    special = ~np.isfinite(want) | ~np.isfinite(got)
    nan = np.isnan(got) | np.isnan(want)   # NaN in either part: a special value, free
    excused = excused | (special & nan)
    if not overflow_free:
        excused = excused | special
    bad = compare_mask(got, want, at_least) & ~excused
    return _show(bad, got, want, "complex beyond tolerance") if bad.any() else None


def _show(bad, got, want, what, limit=4):
    where = np.argwhere(np.atleast_1d(bad))[:limit]
    g, w = np.atleast_1d(got), np.atleast_1d(want)
    pairs = ", ".join(f"at {tuple(int(i) for i in ix) if got.ndim else ()}: "
                      f"{g[tuple(ix)]!r} vs {w[tuple(ix)]!r}" for ix in where)
    head = f"{what}; " if what else ""
    return f"{head}{int(np.sum(bad))}/{bad.size} elements; {pairs}"


def has_subnormals(module, inputs):
    """Whether any value `module` computes on `inputs` (fusion bodies too) is a subnormal
    of a dtype XLA's CPU code flushes."""
    values = [i for i in module.instructions if not is_multi_output(i)]
    if not values:
        return False
    env = dict(zip(values, evaluate(Module("all", module.params, values), inputs)))
    for v in env.values():
        if v.dtype in _FLUSHED and v.size:
            wide = np.abs(v.astype(np.float64))
            if np.any((wide > 0) & (wide < float(dtypes.finfo(v.dtype).tiny))):
                return True
    return any(has_subnormals(i.attrs["body"], [env[x] for x in i.operands])
               for i in module.instructions if i.op is Op.FUSION)


def describe(module, inputs):
    """The module as IR text and its inputs, for a failure message."""
    lines = [print_module(module), "inputs:"]
    with np.printoptions(threshold=64, edgeitems=4, linewidth=100):
        for p, x in zip(module.params, inputs):
            text = np.array2string(np.asarray(x).astype(np.float64)
                                   if x.dtype == dtypes.bfloat16 else np.asarray(x))
            lines.append(f"  %{p.attrs['name']}: {p.type_str} = "
                         + text.replace("\n", "\n    "))
    return "\n".join(lines)
