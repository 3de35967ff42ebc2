"""The NumPy functions real code calls most (tools/numpy_survey.json) equal eager NumPy
under jit (issue 23: 85% of the surveyed functions).

Each case runs through `check_backends` on the interpreter, cpu and jax backends.
Functions NumPy answers from dtypes or shapes alone (np.issubdtype, np.isscalar) are
checked by what the traced function computes with their answers.
"""
import warnings

import numpy as np
import pytest

import jitlib
from jitlib import errors
from jitlib.hlo.ops import Op
from jitlib.testing import check_backends

BACKENDS = ("interpreter", "cpu", "jax")
F32, F64, I8, I32, I64 = np.float32, np.float64, np.int8, np.int32, np.int64


def check(fn, *args, **kwargs):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return check_backends(fn, *args, backends=BACKENDS, **kwargs)


def rand(*shape, dtype=F64, seed=0):
    return (np.random.default_rng(seed).standard_normal(shape) * 3).astype(dtype)


def edges(dtype=F64):
    return np.array([0.0, -0.0, 1.5, -2.0, np.inf, -np.inf, np.nan, 3.0], dtype)


def raises_in_jit(fn, *args, error=errors.UnsupportedError, match=None):
    with pytest.raises(error, match=match) as traced:
        jitlib.jit(fn, backend="interpreter")(*args)
    assert "test_survey_functions.py" in str(traced.value)


# -- dtype and layout queries

@pytest.mark.parametrize("dtype", [F32, F64, I8, I64, np.bool_, np.uint16])
def test_dtype_queries_answer_from_the_tracer_dtype(dtype):
    x = np.ones((2, 3), dtype)

    def f(x):
        kinds = [np.issubdtype(x.dtype, k) for k in (np.floating, np.integer, np.number)]
        return x.astype(np.promote_types(x.dtype, np.float16)) * sum(kinds)
    check(f, x)


def test_isscalar_iterable_isfortran_like_an_ndarray():
    # a scalar argument is traced as a 0-d array: np.isscalar says False for it, as for
    # np.asarray(2.0), where eagerly np.isscalar(np.float64(2.0)) is True
    def f(x):
        flags = (np.isscalar(x), np.isscalar(3.0), np.iterable(x), np.isfortran(x))
        return x * sum(2 ** i * v for i, v in enumerate(flags))
    check(f, rand(3))
    check(f, rand(2, 3))
    check(lambda x: x * np.iterable(x), np.float64(2.0))   # 0-d: not iterable


@pytest.mark.parametrize("dtypes", [(F32,), (F32, F64), (I32,), (I8, F32)])
def test_common_type_and_mintypecode(dtypes):
    arrays = [np.ones(3, d) for d in dtypes]
    check(lambda *xs: sum(x.astype(np.common_type(*xs)) for x in xs), *arrays)
    check(lambda x: x.astype(np.mintypecode([x.dtype.char, "f"])), arrays[0])


def test_min_scalar_type_of_arrays_and_refused_for_traced_scalars():
    check(lambda x: x.astype(np.min_scalar_type(x)), rand(3, dtype=F32))
    raises_in_jit(lambda x: x.astype(np.min_scalar_type(x)), np.float64(3.0))


@pytest.mark.parametrize("name", ["ascontiguousarray", "asfortranarray"])
@pytest.mark.parametrize("shape", [(), (3,), (2, 3)])
def test_layout_functions_keep_the_values(name, shape):
    # looked up at the call: jit sees these as np.NAME(...) only (trace/numpy_hooks.py)
    def fn(*args, **kwargs):
        return getattr(np, name)(*args, **kwargs)
    check(lambda x: fn(x) + 1, rand(*shape))
    check(lambda x: fn(x.T, dtype=F32), rand(*shape))
    check(lambda x: fn([x, x]), rand(*shape))


@pytest.mark.parametrize("requirements", [None, "C", ["F", "A"], ["C_CONTIGUOUS", "W", "O"]])
def test_require(requirements):
    check(lambda x: np.require(x, F32, requirements), rand(2, 3))
    check(lambda x: np.require(x.T, requirements=requirements), rand(2, 3, dtype=I32))


def test_require_rejects_an_unknown_flag():
    raises_in_jit(lambda x: np.require(x, requirements="Q"), rand(3),
                  error=errors.JitlibValueError)


# -- NumPy's own code on tracers

@pytest.mark.parametrize("dtype", [F32, F64])
def test_isposinf_isneginf_isreal_fix(dtype):
    x = edges(dtype)
    for fn in (np.isposinf, np.isneginf, np.isreal, np.fix):
        check(fn, x)
    check(np.fix, rand(4, 5, dtype=dtype))
    check(np.isreal, np.arange(4))


@pytest.mark.parametrize("new_shape", [(5, 3), 7, (2,), (0,), (4, 4, 2)])
def test_resize_repeats_the_values(new_shape):
    check(lambda x: np.resize(x, new_shape), rand(3, 4))
    check(lambda x: np.resize(x, new_shape), np.arange(5))


@pytest.mark.parametrize("axis,start", [(1, 0), (2, 0), (0, 2), (-1, 1), (2, 3)])
def test_rollaxis(axis, start):
    check(lambda x: np.rollaxis(x, axis, start), rand(2, 3, 4))


def test_logspace_geomspace_with_traced_ends():
    check(lambda a, b: np.logspace(a, b, 7), np.float64(0.5), np.float64(2.0))
    check(lambda a, b: np.logspace(a, b, 4, base=2.0, endpoint=False), np.float64(0.0),
          np.array([1.0, 3.0]))
    check(lambda x: np.linspace(x[0], x[1], 5, retstep=True), rand(2))
    check(lambda x: x * np.logspace(0, 2, 3) + np.geomspace(1, 8, 3), rand(3))


@pytest.mark.parametrize("k", [0, 1, -1])
def test_triangle_and_diagonal_indices(k):
    check(lambda x: x[np.tril_indices_from(x, k)], rand(4, 4))
    check(lambda x: x[np.triu_indices_from(x, k)], rand(4, 5))
    check(lambda x: np.concatenate([x[np.tril_indices(4, k)], x[np.triu_indices(4, k, 4)]]),
          rand(4, 4))
    check(lambda x: x[np.diag_indices_from(x)], rand(3, 3, 3))
    check(lambda x: x[np.diag_indices(3)], rand(3, 3))


def test_windows_as_constants():
    for fn in (np.hamming, np.hanning, np.blackman, np.bartlett):
        check(lambda x: x * fn(5), rand(5))


@pytest.mark.parametrize("n,m", [(3, 3), (4, 2), (1, 5)])
def test_polyadd_polysub(n, m):
    check(np.polyadd, rand(n), rand(m, seed=1))
    check(np.polysub, rand(n, dtype=F32), rand(m, seed=1, dtype=F32))


# -- complex-number functions on real arrays

@pytest.mark.parametrize("dtype", [F32, F64, I8, I64])
def test_complex_functions_on_real_values(dtype):
    x = np.array([0, -0.0, 1.5, -2, 3, -7], F64).astype(dtype)
    for fn in (np.iscomplex, np.real_if_close, np.angle, np.sinc):
        check(fn, x)
    check(lambda x: np.angle(x, deg=True), x)
    check(np.iscomplex, np.float64(2.0))


def test_sinc_edges():
    check(np.sinc, edges(F32))
    check(np.sinc, np.linspace(-3, 3, 13))


# -- elements moved to static positions: delete, insert, block

@pytest.mark.parametrize("obj,axis", [(1, 1), (-1, 0), ([0, 2], 1), (slice(1, None, 2), None),
                                      (np.array([True, False, True]), 0), ([], 1), (0, None)])
def test_delete(obj, axis):
    check(lambda x: np.delete(x, obj, axis), rand(3, 4))
    check(lambda x: np.delete(x, obj, axis), np.arange(12, dtype=I32).reshape(3, 4))


@pytest.mark.parametrize("obj,values,axis", [
    (1, 5.0, 1), (1, [[1], [2], [3]], 1), ([1, 3], [7, 8], None), (0, 2.5, None),
    (-1, [1, 2, 3, 4], 0), (slice(0, 2), 9, 1), (4, [0.5, 1.5, 2.5], 1)])
def test_insert(obj, values, axis):
    check(lambda x: np.insert(x, obj, values, axis), rand(3, 4))
    check(lambda x: np.insert(x, obj, values, axis), np.arange(12, dtype=I8).reshape(3, 4))


def test_insert_traced_values():
    check(lambda x, v: np.insert(x, 2, v, axis=0), rand(4, 2), rand(2, dtype=F32, seed=1))


def test_delete_refuses_traced_positions():
    raises_in_jit(lambda x, i: np.delete(x, i), rand(4), np.int64(1))


def test_block():
    a, b = rand(2, 2), rand(2, 3, dtype=F32, seed=1)
    check(lambda a, b: np.block([[a, b], [b[:, :2], np.ones((2, 3))]]), a, b)
    check(lambda a, b: np.block([a[0], 1.0, b[1]]), a, b)
    check(lambda a: np.block(a), a)
    check(lambda a, b: np.block([[[a]], [[a]]]), a, b)


# -- index arithmetic

def test_ix():
    x = rand(4, 5)
    check(lambda x: x[np.ix_([0, 2], [1, 3, 4])], x)
    check(lambda x, i, j: x[np.ix_(i, j)], x, np.array([3, 0]), np.array([4, 4, 1]))
    check(lambda x: x[np.ix_(np.array([True, False, True, True]), [0])], x)
    raises_in_jit(lambda x: x[np.ix_(x[:, 0] > 0, [0])], x)


@pytest.mark.parametrize("shape", [(3, 4), (2, 3, 4), (7,), ()])
@pytest.mark.parametrize("order", ["C", "F"])
def test_unravel_and_ravel_round_trip(shape, order):
    size = int(np.prod(shape))
    flat = np.arange(size)[::-1].copy() if shape else np.array(0)
    check(lambda i: np.unravel_index(i, shape, order=order), flat)
    check(lambda i: np.unravel_index(i, shape, order), flat.astype(I32))
    if shape:
        coords = np.unravel_index(flat, shape, order=order)
        check(lambda *c: np.ravel_multi_index(c, shape, order=order), *coords)


def test_unravel_index_of_argmax():
    check(lambda x: np.unravel_index(np.argmax(x), x.shape), rand(3, 5))


@pytest.mark.parametrize("mode", ["wrap", "clip", ("clip", "wrap")])
def test_ravel_multi_index_modes(mode):
    i, j = np.array([-1, 0, 5, 2]), np.array([7, -3, 1, 0])
    check(lambda i, j: np.ravel_multi_index((i, j), (3, 4), mode=mode), i, j)


def test_index_math_rejects_float_indices():
    raises_in_jit(lambda x: np.unravel_index(x, (2, 3)), rand(3),
                  error=errors.JitlibTypeError)


# -- choose, putmask

@pytest.mark.parametrize("mode", ["raise", "wrap", "clip"])
def test_choose(mode):
    idx = np.array([[0, 1, 2], [2, 1, 0]])
    choices = [rand(2, 3), rand(3, seed=1), np.float64(7.0)]
    check(lambda a, c0, c1, c2: np.choose(a, [c0, c1, c2], mode=mode), idx, *choices)
    if mode != "raise":
        check(lambda a, c: np.choose(a, c, mode=mode), idx * 3 - 2, rand(3, 2, 3))
    check(lambda a, c: np.choose(a, (c, 0.5)), np.array([1, 0, 1]), rand(3, dtype=F32))


@pytest.mark.parametrize("values", [0.0, [1.0, 2.0], np.arange(12), [-1], np.array([3, 4])])
def test_putmask(values):
    def f(x):
        np.putmask(x, x > 0, values)
        return x
    check(f, rand(3, 4))
    check(f, np.arange(-6, 6, dtype=I64).reshape(3, 4))


def test_putmask_casts_arrays_only_safely_like_numpy():
    def f(x):
        np.putmask(x, x > 0, np.arange(12.0))
    with pytest.raises(TypeError):
        f(np.ones(12, I32))
    raises_in_jit(f, np.ones(12, I32), error=errors.JitlibTypeError)


def test_putmask_with_traced_values_writes_the_argument():
    def f(x, v):
        np.putmask(x, x < 0, v)
    check(f, rand(2, 5), rand(3, seed=2))


# -- cov, corrcoef

@pytest.mark.parametrize("shape", [(3, 10), (1, 5), (6,), (4, 2)])
@pytest.mark.parametrize("rowvar", [True, False])
def test_cov_and_corrcoef(shape, rowvar):
    x = rand(*shape)
    for ddof, bias in ((None, False), (None, True), (0, False), (2, False)):
        check(lambda x: np.cov(x, rowvar=rowvar, bias=bias, ddof=ddof), x)
    check(lambda x: np.corrcoef(x, rowvar=rowvar), x)
    check(lambda x: np.cov(x, rowvar=rowvar), x.astype(F32))
    check(lambda x: np.cov(x, dtype=F32), x)


def test_cov_with_y_and_weights():
    x, y = rand(2, 6), rand(6, seed=1)
    check(lambda x, y: np.cov(x, y), x, y)
    check(lambda x, y: np.corrcoef(x, y), x, y)
    check(lambda x, y: np.cov(x.T, y[:, None], rowvar=False), x, y)
    f, a = np.array([1, 2, 1, 3, 1, 1]), np.array([0.5, 1.0, 2.0, 1.0, 0.25, 1.0])
    check(lambda x, f: np.cov(x, fweights=f), x, f)
    check(lambda x, a: np.cov(x, aweights=a), x, a)
    check(lambda x, f, a: np.cov(x, fweights=f, aweights=a, ddof=0), x, f, a)
    check(lambda x, f, a: np.cov(x, fweights=f, aweights=a), x, f, a)


def test_cov_of_integers_and_a_single_variable():
    check(np.cov, np.arange(10).reshape(2, 5) ** 2)
    check(np.corrcoef, rand(5))
    check(np.corrcoef, np.ones(5))   # constant: NaN, as NumPy's 0/0


# -- polynomials, differences

@pytest.mark.parametrize("dtype", [F64, F32, I64])
def test_poly_from_roots(dtype):
    check(np.poly, np.array([1, -2, 3, 0.5], F64).astype(dtype))
    check(np.poly, np.array([2.0], dtype))


@pytest.mark.parametrize("N,increasing", [(None, False), (3, True), (1, False), (0, True),
                                          (6, False)])
def test_vander(N, increasing):
    check(lambda x: np.vander(x, N, increasing), rand(4))
    check(lambda x: np.vander(x, N, increasing), np.arange(-2, 3, dtype=I32))


def test_ediff1d():
    x = rand(3, 4)
    check(np.ediff1d, x)
    check(lambda x: np.ediff1d(x, to_begin=-99, to_end=[1, 2]), x)
    check(lambda x: np.ediff1d(x, to_end=np.array([7], I8)), np.arange(5, dtype=I32))
    raises_in_jit(lambda x: np.ediff1d(x, to_begin=0.5), np.arange(5),
                  error=errors.JitlibTypeError)


@pytest.mark.parametrize("axis", [-1, 0])
def test_unwrap(axis):
    phase = np.cumsum(rand(4, 9), axis=axis)
    check(lambda p: np.unwrap(p, axis=axis), phase)
    check(lambda p: np.unwrap(p, discont=4.0, axis=axis), phase)
    check(lambda p: np.unwrap(p, period=360, axis=axis), phase * 50)
    check(lambda p: np.unwrap(p, period=6), np.array([0, 4, 8, 3, 9, -1]))
    check(lambda p: np.unwrap(p), np.array([0.0, np.pi, 2 * np.pi, -np.pi], F32))


# -- refused on purpose: data-dependent lengths

@pytest.mark.parametrize("fn", [
    lambda x: np.polymul(x, x), lambda x: np.polydiv(x, x[:2]), np.roots, np.trim_zeros,
    lambda x: np.setdiff1d(x, x[:1]), lambda x: np.intersect1d(x, x),
    lambda x: np.union1d(x, x), lambda x: np.setxor1d(x, x)])
def test_refused_with_a_reason(fn):
    raises_in_jit(fn, rand(4), match="not supported inside jit")


def test_asarray_chkfinite_is_refused_for_traced_values():
    raises_in_jit(np.asarray_chkfinite, rand(3), error=errors.TracerConversionError)


# -- geomspace, apply_over_axes, unpackbits

@pytest.mark.parametrize("ends", [(1.0, 1000.0), (-1.0, -16.0), (8.0, 0.5), (2.0, 3.0)])
@pytest.mark.parametrize("num,endpoint", [(5, True), (4, False), (1, True), (0, True)])
def test_geomspace_with_traced_ends(ends, num, endpoint):
    a, b = (np.float64(e) for e in ends)
    check(lambda a, b: np.geomspace(a, b, num, endpoint), a, b)
    check(lambda a, b: np.geomspace(a, b, num, endpoint, dtype=F32), a, b)


def test_geomspace_of_arrays_along_an_axis():
    check(lambda a, b: np.geomspace(a, b, 4, axis=1), np.array([1.0, 2.0]),
          np.array([10.0, -0.5]))
    check(lambda a: np.geomspace(a, 100, 3), np.float32(1.0))


@pytest.mark.parametrize("axes", [0, [0, 2], (1, -1), []])
def test_apply_over_axes(axes):
    x = rand(2, 3, 4)
    check(lambda x: np.apply_over_axes(np.sum, x, axes), x)
    check(lambda x: np.apply_over_axes(lambda a, ax: np.max(a, ax, keepdims=True), x, axes), x)


@pytest.mark.parametrize("axis", [None, 0, 1, -1])
@pytest.mark.parametrize("count", [None, 3, 17, 30, -5, 0])
@pytest.mark.parametrize("bitorder", ["big", "little"])
def test_unpackbits(axis, count, bitorder):
    x = np.array([[2, 7, 255], [128, 0, 93]], np.uint8)
    n = x.size * 8 if axis is None else x.shape[axis] * 8
    if count is not None and count < 0 and -count > n:
        return
    check(lambda x: np.unpackbits(x, axis=axis, count=count, bitorder=bitorder), x)


def test_unpackbits_wants_bytes():
    raises_in_jit(np.unpackbits, np.arange(3), error=errors.JitlibTypeError)


# -- nanmedian, nanpercentile, nanquantile

def with_nans(*shape, dtype=F64, seed=0):
    x = rand(*shape, dtype=dtype, seed=seed)
    x.flat[::3] = np.nan
    return x


@pytest.mark.parametrize("axis", [None, 0, 1, (0, 1)])
@pytest.mark.parametrize("dtype", [F64, F32])
def test_nanmedian(axis, dtype):
    x = with_nans(5, 4, dtype=dtype)
    x[:, 2] = np.nan   # an all-NaN column
    check(lambda x: np.nanmedian(x, axis=axis), x)
    check(lambda x: np.nanmedian(x, axis=axis, keepdims=True), x)
    check(lambda x: np.nanmedian(x, axis=axis), rand(5, 4, dtype=dtype))


def test_nanmedian_of_integers_is_the_median():
    check(np.nanmedian, np.arange(7) ** 2)


@pytest.mark.parametrize("q", [50, 0, 100, 37.5, [10, 90], np.array([[5.0], [60.0]])])
@pytest.mark.parametrize("axis", [None, 1])
def test_nanpercentile_and_nanquantile(q, axis):
    x = with_nans(4, 7)
    x[1] = np.nan
    check(lambda x: np.nanpercentile(x, q, axis=axis), x)
    check(lambda x: np.nanquantile(x, np.asarray(q) / 100, axis=axis, keepdims=True), x)
    check(lambda x: np.nanpercentile(x, q, axis=axis), with_nans(4, 7, dtype=F32))


def test_nanpercentile_of_integers():
    check(lambda x: np.nanpercentile(x, [25, 50]), np.arange(9, dtype=I32))


def test_may_share_memory_for_views_of_one_array():
    def f(x, y):
        flags = (np.may_share_memory(x, x[1:]), np.may_share_memory(x, y),
                 np.shares_memory(x.T, x), np.shares_memory(x, y), np.may_share_memory(x, x))
        return x * sum(2 ** i * v for i, v in enumerate(flags))
    check(f, rand(3, 3), rand(3, 3, seed=1))


@pytest.mark.parametrize("fn", [np.array_repr, np.array_str, np.array2string,
                                lambda x: np.savetxt("unused.txt", x),
                                lambda x: np.save("unused.npy", x)])
def test_printing_and_saving_traced_values_are_refused(fn):
    raises_in_jit(fn, rand(3), match="not supported inside jit")


# -- fromiter, frombuffer, fromstring

def test_fromiter_stacks_traced_items():
    check(lambda x: np.fromiter((x[i] * 2 for i in range(3)), F32), rand(4))
    check(lambda x: np.fromiter(iter([x[0], 1.5, x[2]]), F64, count=2), rand(4))
    check(lambda x: x + np.fromiter(range(4), I64), rand(4))
    check(lambda x: np.fromiter([x.sum(), x.max()], I32), np.arange(5))


def test_fromiter_errors():
    raises_in_jit(lambda x: np.fromiter(iter([x[0]]), F64, count=3), rand(2),
                  error=errors.JitlibValueError)
    raises_in_jit(lambda x: np.fromiter([x, x], F64), rand(2), error=errors.JitlibValueError)


def test_frombuffer_and_fromstring_are_constants():
    data = np.arange(4, dtype=F32).tobytes()
    check(lambda x: x * np.frombuffer(data, F32), rand(4, dtype=F32))
    check(lambda x: x + np.fromstring("1 2 3", sep=" "), rand(3))


# -- sliding_window_view

@pytest.mark.parametrize("window,axis", [(3, None), ((2, 2), None), (2, 0), (3, -1),
                                         ((2, 3), (1, 0)), (1, 1)])
def test_sliding_window_view(window, axis):
    swv = np.lib.stride_tricks.sliding_window_view
    if np.ndim(window) == 0 and axis is None:
        check(lambda x: swv(x, window).sum(-1), rand(7))
    else:
        check(lambda x: swv(x, window, axis) * 2, rand(4, 5))


def test_sliding_windows_are_computed_positions_not_a_constant():
    # a million windows of 16 were a 128 MB index constant; their positions are iotas
    swv = np.lib.stride_tricks.sliding_window_view
    module = jitlib.make_ir(lambda x: swv(x, 16)[::3].max(-1))(rand(100_000))
    assert all(i.size <= 1 for i in module.instructions if i.op is Op.CONSTANT), module
    check(lambda x: swv(x, (2, 3), (1, 0))[:, ::2] + 1.0, rand(5, 6))


def test_sliding_window_view_is_read_only():
    swv = np.lib.stride_tricks.sliding_window_view

    def write(x):
        w = swv(x, 2)
        w[0, 0] = 1.0
        return w
    with pytest.raises(ValueError):
        write(rand(4))
    raises_in_jit(write, rand(4), match="read-only")


def test_real_if_close_of_complex_is_refused_with_the_static_alternative():
    f = jitlib.jit(lambda z: np.real_if_close(z), backend="interpreter")
    with pytest.raises(jitlib.UnsupportedError, match="real_if_close") as info:
        f(np.array([1 + 1e-20j, 2 + 0j]))
    assert "np.real(a)" in str(info.value)


@pytest.mark.parametrize("backend", ["interpreter", "cpu"])
def test_angle_and_iscomplex_keep_their_complex_forms(backend):
    z = np.array([1 + 1j, -2.0 + 0j, -0.0 - 0j, 3j])
    got = jitlib.jit(lambda z: (np.angle(z), np.iscomplex(z), np.sinc(z)), backend=backend)(z)
    want = (np.angle(z), np.iscomplex(z), np.sinc(z))
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12)
