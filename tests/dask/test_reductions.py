"""Reductions along a chunked axis: a tree of jitlib combine programs, and a finalize."""
import numpy as np
import pytest

import jitlib

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")

from test_blockwise import assert_like_numpy  # noqa: E402


@pytest.fixture(autouse=True)
def synchronous():
    with dask.config.set(scheduler="synchronous"):
        yield


@pytest.fixture
def x():
    data = np.random.default_rng(1).standard_normal((38, 6))
    return da.from_array(data, chunks=(4, 6))   # ten blocks, an edge of 2: two levels of combines


def test_sum_of_squares_float32(x):
    assert_like_numpy(lambda x: (x * x).sum(), x.astype(np.float32))


@pytest.mark.parametrize("fn", [
    lambda x: x.sum(axis=0), lambda x: x.mean(), lambda x: x.mean(axis=0),
    lambda x: x.max(), lambda x: np.min(x, axis=0), lambda x: np.prod(1 + x / 100),
    lambda x: ((x > 1).any(), (x > -9).all()),
    lambda x: (x.var(axis=0), x.std(), np.var(x, ddof=1)),
], ids=["sum0", "mean", "mean0", "max", "min0", "prod", "any_all", "var_std"])
def test_reduction(fn, x):
    assert_like_numpy(fn, x)


def test_integer_sum_is_exact(x):
    assert_like_numpy(lambda x: (x * 1000).astype(np.int64).sum(axis=0), x)


def test_logsumexp_along_chunks(x):
    def logsumexp(x):
        m = x.max(axis=0)
        return m + np.log(np.exp(x - m).sum(axis=0))
    assert_like_numpy(logsumexp, x)


def test_softmax_along_chunks_is_three_passes(x):
    def softmax0(x):
        e = np.exp(x - x.max(axis=0))
        return e / e.sum(axis=0)
    y = assert_like_numpy(softmax0, x)
    assert y.chunks == x.chunks


def test_gram_matrix_is_partial_products(x):
    assert_like_numpy(lambda x: x.T @ x, x)


def test_centered_rows_mixed_with_reduction(x):
    assert_like_numpy(lambda x: (x - x.mean(axis=0), x.sum()), x)


def test_whole_array_sum_of_a_grid():
    x = da.from_array(np.arange(70.0).reshape(7, 10), chunks=(3, 4))
    assert_like_numpy(lambda x: (x * x).sum(), x)


def test_reduction_graph_runs_jitlib_combines(x):
    @jitlib.jit
    def total(x):
        return (x * x).sum()
    total(x).compute()
    compiles = jitlib.dask.cache_info(total)
    assert compiles["total_stage0"] == 2     # blocks of 4 and the edge of 2
    assert compiles["total_final"] == 1


def test_argmax_argmin_first_occurrence_and_nan():
    data = np.random.default_rng(3).standard_normal((38, 5))
    data[7, 1] = data[30, 2] = np.nan       # the first NaN wins, as in NumPy
    data[12, 3] = data[33, 3] = 50.0        # a tie across blocks: the first wins
    x = da.from_array(data, chunks=(4, 5))
    assert_like_numpy(lambda x: (x.argmax(axis=0), np.argmin(x, axis=0)), x)


def test_whole_vector_argmax_of_integers():
    v = da.from_array(np.array([3, 1, 4, 1, 5, 9, 2, 6, 5, 9]), chunks=3)
    assert_like_numpy(lambda v: (v.argmax(), v.argmin() + 1), v)


def test_ragged_grid_runs_two_programs_per_stage():
    data = np.random.default_rng(4).uniform(1.0, 2.0, (7, 10))
    x = da.from_array(data, chunks=(3, 4))   # edges of 4 rows (merged) and 2 columns

    @jitlib.jit
    def logs(x):
        # the padding is 0: log(0) = -inf would win the min unless masked
        return np.log(x).min(), np.sqrt(x) * 2
    assert_like_numpy(logs.fn, x)
    logs(x)[0].compute()
    # four block shapes, one program for the largest and one masked for the edges
    assert jitlib.dask.cache_info(logs)["logs_stage0"] == 2


def test_ragged_edge_argmin_and_dot(x):
    assert_like_numpy(lambda x: (np.argmin(np.abs(x), axis=0), x.T @ np.exp(x)), x)


@pytest.fixture
def grid():
    data = np.random.default_rng(5).standard_normal((10, 7))
    return da.from_array(data, chunks=(3, 3))   # ragged along both axes


@pytest.mark.parametrize("fn", [
    lambda x: x.sum(axis=0),
    lambda x: x - x.mean(axis=0),
    lambda x: (x.max(axis=1), x.argmin(axis=0)),
    lambda x: np.exp(x - x.max(axis=0)) / np.exp(x - x.max(axis=0)).sum(axis=0),
    lambda x: x.sum(axis=0).sum(),
], ids=["sum0", "centered", "max1_argmin0", "softmax0", "sum_of_sums"])
def test_reduction_over_one_of_two_chunked_axes(fn, grid):
    out = assert_like_numpy(fn, grid)
    first = out[0] if isinstance(out, tuple) else out
    if first.ndim:   # the kept axis stays chunked (its block of 1 merged: 3, 4)
        assert first.chunks[-1] in ((3, 4), (3, 3, 4))


@pytest.mark.parametrize("backend", ["interpreter", "jax"])
def test_other_backends_run_the_same_stages(backend, x):
    if backend == "jax":
        pytest.importorskip("jax")
    fn = jitlib.jit(lambda x: (x - x.mean(axis=0), x.argmax(axis=0)), backend=backend)
    centered, first = fn(x)
    data = x.compute()
    np.testing.assert_allclose(centered.compute(), data - data.mean(axis=0), rtol=1e-12)
    np.testing.assert_array_equal(first.compute(), data.argmax(axis=0))
