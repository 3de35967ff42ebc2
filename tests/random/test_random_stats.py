"""Statistical sanity of jitlib.random's draws, with fixed keys (so never flaky): moments,
Kolmogorov-Smirnov distances, chi-square counts, and independence of split keys. Each
bound is loose enough for any good generator at these sizes (about 5 standard errors, or
the 0.1% critical value) and tight enough to catch a wrong transform or a stuck bit."""
import math

import numpy as np
import pytest

import jitlib
import jitlib.random as jr

N = 100_000
KEY = jr.key(20261204)


def ks_distance(sample, cdf):
    x = np.sort(sample.astype(np.float64))
    f = cdf(x)
    i = np.arange(1, len(x) + 1)
    return max(np.max(i / len(x) - f), np.max(f - (i - 1) / len(x)))


KS_001 = 1.95 / math.sqrt(N)   # the 0.1% critical value for large N
_erf = np.frompyfunc(math.erf, 1, 1)


def normal_cdf(x):
    return 0.5 * (1 + _erf(x / math.sqrt(2)).astype(np.float64))


def chi2_ok(counts, expected):
    """Chi-square below its 0.1% critical value (Wilson-Hilferty approximation)."""
    k = len(counts) - 1
    stat = float(np.sum((counts - expected) ** 2 / expected))
    crit = k * (1 - 2 / (9 * k) + 3.09 * math.sqrt(2 / (9 * k))) ** 3
    return stat < crit, stat, crit


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_uniform_moments_and_ks(dtype):
    u = jr.uniform(KEY, (N,), dtype)
    assert u.min() >= 0 and u.max() < 1
    assert abs(u.mean() - 0.5) < 5 * math.sqrt(1 / 12 / N)
    assert abs(u.var() - 1 / 12) < 0.002
    assert ks_distance(u, lambda x: x) < KS_001


def test_uniform_low_bits_are_random_too():
    # the last mantissa bit of each float: half ones, and not stuck in pairs
    m = (jr.uniform(KEY, (N,)) * 2 ** 23).astype(np.int64)
    low = m & 1
    assert abs(low.mean() - 0.5) < 5 * 0.5 / math.sqrt(N)
    assert abs(np.mean(low[1:] == low[:-1]) - 0.5) < 5 * 0.5 / math.sqrt(N)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_normal_moments_tails_and_ks(dtype):
    z = jr.normal(KEY, (N,), dtype).astype(np.float64)
    assert abs(z.mean()) < 5 / math.sqrt(N)
    assert abs(z.var() - 1) < 5 * math.sqrt(2 / N)
    assert abs(np.mean(z ** 3)) < 5 * math.sqrt(15 / N)            # skewness
    assert abs(np.mean(z ** 4) - 3) < 5 * math.sqrt(96 / N)        # kurtosis
    tail = np.mean(np.abs(z) > 3)                                   # 0.27% beyond 3 sigma
    assert abs(tail - 0.0026998) < 5 * math.sqrt(0.0027 / N)
    assert ks_distance(z, normal_cdf) < KS_001


def test_randint_counts_are_flat():
    r = jr.randint(KEY, (N,), 3, 13)
    assert r.min() == 3 and r.max() == 12
    ok, stat, crit = chi2_ok(np.bincount(r - 3, minlength=10), N / 10)
    assert ok, (stat, crit)


def test_randint_over_a_wide_int64_span():
    r = jr.randint(KEY, (N,), -2**62, 2**62, np.int64)
    assert r.min() >= -2**62 and r.max() < 2**62
    counts = np.bincount(((r.astype(np.float64) + 2.0 ** 62) / 2.0 ** 63 * 16).astype(int),
                         minlength=16)
    ok, stat, crit = chi2_ok(counts, N / 16)
    assert ok, (stat, crit)


@pytest.mark.parametrize("p", [0.5, 0.01, 0.9])
def test_bernoulli_frequency(p):
    b = jr.bernoulli(KEY, p, (N,))
    assert abs(b.mean() - p) < 5 * math.sqrt(p * (1 - p) / N)


def test_permutation_positions_are_uniform():
    # where element 0 lands, over 2000 keys: flat over the 10 places
    keys = jr.split(KEY, 2000)
    perms = np.asarray(jitlib.vmap(lambda k: jr.permutation(k, 10))(keys))
    assert (np.sort(perms, axis=1) == np.arange(10)).all()
    where = np.argmax(perms == 0, axis=1)
    ok, stat, crit = chi2_ok(np.bincount(where, minlength=10), 200)
    assert ok, (stat, crit)


def test_split_keys_give_uncorrelated_streams():
    keys = jr.split(KEY, 8)
    assert len({tuple(k) for k in keys}) == 8 and not (keys == KEY).all(axis=1).any()
    streams = np.stack([jr.normal(k, (N // 4,)) for k in keys]).astype(np.float64)
    corr = np.corrcoef(streams)
    off = corr[~np.eye(8, dtype=bool)]
    assert np.abs(off).max() < 5 / math.sqrt(N // 4)


def test_fold_in_and_nearby_keys_are_independent():
    # consecutive fold_in data and consecutive seeds: distinct keys, uncorrelated draws
    keys = [jr.fold_in(KEY, i) for i in range(16)] + [jr.key(s) for s in range(16)]
    assert len({tuple(k) for k in keys}) == 32
    streams = np.stack([jr.uniform(k, (20_000,)) for k in keys]).astype(np.float64)
    off = np.corrcoef(streams)[~np.eye(32, dtype=bool)]
    assert np.abs(off).max() < 5 / math.sqrt(20_000)


def test_neighbouring_elements_are_uncorrelated():
    u = jr.uniform(KEY, (N,)).astype(np.float64)
    for lag in (1, 2, 7):
        r = np.corrcoef(u[:-lag], u[lag:])[0, 1]
        assert abs(r) < 5 / math.sqrt(N), lag
