"""Indexing on traced arrays against eager NumPy: x[idx], x[idx] = v, and x.at[idx]."""
import copy
import inspect

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jitlib import errors
from jitlib.hlo.interpreter import evaluate
from jitlib.hlo.ops import Op
from jitlib.testing import assert_allclose_tree
from jitlib.trace.context import Trace
from jitlib.trace.indexing import JitlibIndexError


def trace(fn, *args):
    """Trace `fn` on parameters shaped like `args`; returns (module, results)."""
    t = Trace("f")
    params = [t.new_parameter(np.shape(a), np.asarray(a).dtype, f"a{k}")
              for k, a in enumerate(args)]
    with t.active():
        out = fn(*params)
    outs = out if isinstance(out, tuple) else (out,)
    return t.module([r.instr for r in outs]), isinstance(out, tuple)


def run(fn, *args):
    """`fn` traced and evaluated on `args`."""
    module, is_tuple = trace(fn, *args)
    results = evaluate(module, [np.asarray(a) for a in args])
    return tuple(results) if is_tuple else results[0]


def check(fn, *args):
    """Traced `fn` matches eager `fn` (on copies of the arguments) in value, shape, dtype."""
    expected = fn(*copy.deepcopy(args))
    assert_allclose_tree(run(fn, *args), expected)
    return expected


def _line():
    """Line number of the caller."""
    return inspect.currentframe().f_back.f_lineno


def assert_at_line(err, line, func):
    assert str(err).startswith(f"{__file__}:{line} in {func}:"), str(err)


X = np.arange(60, dtype=np.float32).reshape(3, 4, 5)

BASIC = [
    0, -1, 2, (1, 2), (-3, -4, -5), (), Ellipsis, None,
    slice(None), slice(1, None), slice(None, -1), slice(None, None, 2), slice(None, None, -1),
    slice(-1, 0, -2), slice(5, 10), slice(2, 1), slice(None, None, -5),
    (slice(None), slice(1, 3)), (slice(None), slice(3, None, -2), slice(None, None, 3)),
    (Ellipsis, 1), (Ellipsis, None), (None, Ellipsis, None), (1, Ellipsis, slice(None, None, -2)),
    (None, 0, None, slice(1, 3), None), (slice(None), None, -1), (0, 1, Ellipsis),
    (np.int64(2), np.int32(-1)), (Ellipsis, slice(4, None, -3), 0),
]

ADVANCED = [
    [0, 2], [[0, 1], [2, 2]], range(2), [-1, -3], np.array([2, 0, 0]),
    ([0, 2], [1, 3]), ([0, 1], [[0], [3]]), (slice(None), [0, 3]), (slice(None), [1, 0], [4, 2]),
    ([0, 2], slice(None), [1, 3]), ([0, 2], slice(1, None, 2), [[1], [3]]),
    (0, slice(None), [0, 4]), (1, [0, 3]), (Ellipsis, [4, 0]), (None, [0, 1], None),
    ([0, 1], None, [0, 1]), (slice(None, None, -1), [3, 0], slice(4, None, -2)),
    (slice(None), [[0, 1], [2, 3]], 2), ([0, 0, 0],), ([],), (np.array([], int), 1),
    (np.int64(1), np.array([[1], [2]]), np.array([0, 4])), ((0, 2), 1),
    True, False, (True, 0), (slice(None), True, [0, 1]), (0, True, [0, 1]),
    np.array([True, False, True]), (slice(None), np.array([False, True, True, False])),
    (np.array([[True, False, False, True], [False] * 4, [True] * 4]),),
    (np.array([True, False, True]), slice(None), np.array([1, 4])),
]


@pytest.mark.parametrize("index", BASIC + ADVANCED, ids=repr)
def test_getitem_matches_numpy(index):
    check(lambda x: x[index], X)


@pytest.mark.parametrize("index", BASIC + ADVANCED, ids=repr)
def test_setitem_matches_numpy(index):
    shape = X[index].shape
    values = np.arange(-1, -1 - int(np.prod(shape)), -1, dtype=np.float32).reshape(shape)

    def set_array(x, v):
        x[index] = v
        return x

    def set_scalar(x):
        x[index] = -7
        return x

    check(set_array, X, values)
    check(set_scalar, X)


@pytest.mark.parametrize("index, value_shape", [
    (slice(None), (5,)), ((slice(None), 1), (3, 1)), (0, (1, 5)), (0, (1, 1, 4, 5)),
    ([0, 2], (4, 1)), ((slice(None), [0, 2]), (1, 1, 5)), (X[..., 0] > 20, (5,)),
    (X[..., 0] > 20, (1, 5)),
])
def test_setitem_broadcasts_the_value(index, value_shape):
    def f(x, v):
        x[index] = v
        return x

    check(f, X, np.full(value_shape, 3.5, np.float32))


def test_setitem_casts_like_numpy():
    ints = np.arange(6, dtype=np.int32)

    def f(x, v):
        x[:2] = v            # arrays cast unsafely: floats truncate
        x[2] = 2.7           # so do Python floats
        x[3] = np.float64(-3.9)
        x[4] = True
        return x

    check(f, ints, np.array([1.9, -1.9]))

    def traced_float(x, v):
        x[[5, 0]] = v
        return x

    check(traced_float, ints, np.array([-4.5, 9.99]))
    check(traced_float, np.zeros(6, bool), np.array([0.0, 0.5]))


def test_setitem_scalar_out_of_range_for_dtype_raises_like_numpy():
    def f(x):
        x[0] = 300
        return x

    with pytest.raises(OverflowError):
        f(np.zeros(3, np.int8))
    with pytest.raises(OverflowError):
        run(f, np.zeros(3, np.int8))


# -- traced integer indices

def test_traced_int_indices_wrap_negatives():
    x = np.arange(20.0).reshape(4, 5)
    i = np.array([-1, 0, 3, -4])
    check(lambda x, i: x[i], x, i)
    check(lambda x, i: x[:, i], x, i)
    check(lambda x, i: x[i[:2], i[2:]], x, i)
    check(lambda x, i: x[i[:, None], i[None, :3]], x, i)
    check(lambda x, i: x[1, i], x, i)
    check(lambda x, i: x[i[0]], x, i)           # a traced 0-d index
    check(lambda x, i: x[::-1, i[1:3]], x, np.array([0, 1, 2, 4], np.uint8))
    check(lambda x, i: x[i[:2], 1:, None], x, i)


def test_traced_int_setitem():
    x = np.arange(20.0).reshape(4, 5)
    i = np.array([-1, 0, 3, -4])

    def f(x, i):
        x[i[:2], ::-2] = 7.0
        x[2, i] = np.array([1.0, 2.0, 3.0, 4.0])
        x[i[2:], i[:2]] = -1.0
        return x

    check(f, x, i)


def test_traced_out_of_range_reads_clamp_and_writes_drop():
    # NumPy raises IndexError for these; a traced index cannot, so jitlib clamps reads
    # (like gather) and drops writes (like scatter).
    x = np.arange(20.0).reshape(4, 5)
    i = np.array([9, -9])
    assert (run(lambda x, i: x[i], x, i) == x[[3, 0]]).all()
    assert (run(lambda x, i: x[i, i], x, i) == x[[3, 0], [4, 0]]).all()

    def write(x, i):
        x[i] = 100.0
        x[i, np.array([0, 1])] = 100.0
        x[np.array([0, 1]), i] = 100.0
        return x

    assert (run(write, x, i) == x).all()


def test_index_lists_and_tuples_mix_with_traced_arrays():
    x = np.arange(20.0).reshape(4, 5)
    check(lambda x, i: x[[0, 3], i], x, np.array([1, 4]))
    check(lambda x, i: x[(2, 1), ...][:, i], x, np.array([1, 4]))


def test_index_list_of_traced_scalars():
    from jitlib.trace.registry import lookup
    try:
        lookup("asarray")
    except KeyError:
        pytest.skip("np.asarray on tracers is not implemented yet")
    check(lambda x, i: x[[i[1], i[0], 2]], np.arange(5.0), np.array([4, -1]))


# -- boolean masks

def test_concrete_mask_setitem_with_one_value_per_element():
    mask = X > 50

    def f(x):
        x[mask] = np.arange(int(mask.sum()), dtype=np.float32)
        return x

    check(f, X)


@pytest.mark.parametrize("dtype", [np.float32, np.int16, np.bool_])
def test_traced_mask_setitem(dtype):
    x = (np.arange(24) % 7).reshape(2, 3, 4).astype(dtype)

    def whole(x):
        x[x > 2] = 0
        return x

    def leading(x, v):
        x[x[:, :, 0] > 2] = v
        return x

    def middle(x):
        x[:, x[0, :, 1] > 0] = 5
        return x

    def zero_d(x):
        x[x[0, 0, 1] > 0] = 1
        x[x[0, 0, 0] > 0] = 2     # False: nothing changes
        return x

    check(whole, x)
    check(leading, x, np.arange(4).astype(dtype))
    check(middle, x)
    check(zero_d, x)


def test_traced_mask_from_another_array():
    def f(x, y):
        x[y < 0] = -1.0
        x[y > 2] = y[0, 0]
        return x

    check(f, np.ones((2, 3)), np.array([[1.0, -2.0, 3.0], [-1.0, 0.0, 5.0]]))


# -- in-place operators

def test_augmented_assignment():
    def f(x, i):
        x[1] += 10.0
        x[:, ::-2] *= 2.0
        x[[0, 0, 2]] += 1.0      # NumPy does not accumulate duplicates here
        x[i, 0] -= 100.0
        x[2, 4] += 0.5           # an element: a copy, written back by setitem
        return x

    check(f, np.arange(15.0).reshape(3, 5), np.array([-1, -1]))


# -- views

def test_view_writes_reach_the_base_and_base_writes_reach_the_view():
    def f(x):
        v = x[1:3]
        v[0] = 9.0            # reaches x
        x[2] = 5.0            # v sees it
        w = v[:, ::-2]        # a view of a view
        w[1, 0] = -4.0
        x[::2][1] = 7.0
        return x, v, w

    check(f, np.arange(20.0).reshape(4, 5))


def test_views_through_none_ellipsis_and_ints():
    def f(x):
        v = x[None, ..., 1]
        v[0, 1] = 100.0
        x[0, 0, 1] = -1.0
        u = x[-1, ::-1]
        u[...] = u * 2.0
        return x, v, u

    check(f, np.arange(24.0).reshape(2, 3, 4))


def test_advanced_and_mask_writes_through_a_view():
    def f(x, i):
        v = x[1:, ::-1]
        v[i, 0] = -1.0
        v[v > 10.0] = 0.5
        return x, v

    check(f, np.arange(12.0).reshape(3, 4), np.array([1, -2]))


def test_advanced_index_returns_a_copy():
    def f(x):
        c = x[[0, 1]]
        c[0] = 100.0
        m = x[np.array([True, False, True])]
        m[...] = -1.0
        return x, c, m

    check(f, np.arange(3.0))


# -- x.at[...]

AT_CASES = [((5, 2), np.array([0, 2, 0, -1, 2, 0]), False),
            ((5, 2), np.array([0, 2, 0, -1, 2, 0]), True),
            ((5, 2), (slice(None, None, 2),), False), ((3, 4), ([1, 1], [2, 2]), False)]


@pytest.mark.parametrize("shape, index, traced", AT_CASES, ids=repr)
def test_at_methods_accumulate_duplicates(shape, index, traced):
    x = np.arange(1.0, 1.0 + np.prod(shape)).reshape(shape)
    v = np.linspace(-2, 3, x[index].size).reshape(x[index].shape)

    def methods(x, v, index):
        return (x.at[index].get(), x.at[index].set(v), x.at[index].add(v),
                x.at[index].multiply(v), x.at[index].min(v), x.at[index].max(v),
                x.at[index].divide(v), x.at[index].power(2.0), x)

    if traced:
        got = run(methods, x, v, index)
    else:
        got = run(lambda x, v: methods(x, v, index), x, v)
    factor = np.ones_like(x)
    np.multiply.at(factor, index, v)
    power = np.ones_like(x)
    np.multiply.at(power, index, 2.0)
    set_ = x.copy()
    set_[index] = v
    expected = [x[index], set_]
    for ufunc in (np.add, np.multiply, np.minimum, np.maximum):
        y = x.copy()
        ufunc.at(y, index, v)
        expected.append(y)
    expected += [x / factor, x ** power, x]
    assert_allclose_tree(got, tuple(expected))


def test_at_result_dtype_is_the_array_dtype():
    def f(x, i):
        return x.at[i].add(1.7), x.at[i].divide(2), x.at[x > 2].set(9.9), x.at[i].get()

    a, d, s, g = run(f, np.arange(5, dtype=np.int32), np.array([0, 0, 4]))
    assert a.dtype == d.dtype == s.dtype == g.dtype == np.int32
    assert a.tolist() == [2, 1, 2, 3, 5]
    assert d.tolist() == [0, 1, 2, 3, 2]
    assert s.tolist() == [0, 1, 2, 9, 9]


def test_at_with_traced_mask_and_bool_arrays():
    def f(x, b):
        return x.at[x > 3].add(10.0), x.at[x < 2].multiply(-1.0), b.at[[0, 0, 2]].add(True)

    x, b = np.arange(6.0), np.array([False, False, False])
    got = run(f, x, b)
    expected = (np.where(x > 3, x + 10, x), np.where(x < 2, -x, x), np.array([True, False, True]))
    assert_allclose_tree(got, expected)


def test_ufunc_at_on_a_traced_array():
    def f(x, i):
        np.add.at(x, i, 1.0)
        np.maximum.at(x, [0, 0], np.array([5.0, 7.0]))
        return x

    check(f, np.zeros(4), np.array([1, 1, 3]))


# -- what the IR looks like

def test_basic_indexing_lowers_to_slice_reverse_reshape():
    module, _ = trace(lambda x: x[1, ::-2, None], X)
    ops = {i.op for i in module.instructions} - {Op.PARAMETER}
    assert ops == {Op.SLICE, Op.REVERSE, Op.RESHAPE}


def test_advanced_indexing_is_one_gather_and_writes_one_scatter():
    def f(x, i):
        x[i, 1:, i] = 0.0
        return x[i, :, i]

    module, _ = trace(f, X, np.array([0, 2]))
    ops = [i.op for i in module.instructions]
    assert ops.count(Op.GATHER) == 1 and ops.count(Op.SCATTER) == 1


# -- errors

def test_traced_mask_getitem_escaping_its_reductions_is_unsupported():
    # x[mask] reads are lazy (tests/trace/test_masked_reads.py); what needs their shape,
    # or a mask beside other indices, raises at the user's line
    def f(x):
        line = _line() + 2
        with pytest.raises(errors.UnsupportedError) as info:
            x[x[:, 0] > 2, 0]
        assert_at_line(info.value, line, "f")
        assert "np.where(mask, x, 0)" in str(info.value)
        line = _line() + 2
        with pytest.raises(errors.UnsupportedError) as info:
            x[x > 2].reshape(-1, 2)
        assert_at_line(info.value, line, "f")
        return x

    run(f, np.arange(4.0).reshape(2, 2))


def test_out_of_range_concrete_index_raises_index_error():
    def f(x):
        for index in (5, -6, [0, 5], (0, 1), np.array([[-6]]), slice(None, None, 0)):
            with pytest.raises((IndexError, ValueError)):
                x[index]
        for index in (5, [0, 5], (0, 1)):
            with pytest.raises(JitlibIndexError):
                x[index] = 1.0
        line = _line() + 2
        with pytest.raises(JitlibIndexError) as info:
            x[[4, 5]]
        assert_at_line(info.value, line, "f")
        assert "index 5 is out of bounds for axis 0 with size 5" in str(info.value)
        return x

    run(f, np.arange(5.0))


def test_traced_slice_bounds_make_windows_and_a_traced_step_is_a_conversion_error():
    # x[:n] is a window (trace/windows.py, tested there): lazy until its length escapes
    def f(x, n):
        line = _line() + 2
        with pytest.raises(errors.UnsupportedError) as info:
            len(x[:n])
        assert_at_line(info.value, line, "f")
        assert "slice with traced bounds" in str(info.value)
        line = _line() + 2
        with pytest.raises(errors.TracerConversionError) as info:
            x[::n]
        assert_at_line(info.value, line, "f")
        assert "slice bound" in str(info.value)
        return x

    run(f, np.arange(5.0), np.int64(2))


def test_invalid_indices_raise_like_numpy():
    def f(x):
        for index in (1.0, np.array([1.0]), "a", (Ellipsis, Ellipsis), ([0, 1], [0, 1, 2])):
            with pytest.raises(IndexError):
                np.zeros((3, 3))[index]
            with pytest.raises(JitlibIndexError):
                x[index]
        with pytest.raises(JitlibIndexError, match="boolean index did not match"):
            x[np.array([True, False])]
        with pytest.raises(errors.ShapeError, match="could not broadcast"):
            x[0] = np.ones(2)
        return x

    run(f, np.ones((3, 3)))


def test_traced_mask_with_a_data_dependent_value_is_unsupported():
    def f(x):
        line = _line() + 2
        with pytest.raises(errors.UnsupportedError) as info:
            x[x > 1] = np.array([1.0, 2.0])
        assert_at_line(info.value, line, "f")
        with pytest.raises(errors.UnsupportedError):
            x[x[:, 0] > 1, 0] = 1.0
        return x

    run(f, np.ones((2, 2)))


# -- random basic and integer-array indices

@st.composite
def index_and_shape(draw):
    shape = tuple(draw(st.lists(st.integers(0, 4), min_size=0, max_size=3)))
    parts = []
    for n in shape:
        kind = draw(st.sampled_from(["slice", "int", "array", "new"] if n else ["slice"]))
        if kind == "new":
            parts.append(None)
            kind = "slice"
        if kind == "slice":
            bound = st.none() | st.integers(-n - 2, n + 2)
            step = st.none() | st.integers(-3, 3).filter(bool)
            parts.append(slice(draw(bound), draw(bound), draw(step)))
        elif kind == "int":
            parts.append(draw(st.integers(-n, n - 1)))
        else:
            parts.append(draw(st.lists(st.integers(-n, n - 1), min_size=1, max_size=3)))
    arrays = [k for k, p in enumerate(parts) if isinstance(p, list)]
    for k in arrays[1:]:   # index arrays must broadcast together
        parts[k] = (parts[k] * 3)[:len(parts[arrays[0]])]
    if parts and draw(st.booleans()):
        cut = draw(st.integers(0, len(parts) - 1))
        parts = parts[:cut] + [Ellipsis] + parts[cut + 1:]
    return shape, tuple(parts)


@settings(max_examples=75, deadline=None)
@given(index_and_shape(), st.booleans())
def test_random_indices_match_numpy(case, traced):
    shape, index = case
    x = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)
    arrays = [k for k, p in enumerate(index) if isinstance(p, list)] if traced else []

    def f(x, *traced_arrays):
        full = list(index)
        for k, a in zip(arrays, traced_arrays):
            full[k] = a
        y = x[tuple(full)]
        x[tuple(full)] = -1
        return y, x

    check(f, x, *[np.array(index[k]) for k in arrays])


def test_an_element_picked_by_integers_is_a_copy_but_ellipsis_keeps_a_view():
    def f(x, s):
        e = x[1, 2]
        e += 100.0           # a scalar in NumPy: x is unchanged
        v = x[1, 2, ...]
        v += 1.0             # a 0-d view: x changes
        c = s[()]
        c += 5.0
        return x, e, v, s, c

    check(f, np.arange(6.0).reshape(2, 3), np.float64(3.0))
