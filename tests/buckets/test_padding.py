"""Every op kind a bucketed axis can flow through, against unpadded eager NumPy, for
every size inside each bucket; and the ops the proof must refuse."""
import numpy as np
import pytest

import jitlib
from jitlib.buckets import BucketRefusedError

POW2 = {"arg": "x", "axis": 0, "policy": "pow2", "max": 8}
SIZES = range(1, 9)   # buckets 1, 2, 4 (3..4), 8 (5..8)


def _x(n, dtype=np.float64):
    rng = np.random.default_rng(n)
    return rng.standard_normal((n, 3)).astype(dtype)


CASES = {
    "elementwise": lambda x: np.tanh(x) * 2.0 + 1.0,
    "broadcast": lambda x: x[:, :, None] * np.ones((3, 2)),
    "transpose": lambda x: x.T + 1.0,
    "reshape_other_axes": lambda x: x[:, :, None].reshape(x.shape[0], 3),
    "sum": lambda x: x.sum(axis=0),
    "sum_all": lambda x: np.sum(x),
    "mean": lambda x: x.mean(axis=0),
    "var_ddof1": lambda x: np.var(x, axis=0, ddof=1),
    "std": lambda x: np.std(x, axis=0),
    "prod": lambda x: np.prod(1.0 + 0.1 * x, axis=0),
    "max": lambda x: x.max(axis=0),
    "min": lambda x: x.min(axis=0),
    "any": lambda x: np.any(x > 1.0, axis=0),
    "all": lambda x: np.all(x > -3.0, axis=0),
    "argmax": lambda x: np.argmax(x, axis=0),
    "argmin": lambda x: np.argmin(x, axis=0),
    "softmax_over_padded": lambda x: np.exp(x - x.max(0)) / np.exp(x - x.max(0)).sum(0),
    "softmax_per_row": lambda x: np.exp(x) / np.exp(x).sum(1, keepdims=True),
    "cumsum_forward": lambda x: np.cumsum(x, axis=0),
    "contract_padded": lambda x: x.T @ x,
    "matmul_rows": lambda x: np.maximum(x @ np.ones((3, 4)), 0.0),
    "count_nonzero": lambda x: np.count_nonzero(x > 0, axis=0),
    "centered": lambda x: x - x.mean(axis=0, keepdims=True),
    "log_of_padding": lambda x: np.log(np.abs(x)).sum(axis=0),   # log(0) = -inf padding
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_bucketed_op_equals_unpadded_numpy(name):
    fn = CASES[name]
    jitted = jitlib.jit(fn, backend="interpreter", buckets=POW2)
    for n in SIZES:
        x = _x(n)
        want = fn(x)
        got = jitted(x)
        np.testing.assert_array_equal(np.shape(got), np.shape(want), err_msg=f"n={n}")
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12, err_msg=f"{name} n={n}")
        assert np.asarray(got).dtype == np.asarray(want).dtype
    assert jitted.cache_info().misses <= 4   # one program per bucket (1, 2, 4, 8)


def test_two_bucketed_arguments_and_axes():
    def attn(q, k):
        s = q @ k.T                                   # (nq, nk)
        p = np.exp(s - s.max(axis=1, keepdims=True))
        return p / p.sum(axis=1, keepdims=True)
    rules = [{"arg": "q", "axis": 0, "sizes": [4, 8]}, {"arg": "k", "axis": 0, "sizes": [4, 8]}]
    jitted = jitlib.jit(attn, backend="interpreter", buckets=rules)
    rng = np.random.default_rng(0)
    for nq, nk in [(2, 3), (3, 7), (5, 5), (8, 2)]:
        q, k = rng.standard_normal((nq, 2)), rng.standard_normal((nk, 2))
        np.testing.assert_allclose(jitted(q, k), attn(q, k), rtol=1e-12)


def test_integer_pad_value_and_dtype():
    def f(x):
        return (x * 3).sum(axis=0), x.max(axis=0)
    jitted = jitlib.jit(f, backend="interpreter",
                        buckets={"arg": 0, "axis": 0, "sizes": [8], "pad_value": 7})
    for n in range(2, 9):
        x = np.arange(n * 2, dtype=np.int32).reshape(n, 2) - 5
        for g, w in zip(jitted(x), f(x)):
            np.testing.assert_array_equal(g, w)
            assert g.dtype == w.dtype


def test_cpu_backend_mlp_every_size():
    rng = np.random.default_rng(1)
    w1, w2 = rng.standard_normal((3, 5)), rng.standard_normal((5, 2))

    def mlp(x, w1, w2):
        h = np.maximum(x @ w1, 0.0)
        out = h @ w2
        return out - out.mean(axis=0)

    jitted = jitlib.jit(mlp, backend="cpu", buckets={"arg": "x", "axis": 0, "sizes": [4, 8]})
    for n in range(2, 9):
        x = _x(n)
        np.testing.assert_allclose(jitted(x, w1, w2), mlp(x, w1, w2), rtol=1e-12, atol=1e-12)
    assert jitted.cache_info().misses == 2


REFUSED = {
    "reshape_merges": (lambda x: x.reshape(-1), "reshape"),
    "reverse_cumsum": (lambda x: np.cumsum(x[::-1], axis=0), "rev"),
    "slice_end": (lambda x: x[:-1] * 2.0, "slice"),
    "concatenate": (lambda x: np.concatenate([x, x], axis=0), "concatenate"),
    "gather_along": (lambda x: x[np.array([0, 1])], "gather"),
    "flip": (lambda x: np.flip(x, 0) + 1.0, "reverse"),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_unsafe_ops_are_refused_at_the_user_line(name):
    fn, op = REFUSED[name]
    jitted = jitlib.jit(fn, backend="interpreter", buckets={"arg": "x", "axis": 0,
                                                             "sizes": [8]})
    with pytest.raises(BucketRefusedError) as info:
        jitted(_x(5))
    text = str(info.value)
    assert "test_padding.py" in text and "cannot pad" in text
    assert op in text   # the op, and the IR line of it


def test_structure_depending_on_the_size_is_refused():
    def f(x):
        if x.shape[0] % 2:
            return x.sum(axis=0)
        return x.max(axis=0)
    jitted = jitlib.jit(f, backend="interpreter", buckets={"arg": "x", "axis": 0,
                                                            "sizes": [8]})
    with pytest.raises(BucketRefusedError, match="structure changes"):
        for n in range(2, 9):
            jitted(_x(n))


def test_size_constant_not_affine_is_refused():
    def f(x):
        return x.sum(axis=0) * (1.0 / x.shape[0] ** 2)
    jitted = jitlib.jit(f, backend="interpreter", buckets={"arg": "x", "axis": 0,
                                                            "sizes": [8]})
    with pytest.raises(BucketRefusedError, match="not affine"):
        for n in range(2, 9):
            jitted(_x(n))


def test_masked_program_ir_has_length_parameter_and_select():
    from jitlib.buckets import runtime
    jitted = jitlib.jit(lambda x: x.sum(axis=0), backend="interpreter",
                        buckets={"arg": "x", "axis": 0, "sizes": [8]})
    jitted(_x(5))
    (entry,) = [e for e in jitted._cache._entries.values() if isinstance(e, runtime._Entry)]
    text = str(entry.program.module)
    assert "%len_x0: i64[]" in text and "select" in text and "iota" in text, text


def test_threshold_inside_the_bucket_is_refused_at_compile():
    """A branch on a threshold between the bucket's ends shows up in the bottom trace,
    so the first call in the bucket is refused, before any answer could be wrong."""
    def f(x):
        return x.sum(axis=0) if x.shape[0] > 6 else x.max(axis=0)
    jitted = jitlib.jit(f, backend="interpreter", buckets={"arg": "x", "axis": 0,
                                                            "sizes": [4, 16]})
    with pytest.raises(BucketRefusedError, match="structure changes"):
        jitted(_x(9))


def test_verify_each_size_traces_every_new_length():
    """A branch on one exact length inside the bucket escapes the bucket's sampled
    traces; verify = "each_size" traces each new length and refuses it."""
    def f(x):
        return x.max(axis=0) if x.shape[0] == 6 else x.sum(axis=0)
    rule = {"arg": "x", "axis": 0, "sizes": [8], "verify": "each_size"}
    jitted = jitlib.jit(f, backend="interpreter", buckets=rule)
    for n in (2, 5, 7, 8):
        np.testing.assert_allclose(jitted(_x(n)), f(_x(n)), rtol=1e-12)
    with pytest.raises(BucketRefusedError, match="structure changes"):
        jitted(_x(6))


def test_sizes_inside_a_proved_bucket_are_not_traced_again():
    traced = []

    def f(x):
        traced.append(x.shape[0])
        return x.mean(axis=0)
    jitted = jitlib.jit(f, backend="interpreter", buckets={"arg": "x", "axis": 0,
                                                            "sizes": [4, 16]})
    for n in range(5, 17):
        np.testing.assert_allclose(jitted(_x(n)), f(_x(n)), rtol=1e-12)
    # the bucket (16), one below it (15) and its bottom (5), traced once each at compile
    assert sorted(traced[:3]) == [5, 15, 16] and len(traced) == 3 + 12


def test_column_update_with_both_arguments_bucketed():
    """y[:, 0] = x.sum(1) spans y's padded axis from 0 with an update padded alike: the
    proof keeps it, and the write reaches the caller's y as eager NumPy leaves it."""
    def f(x, y):
        y[:, 0] = x.sum(axis=1)
        return y.sum(axis=0)
    rules = [{"arg": "x", "sizes": [4, 8]}, {"arg": "y", "sizes": [4, 8]}]
    jitted = jitlib.jit(f, backend="interpreter", buckets=rules)
    for n in range(2, 9):
        x, y, y_eager = _x(n), np.zeros((n, 2)), np.zeros((n, 2))
        np.testing.assert_allclose(jitted(x, y), f(x, y_eager), rtol=1e-12)
        np.testing.assert_allclose(y, y_eager, rtol=1e-12)


def test_update_not_spanning_the_padded_axis_is_refused():
    def f(x, z):
        y = x.copy()
        y[:3] = z
        return y
    jitted = jitlib.jit(f, backend="interpreter", buckets={"arg": "x", "sizes": [4, 8]})
    with pytest.raises(BucketRefusedError, match="updates a slice of a padded array"):
        jitted(_x(6), np.ones((3, 3)))
