"""Rules that meet on one function: two on one argument axis are an error naming both;
two on different axes of one argument pad both."""
import numpy as np
import pytest

import jitlib
from jitlib.buckets import BucketConfigError

RULE = """\
[[bucket]]
function = "{glob}"
arg = {arg}
sizes = [8, 16]
"""


def _write(tmp_path, *rules):
    path = tmp_path / "b.toml"
    path.write_text("".join(RULE.format(glob=g, arg=a) for g, a in rules))
    return str(path)


def total(x):
    return x.sum(axis=0)


def test_two_file_rules_on_one_argument_name_both_lines(tmp_path, monkeypatch):
    # one rule names the argument, the other its position: both are 'x' axis 0
    path = _write(tmp_path, ("*total", '"x"'), ("*.total", "0"))
    monkeypatch.setenv("JITLIB_BUCKETS", path)
    with pytest.raises(BucketConfigError, match="two bucket rules pad argument 'x' axis 0") \
            as info:
        jitlib.jit(total, backend="interpreter")
    assert f"{path}:1" in str(info.value) and f"{path}:5" in str(info.value)


def test_inline_rule_against_a_file_rule_names_both(tmp_path, monkeypatch):
    path = _write(tmp_path, ("*total", '"x"'))
    monkeypatch.setenv("JITLIB_BUCKETS", path)
    with pytest.raises(BucketConfigError, match="two bucket rules") as info:
        jitlib.jit(total, backend="interpreter", buckets={"arg": "x", "policy": "pow2"})
    assert f"{path}:1" in str(info.value) and "jit(buckets=...)" in str(info.value)


def test_negative_and_positive_axis_meet_at_the_call():
    jitted = jitlib.jit(lambda x: x.sum(axis=1), backend="interpreter",
                        buckets=[{"arg": "x", "axis": 1, "sizes": [8]},
                                 {"arg": "x", "axis": -1, "policy": "pow2"}])
    with pytest.raises(BucketConfigError, match="argument 'x' axis 1"):
        jitted(np.ones((3, 5)))


def test_two_axes_of_one_argument_both_pad():
    def f(x):
        return x.sum(axis=(0, 1)), x.max(axis=0)
    jitted = jitlib.jit(f, backend="interpreter",
                        buckets=[{"arg": "x", "axis": 0, "sizes": [8]},
                                 {"arg": "x", "axis": 1, "sizes": [4, 16]}])
    rng = np.random.default_rng(0)
    for shape in [(5, 3), (7, 9), (3, 3), (8, 16)]:
        x = rng.standard_normal(shape)
        for got, want in zip(jitted(x), f(x)):
            np.testing.assert_allclose(got, want, rtol=1e-12)
    assert jitted.cache_info().misses == 2   # (8, 4) and (8, 16)
