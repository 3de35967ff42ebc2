"""Cross-checking helpers: compare jitted results against eager NumPy, dtypes included.

The contract under test is ``jitlib.jit(fn, backend=b)(*args) == fn(*args)`` run eagerly:
same pytree structure, same dtype and shape per leaf, and values equal up to a tolerance that
follows the leaf's real precision: its dtype's, loosened to that of the least precise float
type its value was computed in (an f64 result of f32 products carries f32 rounding), exact for
bool and integers. Importing this module imports neither jax nor pytest.
"""

from __future__ import annotations

import copy
from typing import Any, Callable

import numpy as np

from jitlib import tree
from jitlib.hlo import dtypes

__all__ = ["TOLERANCES", "tolerance", "working_dtypes", "assert_allclose_tree",
           "check_backends"]

# (rtol, atol) for comparing floats produced by two implementations: a few ulps of relative
# error, plus an absolute floor for results that cancel to near zero.
TOLERANCES: dict[np.dtype, tuple[float, float]] = {
    np.dtype(np.float16): (2e-2, 2e-2),
    dtypes.bfloat16: (4e-2, 4e-2),
    np.dtype(np.float32): (2e-5, 1e-6),
    np.dtype(np.float64): (1e-12, 1e-14),
}

# How many mismatching elements a failure message lists.
_SHOW = 5


def tolerance(dtype) -> tuple[float, float]:
    """The default ``(rtol, atol)`` for ``dtype``: TOLERANCES for floats (complex: its
    parts' float type), ``(0, 0)`` otherwise."""
    dt = np.dtype(dtype)
    if dt.kind == "c":
        dt = dtypes.part_type(dt)
    return TOLERANCES.get(dt, (0.0, 0.0))


def _loosest(*dts: Any) -> tuple[float, float]:
    """The loosest default ``(rtol, atol)`` among ``dts`` (None entries ignored)."""
    tols = [tolerance(dt) for dt in dts if dt is not None]
    return max(t[0] for t in tols), max(t[1] for t in tols)


def working_dtypes(module: Any) -> list[np.dtype | None]:
    """Per result of ``module``, the least precise float type any arithmetic feeding it
    computes in, or None where no float arithmetic does.

    Parameters, constants, converts and data movement round nothing two implementations
    could round differently, so they do not count; every other float instruction does.
    """
    from jitlib.hlo.ops import MOVEMENT, Op
    skip = MOVEMENT | {Op.PARAMETER, Op.CONSTANT, Op.IOTA, Op.CONVERT}
    found: list[np.dtype | None] = []
    for result in module.results:
        floats, seen, todo = set(), set(), [result]
        while todo:   # a worklist, not recursion: programs can be deep
            instr = todo.pop()
            if id(instr) in seen:
                continue
            seen.add(id(instr))
            if instr.op not in skip and dtypes.is_inexact(instr.dtype):
                floats.add(np.dtype(instr.dtype))
            todo.extend(instr.operands)
        found.append(max(floats, key=lambda d: tolerance(d)) if floats else None)
    return found


def _as_array(leaf: Any) -> np.ndarray | None:
    """A leaf as an ndarray; Python scalars take NumPy's dtype for them. None if not numeric."""
    if isinstance(leaf, (str, bytes)):
        return None
    try:
        arr = np.asarray(leaf)
    except Exception:  # noqa: BLE001 - e.g. a tracer that escaped: report it as a mismatch
        return None
    return None if arr.dtype == object else arr


def _leaf_paths(td: tree.TreeDef, prefix: str = "") -> list[str]:
    """Readable paths (``[0]['w'].mean``) of the leaves of ``td``, in flatten order."""
    if td.is_leaf():
        return [prefix or "<root>"]
    kind = td.node_type
    if kind is dict:
        labels = [f"[{k!r}]" for k in td.node_data]
    elif issubclass(kind, tuple) and hasattr(kind, "_fields"):
        labels = [f".{f}" for f in kind._fields]
    else:
        labels = [f"[{i}]" for i in range(len(td.children))]
    paths: list[str] = []
    for label, child in zip(labels, td.children):
        paths += _leaf_paths(child, prefix + label)
    return paths


def _compare_leaf(actual: Any, expected: Any, rtol: float | None, atol: float | None,
                  precision: Any = None) -> str | None:
    """Why ``actual`` does not match ``expected``, or None if it does."""
    a, e = _as_array(actual), _as_array(expected)
    if a is None and e is None:
        if type(actual) is not type(expected) or actual != expected:
            return f"non-array leaves differ: {actual!r} != {expected!r}"
        return None
    if a is None or e is None:
        return f"{type(actual).__name__} leaf, expected {type(expected).__name__}"
    if a.dtype != e.dtype:
        return f"dtype {a.dtype} != expected {e.dtype}"
    if a.shape != e.shape:
        return f"shape {a.shape} != expected {e.shape}"
    if e.dtype.kind == "c":
        return _compare_complex(a, e, rtol, atol, precision)
    if not (np.issubdtype(e.dtype, np.floating) or dtypes.is_bfloat16(e.dtype)):
        bad = a != e
        detail = ""
    else:
        default_rtol, default_atol = _loosest(e.dtype, precision)
        rtol = default_rtol if rtol is None else rtol
        atol = default_atol if atol is None else atol
        # float64 holds every narrower float exactly, so the comparison itself adds no error.
        a64, e64 = a.astype(np.float64), e.astype(np.float64)
        a_nan, e_nan = np.isnan(a64), np.isnan(e64)
        finite = np.isfinite(a64) & np.isfinite(e64)
        with np.errstate(invalid="ignore", over="ignore"):
            err = np.abs(a64 - e64)
            close = err <= atol + rtol * np.abs(e64)
            # Infinities must match exactly (sign included); NaNs must sit at the same places.
            bad = np.where(finite, ~close, (a64 != e64) & ~(a_nan & e_nan))
            if finite.any():
                rel = err[finite] / np.maximum(np.abs(e64[finite]), np.finfo(np.float64).tiny)
                detail = (f" (max abs err {err[finite].max():.3g}, max rel err {rel.max():.3g};"
                          f" rtol={rtol:g}, atol={atol:g})")
            else:
                detail = ""
    if not bad.any():
        return None
    idx = np.argwhere(np.atleast_1d(bad))[:_SHOW]
    flat_a, flat_e = np.atleast_1d(a), np.atleast_1d(e)
    shown = ", ".join(
        f"at {tuple(int(i) for i in ix) if a.ndim else ()}: {flat_a[tuple(ix)].item()!r} "
        f"vs {flat_e[tuple(ix)].item()!r}"
        for ix in idx
    )
    return f"{int(bad.sum())}/{bad.size} elements differ{detail}; {shown}"


def _compare_complex(a: np.ndarray, e: np.ndarray, rtol: float | None, atol: float | None,
                     precision: Any) -> str | None:
    """Complex leaves: finite values within the tolerance of |expected| (a part may cancel
    to far below the magnitude, so parts are not compared alone); non-finite parts equal,
    NaNs in the same places."""
    default_rtol, default_atol = _loosest(e.dtype, precision)
    rtol = default_rtol if rtol is None else rtol
    atol = default_atol if atol is None else atol
    a128, e128 = a.astype(np.complex128), e.astype(np.complex128)
    finite = np.isfinite(a128) & np.isfinite(e128)
    with np.errstate(invalid="ignore", over="ignore"):
        close = np.abs(a128 - e128) <= atol + rtol * np.abs(e128)
        same = [(x != y) & ~(np.isnan(x) & np.isnan(y))
                for x, y in ((a128.real, e128.real), (a128.imag, e128.imag))]
    bad = np.where(finite, ~close, same[0] | same[1])
    if not bad.any():
        return None
    idx = np.argwhere(np.atleast_1d(bad))[:_SHOW]
    flat_a, flat_e = np.atleast_1d(a), np.atleast_1d(e)
    shown = ", ".join(f"at {tuple(int(i) for i in ix) if a.ndim else ()}: "
                      f"{flat_a[tuple(ix)].item()!r} vs {flat_e[tuple(ix)].item()!r}"
                      for ix in idx)
    return (f"{int(bad.sum())}/{bad.size} elements differ (rtol={rtol:g}, atol={atol:g}); "
            f"{shown}")


def assert_allclose_tree(actual: Any, expected: Any, *, rtol: float | None = None,
                         atol: float | None = None, err_msg: str = "",
                         precisions: list[Any] | None = None) -> None:
    """Assert that two pytrees match: structure, per-leaf dtype and shape, and values.

    Float leaves are compared with ``rtol``/``atol`` (defaults per dtype from TOLERANCES,
    loosened per leaf, in flatten order, to the tolerance of ``precisions[i]`` if given:
    the type the leaf was really computed in, see ``working_dtypes``),
    NaNs must be at the same positions and infinities must agree in sign. Bool and integer
    leaves must be equal exactly, whatever ``rtol``/``atol`` say. Python scalars compare as
    0-d arrays of NumPy's dtype for them (float -> float64, int -> int64, bool -> bool).
    Raises AssertionError naming every mismatching leaf.
    """
    a_leaves, a_def = tree.flatten(actual)
    e_leaves, e_def = tree.flatten(expected)
    prefix = f"{err_msg}\n" if err_msg else ""
    if a_def != e_def:
        raise AssertionError(f"{prefix}tree structure differs:\n  actual:   {a_def}\n"
                             f"  expected: {e_def}")
    if precisions is None or len(precisions) != len(e_leaves):
        precisions = [None] * len(e_leaves)
    problems = []
    for path, a, e, p in zip(_leaf_paths(e_def), a_leaves, e_leaves, precisions):
        why = _compare_leaf(a, e, rtol, atol, p)
        if why is not None:
            problems.append(f"  leaf {path}: {why}")
    if problems:
        raise AssertionError(prefix + "results differ:\n" + "\n".join(problems))


def _traced_ir(jitted: Callable, args: tuple, kwargs: dict) -> str:
    """The traced IR of ``jitted`` for a failure message, or why it is unavailable."""
    try:
        return jitted.lower(*args, **kwargs).as_text()
    except Exception as exc:  # noqa: BLE001 - a diagnostic must not mask the real failure
        return f"<IR unavailable: {type(exc).__name__}: {exc}>"


def check_backends(fn: Callable, *args: Any, backends=("interpreter", "jax"),
                   static_argnums=(), static_argnames=(), rtol: float | None = None,
                   atol: float | None = None, kwargs: dict | None = None) -> Any:
    """Assert that ``jitlib.jit(fn, backend=b)`` matches eager ``fn`` for each backend ``b``,
    on the results and on what the call leaves in its arguments.

    Each run, eager and jitted, gets its own deep copy of the arguments; afterwards each
    jitted run's copies must hold what the eager run left in its own (NumPy code may write
    into its arguments). Default tolerances follow each output's real precision
    (``working_dtypes`` of the traced Module). On a mismatch the AssertionError names the
    backend and shows the traced IR; an exception raised by a jitted call gets a note
    naming the backend. Returns the eager result.
    """
    import jitlib  # jitlib imports its backends, which may be heavy; only pay when checking

    kwargs = {} if kwargs is None else kwargs
    eager_args, eager_kwargs = copy.deepcopy((args, kwargs))
    expected = fn(*eager_args, **eager_kwargs)
    precisions = _precisions(fn, args, kwargs, static_argnums, static_argnames)
    for backend in backends:
        run_args, run_kwargs = copy.deepcopy((args, kwargs))
        jitted = jitlib.jit(fn, backend=backend, static_argnums=static_argnums,
                            static_argnames=static_argnames)
        try:
            actual = jitted(*run_args, **run_kwargs)
        except Exception as exc:
            exc.add_note(f"raised by jitlib.jit({_name(fn)}, backend={backend!r})")
            raise
        context = f"jitlib.jit({_name(fn)}, backend={backend!r})"
        try:
            assert_allclose_tree(actual, expected, rtol=rtol, atol=atol, precisions=precisions,
                                 err_msg=f"{context} differs from eager NumPy")
            assert_allclose_tree((run_args, run_kwargs), (eager_args, eager_kwargs),
                                 rtol=rtol, atol=atol,
                                 err_msg=f"{context} left its arguments unlike eager NumPy")
        except AssertionError as exc:
            ir = _traced_ir(jitted, args, kwargs)
            raise AssertionError(f"{exc}\ntraced IR:\n{ir}") from None
    return expected


def module_inputs(module: Any, args: tuple, static_argnums: Any = ()) -> list[np.ndarray]:
    """The arrays `module` (as `jitlib.make_ir(fn, static_argnums)(*args)` traced it) takes
    for `args`: the dynamic arguments' leaves in its parameters' dtypes, then the values
    its host steps give for one call (numbers drawn from np.random, globals read)."""
    static = {static_argnums} if isinstance(static_argnums, int) else set(static_argnums)
    leaves = tree.leaves([a for n, a in enumerate(args) if n not in static])
    inputs = [np.asarray(a, dtype=p.dtype) for a, p in zip(leaves, module.params)]
    effects = module.effects
    if effects is not None and effects.steps:
        inputs += [np.asarray(v, dtype=p.dtype) for v, p in
                   zip(effects.call_inputs(), module.params[len(inputs):])]
    return inputs


def _precisions(fn: Callable, args: tuple, kwargs: dict, static_argnums: Any,
                static_argnames: Any) -> list[np.dtype | None] | None:
    """``working_dtypes`` of ``fn``'s outputs, or None where ``fn`` does not trace (the
    jitted calls then raise, and report that themselves)."""
    import jitlib
    try:
        lowered = jitlib.jit(fn, backend="interpreter", static_argnums=static_argnums,
                             static_argnames=static_argnames).lower(*args, **kwargs)
    except Exception:  # noqa: BLE001 - the jitted call raises the same, with its context
        return None
    return working_dtypes(lowered.module)[:lowered.out_tree.num_leaves]


def _name(fn: Callable) -> str:
    return getattr(fn, "__qualname__", None) or repr(fn)
