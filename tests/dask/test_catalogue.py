"""Realistic programs from tests/programs.py on Dask arrays chunked along axis 0: every
array argument as long as the first is chunked alike; results equal eager NumPy."""
import numpy as np
import pytest

import jitlib
from programs import PROGRAMS

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")

# blockwise per row, reductions along the rows (standardize, minmax), a batch norm
NAMES = ["softmax", "logsumexp", "layernorm", "rmsnorm", "batchnorm_inference",
         "standardize_features", "minmax_scale", "l2_normalize", "mlp2"]


@pytest.mark.parametrize("name", NAMES)
def test_catalogue_program_row_chunked(name):
    program = next(p for p in PROGRAMS if p.name == name)
    args = program.make_args(np.random.default_rng(0))
    n = args[0].shape[0]
    chunked = tuple(da.from_array(a, chunks=(max(2, n // 3),) + a.shape[1:])
                    if isinstance(a, np.ndarray) and a.ndim and a.shape[0] == n else a
                    for a in args)
    with dask.config.set(scheduler="synchronous"):
        got = dask.compute(jitlib.jit(program.fn)(*chunked))[0]
    want = program.fn(*args)
    got_leaves, want_leaves = jitlib.tree.leaves(got), jitlib.tree.leaves(want)
    assert len(got_leaves) == len(want_leaves)
    for g, w in zip(got_leaves, want_leaves):
        assert np.asarray(g).dtype == np.asarray(w).dtype
        np.testing.assert_allclose(g, w, rtol=program.rtol or 2e-5, atol=program.atol or 1e-6)
