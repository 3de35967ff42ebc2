"""Programs that couple blocks are refused at the user's line, with a rechunk hint."""
import numpy as np
import pytest

import jitlib
from jitlib.errors import ChunkCouplingError

da = pytest.importorskip("dask.array")


@pytest.fixture
def x():
    # 5 columns: an interned instruction keeps its first builder's line (hlo/ir.py), and
    # tests/buckets/test_padding.py traces the same cumsum on (n, 3) arrays; while its
    # instructions were alive, this file's error named that file's line
    return da.from_array(np.arange(40.0).reshape(8, 5), chunks=(3, 5))


@pytest.mark.parametrize("fn, op", [
    (lambda x: x[::-1] * 2, "reverse"),
    (lambda x: np.cumsum(x, axis=0), "cumsum"),
    (lambda x: x[1:] - x[:-1], "slice"),
    (lambda x: np.sort(x, axis=0), "sort"),
    (lambda x: x[:, 0][:, None] * x[:, 0][None, :], "chunked axis on two axes"),
], ids=["reverse", "cumsum", "diff", "sort", "outer"])
def test_coupling_op_is_named(fn, op, x):
    with pytest.raises(ChunkCouplingError) as info:
        jitlib.jit(fn)(x)
    text = str(info.value)
    assert op in text
    assert "test_coupling_errors.py" in text   # the user's line
    assert "rechunk" in text and "argument 'x' axis 0" in text


def test_rechunked_to_one_chunk_runs(x):
    y = jitlib.jit(lambda x: np.cumsum(x, axis=0))(x.rechunk({0: -1}))
    np.testing.assert_array_equal(y.compute(), np.cumsum(x.compute(), axis=0))


@pytest.fixture
def auto_rechunk():
    jitlib.config.update("dask_rechunk", "auto")
    yield
    jitlib.config.update("dask_rechunk", "error")


def test_opt_in_rechunks_the_coupled_axis_only(auto_rechunk):
    data = np.arange(48.0).reshape(8, 6)
    x = da.from_array(data, chunks=(3, 2))
    y = jitlib.jit(lambda x: np.cumsum(x, axis=0) * 2)(x)
    np.testing.assert_array_equal(y.compute(), np.cumsum(data, axis=0) * 2)
    assert y.chunks == ((8,), (2, 2, 2))   # the columns stay chunked


def test_numpy_argument_that_must_line_up_with_a_chunked_axis(x):
    w = np.ones(8)   # as long as x's chunked axis, but whole in every block
    with pytest.raises(ChunkCouplingError, match="does not trace on the blocks") as info:
        jitlib.jit(lambda x, w: x * w[:, None])(x, w)
    assert "chunked alike" in str(info.value)
    y = jitlib.jit(lambda x, w: x * w[:, None])(x, da.from_array(w, chunks=3))
    np.testing.assert_array_equal(y.compute(), x.compute())


def test_writes_into_arguments_are_refused(x):
    def scale_in_place(x):
        x *= 2
        return x
    with pytest.raises(jitlib.errors.UnsupportedError, match="writes into its arguments"):
        jitlib.jit(scale_in_place)(x)


def test_explain_without_dask_arguments_says_so():
    with pytest.raises(jitlib.errors.JitlibTypeError, match="needs a Dask array") as info:
        jitlib.dask.explain(jitlib.jit(lambda x: x), np.ones(3))
    assert "test_coupling_errors.py" in str(info.value)
