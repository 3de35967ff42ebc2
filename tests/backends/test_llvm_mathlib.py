"""The LLVM math library: each function compiled in a loop, run, and compared with NumPy.

The reference is NumPy evaluated in extended precision (np.longdouble, 64-bit mantissa on
x86-64) and rounded to the tested dtype, i.e. essentially the correctly rounded result;
NumPy's own float32 loops are themselves up to ~3 ulp off. Running this file
(`python tests/backends/test_llvm_mathlib.py`) prints the measured errors for the docs.
"""
import ctypes
import math
import re

import numpy as np
import pytest

llvm = pytest.importorskip("llvmlite.binding")

from jitlib.backends.llvm import mathlib  # noqa: E402

F32, F64 = np.dtype(np.float32), np.dtype(np.float64)
DTYPES = (F32, F64)
LD = np.longdouble
EXTENDED = np.finfo(LD).nmant > 52     # else the float64 reference is only NumPy's float64

# Documented bounds (docs/cpu_math_accuracy.md): max ulp error versus the rounded reference.
BOUND = {
    "exp": (1, 1), "expm1": (1, 1), "log": (1, 1), "log1p": (1, 1), "tanh": (1, 1),
    "logistic": (1, 1), "sin": (2, 2), "cos": (2, 2), "tan": (1, 1), "erf": (1, 1),
    "pow": (1, 1), "atan2": (2, 2),
}


# ---------------------------------------------------------------- compiling

def _target_machine():
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    target = llvm.Target.from_default_triple()
    return target.create_target_machine(cpu=llvm.get_host_cpu_name(),
                                        features=llvm.get_host_cpu_features().flatten(),
                                        opt=3, jit=True)


def _optimize(mod, tm):
    if hasattr(llvm, "create_pass_builder"):          # the new pass manager
        pto = llvm.create_pipeline_tuning_options(speed_level=3)
        pto.loop_vectorization = True
        pto.slp_vectorization = True
        pb = llvm.create_pass_builder(tm, pto)
        pb.getModulePassManager().run(mod, pb)
    else:                                             # older llvmlite: the legacy one
        pmb = llvm.create_pass_manager_builder()
        pmb.opt_level, pmb.loop_vectorize, pmb.slp_vectorize = 3, True, True
        pm = llvm.create_module_pass_manager()
        tm.add_analysis_passes(pm)
        pmb.populate(pm)
        pm.run(mod)


def loop_ir(name, dtype):
    """A module with `void f(T* a, [T* b,] T* out, i64 n)` applying `name` elementwise."""
    ty = "float" if dtype == F32 else "double"
    nargs = mathlib.arity(name)
    ins = [f"%in{j}" for j in range(nargs)]
    params = ", ".join(f"ptr noalias {p}" for p in ins)
    loads = "".join(f"  %p{j} = getelementptr inbounds {ty}, ptr %in{j}, i64 %i\n"
                    f"  %v{j} = load {ty}, ptr %p{j}\n" for j in range(nargs))
    call_args = ", ".join(f"{ty} %v{j}" for j in range(nargs))
    return f"""{mathlib.declarations_for([(name, dtype)])}
define void @f({params}, ptr noalias %out, i64 %n) {{
entry:
  %nonempty = icmp sgt i64 %n, 0
  br i1 %nonempty, label %loop, label %exit
loop:
  %i = phi i64 [0, %entry], [%i1, %loop]
{loads}  %r = call {ty} @{mathlib.symbol(name, dtype)}({call_args})
  %q = getelementptr inbounds {ty}, ptr %out, i64 %i
  store {ty} %r, ptr %q
  %i1 = add nuw nsw i64 %i, 1
  %more = icmp slt i64 %i1, %n
  br i1 %more, label %loop, label %exit
exit:
  ret void
}}
"""


def compile_loop(name, dtype):
    """(module, target machine) for `loop_ir`, parsed, verified and optimized at -O3."""
    mod = llvm.parse_assembly(loop_ir(name, dtype))
    mod.verify()
    tm = _target_machine()
    _optimize(mod, tm)
    return mod, tm


_KERNELS = {}


def kernel(name, dtype):
    """A Python callable running the compiled loop on NumPy arrays."""
    key = (name, np.dtype(dtype))
    if key not in _KERNELS:
        mod, tm = compile_loop(name, key[1])
        engine = llvm.create_mcjit_compiler(mod, tm)
        engine.finalize_object()
        nargs = mathlib.arity(name)
        cfunc = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * (nargs + 1)), ctypes.c_int64)(
            engine.get_function_address("f"))

        def run(*arrays):
            arrays = [np.ascontiguousarray(a, key[1]) for a in np.broadcast_arrays(*arrays)]
            out = np.empty_like(arrays[0])
            cfunc(*(a.ctypes.data for a in arrays), out.ctypes.data, out.size)
            return out

        run.engine = engine                   # keeps the machine code alive
        _KERNELS[key] = run
    return _KERNELS[key]


# ---------------------------------------------------------------- references and ulps

def _logistic_ref(x):
    with np.errstate(over="ignore"):
        return 1 / (1 + np.exp(-x))


def _erf_ref(x):
    return np.frompyfunc(math.erf, 1, 1)(x.astype(np.float64)).astype(np.float64)


REF = {
    "exp": np.exp, "expm1": np.expm1, "log": np.log, "log1p": np.log1p, "tanh": np.tanh,
    "logistic": _logistic_ref, "sin": np.sin, "cos": np.cos, "tan": np.tan, "erf": _erf_ref,
    "pow": np.power, "atan2": np.arctan2,
}


def reference(name, dtype, *args):
    """NumPy's value in extended precision, rounded once to `dtype`."""
    with np.errstate(all="ignore"):
        return np.asarray(REF[name](*(a.astype(LD) for a in args))).astype(dtype)


def ordered(a):
    """Floats mapped to integers that count ulps (monotonic; -0.0 and +0.0 both map to 0)."""
    ity = np.int32 if a.dtype == F32 else np.int64
    i = a.view(ity).astype(np.int64)
    return np.where(i < 0, -(i & np.iinfo(ity).max), i)


def ulp_error(got, want):
    """Per-element ulp distance; 0 where both are NaN, huge where only one is."""
    both_nan = np.isnan(got) & np.isnan(want)
    d = np.abs(ordered(got) - ordered(want)).astype(np.float64)
    d[np.isnan(got) != np.isnan(want)] = np.inf
    d[both_nan] = 0
    return d


# ---------------------------------------------------------------- inputs

def specials(dtype):
    fi = np.finfo(dtype)
    tiny, big = fi.smallest_subnormal, fi.max
    v = [0.0, tiny, 2 * tiny, fi.smallest_normal, fi.smallest_normal - tiny, fi.eps, 0.5,
         1.0, 2.0, 3.0, big, np.inf, np.nan, 1e-30, 1e-10, 0.1, 0.7, np.pi / 2, np.pi, 10.0,
         100.0, 1e5, 1e10]
    # overflow / underflow thresholds of exp and expm1, and neighbours
    for t in (88.72283, 103.27893, 87.33655, 709.782712893384, 745.1332191019411,
              708.3964185322641, 38.0, 17.3, 0.34657359, 1e-7, 2.0 ** -24, 2.0 ** -53):
        t = dtype.type(t)
        v += [t, np.nextafter(t, dtype.type(np.inf)), np.nextafter(t, dtype.type(0))]
    a = np.array(v, dtype)
    return np.concatenate([a, -a])


def sweep(dtype, n):
    """Log-spaced magnitudes over the full finite range (subnormals included), both signs."""
    fi = np.finfo(dtype)
    with np.errstate(over="ignore"):
        m = np.geomspace(float(fi.smallest_subnormal), float(fi.max), n).astype(dtype)
    m = m[np.isfinite(m)]
    return np.concatenate([m, -m])


def random_bits(dtype, n, rng):
    """Uniformly random bit patterns, NaNs dropped: every binade equally often."""
    ity = np.uint32 if dtype == F32 else np.uint64
    b = rng.integers(0, np.iinfo(ity).max, n, dtype=ity, endpoint=True).view(dtype)
    return b[~np.isnan(b)]


# Where each function is interesting (random uniform draws in addition to the sweep).
RANGE = {"exp": 800, "expm1": 60, "log": 1e6, "log1p": 10, "tanh": 25, "logistic": 800,
         "sin": 1e4, "cos": 1e4, "tan": 1e4, "erf": 7}
TRIG = ("sin", "cos", "tan")
TRIG_LIMIT = {F32: 2.0 ** 24, F64: 2.0 ** 52}     # documented accurate range of sin/cos/tan


def unary_inputs(name, dtype, n=100_000, seed=0):
    rng = np.random.default_rng(seed)
    lim = RANGE[name]
    parts = [specials(dtype), sweep(dtype, n // 4), random_bits(dtype, n // 4, rng),
             rng.uniform(-lim, lim, n).astype(dtype),
             rng.uniform(-1, 1, n // 4).astype(dtype)]
    x = np.concatenate(parts)
    if name in TRIG:                          # measure inside the accurate range
        x = x[~(np.abs(x) > TRIG_LIMIT[dtype])]
    if name == "log1p":
        x = np.concatenate([x, rng.uniform(-1, -0.5, n // 4).astype(dtype)])
    return x


def binary_inputs(name, dtype, n=60_000, seed=1):
    rng = np.random.default_rng(seed)
    sp = specials(dtype)
    gx, gy = np.meshgrid(sp, np.concatenate([sp, np.array([-3, -2, 0.5, 2, 3, 5], dtype)]))
    if name == "atan2":
        a, b = random_bits(dtype, n, rng), random_bits(dtype, n, rng)
        m = min(a.size, b.size)
        u, v = rng.uniform(-10, 10, (2, n)) * np.exp2(rng.integers(-3, 4, (2, n)))
        return (np.concatenate([gx.ravel(), a[:m], u.astype(dtype)]),
                np.concatenate([gy.ravel(), b[:m], v.astype(dtype)]))
    emax = np.finfo(dtype).maxexp
    x = np.exp2(rng.uniform(-emax - 20, emax - 1, n)) * rng.uniform(1, 2, n)
    t = rng.uniform(-emax - 60, emax + 5, n)          # log2 of the result
    y = t / np.log2(x.astype(dtype))
    xi = -rng.uniform(0.5, 3, n // 4)                 # negative base, integral exponent
    yi = np.round(rng.uniform(-60, 60, n // 4))
    x1 = 1 + rng.uniform(-1e-3, 1e-3, n // 4)         # near 1, large exponents
    y1 = rng.uniform(-1e5, 1e5, n // 4)
    xs = np.concatenate([gx.ravel(), x, xi, x1]).astype(dtype)
    ys = np.concatenate([gy.ravel(), y, yi, y1]).astype(dtype)
    return xs, ys


def inputs(name, dtype):
    return binary_inputs(name, dtype) if name in mathlib.BINARY else (unary_inputs(name, dtype),)


def measure(name, dtype):
    """(max ulp error, inputs, results, references)."""
    args = inputs(name, dtype)
    got = kernel(name, dtype)(*args)
    want = reference(name, dtype, *args)
    return ulp_error(got, want).max(), args, got, want


# ---------------------------------------------------------------- tests

CASES = [(n, d) for n in mathlib.UNARY + mathlib.BINARY for d in DTYPES]


def test_supported_and_api():
    assert {(n, d) for n, d in CASES} <= mathlib.SUPPORTED
    assert mathlib.is_supported("exp", np.float32) and not mathlib.is_supported("exp", "i4")
    assert mathlib.symbol("pow", F64) == "jl_pow_f64" and mathlib.arity("pow") == 2
    text = mathlib.function_ir("exp", np.float32)
    assert "define internal float @jl_exp_f32(float %x)" in text and "alwaysinline" in text
    both = mathlib.declarations_for([("exp", F32), ("log", F32), ("exp", F32)])
    assert both.count("@jl_exp_f32(float %x)") == 1
    assert both.count("declare float @llvm.fma.f32") == 1
    with pytest.raises(ValueError):
        mathlib.function_ir("exp", np.int32)


@pytest.mark.parametrize("name,dtype", CASES, ids=[f"{n}-{d}" for n, d in CASES])
def test_accuracy(name, dtype):
    err, args, got, want = measure(name, dtype)
    bound = BOUND[name][dtype == F64] + (0 if EXTENDED or dtype == F32 else 1)
    bad = np.argmax(ulp_error(got, want))
    where = ", ".join(f"{a[bad]!r}" for a in args)
    assert err <= bound, f"{name}({where}) = {got[bad]!r}, want {want[bad]!r}: {err} ulp"
    assert np.array_equal(np.isnan(got), np.isnan(want))
    zero = want == 0
    assert np.array_equal(np.signbit(got[zero]), np.signbit(want[zero])), "sign of zero"


def test_tanh_f32_every_value_around_its_two_forms_meet():
    # the polynomial hands over to 1 - 2/(e + 1) at |x| = 0.5625, where the latter's
    # cancellation is largest: every f32 in [0.5, 0.75) and its negation
    lo, hi = np.float32(0.5).view(np.int32), np.float32(0.75).view(np.int32)
    x = np.arange(lo, hi, dtype=np.int32).view(np.float32)
    x = np.concatenate([x, -x])
    got, want = kernel("tanh", F32)(x), reference("tanh", F32, x)
    err = ulp_error(got, want)
    bad = np.argmax(err)
    assert err.max() <= BOUND["tanh"][0], f"tanh({x[bad]!r}) = {got[bad]!r}, want {want[bad]!r}"


def test_tanh_f32_tiny_values_and_nan_take_the_polynomial():
    # no separate tiny-x select: below 2^-13 the odd polynomial's fma must give x back
    # bit for bit (tanh(x) rounds to x there), subnormals and -0.0 included, and NaN
    # (sent to the polynomial by an unordered compare) must stay NaN
    rng = np.random.default_rng(5)
    hi = np.float32(2.0 ** -13).view(np.int32)
    x = np.concatenate([rng.integers(0, hi, 1 << 16, dtype=np.int32),
                        np.arange(hi - 4096, hi, dtype=np.int32),
                        np.arange(0, 4096, dtype=np.int32)]).view(np.float32)
    x = np.concatenate([x, -x])
    got = kernel("tanh", F32)(x)
    assert np.array_equal(got.view(np.int32), x.view(np.int32)), x[got != x][:5]
    nans = np.array([np.nan, -np.nan], F32)
    assert np.isnan(kernel("tanh", F32)(nans)).all()


@pytest.mark.parametrize("dtype", DTYPES)
def test_exp_carries_every_nan_through_without_a_select(dtype):
    # exp's clamp lets NaN through (ugt/ult) and its integer k is then garbage: every
    # NaN bit pattern, either sign, quiet or signaling, must still come out NaN
    rng = np.random.default_rng(3)
    info = np.finfo(dtype)
    ity = np.dtype(f"u{info.bits // 8}")
    payload = rng.integers(1, 1 << info.nmant, 4096, dtype=np.uint64).astype(ity)
    exponent = ity.type(((1 << (info.bits - 1 - info.nmant)) - 1) << info.nmant)
    sign = ity.type(1 << (info.bits - 1))
    nans = np.concatenate([payload | exponent, payload | exponent | sign]).view(dtype)
    assert np.isnan(nans).all()
    assert np.isnan(kernel("exp", dtype)(nans)).all()


@pytest.mark.parametrize("dtype", DTYPES)
def test_exp_nonpositive_gives_the_bits_of_exp_where_x_is_at_most_zero(dtype):
    # the form for x - max(x) (emitter.py, `below_row_max`) drops exp's upper clamp only
    x = unary_inputs("exp", dtype)
    x = np.concatenate([x, -np.abs(random_bits(dtype, 1 << 16, np.random.default_rng(4))),
                        np.array([np.nan, -np.nan, -np.inf, -0.0, 0.0], dtype)])
    x = x[~(x > 0)]
    got, want = kernel("exp_nonpositive", dtype)(x), kernel("exp", dtype)(x)
    same = (got.view(f"u{dtype.itemsize}") == want.view(f"u{dtype.itemsize}")) \
        | (np.isnan(got) & np.isnan(want))
    assert same.all(), (x[~same][:5], got[~same][:5], want[~same][:5])
    assert mathlib.is_supported("exp_nonpositive", dtype)
    assert mathlib.RESTRICTED["exp_nonpositive"][0] == "exp"
    # one vector min fewer per vector: the clamp at the top of exp's range
    mins = [len(re.findall(r"\bvminp[sd]\b", _loop_asm(n, dtype)))
            for n in ("exp", "exp_nonpositive")]
    assert mins[1] < mins[0], mins


@pytest.mark.parametrize("dtype", DTYPES)
def test_special_values(dtype):
    inf, nan = np.inf, np.nan

    def run(name, *a):
        return kernel(name, dtype)(*[np.array(v, dtype) for v in a])

    for name in ("tanh", "sin", "expm1", "log1p", "erf", "tan"):
        out = run(name, [-0.0, 0.0])
        assert np.signbit(out).tolist() == [True, False], name
    assert run("log", [0.0, -0.0, -1.0, inf, -inf]).tolist()[:2] == [-inf, -inf]
    assert np.isnan(run("log", [-1.0, -inf, nan])).all()
    assert run("exp", [-inf, inf, 1e4, -1e4]).tolist() == [0, inf, inf, 0]
    assert run("logistic", [-inf, inf, 0.0]).tolist() == [0, 1, 0.5]
    sub = np.finfo(dtype).smallest_subnormal
    low = np.log(np.float64(sub)) + 0.1
    got = run("exp", [low])[0]
    assert 0 < got < np.finfo(dtype).smallest_normal          # a subnormal, not flushed
    # C99 pow special cases (NumPy's np.power follows them)
    xs = [nan, 1.0, -1.0, -1.0, 0.0, -0.0, -0.0, 0.0, -inf, -inf, inf, -2.0, -2.0, 0.5, 2.0]
    ys = [0.0, nan, inf, -inf, -1.0, -3.0, 3.0, -inf, 3.0, -3.0, -2.0, 0.5, 3.0, inf, -inf]
    with np.errstate(all="ignore"):
        want = np.power(np.array(xs, dtype), np.array(ys, dtype))
    got = run("pow", xs, ys)
    assert np.array_equal(got, want, equal_nan=True)
    num = ~np.isnan(want)                        # the sign of a NaN is not specified
    assert np.array_equal(np.signbit(got[num]), np.signbit(want[num]))
    # C99's atan2 where the answer is a multiple of pi/4 (an infinite or zero operand):
    # NumPy's value to the bit (atan2(inf, -1) once came out an ulp above pi/2)
    ys = [inf, inf, -inf, -inf, 3.0, -3.0, inf, inf, -inf, 0.0, -0.0, 0.0, 2.0, -2.0]
    xs = [-1.5, 2.0, -1e30, 0.0, -inf, -inf, inf, -inf, -inf, -0.0, -1.0, 5.0, 0.0, -0.0]
    want = np.arctan2(np.array(ys, dtype), np.array(xs, dtype))
    assert np.array_equal(run("atan2", ys, xs), want)
    for name in ("sin", "cos"):                  # beyond the accurate range: still in [-1, 1]
        big = np.array([1e20, -3e25, np.finfo(dtype).max, 2.0 ** 60], dtype)
        out = kernel(name, dtype)(big)
        assert (np.abs(out) <= 1).all(), (name, out)


def _loop_asm(name, dtype):
    mod, tm = compile_loop(name, dtype)
    asm = tm.emit_assembly(mod)
    return asm[asm.index("\nf:"):]


def _wide_vectors():
    feats = llvm.get_host_cpu_features()
    return bool(feats.get("avx512f") or feats.get("avx2"))


def test_exp_f32_loop_is_vectorized():
    body = _loop_asm("exp", F32)
    if _wide_vectors():
        assert re.search(r"\bv(fmadd|fnmadd|mul|add)\w*ps\s+[^\n]*%[yz]mm", body), \
            "no packed ymm/zmm float ops in the exp loop"
    else:
        assert re.search(r"\b(mul|add)ps\s", body), "no packed float ops in the exp loop"
    assert not re.search(r"\bcall", body), "the exp loop calls out"


@pytest.mark.parametrize("name,dtype", CASES, ids=[f"{n}-{d}" for n, d in CASES])
def test_every_loop_vectorizes_without_calls(name, dtype):
    body = _loop_asm(name, dtype)
    assert not re.search(r"\bcall", body), f"the {name} loop calls out"
    suffix = "ps" if dtype == F32 else "pd"
    if name == "pow" and dtype == F32:
        suffix = "pd"                     # computed in double precision
    reg = "%[yz]mm" if _wide_vectors() else "%xmm"
    assert re.search(rf"\bv?\w+{suffix}\s+[^\n]*{reg}", body), f"{name} is not vectorized"


def main():
    """Print the measured table (ulp error, tested range) for docs/cpu_math_accuracy.md."""
    for name, dtype in CASES:
        err, args, got, want = measure(name, dtype)
        finite = np.concatenate([a[np.isfinite(a)] for a in args])
        print(f"| {name} | {dtype} | {err:.0f} | {len(args[0])} points, "
              f"|x| up to {np.abs(finite).max():.3g} |")


if __name__ == "__main__":
    main()


# ---------------------------------------------------------------- the two scalings

def _two_multiply_kernel(name, dtype):
    """`kernel` with _scale2's portable form (no llvm.ldexp), compiled apart."""
    saved, cache = mathlib._native_ldexp, dict(mathlib._CACHE)
    try:
        mathlib._native_ldexp = lambda: False
        mathlib._CACHE.clear()
        mod, tm = compile_loop(name, dtype)
        assert "llvm.ldexp" not in str(mod)
    finally:
        mathlib._native_ldexp = saved
        mathlib._CACHE.clear()
        mathlib._CACHE.update(cache)
    engine = llvm.create_mcjit_compiler(mod, tm)
    engine.finalize_object()
    return engine, ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)(
        engine.get_function_address("f"))


@pytest.mark.parametrize("name", ["exp", "logistic", "erf"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_ldexp_scaling_gives_the_bits_of_the_two_multiplications(name, dtype):
    # on AVX-512 hosts _scale2 is one vscalef; both forms round once, so the bits must
    # agree everywhere (all 2^32 float32 inputs were checked once; here a sample, with
    # the overflow and subnormal edges of exp dense)
    if not mathlib._native_ldexp():
        pytest.skip("the host has no AVX-512: only the two-multiply form is emitted")
    rng = np.random.default_rng(11)
    info = np.finfo(dtype)
    edge = 104.0 if dtype == F32 else 745.2
    bits = np.dtype(f"u{info.bits // 8}")
    patterns = rng.integers(0, 1 << info.bits, 1 << 18, dtype=np.uint64).astype(bits)
    with np.errstate(over="ignore"):
        ranges = np.concatenate([
            rng.uniform(-edge, -edge + 20, 1 << 16), rng.uniform(-2 * edge, 2 * edge, 1 << 16),
            rng.uniform(np.log(info.max) - 2, np.log(info.max) + 2, 1 << 14)]).astype(dtype)
    x = np.concatenate([patterns.view(dtype), ranges])
    engine, portable = _two_multiply_kernel(name, dtype)
    want = np.empty_like(x)
    portable(x.ctypes.data, want.ctypes.data, x.size)
    got = kernel(name, dtype)(x)
    assert "llvm.ldexp" in loop_ir(name, dtype)
    same = (got.view(bits) == want.view(bits)) | (np.isnan(got) & np.isnan(want))
    assert same.all(), (x[~same][:5], got[~same][:5], want[~same][:5])
