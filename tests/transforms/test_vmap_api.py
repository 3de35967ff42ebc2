"""`jitlib.vmap` as a user calls it: in_axes/out_axes, pytrees, None, keyword arguments,
plain NumPy code, composition with jit and itself, and the errors a user can hit.

The reference is always the function applied to each example in a Python loop
(eager NumPy), results stacked at the out axis.
"""
import numpy as np
import pytest

import jitlib
from jitlib import vmap
from jitlib.errors import JitlibError, JitlibTypeError, ShapeError

rng = np.random.default_rng(0)
X = rng.normal(size=(4, 3))
W = rng.normal(size=(3, 5))


def loop(fn, args, in_axes, out_axis=0):
    """fn on each example's slices, stacked at `out_axis` (one output)."""
    size = next(a.shape[ax] for a, ax in zip(args, in_axes) if ax is not None)
    outs = [fn(*[a if ax is None else np.take(a, b, axis=ax) for a, ax in zip(args, in_axes)])
            for b in range(size)]
    return np.stack(outs, axis=out_axis)


def close(got, want):
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


# -- plain NumPy code

def dense(x, w):
    return np.tanh(x @ w)


@pytest.mark.parametrize("x, w, in_axes", [
    (X, W, (0, None)),
    (X.T.copy(), W, (1, None)),
    (X.T.copy(), W, (-1, None)),
    (X[0], rng.normal(size=(3, 6, 5)), (None, 1)),
    (X, rng.normal(size=(3, 4, 5)), (0, 1)),
], ids=["0,None", "1,None", "-1,None", "None,1", "0,1"])
def test_in_axes_on_plain_numpy_code(x, w, in_axes):
    close(vmap(dense, in_axes=in_axes)(x, w), loop(dense, (x, w), in_axes))


def test_reductions_indexing_and_methods():
    def f(x, i):
        return x.sum(-1) + x[1:].max() * x[i] - np.cumsum(x)[::-1]
    idx = np.array([2, 0, 1, 2])
    close(vmap(f)(X, idx), loop(f, (X, idx), (0, 0)))


def test_per_example_fancy_indexing_and_scatter():
    def f(table, idx, v):
        counts = np.zeros_like(table)
        np.add.at(counts, idx, v)          # duplicates in idx accumulate
        return table[idx].sum() + counts
    table, idx = rng.normal(size=(4, 5)), rng.integers(0, 5, size=(4, 3))
    v = rng.normal(size=(4, 3))
    close(vmap(f)(table, idx, v), loop(f, (table, idx, v), (0, 0, 0)))


def test_per_example_dynamic_index_and_update():
    def f(x, i):
        y = x.copy()
        y[i] = -x[i] * 3
        return y
    i = np.array([0, 2, 1, 2])
    close(vmap(f)(X, i), loop(f, (X, i), (0, 0)))


def test_out_axes_and_unmapped_outputs():
    def f(x, w):
        return x @ w, w.sum()
    y, s = vmap(f, in_axes=(0, None), out_axes=(1, None))(X, W)
    close(y, (X @ W).T)
    close(s, W.sum())
    y, s = vmap(f, in_axes=(0, None), out_axes=-1)(X, W)
    close(y, (X @ W).T)
    close(s, np.full(4, W.sum()))   # an unmapped output is repeated at an int out axis


def test_pytrees_in_and_out():
    params = {"w": W, "b": rng.normal(size=5)}

    def f(p, xs):
        a, b = xs
        return {"y": a @ p["w"] + p["b"], "pair": [b * 2, a.sum()]}
    out = vmap(f, in_axes=({"w": None, "b": None}, (0, 1)))(params, (X, X.T))
    close(out["y"], X @ W + params["b"])
    close(out["pair"][0], 2 * X)
    close(out["pair"][1], X.sum(1))


def test_in_axes_prefix_covers_a_whole_subtree():
    params = {"w": W, "b": rng.normal(size=5)}
    out = vmap(lambda p, x: x @ p["w"] + p["b"], in_axes=(None, 0))(params, X)
    close(out, X @ W + params["b"])


def test_keyword_arguments_map_over_axis_0():
    def f(x, *, scale):
        return x * scale
    close(vmap(f, in_axes=None)(np.arange(3.0), scale=X), X * np.arange(3.0))


def test_python_scalars_unmapped_keep_weak_types():
    x = X.astype(np.float32)
    out = vmap(lambda x, c: x * c, in_axes=(0, None))(x, 2.0)
    assert out.dtype == np.float32
    close(out, x * 2)


def test_unmapped_python_scalars_stay_concrete():
    # As in JAX, an unmapped Python int reaches the function as an int: a shape here.
    x = rng.normal(size=(4, 6))
    f = jitlib.vmap(lambda x, n: x.reshape(n, -1).sum(0), in_axes=(0, None))
    close(f(x, 3), x.reshape(4, 3, 2).sum(1))
    close(jitlib.jit(f, static_argnums=1)(x, 2), x.reshape(4, 2, 3).sum(1))


# -- composition

def test_jit_of_vmap_traces_once_and_matches():
    g = jitlib.jit(vmap(dense, in_axes=(0, None)), backend="interpreter")
    close(g(X, W), np.tanh(X @ W))
    close(g(X, W), np.tanh(X @ W))
    assert g.cache_info().misses == 1


def test_vmap_of_jit_inlines_the_jitted_function():
    close(vmap(jitlib.jit(dense), in_axes=(0, None))(X, W), np.tanh(X @ W))


def test_vmap_of_vmap_maps_two_axes():
    a, b = rng.normal(size=(4, 3)), rng.normal(size=(5, 3))
    pairwise = vmap(vmap(lambda u, v: np.sum((u - v) ** 2), in_axes=(None, 0)),
                    in_axes=(0, None))
    close(pairwise(a, b), ((a[:, None, :] - b[None, :, :]) ** 2).sum(-1))


def test_inner_vmap_captures_the_outer_example():
    xs, ys = rng.normal(size=4), rng.normal(size=5)
    out = vmap(lambda x: vmap(lambda y: np.sin(x) * y)(ys))(xs)
    close(out, np.sin(xs)[:, None] * ys[None, :])


@pytest.mark.parametrize("size", [0, 1])
def test_empty_and_single_example_batches(size):
    def f(x, i):
        y = x.copy()
        y[i] = -x[i] * 3
        return np.tanh(y @ y) + x[::2].sum() + np.cumsum(y)[-1] + x[[1, 0]].max()
    x, i = rng.normal(size=(size, 4)), np.arange(size) % 4
    want = np.array([f(a, b) for a, b in zip(x, i)]).reshape(size)
    for backend in ("interpreter", "jax", "cpu"):
        close(jitlib.jit(vmap(f), backend=backend)(x, i), want)


def test_vmap_captures_values_of_an_enclosing_jit():
    @jitlib.jit
    def f(x, w):
        return vmap(lambda row: np.tanh(row @ w))(x)   # w is captured, not mapped
    close(f(X, W), np.tanh(X @ W))


def test_vmap_module_is_visible_in_the_jit_ir():
    text = jitlib.jit(vmap(lambda x: x.sum(-1))).lower(X).as_text()
    assert "f64[4] reduce_sum(%x), dims=[1]" in text, text


# -- errors a user can hit

def test_inconsistent_sizes_name_every_mapped_leaf():
    with pytest.raises(ShapeError, match=r"inconsistent sizes.*\(4, 3\).*\(5, 3\)"):
        vmap(lambda a, b: a + b)(X, np.ones((5, 3)))


def test_axis_out_of_range():
    with pytest.raises(ShapeError, match=r"axis 2, but the value has rank 2 .*\(4, 3\)"):
        vmap(np.sin, in_axes=2)(X)
    with pytest.raises(ShapeError, match="out_axes asks for axis 3"):
        vmap(np.sin, out_axes=3)(X)


def test_bad_in_axes_structure():
    with pytest.raises(JitlibTypeError, match="2 entries but the function was called with 1"):
        vmap(np.sin, in_axes=(0, 0))(X)
    with pytest.raises(JitlibTypeError, match="not a tree prefix"):
        vmap(lambda p: p["w"], in_axes=({"v": 0},))({"w": X})
    with pytest.raises(JitlibTypeError, match="must hold ints and None"):
        vmap(np.sin, in_axes=0.5)
    with pytest.raises(JitlibTypeError, match="got a list"):
        vmap(np.sin, in_axes=[0])
    with pytest.raises(JitlibTypeError, match="got a dict"):
        vmap(lambda p: p["w"], in_axes={"w": 0})


def test_nothing_mapped_or_a_scalar_mapped():
    with pytest.raises(JitlibTypeError, match="at least one mapped argument"):
        vmap(np.sin, in_axes=None)(X)
    with pytest.raises(ShapeError, match="is a scalar"):
        vmap(lambda x, c: x * c)(X, 2.0)


def test_mapped_output_with_out_axes_none_names_the_users_line():
    def f(x):
        return x * 2     # the mapped output
    with pytest.raises(JitlibTypeError, match="out_axes is None") as e:
        vmap(f, out_axes=None)(X)
    assert e.value.location.function == "f"
    assert "x * 2" in str(e.value)


def test_errors_are_jitlib_errors():
    assert issubclass(ShapeError, JitlibError) and issubclass(JitlibTypeError, JitlibError)
