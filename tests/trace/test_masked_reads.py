"""x[mask] with a traced mask (issue 23, part 5) equals eager NumPy where its use has a
static shape: reductions, elementwise math that stays masked, x[mask] = f(x[mask]),
np.nonzero's family and jnp.nonzero(size=). Each case runs on the interpreter, cpu and
jax backends; where the shape escapes, the error names this file's line.
"""
import inspect
import warnings

import numpy as np
import pytest

import jitlib
import jitlib.numpy as jnp
from jitlib import errors
from jitlib.testing import check_backends

BACKENDS = ("interpreter", "cpu", "jax")
F32, F64, I32 = np.float32, np.float64, np.int32


def check(fn, *args):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")   # NumPy warns on the mean of an empty selection
        return check_backends(fn, *args, backends=BACKENDS)


def rand(*shape, dtype=F64, seed=0):
    return (np.random.default_rng(seed).standard_normal(shape) * 3).astype(dtype)


def jitted(fn, *args, backend="interpreter"):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return jitlib.jit(fn, backend=backend)(*args)


# -- realistic uses

def mean_of_positives(x):
    return x[x > 0].mean()


def masked_variance(x, lo, hi):
    inside = (x > lo) & (x < hi)
    return x[inside].var(ddof=1), np.std(x[inside]), x[inside].sum() / np.count_nonzero(inside)


def clip_outliers(x):
    mu, sd = x.mean(), x.std()
    far = np.abs(x - mu) > 2 * sd
    x[far] = np.sign(x[far] - mu) * 2 * sd + mu    # assignment through the same mask
    return x, far.sum()


def per_row_sums(x, cols):
    # a mask over columns: x[:, m] has a data-dependent column count, its row sums do not
    keep = cols > 0
    return (x[:, keep].sum(axis=1), x[:, keep].max(axis=1, initial=-1e9),
            x[:, keep].mean(axis=(0, 1)))


def test_mean_of_positive_entries():
    for dtype in (F64, F32, I32):
        check(mean_of_positives, rand(50, dtype=dtype))
    check(mean_of_positives, rand(4, 5))


def test_masked_variance_and_std():
    check(masked_variance, rand(100), -2.0, 3.0)
    check(masked_variance, rand(7, 9, dtype=F32), np.float32(-1), np.float32(1))


def test_outlier_clipping_writes_through_the_mask():
    x = rand(200)
    x[[3, 50]] = [40.0, -35.0]
    check(clip_outliers, x)


def test_per_row_masked_sums_along_axes():
    check(per_row_sums, rand(4, 6), rand(6, seed=1))
    check(lambda x: (x[x[:, 0] > 0].sum(axis=0), x[x[:, 0] > 0].mean(axis=0, keepdims=True),
                     x[x[:, 0] > 0].sum(keepdims=True)), rand(8, 3))


def test_every_reduction():
    def f(x):
        m = x > -1
        s = x[m]
        return (s.sum(), s.prod(), s.mean(), s.var(), s.std(), s.max(), s.min(), s.any(),
                s.all(), np.sum(s, dtype=np.float32), np.max(s), np.amin(s),
                np.count_nonzero(s > 1), np.mean(s), np.any(s > 4), np.all(s < 4),
                s.sum(initial=10.0), s.max(initial=100.0))
    check(f, rand(30))
    check(f, rand(3, 4, dtype=F32))


def test_average_with_and_without_weights():
    def f(x, w):
        m = x[:, 0] > -1
        s = x[m]
        return (np.average(s), np.average(s, axis=0), np.average(s, weights=w[m]),
                np.average(s, axis=0, weights=w[m], returned=True),
                np.average(s, axis=1, keepdims=True).sum(), np.average(x[x > 0]))
    check(f, rand(9, 3), np.abs(rand(9, 3, seed=3)))
    check(lambda x: np.average(x[x > 2], axis=0), np.arange(12, dtype=I32).reshape(4, 3))


def test_median():
    y = rand(6, 5)
    y[1, 1] = np.nan

    def f(x, y):
        return (np.median(x[x > 0]), np.median(x[x < 10]), np.median(x[x > 100]),
                np.median(y[y[:, 0] > -1], axis=0), np.median(y[y[:, 0] > -1], axis=1).sum(),
                np.median(y[y > 0]), np.median(y[~np.isnan(y)], keepdims=True),
                np.median(x.astype(np.int32)[x > 0]), np.median(x.astype(F32)[x < 1]),
                np.median(y[~(y > 100)]), np.median(x[x > np.sort(x)[4]]))
    check(f, rand(11), y)


def test_quantile_and_percentile():
    y = rand(6, 5)
    y[1, 1] = np.nan

    def f(x, y):
        s = x[x > -1]
        return (np.quantile(s, 0.3), np.percentile(s, [10, 50, 99]), np.quantile(s, 1.0),
                np.quantile(s, np.array([0.0, 0.25])),
                np.quantile(y[y[:, 0] > -1], 0.5, axis=0), np.percentile(y[y > 0], 75),
                np.quantile(y[y[:, 0] > -1], [0.2, 0.8], axis=1).sum(axis=1),
                np.quantile(y[y[:, 0] > -1], 0.4, keepdims=True),
                np.percentile(x.astype(np.int32)[x > 0], 40.0),
                np.quantile(x.astype(F32)[x < 1], 0.7), np.quantile(y[~(y > 100)], 0.5))
    check(f, rand(13), y)
    for backend in BACKENDS:      # empty: NaN, where NumPy raises IndexError
        got = jitted(lambda x: np.percentile(x[x > 100], [50, 90]), rand(5), backend=backend)
        assert np.isnan(got).all()


def test_elementwise_math_stays_masked():
    def f(x, y):
        m = (x > 0) & (y < 1)
        return ((x[m] * y[m]).sum(), (x[m] ** 2).sum(), np.sqrt(x[m]).sum(),
                np.exp(-x[m]).mean(), (1 - x[m]).min(), (abs(y[m]) + 1).max(),
                np.where(x[m] > 1, x[m], 0).sum(), np.clip(y[m], -1, 0.5).sum(),
                (-x[m]).astype(np.float32).sum(), (x[m] > y[m]).sum(), (2 * x[m] / y[m]).max())
    check(f, rand(40), rand(40, seed=1))


def test_reductions_within_each_selected_element_stay_masked():
    def f(points, labels):
        members = points[labels == 1]                    # (count, 3)
        norms = np.sqrt((members ** 2).sum(axis=1))      # (count,): still a selection
        return (norms.max(), norms.mean(), members.max(axis=1).sum(),
                members.mean(axis=1, keepdims=True).sum(axis=0), np.any(members > 2, axis=-1).sum())
    check(f, rand(20, 3), np.arange(20) % 3)


def test_masks_from_other_arrays_and_2d_masks():
    def f(x, labels):
        a = x[labels == 2]               # rows of x whose label is 2
        return a.sum(axis=0), a.mean(axis=0), x[x > x.mean()].sum()
    check(f, rand(10, 3), np.arange(10) % 3)

    def g(x, y):
        return x[y > 0].sum(), x[y > 0].mean(), (x[y > 0] - x[y > 0].mean()).max()
    check(g, rand(5, 4), rand(5, 4, seed=1))


def test_broadcasting_against_the_selection():
    def f(x, w):
        keep = x[:, 0] > 0
        s = x[keep]                        # logical shape (count, 3)
        return (s * w).sum(axis=0), (s - s.mean(axis=0)).sum(), (s + 1.0).sum(axis=(0, 1))
    check(f, rand(9, 3), rand(3, seed=2))


def test_updates_through_the_mask():
    def f(x, y):
        m = x > 0
        x[m] += 1
        x[m] = np.sqrt(x[m])
        y[y < 0] = 0
        z = x.copy()
        z[m] = y[m] * 2
        return x, y, z
    check(f, rand(12), rand(12, seed=1))
    x = rand(3, 4)
    for backend in BACKENDS:
        got = jitted(lambda x: (x.at[x > 0].set(-x[x > 0]), x.at[x > 0].add(x[x > 0])), x,
                     backend=backend)
        np.testing.assert_array_equal(got[0], -np.abs(x))
        np.testing.assert_array_equal(got[1], np.where(x > 0, 2 * x, x))


def test_assigning_scalars_and_broadcastable_values():
    def f(x, row):
        keep = x[:, 0] > 0
        x[keep] = row              # one row per selected row, broadcast
        x[x > 2] = 2
        x[:, x[0] < 0] = np.float32(-1)
        return x
    check(f, rand(4, 3, dtype=F32), rand(3, dtype=F32, seed=1))


def test_a_mask_of_the_wrong_shape_raises_like_numpy():
    def f(x, y):
        return x[y > 0].sum()
    with pytest.raises(IndexError):
        f(rand(4, 3), rand(3))
    with pytest.raises(IndexError, match="boolean index did not match"):
        jitted(f, rand(4, 3), rand(3))


def test_selection_is_a_copy():
    def f(x):
        m = x > 0
        s = x[m]
        x[0] = 100.0           # later writes to x or the mask do not reach s
        m[:] = False
        return s.sum(), x
    check(f, rand(6))


def test_grad_and_vmap_see_through_selections():
    x = rand(4, 5)

    def loss(x):
        return (x[x > 0] ** 2).sum() + x[x < -1].mean()
    below = x < -1
    expected = np.where(x > 0, 2 * x, 0) + below / below.sum()
    np.testing.assert_allclose(jitlib.jit(jitlib.grad(loss))(x), expected)
    per_row = jitlib.jit(jitlib.vmap(lambda r: (r[r > 0].sum(), np.count_nonzero(r > 0))))(x)
    np.testing.assert_allclose(per_row[0], [r[r > 0].sum() for r in x])
    np.testing.assert_array_equal(per_row[1], (x > 0).sum(axis=1))


# -- edge cases

def test_empty_selection():
    x = -np.abs(rand(8)) - 1
    check(lambda x: (x[x > 0].sum(), x[x > 0].prod(), x[x > 0].any(), x[x > 0].all(),
                     np.count_nonzero(x[x > 0]), x[x > 0].max(initial=-7.0)), x)
    for backend in BACKENDS:      # NumPy gives NaN (and warns) for an empty mean
        got = jitted(lambda x: (x[x > 0].mean(), x[x > 0].var(), x[x > 0].max(),
                                x[x > 0].min(axis=0)), x, backend=backend)
        assert all(np.isnan(g) for g in got), got   # max/min: NaN where NumPy raises
    with pytest.raises(ValueError):
        x[x > 0].max()


def test_all_true_and_nan():
    x = np.abs(rand(10)) + 1
    check(lambda x: (x[x > 0].sum(), x[x > 0].max(), x[x > 0].mean()), x)
    y = rand(10)
    y[[2, 7]] = np.nan
    check(lambda y: (y[y < 10].sum(), y[y < 10].max(), y[~np.isnan(y)].max(),
                     y[~np.isnan(y)].mean(), np.nansum(np.where(y > 0, y, 0)),
                     y[~(y > 100)].max(), y[~(y > 100)].sum()), y)   # NaNs selected


def test_nan_ignoring_reductions():
    y = rand(4, 6)
    y[0, :3] = np.nan
    y[2, 1] = np.nan

    def f(y):
        s = y[y[:, 0] < 10]         # the rows whose first entry is not NaN and below 10
        return (np.nansum(s), np.nanmean(s, axis=0), np.nanmax(s), np.nanmin(s, axis=1).sum(),
                np.nanvar(s, 0, ddof=1), np.nanstd(s), np.nanprod(s, axis=(0, 1)),
                np.nanmax(y[y > -100]), np.nanmean(y[y != 0], keepdims=True))
    check(f, y)
    for backend in BACKENDS:       # every selected value NaN: NaN, as NumPy's all-NaN case
        got = jitted(lambda y: np.nanmax(y[np.isnan(y)]), y, backend=backend)
        assert np.isnan(got)


def test_integer_max_needs_initial():
    check(lambda x: (x[x > 0].max(initial=np.iinfo(np.int32).min), x[x > 0].sum(),
                     x[x > 0].mean()), np.arange(-5, 7, dtype=I32))

    def f(x):
        return x[x > 0].max()  # mark
    msg = raises_at_mark(f, np.arange(4), "# mark")
    assert "initial=" in msg


def test_size_is_a_traced_count():
    check(lambda x: (x[x > 0].size, x[x > 0].sum() / x[x > 0].size, np.size(x[x > 0])),
          rand(5, 3))


def test_zero_d_mask():
    check(lambda x: (x[x.sum() > 0].sum(), x[x.sum() > 1e9].sum(axis=0)), rand(3))


# -- np.nonzero and family

def test_nonzero_reductions_and_indexing():
    def f(x):
        i, j = np.nonzero(x > 0)
        return (i.sum(), j.max(initial=-1), np.where(x[0] > 0)[0].mean(),
                x[np.nonzero(x > 1)].sum(), x[np.where(x > 0)].max(), np.flatnonzero(x).sum(),
                np.argwhere(x > 0).sum(axis=0), np.extract(x > 0, x * 2).sum(),
                (x > 0).nonzero()[1].sum())
    check(f, rand(4, 5))
    check(lambda x: x[np.nonzero(x > 0)[0]].sum(), rand(6))


def test_count_nonzero():
    x = np.round(rand(4, 5))
    check(lambda x: (np.count_nonzero(x), np.count_nonzero(x, axis=0),
                     np.count_nonzero(x > 0, axis=1, keepdims=True)), x)


@pytest.mark.parametrize("size,fill", [(3, None), (8, None), (8, -1), (0, None), (2, 5)])
def test_sized_nonzero_matches_jax(size, fill):
    import jax.numpy as J
    x = np.round(rand(3, 4) / 3)
    kwargs = {} if fill is None else {"fill_value": fill}

    def f(x):
        return (jnp.nonzero(x, size=size, **kwargs), jnp.flatnonzero(x, size=size, **kwargs),
                jnp.argwhere(x, size=size, **kwargs))
    expected = (J.nonzero(x, size=size, **kwargs), J.flatnonzero(x, size=size, **kwargs),
                J.argwhere(x, size=size, **kwargs))
    for got in [f(x)] + [jitted(f, x, backend=b) for b in BACKENDS]:
        for g, e in zip(jitlib.tree.flatten(got)[0], jitlib.tree.flatten(expected)[0]):
            np.testing.assert_array_equal(g, np.asarray(e))


def test_sized_nonzero_edges_match_jax():
    import jax.numpy as J
    for x, kw in [(np.zeros((2, 0)), {"fill_value": 3}), (np.zeros(4), {"fill_value": (9,)}),
                  (np.ones((2, 2), bool), {"fill_value": (1, 2)})]:
        expected = J.nonzero(x, size=3, **kw)
        got = jitted(lambda x: jnp.nonzero(x, size=3, **kw), x)
        for g, e in zip(got, expected):
            np.testing.assert_array_equal(g, np.asarray(e))


# -- where the shape escapes: a clear error at the user's line

def _line_of(fn, marker):
    lines, start = inspect.getsourcelines(fn)
    return start + next(k for k, text in enumerate(lines) if marker in text)


def raises_at_mark(fn, x, marker, error=errors.UnsupportedError):
    with pytest.raises(error) as info:
        jitted(fn, x)
    message = str(info.value)
    assert message.startswith(f"{__file__}:{_line_of(fn, marker)} in {fn.__name__}"), message
    assert "hint:" in message, message
    return message


def test_returning_a_selection_names_the_line_that_made_it():
    def f(x):
        pos = x[x > 0]  # mark
        return pos * 2
    msg = raises_at_mark(f, rand(5), "# mark")
    assert "np.where(mask, x, 0)" in msg and "returning x[mask]" in msg


@pytest.mark.parametrize("use", [
    lambda s, x: s.reshape(-1, 1),
    lambda s, x: s[0],
    lambda s, x: np.concatenate([s, x]),
    lambda s, x: s.shape,
    lambda s, x: np.sort(s),
    lambda s, x: s + x,             # x's length is not the selection's
    lambda s, x: s.sum(axis=1),     # keeps the data-dependent axis
    lambda s, x: bool(s),
    lambda s, x: np.asarray(s),
    lambda s, x: [v for v in s],
])
def test_shape_dependent_uses_raise(use):
    def f(x):
        return use(x[x[:, 0] > 0], x)
    with pytest.raises(errors.UnsupportedError) as info:
        jitted(f, rand(4, 3))
    message = str(info.value)       # the use's line (a lambda above) and the selection's
    assert message.startswith(__file__) and "hint:" in message, message
    made = _line_of(f, "use(x[x")
    assert f"made at test_masked_reads.py:{made}" in message, message


def test_len_suggests_count_nonzero():
    def f(x):
        return len(x[x > 0])  # mark
    msg = raises_at_mark(f, rand(5), "# mark")
    assert "np.count_nonzero(mask)" in msg


def test_integer_quantile_of_integers_is_refused():
    def f(x):
        return np.quantile(x[x > 0], 1)  # mark
    msg = raises_at_mark(f, np.arange(-3, 4), "# mark")
    assert "q as a float" in msg


def test_two_masks_do_not_combine():
    def f(x):
        return (x[x > 0] * x[x < 1]).sum()  # mark
    msg = raises_at_mark(f, rand(5), "# mark")
    assert "different mask" in msg


def test_assigning_a_data_dependent_value_is_refused():
    def f(x):
        x[x > 0] = x[x < 0]  # mark
        return x
    raises_at_mark(f, rand(5), "# mark")

    def g(x):
        x[x > 0] = np.arange(3.0)  # mark
        return x
    raises_at_mark(g, rand(5), "# mark")
