"""Write docs/numpy_support.md: every NumPy function and ufunc jitlib traces, and how.

    python tools/gen_numpy_table.py           # rewrite the doc
    python tools/gen_numpy_table.py --check   # exit 1 if the doc is out of date

The tables come from the tracer's own registries (`registry.FUNCTIONS`,
`registry.BY_NAME`, `ufuncs.BUILDERS`), so they cannot drift:
tests/trace/test_numpy_table.py checks the committed doc equals `render()`.
A function's "traced as" column is the first line of its implementation's
docstring; a ufunc's lists the IR ops it emits, found by tracing it.
"""
import argparse
import pathlib
import sys

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "numpy_support.md"

# Caveats a user should know; keyed by the registered name (or the ufunc's name).
NOTES = {
    "take": "concrete indices are checked and raise IndexError like NumPy",
    "take_along_axis": "concrete indices are checked and raise IndexError like NumPy",
    "reshape": "a view of contiguous arrays; of another view, reading it after the base "
               "was written raises (NumPy may have copied)",
    "ravel": "as reshape",
    "where": "the 1-argument form (np.nonzero) is unsupported: data-dependent shape",
    "pad": "modes constant, edge, wrap, reflect, symmetric; pad widths static",
    "repeat": "repeats must be static",
    "roll": "a traced scalar shift is supported",
    "arange": "static bounds only",
    "linspace": "start/stop may be traced",
    "einsum": "optimize= is ignored",
    "matmul": "also `x @ y`; bfloat16 computes in float32, as NumPy's loop",
    "vecdot": "a gufunc: traced through jnp.vecdot and np.linalg.vecdot",
    "max": "empty reductions without initial= raise ValueError, as NumPy",
    "min": "empty reductions without initial= raise ValueError, as NumPy",
    "argmax": "an empty axis raises ValueError, as NumPy",
    "argmin": "an empty axis raises ValueError, as NumPy",
    "var": "where= supported; so is mean=",
    "std": "as var",
    "compress": "the condition must be concrete",
    "split": "the pieces are writable views",
    "array_split": "the pieces are writable views",
}
SAMPLE_DTYPES = (np.float32, np.int32)
HIDDEN_OPS = {"parameter", "constant", "broadcast_in_dim"}


def numpy_series():
    """The NumPy release series the table was made with (its aliases depend on it)."""
    major, minor = np.__version__.split(".")[:2]
    return f"NumPy {major}.{minor}"


def _numpy_names():
    """Public numpy names for each hashable object, sorted (aliases included)."""
    names = {}
    for prefix, module in (("", np), ("linalg.", np.linalg)):
        for name in sorted(dir(module)):
            if name.startswith("_"):
                continue
            obj = getattr(module, name, None)
            try:
                names.setdefault(obj, []).append(prefix + name)
            except TypeError:   # unhashable module attributes
                continue
    return names


def _first_line(fn):
    lines = (fn.__doc__ or "").strip().splitlines()
    return lines[0].strip() if lines else ""


def _cell(text):
    return text.replace("|", "\\|")


def _function_rows(registry, unsupported):
    names = _numpy_names()
    by_impl = {}
    for fn, impl in registry.FUNCTIONS.items():
        by_impl.setdefault(impl, set()).update(names.get(fn, [fn.__name__]))
    registered = {impl: name for name, impl in registry.BY_NAME.items()}
    rows, refused = [], []
    for impl, np_names in by_impl.items():
        key = registered.get(impl, impl.__name__)
        if key in unsupported:
            refused.append(key)
            continue
        label = ", ".join(f"`np.{n}`" for n in sorted(np_names))
        rows.append((sorted(np_names)[0], label, _first_line(impl), NOTES.get(key, "")))
    jnp_only = []
    for name, impl in registry.BY_NAME.items():
        if impl not in by_impl and hasattr(np, name) and not isinstance(
                getattr(np, name), np.ufunc):
            jnp_only.append((name, f"`jnp.{name}`", _first_line(impl), NOTES.get(name, "")))
    return sorted(rows), sorted(jnp_only), sorted(refused)


def _ufunc_ops(ufunc, dtype):
    """The IR ops `ufunc` emits on `dtype` operands, or why it cannot be traced."""
    from jitlib import errors
    from jitlib.trace import Trace, ufuncs
    trace = Trace("doc")
    try:
        with trace.active():
            params = [trace.new_parameter((4,), dtype, f"x{i}") for i in range(ufunc.nin)]
            out = ufuncs.apply(ufunc, params)
    except errors.JitlibTypeError:
        return "no loop"
    except errors.UnsupportedError:
        return "unsupported"
    outs = out if isinstance(out, tuple) else (out,)
    module = trace.module([o.instr for o in outs])
    ops = sorted({str(i.op) for i in module.instructions} - HIDDEN_OPS)
    return ", ".join(ops) if ops else "identity"


def _ufunc_rows(ufuncs):
    names = _numpy_names()
    rows = []
    for uf in ufuncs.BUILDERS:
        aliases = [n for n in names.get(uf, []) if n != uf.__name__]
        label = f"`np.{uf.__name__}`" + (
            " (" + ", ".join(f"`{a}`" for a in aliases) + ")" if aliases else "")
        ops = [_ufunc_ops(uf, dt) for dt in SAMPLE_DTYPES]
        rows.append((uf.__name__, label, *ops, NOTES.get(uf.__name__, "")))
    return sorted(rows)


def _table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_cell(c) for c in row[1:]) + " |" for row in rows]
    return lines


def render():
    """The full text of docs/numpy_support.md."""
    from jitlib.trace import registry, ufuncs
    from jitlib.trace.functions.unsupported import UNSUPPORTED
    functions, jnp_only, refused = _function_rows(registry, UNSUPPORTED)
    lines = [
        "# NumPy support",
        "",
        "<!-- Generated by `python tools/gen_numpy_table.py` from the tracer's registries; do "
        "not edit by hand. tests/trace/test_numpy_table.py fails when it is out of date. -->",
        f"<!-- {numpy_series()} -->",
        "",
        "Inside `jitlib.jit`, these NumPy calls on traced arrays are traced into jitlib's IR "
        "with NumPy 2's semantics, dtypes included (NEP 50: Python scalars are weak). Each "
        "is also in `jitlib.numpy` (`import jitlib.numpy as jnp`), which computes eagerly "
        "with NumPy outside a trace. Array methods (`x.sum()`, `x.reshape()`, `x.T`, "
        "`x.astype()`, ...) use the same implementations. Where NumPy returns a view "
        "(transpose, reshape of a contiguous array, squeeze, flip, split, ...) the result "
        "follows later writes to its base, and writes through it reach the base.",
        "",
        "Random numbers: `np.random` inside jit draws on the host what eager NumPy would "
        "draw; `jitlib.random` (key-based, like jax.random) generates them inside the "
        "kernels, with the same bits on every backend. [random.md](random.md) says when "
        "to use which.",
        "",
        f"## Functions ({len(functions)})",
        "",
        *_table(["NumPy", "Traced as", "Notes"], functions),
        "",
        f"## Creation functions, `jitlib.numpy` only ({len(jnp_only)})",
        "",
        "NumPy never hands these a tracer (np.zeros takes no array; np.asarray converts "
        "rather than dispatching), so call them through `jnp`: inside a trace they return "
        "traced arrays, outside it NumPy arrays.",
        "",
        *_table(["jitlib.numpy", "Traced as", "Notes"], jnp_only),
        "",
        f"## Ufuncs ({len(ufuncs.BUILDERS)})",
        "",
        "Every ufunc picks its loop with NumPy's own `ufunc.resolve_dtypes`; `out=`, "
        "`where=` (with `out=`) and `dtype=` work, and `np.add.reduce`-style methods map "
        "to the functions above (`np.maximum.accumulate` / `np.minimum.accumulate` to "
        "cummax / cummin, in the input's type). The columns list the IR ops each emits "
        "for float32 and "
        "int32 operands (conversions included; \"no loop\": NumPy has none either).",
        "",
        *_table(["Ufunc (aliases)", "float32", "int32", "Notes"], _ufunc_rows(ufuncs)),
        "",
        f"## Refused on purpose ({len(refused)})",
        "",
        "These raise `UnsupportedError` with the reason and a hint; any NumPy function not "
        "listed on this page raises it too.",
        "",
        *_table(["NumPy", "Why", "Instead"],
                [(n, f"`np.{n}`", *UNSUPPORTED[n]) for n in refused]),
        "",
    ]
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if the doc is stale")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))   # run as a script from a checkout
    text = render()
    if args.check:
        if not DOC.exists() or DOC.read_text() != text:
            print(f"{DOC.relative_to(ROOT)} is out of date: run python tools/gen_numpy_table.py")
            return 1
        return 0
    DOC.parent.mkdir(exist_ok=True)
    DOC.write_text(text)
    print(f"wrote {DOC.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
