"""jitlib.random outside jit: the generator's known answers, JAX's streams for the same
raw keys, the accuracy of normal's own log and erfinv, and the errors."""
import numpy as np
import pytest

import jitlib
import jitlib.random as jr
from jitlib.hlo import build as B
from jitlib.hlo.interpreter import evaluate
from jitlib.hlo.ir import Module
from jitlib.random import sampling, threefry

jax = pytest.importorskip("jax")
jnp = jax.numpy


def _eval(*results):
    return evaluate(Module("t", [], list(results)), [])


def _u32(v):
    return B.constant(np.array([v], np.uint32))


# Random123's known-answer vectors for Threefry-2x32-20: (key, counter) -> output
@pytest.mark.parametrize("key, counter, want", [
    ((0, 0), (0, 0), (0x6B200159, 0x99BA4EFE)),
    ((0xFFFFFFFF, 0xFFFFFFFF), (0xFFFFFFFF, 0xFFFFFFFF), (0x1CB996FC, 0xBB002BE7)),
    ((0x13198A2E, 0x03707344), (0x243F6A88, 0x85A308D3), (0xC4923A9C, 0x483DF7A0)),
])
def test_threefry_known_answers(key, counter, want):
    out = _eval(*threefry.threefry2x32(*map(_u32, key + counter)))
    assert [int(o[0]) for o in out] == list(want)


def ulps(got, want, dtype):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return np.abs(got - want) / np.spacing(np.abs(want).astype(dtype)).astype(np.float64)


def test_key_is_jaxs_raw_key():
    for seed in (0, 1, 42, 2**31 - 1, 2**32 - 1, np.uint32(7), np.int8(-1)):
        k = jr.key(seed)
        assert k.dtype == np.uint32 and k.shape == (2,)
        np.testing.assert_array_equal(k, jax.random.PRNGKey(seed), err_msg=repr(seed))


def test_a_64_bit_seed_keeps_its_high_word():
    # JAX with x64 on; JAX's default (x64 off) would keep only the low 32 bits
    assert jr.key(2**40 + 5).tolist() == [256, 5]
    assert jr.key(-1).tolist() == [2**32 - 1, 2**32 - 1]
    assert jr.key(np.int32(-1)).tolist() == [0, 2**32 - 1]
    assert jr.key(2**40).tolist() != jr.key(0).tolist()


def test_split_and_fold_in_match_jax():
    k, kj = jr.key(1234), jax.random.PRNGKey(1234)
    np.testing.assert_array_equal(jr.split(k), jax.random.split(kj))
    np.testing.assert_array_equal(jr.split(k, 5), jax.random.split(kj, 5))
    for d in (0, 1, 99, 2**32 - 1):
        np.testing.assert_array_equal(jr.fold_in(k, d), jax.random.fold_in(kj, d))


def test_split_i_is_fold_in_i():
    k = jr.key(3)
    keys = jr.split(k, 4)
    for i in range(4):
        np.testing.assert_array_equal(keys[i], jr.fold_in(k, i))


@pytest.mark.parametrize("dtype", [np.float32, np.float16, jnp.bfloat16])
def test_uniform_matches_jax_bit_for_bit(dtype):
    k, kj = jr.key(7), jax.random.PRNGKey(7)
    got = jr.uniform(k, (5, 300), dtype=dtype)
    assert isinstance(got, np.ndarray) and got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got, np.asarray(jax.random.uniform(kj, (5, 300), dtype)))


def test_float64_uniform_is_the_top_52_bits_of_the_two_words():
    k = jr.key(9)
    w0, w1 = (w.astype(np.uint64) for w in _eval(*threefry.hash_counters(B.constant(k), (64,))))
    want = ((w0 << np.uint64(32) | w1) >> np.uint64(12)).astype(np.float64) * 2.0 ** -52
    np.testing.assert_array_equal(jr.uniform(k, (64,), np.float64), want)


def test_uniform_range_rounds_each_op():
    k = jr.key(5)
    unit = jr.uniform(k, (1000,))
    got = jr.uniform(k, (1000,), minval=-2.0, maxval=5.0)
    lo, span = np.float32(-2.0), np.float32(7.0)
    np.testing.assert_array_equal(got, np.maximum(lo, unit * span + lo))
    assert got.min() >= -2.0 and got.max() <= 5.0


def test_uniform_bounds_broadcast():
    lo = np.array([0.0, 10.0, 100.0], np.float32)
    got = jr.uniform(jr.key(2), (4, 3), minval=lo, maxval=lo + 1)
    assert ((got >= lo) & (got < lo + 1)).all()
    with pytest.raises(jitlib.ShapeError, match="does not broadcast"):
        jr.uniform(jr.key(2), (4, 3), minval=np.zeros(4))


@pytest.mark.parametrize("dtype, lo, hi", [
    (np.int32, 0, 10), (np.int32, -5, 17), (np.int32, -2**31, 2**31 - 1),
    (np.uint8, 0, 256), (np.uint8, -5, 300), (np.int8, -128, 128), (np.int16, 7, 7),
    (np.int32, 9, 3), (np.uint32, 5, 2**31 - 1), (np.uint8, 3, 200), (np.int16, -1000, 3001),
])
def test_randint_matches_jax_bit_for_bit(dtype, lo, hi):
    k, kj = jr.key(11), jax.random.PRNGKey(11)
    got = jr.randint(k, (2000,), lo, hi, dtype)
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got, np.asarray(jax.random.randint(kj, (2000,), lo, hi,
                                                                       dtype)))


def test_randint_stays_in_range_with_array_bounds():
    lo = np.array([0, 100, -50])
    got = jr.randint(jr.key(4), (500, 3), lo, lo + 7, np.int64)
    assert got.dtype == np.int64 and ((got >= lo) & (got < lo + 7)).all()
    assert len(np.unique(got[:, 1])) == 7


@pytest.mark.parametrize("p", [0.5, 0.1, np.float32(0.9)])
def test_bernoulli_matches_jax(p):
    k, kj = jr.key(21), jax.random.PRNGKey(21)
    got = jr.bernoulli(k, p, (3000,))
    assert got.dtype == np.bool_
    # p as float32 for JAX too: jitlib's jax backend turns on jax_enable_x64, under which
    # JAX would take a Python float as float64
    pj = np.float32(p)
    np.testing.assert_array_equal(got, np.asarray(jax.random.bernoulli(kj, pj, (3000,))))


def test_bernoulli_shape_from_p():
    p = np.array([[0.0, 1.0], [0.0, 1.0]], np.float32)
    got = jr.bernoulli(jr.key(0), p)
    assert got.shape == (2, 2) and got.tolist() == [[False, True], [False, True]]


@pytest.mark.parametrize("n", [1, 10, 2000])   # 2000: JAX's shuffle takes two sorts
def test_permutation_of_range_matches_jax(n):
    k, kj = jr.key(8), jax.random.PRNGKey(8)
    got = jr.permutation(k, n)
    assert got.dtype == np.int64 and sorted(got.tolist()) == list(range(n))
    np.testing.assert_array_equal(got, np.asarray(jax.random.permutation(kj, n)))


def test_permutation_of_arrays_matches_jax():
    k, kj = jr.key(8), jax.random.PRNGKey(8)
    x = np.arange(24.0, dtype=np.float32).reshape(6, 4)
    np.testing.assert_array_equal(jr.permutation(k, x), jax.random.permutation(kj, x))
    np.testing.assert_array_equal(jr.permutation(k, x, axis=1),
                                  jax.random.permutation(kj, x, axis=1))
    np.testing.assert_array_equal(jr.permutation(k, x[:, 0]),
                                  jax.random.permutation(kj, x[:, 0]))


@pytest.mark.parametrize("dtype, bound", [(np.float32, 5), (np.float64, 8)])
def test_normal_is_within_a_few_ulps_of_sqrt2_erfinv(dtype, bound):
    special = pytest.importorskip("scipy.special")
    k = jr.key(11)
    z = jr.normal(k, (100_000,), dtype)
    assert z.dtype == np.dtype(dtype)
    # the uniform it transforms, as JAX draws it: (-1, 1)
    u = jr.uniform(k, (100_000,), dtype, np.nextafter(dtype(-1), dtype(0)), 1.0)
    want = np.sqrt(2.0) * special.erfinv(u.astype(np.float64))
    assert ulps(z, want, dtype).max() <= bound


def test_normal_is_close_to_jax():
    z = jr.normal(jr.key(5), (10_000,))
    zj = np.asarray(jax.random.normal(jax.random.PRNGKey(5), (10_000,), np.float32))
    np.testing.assert_allclose(z, zj, rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("dtype", [np.float16, jnp.bfloat16])
def test_narrow_normal_is_the_float32_draw_rounded(dtype):
    k = jr.key(6)
    np.testing.assert_array_equal(jr.normal(k, (500,), dtype),
                                  jr.normal(k, (500,), np.float32).astype(dtype))


@pytest.mark.parametrize("dtype, bound", [(np.float32, 2), (np.float64, 2)])
def test_log_of_the_unit_interval_from_exact_ops(dtype, bound):
    y = np.concatenate([np.geomspace(2.0 ** -63, 1.0, 20_000),
                        np.linspace(0.5, 1.0, 20_000)]).astype(dtype)
    p = B.parameter(0, y.shape, dtype)
    (got,) = evaluate(Module("log", [p], [sampling.log_unit(p)]), [y])
    assert ulps(got, np.log(y.astype(np.float64)), dtype).max() <= bound
    assert got[-1] == 0.0   # log(1) exactly


def test_samples_are_counter_based_by_flat_index():
    k = jr.key(0)
    np.testing.assert_array_equal(jr.uniform(k, (10,))[:4], jr.uniform(k, (4,)))
    np.testing.assert_array_equal(jr.uniform(k, (3, 4)).ravel(), jr.uniform(k, (12,)))


def test_jitlib_random_is_the_module():
    assert jitlib.random is jr
    assert set(jr.__all__) >= {"key", "split", "fold_in", "uniform", "normal", "randint",
                               "bernoulli", "permutation"}


@pytest.mark.parametrize("bad", [np.zeros(3, np.uint32), np.zeros(2, np.int32),
                                 np.zeros((4, 2), np.uint32)])
def test_a_key_that_is_not_a_uint32_pair_is_refused(bad):
    with pytest.raises(jitlib.JitlibTypeError, match=r"uint32 array of shape \(2,\)") as e:
        jr.normal(bad, (3,))
    if bad.ndim == 2:
        assert "vmap" in e.value.hint


def test_other_bad_arguments_are_refused():
    k = jr.key(0)
    with pytest.raises(jitlib.JitlibTypeError, match="float type"):
        jr.uniform(k, (2,), np.int32)
    with pytest.raises(jitlib.JitlibTypeError, match="integer type"):
        jr.randint(k, (2,), 0, 3, np.float32)
    with pytest.raises(jitlib.JitlibTypeError, match="seed must be an integer"):
        jr.key(1.5)
    with pytest.raises(OverflowError):
        jr.fold_in(k, -1)
    with pytest.raises(jitlib.JitlibTypeError, match="shape"):
        jr.normal(k, (2.5,))
