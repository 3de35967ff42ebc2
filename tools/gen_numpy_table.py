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
    "where": "the 1-argument form is np.nonzero (a masked selection)",
    "nonzero": "masked selections: reductions and x[np.nonzero(m)] trace, their shape "
               "does not (docs/semantics.md); `jnp.nonzero(x, size=N, fill_value=v)` as JAX",
    "flatnonzero": "as nonzero; `jnp.flatnonzero(x, size=N)` too",
    "argwhere": "as nonzero (rows of coordinates); `jnp.argwhere(x, size=N)` too",
    "extract": "a masked selection, as nonzero",
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
    "power": "integer ** negative integer raises ValueError (see Edge cases)",
    "reciprocal": "integer 0 gives NumPy's 1.0/0 cast back: INT_MIN for int32/int64, else 0",
    "hypot": "no overflow or underflow in the squares",
    "angle": "complex arrays: arctan2(imag, real), as NumPy",
    "fft.fft": "pocketfft (NumPy's own) on the cpu and interpreter; float32/complex64 stay "
               "single precision; norm= scales after the transform",
    "fft.rfft": "as fft.fft",
    "fft.irfft": "as fft.fft; n defaults to 2*(m-1)",
    "fft.fftn": "at most 3 axes inside jit",
    "log2": "exact at powers of 2",
    "log10": "exact at powers of 10 (float32: see Compositions)",
    "array_split": "the pieces are writable views",
    "put": "concrete indices out of range raise IndexError; traced ones are dropped "
           "(NumPy raises)",
    "place": "exact for a traced mask; empty vals with a traced mask raise at trace time "
             "(NumPy raises unless the mask is all False)",
    "piecewise": "each function runs on all of x, so it must be elementwise",
    "interp": "xp must be increasing, as NumPy assumes; period= with a traced xp ranks "
              "its points in O(len(xp)**2)",
    "gradient": "traced coordinate arrays take the non-uniform formula (equal to NumPy's "
                "uniform one within rounding)",
    "isin": "a traced test set compares every pair (elements x tests in memory)",
    "nanargmax": "an all-NaN slice gives -1, as JAX (NumPy raises ValueError)",
    "nanargmin": "an all-NaN slice gives -1, as JAX (NumPy raises ValueError)",
    "average": "weights that sum to zero give inf or NaN, as JAX (NumPy raises "
               "ZeroDivisionError)",
    "apply_along_axis": "func1d is traced once and must not branch on values (use np.where)",
    "vectorize": "np.vectorize objects called on traced arrays trace this way; pyfunc must "
                 "not branch on values; size-0 inputs are refused",
    "frexp": "exact, subnormals too; the jax backend (XLA) flushes those to zero",
    "ldexp": "exact, one rounding into the subnormals; the jax backend flushes them",
    "modf": "exact; the fraction keeps x's sign (modf(-2.0) is (-0.0, -2.0))",
    "nextafter": "exact; float16 and bfloat16 too",
    "spacing": "exact; NumPy's float16 loop answers the positive spacing, as here",
    "gcd": "Euclid's algorithm unrolled to its worst case for the width",
    "lcm": "|a| / gcd * |b| wrapping in the type, as NumPy's loop",
    "bitwise_count": "counts the bits of |x|, as NumPy",
    "matvec": "a gufunc: no axes= (move the core axes last first)",
    "vecmat": "a gufunc: no axes=; conjugation is the identity on real arrays",
    "indices": "also `np.indices` called inside the function (traced, known values)",
    "cholesky": "input symmetrized, (a + a.T) / 2, as jax.numpy; not positive definite: "
                "NaN (NumPy raises LinAlgError)",
    "eigh": "input symmetrized as jax.numpy (NumPy reads one triangle); eigenvector signs "
            "may differ between backends; derivatives assume distinct eigenvalues",
    "eigvalsh": "input symmetrized as jax.numpy (NumPy reads one triangle)",
    "solve": "singular a: inf/NaN (NumPy raises LinAlgError)",
    "inv": "singular a: inf/NaN (NumPy raises LinAlgError)",
    "det": "singular a: 0, as NumPy",
    "slogdet": "singular a: (0, -inf), as NumPy",
    "lstsq": "2-d a only, as NumPy; residuals are computed whenever M > N (NumPy gives an "
             "empty array for a rank-deficient a)",
    "qr": "modes reduced, complete, r; derivatives for M >= N, reduced",
    "svd": "hermitian= ignored; derivatives of the singular values only",
    "pinv": "hermitian= ignored",
    "matrix_rank": "hermitian= ignored",
    "norm": "matrix ord 2, -2 and 'nuc' through the SVD",
    "cov": "weight values are not checked (NumPy checks fweights are non-negative "
           "integers); a non-positive dof gives inf/NaN",
    "bincount": "needs a static length: `jnp.bincount(x, length=N)` (values outside "
                "[0, N) dropped), or known x; weights sum in x's order (docs/semantics.md)",
    "digitize": "traced bins are taken as increasing",
    "histogram": "bins an int or edges (not 'auto'); range static or traced (a traced one "
                 "is not checked); counts exact, weights in NumPy's order except ties "
                 "among edge-bin weights (docs/semantics.md)",
    "histogram_bin_edges": "as histogram",
    "histogram2d": "as histogramdd",
    "histogramdd": "bins ints or edges; weights sum in sample order",
    "isscalar": "False for a traced value, as for an ndarray: a NumPy scalar passed to "
                "jit is traced as a 0-d array",
    "isfortran": "False: traced values are C-ordered (NumPy says True for a transposed "
                 "view)",
    "min_scalar_type": "the dtype for arrays; a traced 0-d value raises (its answer "
                       "depends on the value)",
    "ascontiguousarray": "the values; jit chooses memory layout itself",
    "asfortranarray": "as ascontiguousarray",
    "require": "dtype honoured; the flags name layouts, which traced values satisfy",
    "may_share_memory": "True for views of one traced array, without NumPy's bounds "
                        "check (disjoint slices say True)",
    "shares_memory": "as may_share_memory",
    "delete": "positions static (ints, slices, lists, NumPy masks)",
    "insert": "positions static; values may be traced",
    "ix_": "a traced boolean mask is refused (its True count is a shape)",
    "unravel_index": "dims static; out-of-range indices are not detected (NumPy raises)",
    "ravel_multi_index": "dims static; mode='raise' does not detect out-of-range indices",
    "choose": "mode='raise' clamps traced indices (NumPy raises)",
    "putmask": "arrays of values cast only safely, as NumPy",
    "cov": "NumPy's checks on weights' values are not made; a non-positive divisor gives "
           "inf/NaN without the warning",
    "corrcoef": "as cov",
    "poly": "1-d real roots only (a matrix needs complex eigenvalues)",
    "geomspace": "ends may be traced; a zero end gives NaN or inf (NumPy raises)",
    "nanmedian": "an all-NaN slice gives NaN (NumPy also warns)",
    "nanpercentile": "method='linear' without weights; q static",
    "nanquantile": "as nanpercentile",
    "angle": "real arrays: 0 or pi",
    "apply_over_axes": "func is traced once per axis",
    "fromiter": "also `np.fromiter` called inside the function: traced items are stacked",
    "frombuffer": "the bytes are static: NumPy's array becomes a constant",
    "fromstring": "as frombuffer",
    "sliding_window_view": "window shape static; the windows are gathered (memory: "
                           "elements x window size), read-only as NumPy's",
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
    for prefix, module in (("", np), ("linalg.", np.linalg), ("fft.", np.fft)):
        for name in sorted(dir(module)):
            if name.startswith("_"):
                continue
            obj = getattr(module, name, None)
            try:
                names.setdefault(obj, []).append(prefix + name)
            except TypeError:   # unhashable module attributes
                continue
    # sliding_window_view lives only there; its other names are np's own
    swv = np.lib.stride_tricks.sliding_window_view
    names.setdefault(swv, ["lib.stride_tricks.sliding_window_view"])
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
    except errors.JitlibValueError:
        return "pow (a traced signed exponent is refused)"
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


EAGER_SEMANTICS = """\
## What jit keeps from eager NumPy

`jit(f)(*args)` leaves the caller with what `f(*args)` run eagerly leaves, not only the
same results:

- **Writes into arguments reach the caller.** `A[i] = ...`, `A += B`, `np.add(x, 1, out=o)`,
  `np.copyto(dst, src)` and writes through a basic-slice view of an argument leave the
  caller's array holding what NumPy leaves, at every call, on every backend (a
  `jitlib.Array` is updated on the device). The traced program returns the new contents
  (`lower().as_text()` shows `writes(%A)` in the module header and the line of the first
  write) and the call copies them back. A read-only argument raises NumPy's `ValueError`
  at the line of the write, before anything runs; a written argument that shares memory
  with another argument is refused (the trace takes them as separate arrays); returning an
  argument (`return out`) returns the caller's own object. A list or dict argument the
  function changes (`append`, item assignment) is an error: Python containers cannot be
  replayed. `+=` on a NumPy scalar (`s = x.sum(); s += 1`) rebinds, as in NumPy.
- **Arrays made inside the function take traced writes.** While jit traces, `np.empty`,
  `np.zeros`, `np.ones`, `np.full`, `np.*_like`, `np.arange`, `np.linspace`, `np.eye`,
  `np.identity`, `np.tri`, `np.indices`, `np.array`, `np.asarray`, `np.asanyarray` and
  `np.copy`, called from your code as `np.NAME(...)`, return traced arrays whose values jit
  knows: Python may still read them (`int(table[3])`, `range(len(buf))`, `if buf[0] > 0:`),
  and they become IR constants only where a traced value meets them. (`from numpy import
  zeros` binds NumPy's function itself, which jit does not see.)
- **Globals and closure variables are read at call time.** An array a jitted function
  reads from its globals or closure with more than 64 elements becomes an implicit input,
  the same array object at every call (in-place updates are seen; writes into it reach
  it). A smaller array stays a constant, and a change of its contents traces again; so
  does rebinding any global or closure name the function read (`JITLIB_LOG=recompiles`
  names it). Helper functions the jitted function calls by name (plain functions of
  yours, or jitted ones) read their globals the same way; functions reached as an
  attribute (`mymodule.helper`, a method) read their globals as constants at trace time.
- **`np.random` draws what eager NumPy draws.** The legacy functions (`np.random.rand`,
  `randn`, `normal`, `uniform`, `randint`, `choice`, `permutation`, `shuffle`, `seed`,
  ...) and the methods of a `np.random.Generator` or `RandomState` passed in, captured,
  or made inside with `np.random.default_rng(seed)` run on the host at each call, in the
  traced order, before the program; their numbers are parameters of the program, and the
  generator's state advances exactly as eagerly. A traced distribution parameter
  (`np.random.normal(x, 1.0)`) is refused: write `x + rng.standard_normal(shape)`.
  In a plain Python `for` loop traced once, each trip draws its own numbers (stacked
  rows, drawn in the loop's order before the call); in a `jnp.fori_loop`/`while_loop`/
  `scan` body or a `cond` branch a draw is refused, since it would happen once at trace
  time. `jitlib.random` (key-based, like jax.random) generates numbers inside the kernels
  instead, with the same bits on every backend: [random.md](random.md) says when to use
  which.
- **Complex numbers are NumPy's.** `complex64` and `complex128` arrays, and Python
  complex scalars as weak values (`x * 1j` keeps float32 math complex64), promote as NumPy
  2. Arithmetic, `abs`, `sign`, `exp`, `exp2`, `expm1`, `log`, `log2`, `log10`, `log1p`,
  `sqrt`, the trigonometric and hyperbolic functions and their inverses, `power`, `square`,
  `reciprocal`, `conj`, `isnan`/`isinf`/`isfinite` run NumPy's complex loops (branch cuts
  and the sign of zero parts included); comparisons, `maximum`, `minimum`, `max`, `min`,
  `argmax`, `argmin` and `sort` use NumPy's lexicographic order (NaNs as NumPy places
  them); `x.real`/`x.imag` are writable views (`y.imag *= 2` writes through, as NumPy);
  `sum`, `prod`, `mean`, `var`, `std`, `linalg.norm`, `cumsum`, `@`, `dot`, `vdot`
  (conjugating) and `einsum` take complex operands, and `np.fft` traces to one `fft` op
  per transform (`jnp.fft` too). `np.float_power` of complex values is refused by name.
  The cpu backend compiles loop kernels of complex arithmetic as real ones
  (`backends/complex_lowering.py`): `+ - * /`, `abs`, `sign`, `exp`, `expm1`, `log`,
  `log1p` (and `exp2`, `log2`, `log10` through them), `sqrt`, `sin`, `cos`, `tan`,
  `sinh`, `cosh`, `tanh`, `arcsin`, `arccos`, `arctan`, `arcsinh`, `arccosh`,
  `arctanh`, powers (a computed exponent element by element as `np.power`'s loop,
  NumPy's npy_cpow), sums, `conj`, `real`/`imag`, `==`/`!=`, conversions, `where` and
  data movement, each complex value as its two parts, with the algorithms of the glibc
  functions NumPy's loops call (`clog`, `cexp`, `csinh`, `ccosh`, `ctanh`, `cpow`,
  `casinh` and its kernel for `casin`, `cacos`, `cacosh`, `catanh` and its mirror
  `catan`; `csqrt` as C99 gives it) and their special values (infinite and NaN parts,
  signed zeros). Division is NumPy's own algorithm (the same bits), as are integer
  powers; `abs`, `sqrt`, `sign` are within 2-3 ulps of NumPy's, `exp`, `log`, `sin`,
  `cos`, `sinh`, `cosh` within 4, the inverse functions within 5, `tan`, `tanh` within
  8; `log1p` and `expm1` (NumPy's own formulas, which cancel near their zeros) and
  powers (exp of b log z) within a few ulps of their terms' size. A product rounds
  each of its four terms, where NumPy's x86 loops fuse one of each pair into an fma
  (on AVX-512 hosts also for complex128 `square`, which `z ** 2` calls), so it may
  differ by an ulp of the larger term (and where a term overflows: NumPy's
  `(1e308+1j) * (-inf+1e308j)` is `-inf-infj`, jitlib's `-inf+nanj`). Kernels with
  other complex ops (a sum with complex work after it, as in `mean`) and products run
  on the reference interpreter (NumPy's loops and BLAS), as
  does every fft that the host FFT path does not take. The gpu backend generates the
  same kernels over real parts on the device, and a complex product as four real dot
  kernels (`backends/complex_products.py`); its other complex kernels run through host
  memory (complex Arrays stay on the device between them), its FFTs through cuFFT.
  `grad`, `vjp`, `jvp` and `vmap` follow JAX's convention for complex values.

"""


def _edge_cases():
    return [
        "## Edge cases",
        "",
        "- **Float to integer casts** (`astype`, and every conversion a function makes) "
        "give NumPy's values for NaN, infinities and out-of-range values on every backend. "
        "These are the host's: NumPy's C casts as they compile on x86-64, where cvtt "
        "answers NaN and out-of-range with the type's minimum. int64 and int32 take that "
        "value (`np.float64(np.nan).astype(np.int32)` is -2147483648); int8, int16, uint8 "
        "and uint16 keep the low bits of the int32 conversion (NaN gives 0, 300.0 as int8 "
        "44); uint32 keeps the low bits of the int64 conversion; uint64 converts x - 2**63 "
        "for x >= 2**63 and sets the top bit again (2.0**64 gives 0, NaN and -inf "
        "2**63). bfloat16 casts are ml_dtypes' (NaN and out-of-range give 0). One NumPy "
        "answer is not followed: its contiguous float32/float64 -> uint32 loop on an "
        "AVX-512 host answers NaN and out-of-range values differently from its scalar cast "
        "(2**31 for NaN where the scalar cast gives 0), so NumPy's own result depends on "
        "the layout; jitlib gives the scalar cast's value everywhere.",
        "- **Integer `**` a negative integer** raises `ValueError: Integers to negative "
        "integer powers are not allowed.` as NumPy does, at trace time and naming the "
        "user's line, when the exponent is concrete (a constant, a Python int argument). "
        "NumPy decides by the values at run time; a traced signed integer exponent has no "
        "values while tracing, so jit raises a `ValueError` that says so, unless the IR "
        "shows it is never negative (unsigned or bool, a constant or `arange`, "
        "`np.maximum(n, 0)`, a widening convert of such). Clamp the exponent, make it "
        "unsigned, pass it as a static argument, or use `np.float_power`.",
        "- **`np.reciprocal` of integers** is NumPy's loop, `1.0 / x` in double cast back: "
        "0 gives INT_MIN for int32 and int64 and 0 for the other integer types (NumPy's "
        "RuntimeWarning is not raised).",
        "- **`reduce` of `np.arctan2` and `np.power` on floats**: NumPy's SIMD loops for "
        "these (on an AVX-512 host) give `reduce` results that are not the left fold "
        "its own `accumulate` computes (`np.arctan2.reduce(x)` differs from "
        "`np.arctan2.accumulate(x)[-1]` beyond rounding); jitlib folds left to right, "
        "which is what `accumulate` and NumPy's other loops give.",
        "- **`frexp`, `ldexp`, `modf`, `nextafter`, `spacing`, `gcd`, `lcm`, "
        "`bitwise_count`** equal NumPy bit for bit on the interpreter and cpu backends "
        "and in the gpu backend's kernels run under Triton's interpreter (not yet checked "
        "on a GPU), subnormals, infinities, NaN, -0.0 and integer extremes included "
        "(`np.gcd(INT_MIN, 0)` is INT_MIN, as NumPy's loop wraps). The jax backend runs "
        "on XLA, which flushes subnormal inputs and results to zero; the gpu backend "
        "flushes bfloat16 subnormals the same way.",
        "- **Byte-swapped arguments and constants** (`>f8`, `>i4`) are converted to native "
        "byte order on entry, so `jit(f)(x)` computes what NumPy computes. Results are "
        "always native: where NumPy hands back the argument, a view of it, or an "
        "`astype('>i2')`, jitlib returns the same values with the native dtype.",
        "",
    ]


def _linear_algebra():
    """Where each backend's LAPACK comes from, and what replaces LinAlgError."""
    return [
        "## Linear algebra",
        "",
        "np.linalg's factorizations are IR ops (cholesky, triangular_solve, lu, qr, eigh, "
        "svd; batch dims leading) and everything else composes them: solve and inv are LU "
        "plus two triangular solves (LAPACK's gesv), det and slogdet read the LU factors, "
        "lstsq, pinv, matrix_rank and the matrix 2-norms go through the SVD. On the "
        "interpreter and the cpu backend these ops run LAPACK through NumPy (numpy.linalg: "
        "the OpenBLAS bundled in NumPy's wheels, so cholesky, qr, eigh and svd equal eager "
        "NumPy's bit for bit) and SciPy (getrf and BLAS trsm, which NumPy does not expose); "
        "the jax backend lowers them to jax.lax.linalg (LAPACK on the CPU, cuSOLVER on the "
        "GPU). The cpu backend compiles an LU factorization or a triangular solve of one "
        "float32/float64 matrix of up to 512 KB as a kernel that calls the same SciPy "
        "OpenBLAS routines on the same Fortran-ordered copies (backends/llvm/lapack.py: the "
        "interpreter's bits, and a loop that solves a system each trip stays one native "
        "call); batches, larger matrices and the other factorizations run on the "
        "interpreter. The gpu backend runs them on the interpreter through host memory, or with "
        "`JITLIB_GPU_LINALG=cusolver` through CuPy's cuSOLVER on the device "
        "(docs/operations.md). `jnp.linalg.solve_triangular(a, b, trans, lower, unit_diagonal)` is "
        "scipy.linalg's, as in jax.scipy.linalg.",
        "",
        "Inside jit a value cannot raise: where NumPy raises LinAlgError the result holds "
        "inf or NaN, as in JAX. Derivatives are JAX's (jvp and vjp of cholesky, "
        "triangular_solve, lu and so solve, inv, det, slogdet; eigh; qr; singular values).",
        "",
    ]


def _accuracy():
    """The section on compositions, from tools/composition_accuracy.json (measured by
    tools/measure_compositions.py; stored, so the doc does not depend on the machine)."""
    import json
    data = json.loads((ROOT / "tools" / "composition_accuracy.json").read_text())
    sys.path.insert(0, str(ROOT))
    from tools.measure_compositions import table
    return [
        "## Compositions and their measured accuracy",
        "",
        "These ufuncs (and functions) have no IR op of their own: the tracer composes "
        "them from other ops. `python tools/measure_compositions.py --write` measures each "
        "against eager NumPy " + data["numpy"] + " on this host, for float32 and float64 "
        "operands made of edge values (zeros of both signs, infinities, NaN, subnormals, "
        "the extremes, powers of 2 and 10, every pair of them for two operands) and "
        "random samples over the whole exponent range: the largest distance in ulps "
        "between jitlib's finite results and NumPy's, and in parentheses how many results "
        "differ in kind (NaN, infinity or the sign of a zero where NumPy has another).",
        "",
        *table(data),
        "",
        "- `exp2` is `pow(2, x)`: within an ulp of NumPy's exp2.",
        "- `log2`, `log10`: float64 splits x into 2**e * m (m near 1) and adds e, or "
        "e * log10(2) carried in two parts, to log(m) / ln(base): exact at powers of the "
        "base (`log10(1000.0)` is 3.0), within an ulp of NumPy's libm elsewhere except "
        "for x near 1 (0.7 to 1.4), where the rounding of log(m) itself shows (up to 2 "
        "ulps). float32 runs the same in float64 and rounds once, which is correctly "
        "rounded in practice; NumPy's float32 log10 on an AVX-512 host (its SVML loop) is "
        "itself up to 2 ulps from the correctly rounded value (`log10(float32(1000))` is "
        "3.0000002 there; on hosts without AVX-512 NumPy calls libm and gets 3.0), so the "
        "float32 figures are NumPy's error, not jitlib's.",
        "- `hypot`: float32 squares in float64; float64 scales both operands by a power "
        "of two when the larger is above 2**500 or below 2**-450, so `hypot(1e200, 1e200)` "
        "is 1.414e200 and tiny values do not underflow; an infinity wins over NaN.",
        "- `deg2rad`, `rad2deg`: NumPy's constants, pi / 180 and 180 / pi worked out in the "
        "loop's type (float32: `float32(180) / float32(pi)`, one ulp from "
        "`float32(180 / pi)`); float16 and bfloat16 compute in float32 and round once, as "
        "NumPy's loops do (so do `hypot`, `log2`, `log10`, `logaddexp`, `logaddexp2`).",
        "- `logaddexp`, `logaddexp2`: NumPy's formula, max(a, b) + log1p(exp(-|a - b|)) "
        "(times log2(e) for base 2). Where the result cancels to near zero (a and b "
        "negative, the result a tiny fraction of them) both lose digits, and the ulp "
        "figures count the two implementations' exp/log1p roundings magnified by that "
        "cancellation; the jax backend also flushes exp's subnormal results to zero.",
        "- `floor_divide`, `remainder`, `divmod`: NumPy's npy_divmod, exact on the "
        "interpreter and cpu backends. The jax figures are XLA's float `rem`, which is "
        "not exact for huge quotients: the oracle's limitation, not the composition's.",
        "- `float_power` (and `power` on floats) is the IR's `pow`, which defines "
        "exponents 2, 1, 0.5 and -1 as x*x, x, sqrt(x) and 1/x (NumPy's fast paths for a "
        "scalar exponent). With an array of exponents NumPy calls pow itself, so "
        "`pow(-inf, 0.5)` is inf and `pow(-0.0, 0.5)` is 0.0 there, where jitlib gives "
        "NaN and -0.0: the kind mismatches in the table (the cpu backend's pow answers "
        "as C's pow there, not as the IR defines it).",
        "- `trunc`, `square`, `reciprocal`, `signbit`, `isinf`, `fmax`, `fmin`, `round`, "
        "`clip` and `nan_to_num` are exact (`signbit` of a NaN is False: the IR cannot "
        "see a NaN's sign).",
        "",
    ]


def _coverage():
    """The section on coverage: figures from the registries, the survey from
    tools/numpy_survey.json (counted by tools/numpy_coverage.py)."""
    sys.path.insert(0, str(ROOT))
    from jitlib.trace.functions.unsupported import UNSUPPORTED
    from tools import numpy_coverage as cov
    lines = ["## Coverage", "",
             "`python tools/numpy_coverage.py` prints these figures. Traced means traced "
             "inside jit (the ufunc and function registries, refusals not counted); \"array "
             "functions\" are those NumPy dispatches through `__array_function__`, which "
             "leaves out utilities such as `np.load`, `np.set_printoptions` or "
             "`np.get_include`.", ""]
    lines += [f"- {label}: {ok} of {total} traced ({100 * ok / total:.0f}%)"
              for label, (ok, total, _) in cov.figures().items()]
    survey = cov.load_survey()
    if survey is None:
        return lines + [""]
    ok_sites, sites, ok_names, names, missing = cov.survey_share(survey)
    top = sorted(survey["counts"].items(), key=lambda kv: (-kv[1], kv[0]))
    traced = set(top[i][0] for i in range(len(top))) - set(missing)
    lines += [
        "",
        f"**Survey.** {survey['survey']}. Of {sites} call sites of NumPy functions and "
        f"ufuncs, {ok_sites} ({100 * ok_sites / sites:.1f}%) call one jitlib traces; of "
        f"the {names} distinct functions called, {ok_names} are traced. Regenerate with "
        f"{survey['regenerate']}; the counts are in `tools/numpy_survey.json`.",
        "",
        "Still missing among the 100 most called (calls in parentheses; * refused on "
        "purpose, see below): " + ", ".join(
            f"`np.{q}` ({n}{'*' if q in UNSUPPORTED else ''})"
            for q, n in top[:100] if q not in traced) + ".",
        "",
        *_table(["NumPy", "Call sites", "Traced"],
                [(q, f"`np.{q}`", str(n), "yes" if q in traced else "**no**")
                 for q, n in top[:40]]),
        "",
    ]
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
        *EAGER_SEMANTICS.splitlines(),
        f"## Functions ({len(functions)})",
        "",
        *_table(["NumPy", "Traced as", "Notes"], functions),
        "",
        f"## Creation functions, `jitlib.numpy` only ({len(jnp_only)})",
        "",
        "NumPy never hands these a tracer (np.zeros takes no array; np.asarray converts "
        "rather than dispatching). Called as `np.NAME(...)` from the jitted function "
        "itself, jit sees them (above); `jnp.NAME` works anywhere: inside a trace it "
        "returns traced arrays, outside it NumPy arrays.",
        "",
        *_table(["jitlib.numpy", "Traced as", "Notes"], jnp_only),
        "",
        f"## Ufuncs ({len(ufuncs.BUILDERS)})",
        "",
        "Every ufunc picks its loop with NumPy's own `ufunc.resolve_dtypes`; `out=`, "
        "`where=` (with `out=`) and `dtype=` work. `outer` works on every binary ufunc, "
        "`reduce` and `accumulate` on every binary ufunc with one output: add, multiply, "
        "maximum, minimum, logical_and and logical_or map to the functions above "
        "(`np.maximum.accumulate` / `np.minimum.accumulate` to cummax / cummin, in the "
        "input's type), the others fold left to right as NumPy's loops do (unrolled up to "
        "32 steps, a loop beyond), with NumPy's own dtype rules and errors. `reduceat` "
        "works with static indices (a list or NumPy array: one reduction per segment, "
        "NumPy's rules for non-increasing indices; `np.arange(0, n, k)` as one reduction "
        "of the axis split in two) and is refused with traced ones. `np.add.at`, `np.subtract.at`, `np.multiply.at`, `np.maximum.at` and "
        "`np.minimum.at` on a traced array are one scatter applied in index order, as "
        "NumPy applies them (a loop dtype wider than the array's is refused: cast the "
        "values); traced indices out of range are dropped. The generalized ufuncs "
        "(`matmul`, `matvec`, `vecmat`, `vecdot`) are traced as the functions above and, "
        "as in NumPy, have no methods. The columns list the IR ops each emits for float32 "
        "and int32 operands (conversions included; \"no loop\": NumPy has none either).",
        "",
        *_table(["Ufunc (aliases)", "float32", "int32", "Notes"], _ufunc_rows(ufuncs)),
        "",
        f"## Ufuncs not supported ({len(ufuncs.REFUSED)})",
        "",
        "Every other NumPy ufunc is traced (tests/trace/test_every_ufunc.py walks numpy "
        "and fails on one that is neither); these raise `UnsupportedError` with the reason.",
        "",
        *_table(["Ufunc", "Why", "Instead"],
                [(uf.__name__, f"`np.{uf.__name__}`", *why)
                 for uf, why in sorted(ufuncs.REFUSED.items(), key=lambda i: i[0].__name__)]),
        "",
        *_coverage(),
        *_edge_cases(),
        *_linear_algebra(),
        *_accuracy(),
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
