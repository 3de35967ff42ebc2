"""Every NumPy ufunc is traced on every backend or refused with a reason (issue 23).

The walk over numpy itself fails when NumPy grows a ufunc jitlib neither traces nor
lists; the ufuncs composed bit by bit (frexp, ldexp, modf, nextafter, spacing, gcd, lcm,
bitwise_count) must equal eager NumPy exactly, sign of zero included, on edge values;
reduce, accumulate and outer work wherever NumPy defines them.
"""
import pathlib
import warnings

import ml_dtypes
import numpy as np
import pytest

import jitlib
from jitlib import errors
from jitlib.testing import check_backends
from jitlib.trace import registry, ufuncs
from ufunc_edges import BF16, FLOATS, INTS, float_edges, int_edges, same_bits

BACKENDS = ("interpreter", "cpu", "jax")


def numpy_ufuncs():
    return sorted({obj for obj in vars(np).values() if isinstance(obj, np.ufunc)},
                  key=lambda u: u.__name__)


def test_every_numpy_ufunc_is_traced_or_refused_with_a_reason():
    text = (pathlib.Path(__file__).resolve().parents[2] / "docs" / "numpy_support.md"
            ).read_text()
    refused_section = text.split("## Ufuncs not supported")[1]
    neither = []
    for uf in numpy_ufuncs():
        if uf in ufuncs.BUILDERS:
            continue
        if uf.signature is not None and uf.__name__ in registry.BY_NAME:
            continue   # a generalized ufunc is traced as its function
        if uf in ufuncs.REFUSED:
            assert f"`np.{uf.__name__}`" in refused_section, uf.__name__
            continue
        neither.append(uf.__name__)
    assert not neither, f"neither traced nor refused: {neither}"


# -- exact edge values

def _quiet(fn, *args):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return fn(*args)


def check_exact(fn, *args, backends=BACKENDS):
    want = _quiet(fn, *args)
    for backend in backends:
        got = _quiet(jitlib.jit(fn, backend=backend), *args)
        pairs = zip(got, want) if isinstance(want, tuple) else [(got, want)]
        for g, w in pairs:
            same_bits(g, w, f"{getattr(fn, '__name__', fn)} on {backend}")


# XLA on the CPU flushes subnormal inputs and results to zero: the jax backend (the
# oracle) is checked on normal values only
WITH_SUBNORMALS = [("interpreter", True), ("cpu", True), ("jax", False)]


def _normal_or_special(x, dtype):
    info = ml_dtypes.finfo(dtype) if dtype == BF16 else np.finfo(dtype)
    a = np.abs(np.asarray(x, np.float64))
    return ~np.isfinite(a) | (a == 0) | (a >= float(info.smallest_normal))


def _cases(fn, dtype, subnormals, *arrays):
    """The elements of `arrays` (1-d, aligned) to check: all, or, for the jax backend,
    those whose inputs and results are all normal, zero, infinite or NaN."""
    if subnormals:
        return arrays
    want = _quiet(fn, *arrays)
    keep = np.ones(len(arrays[0]), bool)
    for a in arrays + (want if isinstance(want, tuple) else (want,)):
        if a.dtype.kind == "f" or a.dtype == BF16:
            keep &= _normal_or_special(a, dtype)
    return tuple(a[keep] for a in arrays)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("ufunc", [np.frexp, np.modf, np.spacing], ids=lambda u: u.__name__)
def test_unary_float_parts_are_exact(ufunc, dtype):
    for backend, subnormals in WITH_SUBNORMALS:
        args = _cases(ufunc, dtype, subnormals, float_edges(dtype))
        check_exact(lambda x: ufunc(x), *args, backends=(backend,))


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_nextafter_is_exact(dtype):
    x = float_edges(dtype)
    grid = np.repeat(x, len(x)), np.tile(x, len(x))
    for backend, subnormals in WITH_SUBNORMALS:
        check_exact(np.nextafter, *_cases(np.nextafter, dtype, subnormals, *grid),
                    backends=(backend,))


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("exponent_type", [np.int32, np.int64])
def test_ldexp_is_exact_and_rounds_once(dtype, exponent_type):
    limit = np.iinfo(exponent_type)
    n = np.array([0, 1, -1, 5, -5, 20, -20, 60, -60, 126, -126, 149, -150, 1023, -1022,
                  1024, -1074, -1075, -1080, 2000, -2000, 2 ** 31 - 1, -2 ** 31,
                  limit.max, limit.min], exponent_type)
    x = float_edges(dtype)
    grid = np.repeat(x, len(n)), np.tile(n, len(x))
    for backend, subnormals in WITH_SUBNORMALS:
        check_exact(np.ldexp, *_cases(np.ldexp, dtype, subnormals, *grid),
                    backends=(backend,))
    check_exact(lambda x: np.ldexp(x, 3), x, backends=("interpreter",))


@pytest.mark.parametrize("dtype", INTS, ids=str)
def test_gcd_lcm_and_bitwise_count_are_exact(dtype):
    v = int_edges(dtype)
    a, b = np.repeat(v, len(v)), np.tile(v, len(v))
    check_exact(np.gcd, a, b)
    check_exact(np.lcm, a, b)
    check_exact(np.bitwise_count, v)


def test_gcd_and_lcm_of_every_int8_pair():
    x = np.arange(-128, 128, dtype=np.int8)
    a, b = np.repeat(x, 256), np.tile(x, 256)
    check_exact(lambda a, b: (np.gcd(a, b), np.lcm(a, b)), a, b, backends=("cpu",))


def test_integer_ufuncs_take_python_ints_and_bools():
    x = np.array([12, -18, 0, 7], np.int16)
    check_exact(lambda x: (np.gcd(x, 8), np.lcm(30, x)), x)
    check_exact(np.bitwise_count, np.array([True, False]))


def test_matvec_and_vecmat_match_numpy():
    rng = np.random.default_rng(0)
    a, v, w = rng.standard_normal((3, 4, 5)), rng.standard_normal(5), rng.standard_normal(4)
    check_backends(np.matvec, a, v, backends=BACKENDS)
    check_backends(np.vecmat, w, a, backends=BACKENDS)
    check_backends(np.vecmat, rng.standard_normal((3, 4)).astype(np.float32),
                   a.astype(np.float32), backends=BACKENDS)
    check_exact(np.matvec, np.arange(6, dtype=np.int8).reshape(2, 3), np.arange(3, dtype=np.int8))


# -- refusals

def test_isnat_is_refused_with_the_reason_at_the_user_line():
    with pytest.raises(errors.UnsupportedError, match="datetime64") as info:
        jitlib.jit(lambda x: np.isnat(x), backend="interpreter")(np.ones(3))
    assert "test_every_ufunc.py" in str(info.value)


def test_generalized_ufuncs_have_no_methods_as_in_numpy():
    with pytest.raises(TypeError, match="non-trivial signature"):
        np.matmul.outer(np.ones(2), np.ones(2))
    with pytest.raises(TypeError, match="non-trivial signature"):   # NumPy's own check
        jitlib.jit(lambda x: np.matmul.outer(x, x), backend="interpreter")(np.ones(2))
    with pytest.raises(errors.UnsupportedError, match="axes="):
        jitlib.jit(lambda x: np.matmul(x, x, axes=[(0, 1), (0, 1), (0, 1)]),
                   backend="interpreter")(np.ones((2, 2)))


# -- methods: reduce, accumulate, outer on every binary ufunc

def _sample(ufunc):
    """bool for comparisons, int32 where the ufunc has an integer loop, else float64; small
    positive values keep power, shifts and gcd inside NumPy's defined range."""
    rng = np.random.default_rng(7)
    if all(t.endswith("?") for t in ufunc.types if t[0] != "O"):   # comparisons, logic
        return rng.random((3, 5)) < 0.5
    integer = any(t.startswith("ii->") for t in ufunc.types)
    if integer and ufunc not in (np.true_divide, np.power):
        # (integer power refuses a traced exponent whose sign it cannot see)
        return rng.integers(1, 6, (3, 5)).astype(np.int32)
    return rng.uniform(0.5, 2.0, (3, 5))


# NumPy's float loops of these (SIMD, on this AVX-512 host) give reduce results that are
# not the left fold its own accumulate computes; jitlib folds, and is checked against that
FOLD_NOT_REDUCE = (np.arctan2, np.power)
BINARY = [uf for uf in numpy_ufuncs() if uf in ufuncs.BUILDERS and uf.nin == 2]


def _close(fn, *args, backend="interpreter", want=None):
    """jit(fn) equals NumPy's answer (`want`, by default fn's), or raises its error."""
    if want is None:
        try:
            want = _quiet(fn, *args)
        except (TypeError, ValueError) as e:   # ldexp has no float-float loop, ...
            with pytest.raises(type(e)):
                jitlib.jit(fn, backend=backend)(*args)
            return
    got = _quiet(jitlib.jit(fn, backend=backend), *args)
    for g, w in (zip(got, want) if isinstance(want, tuple) else [(got, want)]):
        assert np.asarray(g).dtype == np.asarray(w).dtype, fn
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=0, equal_nan=True)


@pytest.mark.parametrize("ufunc", BINARY, ids=lambda u: u.__name__)
def test_binary_ufunc_methods_match_numpy(ufunc):
    x = _sample(ufunc)
    _close(lambda x: ufunc.outer(x[0], x[1, :3]), x)
    if ufunc is np.ldexp:
        _close(lambda x: ufunc.outer(x[0], np.arange(-3, 3)), x)
    if ufunc.nout != 1:
        with pytest.raises(ValueError):
            jitlib.jit(lambda x: ufunc.reduce(x), backend="interpreter")(x)
        return
    for axis in (0, 1, -1):
        want = None
        if ufunc in FOLD_NOT_REDUCE and x.dtype.kind == "f":
            want = np.take(ufunc.accumulate(x, axis=axis), -1, axis=axis)
        _close(lambda x: ufunc.reduce(x, axis=axis), x, want=want)
        _close(lambda x: ufunc.accumulate(x, axis=axis), x)
    if ufunc not in FOLD_NOT_REDUCE:
        _close(lambda x: ufunc.reduce(x, axis=1, keepdims=True), x)


@pytest.mark.parametrize("backend", BACKENDS)
def test_folds_in_numpys_order_on_every_backend(backend):
    """Non-associative ufuncs fold left to right; past 32 steps as a loop."""
    rng = np.random.default_rng(3)
    ints = rng.integers(-40, 40, (4, 50)).astype(np.int32)
    floats = rng.uniform(0.5, 2.0, (4, 50))
    check = check_exact if backend != "jax" else (
        lambda fn, *a, backends: check_backends(fn, *a, backends=backends))
    for axis in (0, 1):
        check(lambda x: (np.subtract.reduce(x, axis=axis), np.gcd.accumulate(x, axis=axis),
                         np.bitwise_xor.reduce(x, axis=axis)), ints, backends=(backend,))
        check(lambda x: (np.floor_divide.accumulate(x, axis=axis),
                         np.fmin.reduce(x, axis=axis), np.subtract.accumulate(x, axis=axis)),
              floats, backends=(backend,))


def test_reduce_arguments_and_errors_follow_numpy():
    x = np.arange(1, 13, dtype=np.int32).reshape(3, 4)
    check_exact(lambda x: (np.gcd.reduce(x, axis=None),
                           np.bitwise_or.reduce(x, axis=(0, 1)),
                           np.gcd.reduce(x, axis=1, initial=12),
                           np.bitwise_and.reduce(x[:, :0].astype(np.uint8), axis=1),
                           np.equal.reduce(x > 3, axis=1),
                           np.ldexp.reduce(x, axis=0)), x, backends=("interpreter", "cpu"))
    for fn in (lambda x: np.subtract.reduce(x, axis=None),       # not reorderable
               lambda x: np.subtract.reduce(x[:, :0], axis=1),   # empty, no identity
               lambda x: np.ldexp.reduce(x * 1.0, axis=0)):      # no float-float loop
        with pytest.raises(Exception) as eager:
            fn(x)
        with pytest.raises(type(eager.value)) as traced:
            jitlib.jit(fn, backend="interpreter")(x)
        assert "test_every_ufunc.py" in str(traced.value)
    with pytest.raises(errors.UnsupportedError, match="where="):
        jitlib.jit(lambda x: np.gcd.reduce(x, where=x > 2), backend="interpreter")(x)


@pytest.mark.parametrize("dtype,bits", [(np.float64, np.uint64), (np.float32, np.uint32),
                                        (np.float16, np.uint16)], ids=str)
def test_float_parts_on_random_bit_patterns(dtype, bits):
    """Any bit pattern: every exponent, subnormals (the low patterns), NaN payloads."""
    rng = np.random.default_rng(11)
    pattern = rng.integers(0, np.iinfo(bits).max, 3000, dtype=bits, endpoint=True)
    pattern[:300] >>= np.dtype(bits).itemsize * 8 - 12   # subnormals and tiny normals
    x = pattern.view(dtype)
    n = rng.integers(-1200, 1200, len(x)).astype(np.int32)
    check_exact(lambda x, y, n: (*np.frexp(x), *np.modf(x), np.spacing(x),
                                 np.nextafter(x, y), np.ldexp(x, n)),
                x, np.roll(x, 1), n, backends=("interpreter", "cpu"))
