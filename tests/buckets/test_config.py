"""Bucket config files: each kind of mistake names the file, the line and the key."""
import os

import numpy as np
import pytest

import jitlib
from jitlib.buckets import BucketConfigError, load

GOOD = """\
[[bucket]]
function = "model.forward"
arg = "x"
axis = 0
policy = "pow2"
min = 1
max = 4096
pad_value = 0.0
"""


def _write(tmp_path, text):
    path = tmp_path / "b.toml"
    path.write_text(text)
    return str(path)


def test_example_file_loads():
    root = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))
    rules = load(os.path.join(root, "examples", "buckets.toml"))
    assert [r.bucket_for(5) for r in rules] == [8, 64, 8]


def test_policies():
    from jitlib.buckets.config import Source, parse_rule
    src = Source("x")
    rule = parse_rule({"function": "f", "arg": "x", "policy": "pow2", "max": 100}, src)
    assert [rule.bucket_for(n) for n in (1, 2, 3, 5, 64, 65, 100, 101)] == \
        [1, 2, 4, 8, 64, 100, 100, None]
    rule = parse_rule({"function": "f", "arg": 0, "multiple_of": 64, "min": 10}, src)
    assert [rule.bucket_for(n) for n in (1, 64, 65)] == [64, 64, 128]
    rule = parse_rule({"function": "f", "arg": 0, "sizes": [4, 16]}, src)
    assert [rule.bucket_for(n) for n in (1, 4, 5, 16, 17)] == [4, 4, 16, 16, None]


BAD = {
    "unknown key": (GOOD.replace("pad_value", "padvalue"), 8, "padvalue"),
    "bad sizes": (GOOD.replace('policy = "pow2"', "sizes = [8, 4]"), 5, "sizes"),
    "size past max": (GOOD.replace('policy = "pow2"', "sizes = [8, 8192]"), 5, "sizes"),
    "unknown policy": (GOOD.replace("pow2", "fibonacci"), 5, "policy"),
    "negative min": (GOOD.replace("min = 1", "min = -3"), 6, "min"),
    "two policies": (GOOD.replace("min = 1", "multiple_of = 8"), 6, "multiple_of"),
    "beyond_max": (GOOD + 'beyond_max = "pad"\n', 9, "beyond_max"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_config_names_file_line_and_key(tmp_path, case):
    text, line, key = BAD[case]
    path = _write(tmp_path, "# header comment\n" + text)
    with pytest.raises(BucketConfigError) as info:
        load(path)
    message = str(info.value)
    assert f"{path}:{line + 1}" in message, message
    assert f"key {key!r}" in message, message


def test_axis_out_of_range_names_the_rule_line(tmp_path):
    path = _write(tmp_path, GOOD.replace("axis = 0", "axis = 3").replace(
        "model.forward", "*f"))
    jitted = jitlib.jit(lambda x: x * 2, backend="interpreter", buckets=path)
    with pytest.raises(BucketConfigError) as info:
        jitted(np.ones((3, 2)))
    assert f"{path}:4" in str(info.value) and "'axis'" in str(info.value)


def test_unknown_argument_is_an_error():
    with pytest.raises(BucketConfigError, match="'y' is not a parameter"):
        jitlib.jit(lambda x: x, buckets={"arg": "y", "policy": "pow2"})


def test_size_past_max(tmp_path, caplog):
    from jitlib.buckets.runtime import BucketSizeError

    def f(x):
        return x.sum(axis=0)
    jitted = jitlib.jit(f, backend="interpreter",
                        buckets={"arg": "x", "policy": "pow2", "max": 4})
    x = np.arange(12.0).reshape(6, 2)
    with caplog.at_level("INFO", logger="jitlib"):
        np.testing.assert_array_equal(jitted(x), f(x))   # compiled exactly, and logged
    assert "past max = 4" in caplog.text
    strict = jitlib.jit(f, backend="interpreter",
                        buckets={"arg": "x", "policy": "pow2", "max": 4,
                                 "beyond_max": "error"})
    with pytest.raises(BucketSizeError, match="past the bucket rule's max = 4"):
        strict(x)


def test_jitlib_buckets_env_matches_qualified_name(tmp_path, monkeypatch):
    path = _write(tmp_path, GOOD.replace("model.forward", "*.scaled_total"))
    monkeypatch.setenv("JITLIB_BUCKETS", path)

    def scaled_total(x):
        return x.mean(axis=0) * 3.0
    jitted = jitlib.jit(scaled_total, backend="interpreter")
    for n in range(2, 9):
        x = np.arange(n * 2.0).reshape(n, 2)
        np.testing.assert_allclose(jitted(x), scaled_total(x))
    assert jitted.cache_info().misses == 3     # buckets 2, 4, 8


def test_smallest_in_and_verify_key(tmp_path):
    from jitlib.buckets.config import Source, parse_rule
    src = Source("x")
    rule = parse_rule({"function": "f", "arg": "x", "policy": "pow2", "max": 100}, src)
    assert [rule.smallest_in(b) for b in (2, 4, 64, 100)] == [2, 3, 33, 65]
    assert rule.verify == "bucket"
    rule = parse_rule({"function": "f", "arg": 0, "sizes": [3, 10], "verify": "each_size"}, src)
    assert (rule.smallest_in(10), rule.verify) == (4, "each_size")
    path = _write(tmp_path, GOOD + 'verify = "sometimes"\n')
    with pytest.raises(BucketConfigError, match="verify") as info:
        load(path)
    assert f"{path}:9" in str(info.value)


def test_non_utf8_bytes_name_the_file_and_line(tmp_path):
    path = tmp_path / "b.toml"
    # a Latin-1 "é" in the glob: replaced, it would load a rule that matches nothing
    path.write_bytes(GOOD.replace("model.forward", "mod\xe8le.forward").encode("latin-1"))
    with pytest.raises(BucketConfigError, match="not UTF-8") as info:
        load(path)
    assert f"{path}:2" in str(info.value) and "0xe8" in str(info.value)


def forward(x):
    return x * 2.0


def scaled(x):
    return x.sum(axis=0) * 3.0


def test_glob_matching_no_jitted_function_warns_once(tmp_path, monkeypatch):
    from jitlib.buckets import BucketRuleWarning
    path = _write(tmp_path, GOOD.replace("model.forward", "*.forwrad") +
                  GOOD.replace("model.forward", "*.scaled"))
    monkeypatch.setenv("JITLIB_BUCKETS", path)
    typo = jitlib.jit(forward, backend="interpreter")
    matched = jitlib.jit(scaled, backend="interpreter")
    x = np.ones((3, 2))
    with pytest.warns(BucketRuleWarning) as record:
        np.testing.assert_array_equal(typo(x), forward(x))
    (warning,) = record
    assert (warning.filename, warning.lineno) == (path, 2)
    text = str(warning.message)
    assert "'*.forwrad' matches no jitted function" in text
    assert f"{__name__}.forward" in text and f"{__name__}.scaled" in text
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error", BucketRuleWarning)   # once: not again
        typo(x)
        typo(np.ones((5, 2)))
        jitlib.jit(lambda x: x + 1.0, backend="interpreter")(x)
        np.testing.assert_allclose(matched(x), scaled(x))


def test_sizes_too_large_to_allocate_name_the_rule_and_bytes(tmp_path):
    from jitlib.buckets.runtime import BucketSizeError
    path = _write(tmp_path, GOOD.replace('policy = "pow2"', f"sizes = [8, {2**61}]")
                  .replace("max = 4096\n", "").replace("model.forward", "*"))
    jitted = jitlib.jit(lambda x: x.sum(axis=0), backend="interpreter", buckets=path)
    with pytest.raises(BucketSizeError) as info:   # was numpy's "array is too big"
        jitted(np.ones((9, 3)))
    text = str(info.value)
    assert f"{path}:5" in text and f"from length 9 to {2**61}" in text
    assert f"{2**61 * 3 * 8:,} bytes (8 per item)" in text


def test_padded_bytes_use_the_argument_item_size(monkeypatch):
    from jitlib.buckets import runtime
    monkeypatch.setattr(runtime, "_memory_bytes", lambda: 1 << 20, raising=False)
    jitted = jitlib.jit(lambda x: x.sum(axis=0), backend="interpreter",
                        buckets={"arg": "x", "sizes": [4, 1 << 17]})
    small = np.ones((5, 2), np.int8)   # pads to 256 KiB: fits
    np.testing.assert_array_equal(jitted(small), small.sum(axis=0))
    with pytest.raises(runtime.BucketSizeError, match=r"2,097,152 bytes \(8 per item\)"):
        jitted(np.ones((5, 2)))        # float64: 2 MiB
