"""A function that traces at the call's shapes but not padded: the error says which
bucket padded what, not only a shape the user never passed."""
import numpy as np
import pytest

import jitlib
from jitlib.buckets import BucketShapeError


def first_column_from(x, y):
    y = y.copy()
    y[:, 0] = x.sum(axis=1)   # x and y rows must agree
    return y


def test_only_one_of_two_agreeing_arguments_bucketed():
    jitted = jitlib.jit(first_column_from, backend="interpreter",
                        buckets={"arg": "x", "sizes": [8, 16]})
    with pytest.raises(BucketShapeError) as info:
        jitted(np.ones((7, 3)), np.zeros((7, 2)))
    text = str(info.value)
    assert "argument 'x' axis 0: length 7 padded to 8 by the bucket rule" in text
    assert "could not broadcast" in text and "y[:, 0] = x.sum(axis=1)" in text
    assert "needs a bucket rule too, with the same sizes" in text
    assert isinstance(info.value.__cause__, jitlib.errors.ShapeError)


def test_a_probe_that_breaks_the_agreement_names_itself(tmp_path):
    path = tmp_path / "b.toml"
    path.write_text('[[bucket]]\nfunction = "*"\narg = "x"\nsizes = [8]\n\n'
                    '[[bucket]]\nfunction = "*"\narg = "y"\nsizes = [8, 16]\n')
    jitted = jitlib.jit(first_column_from, backend="interpreter", buckets=str(path))
    with pytest.raises(BucketShapeError) as info:   # both pad to 8; a probe resizes x alone
        jitted(np.ones((7, 3)), np.zeros((7, 2)))
    text = str(info.value)
    assert "resized to 7 (a trace the padding proof takes" in text
    assert f"by the bucket rule {path}:1" in text and f"by the bucket rule {path}:6" in text


def test_an_error_of_any_kind_is_explained():
    def f(x, y):
        assert x.shape[0] == y.shape[0], "rows differ"
        return x + y
    jitted = jitlib.jit(f, backend="interpreter", buckets={"arg": "x", "policy": "pow2"})
    with pytest.raises(BucketShapeError, match="AssertionError: rows differ"):
        jitted(np.ones((5, 2)), np.ones((5, 2)))


def test_arguments_of_equal_length_under_equal_sizes_pad_together():
    def weighted(x, w):
        return (x * w).sum(axis=0) / x.shape[0]
    jitted = jitlib.jit(weighted, backend="interpreter",
                        buckets=[{"arg": "x", "sizes": [4, 8]}, {"arg": "w", "sizes": [4, 8]}])
    rng = np.random.default_rng(0)
    for n in range(2, 9):
        x, w = rng.standard_normal((n, 3)), rng.standard_normal((n, 3))
        np.testing.assert_allclose(jitted(x, w), weighted(x, w), rtol=1e-12)
    assert jitted.cache_info().misses == 2   # buckets 4 and 8, one length each
    from jitlib.buckets import runtime
    entry = next(e for e in jitted._cache._entries.values() if isinstance(e, runtime._Entry))
    assert "%len_x0_w0: i64[]" in str(entry.program.module)
