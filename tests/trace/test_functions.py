"""NumPy functions on tracers equal eager NumPy 2, dtype included.

Each case traces a function with `Trace`, runs the module on the reference
interpreter, and compares with the same function run eagerly on NumPy arrays.
"""
import warnings

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jitlib
import jitlib.numpy as jnp
from jitlib import errors
from jitlib.hlo.interpreter import evaluate
from jitlib.testing import tolerance
from jitlib.trace import Trace, Tracer

F16, F32, F64 = np.float16, np.float32, np.float64
I8, I32, I64, U8, BOOL = np.int8, np.int32, np.int64, np.uint8, np.bool_
BF16 = ml_dtypes.bfloat16


# -- harness

def trace_module(fn, args):
    """Trace `fn` on parameters standing for `args`; returns (module, raw result)."""
    trace = Trace("test")
    params = []
    for i, a in enumerate(args):
        if isinstance(a, (bool, int, float)):
            params.append(trace.new_parameter((), np.asarray(a).dtype, f"a{i}", weak=True))
        else:
            a = np.asarray(a)
            params.append(trace.new_parameter(a.shape, a.dtype, f"a{i}"))
    with trace.active():
        out = fn(*params)
    outs = _leaves(out)
    assert all(isinstance(o, Tracer) for o in outs), outs
    return trace.module([o.instr for o in outs]), out


def _leaves(tree):
    if isinstance(tree, (tuple, list)):
        return [leaf for item in tree for leaf in _leaves(item)]
    return [tree]


def run(fn, *args):
    """`fn(*args)` traced and evaluated on the reference interpreter (results flattened)."""
    module, out = trace_module(fn, args)
    values = evaluate(module, [np.asarray(a) for a in args])
    return values if isinstance(out, (tuple, list)) else values[0]


def _quiet(fn, *args):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return fn(*args)


def assert_same(actual, expected):
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.dtype == expected.dtype, f"dtype {actual.dtype} != {expected.dtype}"
    assert actual.shape == expected.shape, f"shape {actual.shape} != {expected.shape}"
    rtol, atol = tolerance(expected.dtype)
    if rtol:
        np.testing.assert_allclose(actual.astype(np.float64), expected.astype(np.float64),
                                   rtol=rtol, atol=atol, equal_nan=True)
    else:
        np.testing.assert_array_equal(actual, expected)


def check(fn, *args):
    """Traced `fn` equals eager `fn` on copies of `args` (it may write into them)."""
    expected = _quiet(fn, *[a.copy() if isinstance(a, np.ndarray) else a for a in args])
    actual = _quiet(run, fn, *args)
    if isinstance(expected, (tuple, list)):
        expected = _leaves(expected)
        assert len(actual) == len(expected)
        for a, e in zip(actual, expected):
            assert_same(a, e)
    else:
        assert_same(actual, expected)


def values(dtype, shape, seed=0):
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return rng.random(shape) < 0.5
    if dt.kind in "iu":
        return rng.integers(0 if dt.kind == "u" else -5, 10, size=shape).astype(dt)
    return (rng.standard_normal(shape) * 3).astype(dt)


def with_nans(dtype, shape, seed=0):
    x = values(dtype, shape, seed)
    x.flat[::5] = np.nan
    return x


DTYPES = [F16, F32, F64, I32, I64, BOOL]


# -- reductions

REDUCTIONS = {
    "sum": lambda x, **k: np.sum(x, **k),
    "prod": lambda x, **k: np.prod(x, **k),
    "max": lambda x, **k: np.max(x, **k),
    "min": lambda x, **k: x.min(**k),
    "mean": lambda x, **k: np.mean(x, **k),
    "var": lambda x, **k: np.var(x, **k),
    "std": lambda x, **k: x.std(**k),
    "any": lambda x, **k: np.any(x, **k),
    "all": lambda x, **k: x.all(**k),
    "amax": lambda x, **k: np.amax(x, **k),
    "ptp": lambda x, **k: np.ptp(x, **k),
    "count_nonzero": lambda x, **k: np.count_nonzero(x, **k),
}
AXES = [dict(), dict(axis=0), dict(axis=-1, keepdims=True), dict(axis=(0, 2)),
        dict(axis=(), keepdims=False), dict(keepdims=True)]


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
@pytest.mark.parametrize("dtype", DTYPES + [U8, I8], ids=lambda d: np.dtype(d).name)
def test_reductions_match_numpy(name, dtype):
    fn = REDUCTIONS[name]
    x = values(dtype, (2, 3, 4))
    for kw in AXES:
        if name == "count_nonzero" and kw.get("axis") == ():
            continue
        if name == "ptp" and dtype is BOOL:
            with pytest.raises(TypeError):
                run(lambda a: fn(a, **kw), x)
            continue
        check(lambda a: fn(a, **kw), x)


def test_reduction_dtypes_follow_numpy():
    for dtype in (BOOL, I8, U8, I32):
        x = values(dtype, (5,))
        check(lambda a: (np.sum(a), np.prod(a), np.cumsum(a), a.mean(), a.var()), x)
    check(lambda a: (np.sum(a, dtype=F32), np.sum(a, dtype=BOOL), np.mean(a, dtype=F32)),
          values(I32, (4, 3)))
    check(lambda a: (np.mean(a), np.mean(a, 0), np.var(a), np.std(a, 1)), values(F16, (40, 3)))
    check(lambda a: np.sum(a), values(BF16, (6,)))


def test_reductions_on_scalars_and_empty_arrays():
    check(lambda a: (np.sum(a), np.max(a), np.mean(a), np.argmax(a), np.cumsum(a)),
          np.float32(2.5))
    empty = np.zeros((0, 3), F32)
    check(lambda a: (np.sum(a, 0), np.prod(a), np.mean(a, 1), np.any(a), np.all(a, 0)), empty)
    check(lambda a: (np.max(a, 1), np.argmax(a, 1), np.cumsum(a, 0)), empty)
    check(lambda a: np.max(a, initial=-1.0), empty)


def test_reductions_with_initial_and_where():
    x = values(F32, (3, 4))
    check(lambda a: np.sum(a, 1, initial=2.5, where=a > 0), x)
    check(lambda a: np.prod(a, where=[True, False, True, True]), x)
    check(lambda a: np.max(a, 0, initial=0.5, where=a < 1), x)
    check(lambda a: np.min(a, initial=-1), values(I32, (3, 4)))
    check(lambda a: (np.mean(a, 1, where=a > 0), np.var(a, 0, where=a > -1)), x)
    check(lambda a: (np.any(a > 0, 1, where=a < 2), np.all(a > 0, where=a > 1)), x)
    with pytest.raises(ValueError, match="specify 'initial'"):
        run(lambda a: np.max(a, where=a > 0), x)


def test_var_std_options():
    x = values(F64, (4, 5))
    check(lambda a: (np.var(a, ddof=1), np.std(a, 0, ddof=2, keepdims=True)), x)
    check(lambda a: (np.var(a, correction=1), np.std(a, 1, ddof=5)), x)
    check(lambda a: np.var(a, 1, mean=np.mean(a, 1, keepdims=True)), x)
    check(lambda a: np.var(a, 0, dtype=F32), values(I32, (4, 5)))


def test_nan_reductions():
    x = with_nans(F32, (4, 5))
    check(lambda a: (np.max(a), np.min(a, 0), np.argmax(a, 1), np.argmin(a)), x)
    check(lambda a: (np.nansum(a, 0), np.nanprod(a), np.nanmax(a, 1), np.nanmin(a),
                     np.nanmean(a, 0, keepdims=True)), x)
    all_nan = np.full((2, 3), np.nan, F32)
    check(lambda a: (np.nanmax(a, 0), np.nanmean(a)), all_nan)
    check(lambda a: (np.nansum(a), np.nanmax(a, 0)), values(I32, (3, 3)))


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_arg_reductions(dtype):
    x = values(dtype, (3, 4, 2))
    for fn in (np.argmax, np.argmin):
        check(lambda a: (fn(a), fn(a, 0), fn(a, -1, keepdims=True), fn(a, keepdims=True)), x)
    check(lambda a: (a.argmax(1), a.argmin(axis=2)), x)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_scans(dtype):
    x = values(dtype, (3, 4))
    check(lambda a: (np.cumsum(a), np.cumsum(a, 0), np.cumprod(a, -1), a.cumsum(1)), x)
    check(lambda a: (np.cumulative_sum(a, axis=1, include_initial=True),
                     np.cumulative_prod(a, axis=0)), x)
    check(lambda a: np.cumsum(a, 1, dtype=BOOL), x)


def test_ufunc_reduce_methods_use_the_reductions():
    x = values(F32, (3, 4))
    check(lambda a: (np.add.reduce(a), np.maximum.reduce(a, 1), np.multiply.accumulate(a)), x)


def test_reductions_reject_what_numpy_rejects():
    x = values(F32, (0, 3))
    with pytest.raises(ValueError, match="zero-size array to reduction operation maximum"):
        run(lambda a: np.max(a), x)
    with pytest.raises(ValueError, match="argmax of an empty sequence"):
        run(lambda a: np.argmax(a, 0), x)
    with pytest.raises(errors.ShapeError, match="out of bounds"):
        run(lambda a: np.sum(a, 2), x)


@settings(max_examples=60, deadline=None)
@given(shape=st.lists(st.integers(0, 3), min_size=0, max_size=3),
       data=st.data(), name=st.sampled_from(["sum", "prod", "max", "mean", "var", "any"]),
       dtype=st.sampled_from([F32, I32, BOOL]), keepdims=st.booleans())
def test_reductions_random_axes(shape, data, name, dtype, keepdims):
    ndim = len(shape)
    axes = data.draw(st.lists(st.integers(-ndim, ndim - 1), unique_by=lambda a: a % ndim,
                              max_size=ndim) if ndim else st.just([]))
    kind = data.draw(st.sampled_from(["none", "tuple", "int"]))
    axis = None if kind == "none" else (axes[0] if kind == "int" and axes else tuple(axes))
    x = values(dtype, tuple(shape))

    def fn(a):
        return REDUCTIONS[name](a, axis=axis, keepdims=keepdims)
    try:
        expected = _quiet(fn, x)
    except ValueError:
        with pytest.raises(ValueError):
            run(fn, x)
        return
    assert_same(_quiet(run, fn, x), expected)


# -- shapes

@pytest.mark.parametrize("dtype", [F32, I64, BOOL, F16], ids=lambda d: np.dtype(d).name)
def test_movement_functions(dtype):
    x = values(dtype, (2, 3, 4))
    check(lambda a: (np.reshape(a, (4, -1)), a.reshape(6, 4), a.reshape((-1,)),
                     np.reshape(a, shape=(3, 8)), a.reshape(24, order="C")), x)
    check(lambda a: (np.ravel(a), a.flatten(), a.T, a.mT, np.transpose(a, (1, 0, 2)),
                     a.transpose(2, 0, 1), np.permute_dims(a, (0, 2, 1))), x)
    check(lambda a: (np.swapaxes(a, 0, -1), np.moveaxis(a, 0, -1),
                     np.moveaxis(a, (0, 1), (-1, 0)), np.matrix_transpose(a)), x)
    check(lambda a: (np.expand_dims(a, 1), np.expand_dims(a, (0, -1)),
                     np.squeeze(a[:, :1]), np.squeeze(a[None, :, :1], (0, 2))), x)
    check(lambda a: (np.flip(a), np.flip(a, 1), np.flip(a, (0, 2)), np.fliplr(a),
                     np.flipud(a)), x)
    check(lambda a: (np.roll(a, 3), np.roll(a, -1, 1), np.roll(a, (1, 2), (0, 2)),
                     np.roll(a, 5, axis=(0, 1))), x)
    check(lambda a: (np.rot90(a), np.rot90(a, 2), np.rot90(a, -1, (1, 2))), x)


def test_movement_on_scalars_and_empty_arrays():
    check(lambda a: (np.reshape(a, (1, 1)), np.ravel(a), np.expand_dims(a, 0),
                     np.atleast_1d(a), np.atleast_2d(a), np.atleast_3d(a),
                     np.broadcast_to(a, (2, 2))), np.float32(3))
    check(lambda a: (np.pad(a, 2), np.roll(a, 1), np.tile(a, 2), np.repeat(a, 2)), np.int8(7))
    empty = np.zeros((0, 3), I32)
    check(lambda a: (a.reshape(3, 0), np.transpose(a), np.flip(a, 0), np.roll(a, 1, 0),
                     np.squeeze(a), np.concatenate([a, a]), np.pad(a, 1)), empty)


def test_broadcasting_functions():
    x = values(F32, (3, 1))
    check(lambda a: (np.broadcast_to(a, (2, 3, 4)), np.broadcast_to(a[:, 0], 3)), x)
    check(lambda a, b: np.broadcast_arrays(a, b), x, values(I32, (4,)))
    check(lambda a: np.broadcast_arrays(a, a), x)
    assert run(lambda a: np.atleast_2d(a) + 0, np.arange(3.0)).shape == (1, 3)
    check(lambda a: (np.atleast_1d(a, a[0]), np.atleast_3d(a), np.atleast_3d(a[:, 0])), x)


@pytest.mark.parametrize("dtype", [F32, I32, BOOL], ids=lambda d: np.dtype(d).name)
def test_joining(dtype):
    x, y = values(dtype, (2, 3)), values(dtype, (2, 3), 1)
    check(lambda a, b: (np.concatenate([a, b]), np.concatenate((a, b), axis=-1),
                        np.concatenate([a, b], axis=None), np.concat([a, b])), x, y)
    check(lambda a, b: (np.stack([a, b]), np.stack((a, b), -1), np.hstack([a, b]),
                        np.vstack([a, b]), np.dstack([a, b]), np.column_stack([a[0], b[0]]),
                        np.hstack([a[0], b[1]]), np.vstack([a[0], b[1]])), x, y)
    check(lambda a, b: (np.append(a, b), np.append(a, b, 0)), x, y)


def test_joining_promotes_like_numpy():
    check(lambda a, b: np.concatenate([a, b]), values(I8, (2,)), values(U8, (3,)))
    check(lambda a, b: np.stack([a, b, [1.5, 2.5]]), values(F32, (2,)), values(I32, (2,)))
    check(lambda a, b: np.concatenate([a, b], dtype=F32), values(F64, (2,)), values(I32, (2,)))
    check(lambda a: np.concatenate([a, np.ones((1, 3), F64)]), values(F16, (2, 3)))
    with pytest.raises(TypeError, match="same_kind"):
        run(lambda a: np.concatenate([a, a], dtype=I32), values(F32, (2,)))


def test_splitting():
    x = values(F32, (6, 4))
    check(lambda a: np.split(a, 3), x)
    check(lambda a: np.split(a, [1, 3], axis=1), x)
    check(lambda a: (np.array_split(a, 4), np.array_split(a, [2, -1, 10], 1)), x)
    check(lambda a: (np.hsplit(a, 2), np.vsplit(a, [2]), np.unstack(a, axis=1)), x)
    with pytest.raises(ValueError, match="equal division"):
        run(lambda a: np.split(a, 4), x)


@pytest.mark.parametrize("dtype", [F32, I32, BOOL], ids=lambda d: np.dtype(d).name)
def test_triangles_tile_repeat_diff(dtype):
    x = values(dtype, (2, 3, 4))
    check(lambda a: (np.tril(a), np.triu(a, 1), np.tril(a, -2), np.triu(a[0, 0])), x)
    check(lambda a: (np.tile(a, 2), np.tile(a, (2, 1, 1, 3)), np.tile(a[0, 0], (2, 2))), x)
    check(lambda a: (np.repeat(a, 2), np.repeat(a, 3, axis=1), np.repeat(a, [1, 0, 2], 1),
                     a.repeat(2, -1)), x)
    check(lambda a: (np.diff(a), np.diff(a, 2, axis=0), np.diff(a, prepend=a[..., :1]),
                     np.diff(a, 1, 0, append=0)), x)


def test_pad():
    x = values(I32, (2, 3))
    check(lambda a: (np.pad(a, 1), np.pad(a, (1, 2)), np.pad(a, ((0, 1), (2, 0))),
                     np.pad(a, 1, constant_values=7), np.pad(a, 2, constant_values=(1, 2))), x)
    check(lambda a: np.pad(a, ((1, 2), (3, 1)), constant_values=((7, 8), (9, 10))), x)
    check(lambda a: np.pad(a, 1, constant_values=2.7), values(F32, (2, 3)))
    for mode in ("edge", "wrap", "reflect", "symmetric"):
        check(lambda a: np.pad(a, ((1, 2), (2, 3)), mode=mode), x)
    with pytest.raises(errors.UnsupportedError, match="mode='mean'"):
        run(lambda a: np.pad(a, 1, mode="mean"), x)


# -- selection

@pytest.mark.parametrize("dtype", [F32, I64, BOOL], ids=lambda d: np.dtype(d).name)
def test_take(dtype):
    x = values(dtype, (3, 4))
    check(lambda a: (np.take(a, [0, -1, 5]), np.take(a, [[0, 2], [-1, 1]], axis=1),
                     np.take(a, 2, axis=0), a.take([1, 1], 0)), x)
    check(lambda a: (np.take(a, [5, -9], axis=1, mode="wrap"),
                     np.take(a, [7, -3], axis=1, mode="clip")), x)
    check(lambda a, i: (np.take(a, i, axis=1), np.take(a, i)), x, np.array([0, -1, 3, -4]))
    check(lambda a, i: np.take(a, i, axis=1, mode="wrap"), x, np.array([9, -6], I32))


def test_take_with_traced_out_of_range_indices_clamps():
    idx = np.array([0, 7, -9])
    got = run(lambda a, i: np.take(a, i), np.arange(5.0), idx)
    np.testing.assert_array_equal(got, [0.0, 4.0, 0.0])


def test_take_with_concrete_out_of_range_indices_raises_like_numpy():
    with pytest.raises(IndexError, match="index 5 is out of bounds for axis 0 with size 3"):
        run(lambda a: np.take(a, [0, 5]), np.arange(3.0))
    with pytest.raises(IndexError, match="non-empty take from an empty"):
        run(lambda a: np.take(a, [0]), np.zeros(0))
    with pytest.raises(TypeError, match="Cannot cast"):
        run(lambda a: np.take(a, np.array([1.0])), np.arange(3.0))


def test_take_along_axis():
    x = values(F32, (3, 4))
    order = np.argsort(x, axis=1)
    check(lambda a, i: np.take_along_axis(a, i, 1), x, order)
    check(lambda a, i: np.take_along_axis(a, i, axis=0), x, np.argsort(x, axis=0)[:2])
    check(lambda a, i: np.take_along_axis(a, i, -1), x, np.array([[0], [-1], [2]]))
    check(lambda a, i: np.take_along_axis(a[:, :1], i, 0), x, np.zeros((2, 4), np.int64))
    check(lambda a: np.take_along_axis(a[0], np.array([3, 1]), None), x)
    check(lambda a: np.take_along_axis(a, np.argmax(a, 1, keepdims=True), 1), x)
    with pytest.raises(IndexError, match="out of bounds"):
        run(lambda a: np.take_along_axis(a, np.array([[5]]), 0), x)
    with pytest.raises(ValueError, match="same number of dimensions"):
        run(lambda a: np.take_along_axis(a, np.array([0]), 0), x)


def test_diagonals():
    x = values(I32, (3, 4))
    check(lambda a: (np.diagonal(a), np.diagonal(a, 1), np.diagonal(a, -2), a.diagonal(),
                     np.trace(a), np.trace(a, 1, dtype=F32), a.trace()), x)
    y = values(F32, (2, 3, 3))
    check(lambda a: (np.diagonal(a, 0, 1, 2), np.trace(a, axis1=-1, axis2=-2)), y)
    check(lambda a: (np.diag(a), np.diag(a, 2), np.diag(a[0]), np.diag(a[0], -1)), x)
    check(lambda a: np.compress([True, False, True], a, axis=0), x)


# -- linear algebra

@pytest.mark.parametrize("dtype", [F32, F64, I32, BOOL, F16], ids=lambda d: np.dtype(d).name)
def test_matmul_and_dot(dtype):
    a, b = values(dtype, (2, 3, 4)), values(dtype, (4, 5), 1)
    v = values(dtype, (4,), 2)
    check(lambda x, y, w: (x @ y, np.matmul(x, y), x @ w, w @ y, w @ w, np.matmul(x[0], y)),
          a, b, v)
    check(lambda x, y: np.matmul(x[:, None], y[None]), values(dtype, (3, 2, 4)),
          values(dtype, (5, 4, 2), 1))
    check(lambda x, y, w: (np.dot(x, y), np.dot(x, w), np.dot(w, w), np.dot(w, y),
                           np.dot(x[0], y), x[0].dot(y)), a, b, v)
    check(lambda x, y: np.dot(x, y), a, values(dtype, (3, 4, 2), 1))


def test_linalg_promotion_and_scalars():
    check(lambda x, y: (x @ y, np.dot(x, y), np.inner(x, y), np.outer(x, y), np.vdot(x, y)),
          values(F32, (3,)), values(I32, (3,)))
    check(lambda x: (np.dot(x, 2.0), np.dot(3, x), np.inner(x, 2), np.outer(x, 2.0)),
          values(F32, (3,)))


def test_tensordot_inner_outer_vdot():
    a, b = values(F32, (2, 3, 4)), values(F32, (3, 4, 5), 1)
    check(lambda x, y: (np.tensordot(x, y), np.tensordot(x, y, 1 - 1),
                        np.tensordot(x, y, ([1, 2], [0, 1])), np.tensordot(x, y, (1, 0))), a, b)
    check(lambda x, y: (np.inner(x, y[:, :, 0]), np.outer(x, y), np.vdot(x[0], y[..., 0])),
          a, b)
    check(lambda x: (jnp.vecdot(x, x), np.linalg.vecdot(x, x[0], axis=-1)), a)


EINSUMS = [
    ("ij,jk->ik", [(3, 4), (4, 5)]), ("ij,jk", [(3, 4), (4, 5)]), ("ij->ji", [(3, 4)]),
    ("ij->", [(3, 4)]), ("ij->j", [(3, 4)]), ("i,i->", [(4,), (4,)]), ("i,j->ij", [(3,), (4,)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]), ("bij,jk->bk", [(2, 3, 4), (4, 5)]),
    ("...ij,...jk->...ik", [(2, 3, 4), (4, 5)]), ("...i,i", [(2, 3, 4), (4,)]),
    ("ij,kj,kl->il", [(2, 3), (4, 3), (4, 5)]), ("ii->i", [(3, 3)]), ("ii", [(3, 3)]),
    ("iij->j", [(3, 3, 2)]), ("ba", [(3, 4)]), ("ij,ij->i", [(3, 4), (3, 4)]),
    ("i,i,i->i", [(4,), (4,), (4,)]), ("ij,jk->ik", [(3, 1), (4, 5)]),
    ("ab,cd->", [(2, 3), (4, 5)]), ("i...->...", [(3, 2, 2)]),
]


@pytest.mark.parametrize("subscripts,shapes", EINSUMS, ids=[e[0] for e in EINSUMS])
def test_einsum(subscripts, shapes):
    args = [values(F64, s, seed) for seed, s in enumerate(shapes)]
    check(lambda *xs: np.einsum(subscripts, *xs), *args)


def test_einsum_dtypes_and_interleaved_form():
    check(lambda x, y: np.einsum("ij,jk->ik", x, y), values(BOOL, (3, 4)), values(BOOL, (4, 2)))
    check(lambda x, y: np.einsum("i,i", x, y), values(F32, (4,)), values(I32, (4,)))
    check(lambda x, y: np.einsum("i,i->", x, y), values(I8, (4,)) * 40, values(I8, (4,)))
    check(lambda x, y: np.einsum(x, [0, 1], y, [1, 2], [0, 2]), values(F32, (3, 4)),
          values(F32, (4, 2)))
    check(lambda x: np.einsum("ij->i", x, dtype=F64), values(F32, (3, 4)))


def test_einsum_errors():
    x = values(F32, (3, 4))
    for subscripts, match in [("ij,jk", "one comma-separated|operands"),
                              ("ijk", "too many subscripts"), ("i", "more dimensions"),
                              ("ij->ik", "never appeared"), ("ij->ii", "multiple times")]:
        with pytest.raises(ValueError, match=match):
            run(lambda a: np.einsum(subscripts, a), x)
    with pytest.raises(ValueError):
        run(lambda a, b: np.einsum("ij,jk", a, b), x, values(F32, (2, 5)))


def test_norms():
    x = values(F32, (3, 4))
    for kw in [{}, dict(axis=-1, keepdims=True), dict(ord=1, axis=0), dict(ord=np.inf, axis=1),
               dict(ord=-np.inf, axis=1), dict(ord=0, axis=1), dict(ord=3, axis=1),
               dict(ord="fro"), dict(ord=1), dict(ord=np.inf), dict(ord=-1), dict(axis=(1, 0)),
               dict(ord=-np.inf, keepdims=True)]:
        check(lambda a: np.linalg.norm(a, **kw), x)
    check(lambda a: (np.linalg.norm(a), np.linalg.vector_norm(a, axis=(0, 1), keepdims=True),
                     np.linalg.matrix_norm(a, ord=np.inf)), values(I32, (3, 4)))
    # ord 2, -2 and 'nuc' through the SVD: tests/trace/test_linalg.py


def test_cross_and_linalg_namespace():
    a, b = values(F32, (4, 3)), values(I32, (4, 3), 1)
    check(lambda x, y: (np.cross(x, y), np.cross(x.T, y.T, axis=0), np.linalg.cross(x, y)), a, b)
    check(lambda x, y: (np.linalg.matmul(x, y.T), np.linalg.outer(x[0], y[1]),
                        np.linalg.tensordot(x, y.T, axes=1), np.linalg.trace(x[:3]),
                        np.linalg.diagonal(x), np.linalg.matrix_transpose(x)), a, b)


def test_linalg_shape_errors():
    x = values(F32, (2, 3))
    with pytest.raises(errors.ShapeError, match="mismatch in its core dimension"):
        run(lambda a: a @ a, x)
    with pytest.raises(errors.ShapeError, match=r"shapes \(2,3\) and \(2,3\) not aligned"):
        run(lambda a: np.dot(a, a), x)
    with pytest.raises(errors.ShapeError, match="shape-mismatch for sum"):
        run(lambda a: np.tensordot(a, a, 1), x)
    with pytest.raises(errors.ShapeError, match="not have enough dimensions"):
        run(lambda a: np.matmul(a, a[0, 0]), x)


# -- elementwise functions

def test_where_and_select():
    x, y = values(F32, (3, 4)), values(I32, (4,))
    check(lambda a, b: (np.where(a > 0, a, b), np.where(a > 0, a, 0.5), np.where(b, 1, 2),
                        np.where(a > 0, 2, 2.5), np.where(True, a, b)), x, y)
    check(lambda a, c: np.where(c, a, 7), values(F16, (3,)), values(BOOL, (3,)))
    check(lambda a, w: np.where(a > 0, a, w), x, 2.0)
    check(lambda a, b: (np.select([a > 1, b > 2], [a, b], 0.5),
                        np.select([a < 0], [a * 2])), x, y)
    with pytest.raises(errors.UnsupportedError, match="np.nonzero") as info:
        jitlib.jit(lambda a: np.where(a > 0), backend="interpreter")(x)   # returned
    assert info.value.hint


def test_where_and_select_wrap_python_ints_as_numpy_does():
    # found by the fuzzer: np.where casts a Python int into an unsigned result unsafely
    # (-1 -> 255) where a ufunc raises OverflowError; tracing raised instead
    u, c = values(U8, (4,)), values(BOOL, (4,))
    check(lambda u, c: (np.where(c, -1, u), np.where(c, u, 300),
                        np.where(c, u.astype(np.uint64), -1),
                        np.select([c], [u], default=-7), np.where(c, -1, u.astype(np.int8))),
          u, c)


def test_clip_ties_and_nan_bounds_as_numpy():
    # found by the fuzzer: with both bounds one value NumPy keeps x on a tie (its sign of
    # zero too) and a NaN bound makes every result NaN; array bounds go to the bound
    x = np.array([-0.0, 0.0, np.nan, -1.0, 2.0, 0.5])
    for lo, hi in [(0.0, 1.0), (-0.0, 1.0), (np.nan, 1.0), (0.0, np.nan), (1.0, 0.0),
                   (np.zeros(1), -np.zeros(1)), (np.zeros(6), -np.zeros(6)),
                   (np.zeros(1), np.ones(6))]:
        for dtype in (np.float64, np.float32, np.float16):
            want = _quiet(np.clip, x.astype(dtype), lo, hi)
            got = _quiet(run, lambda x: np.clip(x, lo, hi), x.astype(dtype))
            assert_same(got, want)
            np.testing.assert_array_equal(np.signbit(got), np.signbit(want),
                                          err_msg=f"{dtype.__name__} clip({lo}, {hi})")


@pytest.mark.parametrize("dtype", [F32, F16, I32, U8, I64], ids=lambda d: np.dtype(d).name)
def test_clip(dtype):
    x = values(dtype, (3, 4))
    check(lambda a: (np.clip(a, 1, 5), np.clip(a, 0.5, 2.5), a.clip(max=3), a.clip(2),
                     np.clip(a, -1000, 1000), np.clip(a, None, 4), np.clip(a, min=1, max=2)), x)
    check(lambda a, lo: np.clip(a, lo, 6), x, values(dtype, (4,), 1))
    check(lambda a: np.clip(a, 0, 1), with_nans(F32, (6,)))


def test_round_nan_to_num_isclose():
    x = values(F64, (3, 4)) * 37
    check(lambda a: (np.round(a), np.round(a, 2), np.around(a, -1), a.round(1)), x)
    check(lambda a: (np.round(a), np.round(a, -1), np.round(a, 2)), values(I32, (5,)) * 123)
    check(lambda a: (np.round(a), np.round(a, 1)), values(F16, (5,)))
    check(lambda a: np.round(a), values(BOOL, (3,)))
    y = np.array([np.nan, np.inf, -np.inf, 1.5, -0.0], F32)
    check(lambda a: (np.nan_to_num(a), np.nan_to_num(a, nan=-1, posinf=9, neginf=-9)), y)
    check(lambda a: np.nan_to_num(a), values(I32, (3,)))
    check(lambda a, b: (np.isclose(a, b), np.isclose(a, 1.5), np.isclose(a, a, equal_nan=True),
                        np.isclose(a, b, rtol=0.5, atol=1), np.allclose(a, a + 1e-9),
                        np.array_equal(a, a), np.array_equal(a, b[:2]),
                        np.array_equiv(a, a[:1]), np.isclose(a, 2)), y, values(F32, (5,)))
    check(lambda a, b: np.isclose(a, b), values(I32, (4,)), values(I64, (4,)))


def test_astype_copy_real_and_static_queries():
    x = values(F32, (2, 3))
    check(lambda a: (a.astype(I32), np.astype(a, BOOL), a.astype("f2"), a.astype(float),
                     np.copy(a), np.real(a), np.imag(a), a.conj()), x)
    facts = []
    run(lambda a: facts.append((np.shape(a), np.ndim(a), np.size(a), np.size(a, 1),
                                np.result_type(a, 1.0), np.result_type(a, np.float64),
                                np.iscomplexobj(a), np.can_cast(a, F64))) or a, x)
    assert facts == [((2, 3), 2, 6, 3, np.dtype(F32), np.dtype(F64), False, True)]


def test_creation_like_functions():
    x = values(I32, (2, 3))
    check(lambda a: (np.zeros_like(a), np.ones_like(a, dtype=F32), np.full_like(a, 2.7),
                     np.full_like(a, 5, shape=(4,)), np.zeros_like(a, shape=(1, 2))), x)
    assert not run(lambda a: np.empty_like(a), x).any()
    check(lambda a, w: np.full_like(a, w), x, 3)
    check(lambda a: np.meshgrid(a[0], a[1, :2]), x)
    check(lambda a: np.meshgrid(a[0], a[1, :2], a[0, :1], indexing="ij", sparse=True), x)


def test_bfloat16_follows_numpy_and_ml_dtypes():
    x = values(BF16, (2, 3))
    x.flat[1] = np.nan
    check(lambda a: (a @ a.T, np.clip(a, 0, 1), np.clip(a, 0, None), np.linalg.norm(a),
                     np.nan_to_num(a), np.nanmax(a), np.dot(a, a.T), np.mean(a)), x)


def test_methods_forward_to_the_functions():
    def f(a):
        b = a.copy()
        b.fill(3)
        return (b, a.dot(a.T), a.take([1], 1), a.repeat(2, 0), a.diagonal(1), a.trace(),
                a.squeeze(), a.swapaxes(0, 1), a.ravel(), a.cumprod(0), a.prod(1), a.mean(0),
                a.var(), a.max(1), a.any(), a.conj())
    check(f, values(F32, (2, 3)))


def test_round_refuses_what_numpy_refuses():
    with pytest.raises(TypeError, match="Cannot cast ufunc 'multiply' output"):
        run(lambda a: np.round(a, 1), values(BOOL, (3,)))


# -- views: reads follow writes to the base, writes go through

def test_transpose_view_follows_writes_to_its_base():
    def f(a):
        a = a.copy()
        y = a.T
        z = np.swapaxes(a, 0, 1)
        a[0, 0] = 5
        a += 1
        return y, z
    check(f, values(F32, (2, 3)))


def test_writes_through_invertible_views_reach_the_base():
    def f(a):
        a = a.copy()
        a.T[1, 0] = 7
        r = a.reshape(-1)
        r[0] = 9
        np.flip(a, 1)[0] *= 2
        parts = np.split(a, 3, axis=1)
        parts[1] += 100
        e = np.expand_dims(a, 0)
        e -= 1
        return a, r, parts[2]
    check(f, values(F32, (2, 3)))


def test_in_place_ufunc_on_a_view_and_reshape_chain():
    def f(a):
        a = a.copy()
        flat = np.ravel(a)
        grid = flat.reshape(3, 2)
        grid += 1
        m = np.moveaxis(a, 0, 1)
        np.multiply(m, 2, out=m)
        return a, flat, grid
    check(f, values(I32, (2, 3)))


def test_copies_do_not_follow_their_source():
    def f(a):
        a = a.copy()
        b, c, d = a.flatten(), np.copy(a), np.concatenate([a])
        a[...] = 0
        return b, c, d
    check(f, values(F32, (2, 3)))


def test_reshape_of_a_non_contiguous_view_refuses_to_guess():
    x = values(F32, (2, 3))
    check(lambda a: a.T.reshape(-1), x)          # not written: exact either way

    def written_after(a):
        a = a.copy()
        y = a.T.reshape(-1)
        a[0, 0] = 1
        return y
    with pytest.raises(errors.UnsupportedError, match="non-contiguous") as info:
        run(written_after, x)
    assert "copy" in info.value.hint


def test_read_only_views_refuse_writes():
    x = values(F32, (2, 3))
    for make in (lambda a: np.broadcast_to(a, (2, 2, 3)), lambda a: np.diagonal(a)):
        def f(a, make=make):
            v = make(a)
            v += 1
            return v
        with pytest.raises(errors.UnsupportedError, match="read-only"):
            run(f, x)


# -- jitlib.numpy

def test_jnp_is_eager_numpy_outside_a_trace():
    x = values(F32, (3, 4))
    for got, want in [(jnp.sum(x, 0), np.sum(x, 0)), (jnp.zeros(3), np.zeros(3)),
                      (jnp.add(x, 1), np.add(x, 1)), (jnp.concat([x, x]), np.concat([x, x])),
                      (jnp.arange(5), np.arange(5)), (jnp.linalg.norm(x), np.linalg.norm(x)),
                      (jnp.permute_dims(x, (1, 0)), np.permute_dims(x, (1, 0)))]:
        assert type(got) is type(want)
        assert_same(got, want)
    assert jnp.float32 is np.float32 and jnp.bfloat16 is ml_dtypes.bfloat16
    assert jnp.pi == np.pi and jnp.newaxis is None
    with pytest.raises(AttributeError, match="numpy_support"):
        jnp.not_a_function


def test_jnp_creation_inside_a_trace_gives_writable_tracers():
    def f(a):
        y = jnp.zeros(3)
        y[0] = a[1]
        z = jnp.full((2, 2), a[0])
        return (y, z, jnp.ones((2,), I32), jnp.arange(4), jnp.arange(1, 2, 0.25),
                jnp.eye(3, k=1), jnp.identity(2, dtype=I32), jnp.tri(3, 4), jnp.empty(2))
    got = run(f, np.array([2.0, 5.0]))
    want = [np.array([5.0, 0, 0]), np.full((2, 2), 2.0), np.ones(2, I32), np.arange(4),
            np.arange(1, 2, 0.25), np.eye(3, k=1), np.identity(2, dtype=I32), np.tri(3, 4),
            np.zeros(2)]
    for g, w in zip(got, want):
        assert_same(g, w)


def test_jnp_linspace_and_asarray():
    check(lambda a, b: jnp.linspace(a, b, 5), 0.5, 2.0)
    for kw in [dict(), dict(endpoint=False), dict(num=1), dict(num=0), dict(dtype=I32)]:
        got = run(lambda a: jnp.linspace(a[0], a[1], **{"num": 7, **kw}), np.array([1.0, 4.0]))
        assert_same(got, np.linspace(1.0, 4.0, **{"num": 7, **kw}))
    got = run(lambda a: jnp.linspace(a[:2], a[2:], 4, axis=-1), np.array([0.0, 1, 3, 5]))
    assert_same(got, np.linspace([0.0, 1], [3, 5], 4, axis=-1))
    got = run(lambda a: (jnp.asarray([a[0], 2]), jnp.array([[a[0], a[1]], [1.5, 2]]),
                         jnp.asarray(a, dtype=I32)), np.array([1, 2], I32))
    for g, w in zip(got, [np.array([1, 2]), np.array([[1, 2], [1.5, 2]]),
                          np.array([1, 2], I32)]):
        assert_same(g, w)


def test_jnp_ufuncs_trace_and_return_strong_results():
    check(lambda a: (jnp.exp(a), jnp.maximum(a, 0), jnp.add.reduce(a), jnp.pow(a, 2),
                     jnp.sqrt(2.0) * a), values(F32, (3,)))
    assert jnp.add.nin == 2 and jnp.divide.__name__ == "divide"


def test_unsupported_functions_say_why():
    x = values(F32, (4,))
    for fn, match in [(np.nonzero, "depends on how many"),
                      (np.unique, "depends on the values"),
                      (np.unique_values, "depends on the values"),
                      (np.unique_all, "depends on the values")]:
        with pytest.raises(errors.UnsupportedError, match=match) as info:
            jitlib.jit(fn, backend="interpreter")(x)
        assert "jitlib.numpy.unique(x, size=N" in info.value.hint or fn is np.nonzero
    with pytest.raises(errors.UnsupportedError, match="traced repeats"):
        run(lambda a, r: np.repeat(a, r), x, np.array([1, 2, 0, 1]))
    with pytest.raises(errors.TracerConversionError, match="arange"):
        run(lambda a: jnp.arange(a[0]), x)


def test_shape_errors_are_numpy_like_with_hints():
    x = values(F32, (2, 3))
    cases = [(lambda a: a.reshape(4, -1), "cannot reshape array of size 6"),
             (lambda a: np.concatenate([a, a[0]]), "same number of dimensions"),
             (lambda a: np.concatenate([a, a[:, :2]]), "along dimension 1"),
             (lambda a: np.stack([a, a[0]]), "same shape"),
             (lambda a: np.squeeze(a, 0), "size not equal to one"),
             (lambda a: np.broadcast_to(a, (4,)), "more dimensions"),
             (lambda a: np.expand_dims(a, (0, 0)), "repeated axis"),
             (lambda a: np.transpose(a, (0, 0)), "axes don't match")]
    for fn, match in cases:
        with pytest.raises(errors.ShapeError, match=match) as info:
            run(fn, x)
        assert info.value.hint, match


def test_fill_diagonal_writes_in_place():
    def square(a):
        b = a.copy()
        np.fill_diagonal(b, 7.0)
        np.fill_diagonal(a, [1.0, 2.0])   # a sequence repeats along the diagonal
        return b

    def tall(a):
        np.fill_diagonal(a, -1.0, wrap=True)
        c = np.zeros((3, 3, 3))
        np.fill_diagonal(c, a[0, 0])
        return c
    from jitlib.testing import check_backends   # the arguments written are compared too
    check_backends(square, values(F32, (4, 4)), backends=("interpreter", "cpu"))
    check_backends(tall, values(F32, (7, 3)), backends=("interpreter", "cpu"))
