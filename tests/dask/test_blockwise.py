"""jit on Dask arrays: blockwise programs become one layer and equal eager NumPy."""
import numpy as np
import pytest

import jitlib

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")


@pytest.fixture(autouse=True)
def threads():
    with dask.config.set(scheduler="threads"):
        yield


def materialized(args):
    return [a.compute() if isinstance(a, da.Array) else a for a in args]


def assert_like_numpy(fn, *args):
    """jit(fn) on Dask arguments returns Dask arrays equal to fn on the computed ones,
    dtypes included."""
    out = jitlib.jit(fn)(*args)
    ref = fn(*materialized(args))
    outs, refs = (out, ref) if isinstance(ref, tuple) else ((out,), (ref,))
    for o, r in zip(outs, refs):
        assert isinstance(o, da.Array)
        got = o.compute()
        assert got.dtype == np.asarray(r).dtype
        # summation order differs from NumPy's pairwise sums, and float32 math rounds
        tol = dict(rtol=1e-5, atol=1e-6) if got.dtype == np.float32 else dict(rtol=1e-9)
        np.testing.assert_allclose(got, r, **tol)
    return out


def layernorm(x, g, b):
    mu = x.mean(axis=-1, keepdims=True)
    var = np.var(x, axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-5) * g + b


def softmax_rows(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


@pytest.fixture
def rows():
    x = np.random.default_rng(0).standard_normal((23, 8)).astype(np.float32)
    return da.from_array(x, chunks=(5, 8))   # a ragged edge of 3 rows


def test_layernorm_over_row_chunks_is_one_layer(rows):
    g = np.linspace(0.5, 1.5, 8).astype(np.float32)
    y = assert_like_numpy(layernorm, rows, g, np.float32(0.25))
    assert y.chunks == rows.chunks
    # the input's layer and one blockwise layer of jitlib's
    assert len(y.dask.layers) == 2


def test_blocks_reach_the_program_without_a_copy(rows, monkeypatch):
    """An axis a stage does not keep has one chunk: its lone block is passed as it is,
    not joined by blockwise's concatenate (a copy of every block: 3-6x a fused kernel's
    time over a persisted array)."""
    import dask.array.core as core
    joined = []
    real = core.concatenate_axes
    monkeypatch.setattr(core, "concatenate_axes",
                        lambda *a, **k: joined.append(1) or real(*a, **k))
    g = np.linspace(0.5, 1.5, 8).astype(np.float32)
    assert_like_numpy(layernorm, rows, g, np.float32(0.25))
    assert_like_numpy(lambda x: (x * x).sum(), rows)
    assert joined == []


def test_elementwise_chain_with_python_scalars(rows):
    y = assert_like_numpy(lambda x, s: np.tanh(x * s + 1.0) * 2 - x, rows, 3)
    assert y.dtype == np.float32   # weak Python scalars keep float32


def test_softmax_rows(rows):
    assert_like_numpy(softmax_rows, rows)


def test_chunks_along_both_axes():
    x = da.from_array(np.arange(48.0).reshape(6, 8), chunks=(4, 3))
    assert_like_numpy(lambda x: np.sqrt(x) * 2 + 1, x)


def test_numpy_argument_broadcast_against_blocks(rows):
    w = np.arange(8, dtype=np.float64)
    assert_like_numpy(lambda x, w: x * w, rows, w)   # float32 * float64 -> float64


def test_single_row_edge_block_is_merged():
    x = da.from_array(np.arange(21.0).reshape(7, 3), chunks=(3, 3))   # 3, 3, 1
    y = assert_like_numpy(lambda x: x - x.mean(axis=1, keepdims=True), x)
    assert y.chunks[0] == (3, 4)


def test_stage_compiled_once_per_block_shape(rows):
    @jitlib.jit
    def doubled_rows(x):
        return x * 2
    doubled_rows(rows).compute()
    doubled_rows(rows).compute()
    # a chunk of 5 rows and the edge of 3: two programs, each compiled once
    assert jitlib.dask.cache_info(doubled_rows) == {"doubled_rows_stage0": 2}


def test_explain_prints_each_stage():
    x = da.ones((10, 3), chunks=(4, 3), dtype=np.float32)
    text = jitlib.dask.explain(jitlib.jit(lambda x: x / x.sum(axis=0)), x)
    assert "2 blockwise stage(s), 1 tree reduction(s)" in text
    assert "reduce_sum" in text and "_combine0" in text and "_stage1" in text


def test_import_jitlib_does_not_import_dask():
    import pathlib
    import subprocess
    import sys
    code = "import sys, jitlib; print('dask' in sys.modules)"
    root = pathlib.Path(__file__).resolve().parents[2]   # this tree's jitlib, via cwd
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=root)
    assert out.stdout.strip() == "False"


def test_python_int_used_as_a_bound(rows):
    assert_like_numpy(lambda x, n: x[:, :n] * 2, rows, 3)


def test_pytree_of_dask_arrays(rows):
    ones = da.ones((4, 6), chunks=(4, 2))
    assert_like_numpy(lambda p: (p["a"] + 1, p["b"].sum()), {"a": rows, "b": ones})


def test_two_arrays_chunked_independently(rows):
    y = da.from_array(np.arange(12.0).reshape(2, 6), chunks=(2, 2))
    # each sum counts its own blocks once, though the stage runs per pair of blocks
    assert_like_numpy(lambda x, y: (x * 2, y + 1, x.sum() + y.sum()),
                      rows.astype(np.float64), y)


def test_second_call_reuses_the_plan(rows, monkeypatch):
    f = jitlib.jit(lambda x: x * 2)
    f(rows)
    traces = []
    original = f._trace
    monkeypatch.setattr(f, "_trace", lambda *a, **k: traces.append(1) or original(*a, **k))
    y = f(rows + 1)   # another array, the same chunks and dtype
    np.testing.assert_allclose(y.compute(), (rows.compute() + 1) * 2, rtol=1e-6)
    assert traces == []
    f(rows.rechunk((4, 8)))
    assert traces   # other chunks: traced again


def test_calls_with_other_numpy_values_do_not_share_keys(rows):
    f = jitlib.jit(lambda x, w: x * w)
    a, b = f(rows, np.full(8, 2.0)), f(rows, np.full(8, 3.0))
    got_a, got_b = dask.compute(a, b)
    np.testing.assert_allclose(got_b / got_a, 1.5)
