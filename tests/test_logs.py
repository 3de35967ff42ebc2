"""JITLIB_LOG (jitlib/logs.py): topics printed to stderr with no logging set-up, in
words a user reads (no raw reprs), unknown topics refused, slow compiles reported."""
import logging
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import jitlib
from jitlib import logs
from jitlib.cache.explain import format_call

PROGRAM = """
import logging, sys
import numpy as np, jitlib
if "--user-logging" in sys.argv:
    logging.basicConfig(format="USER %(name)s %(message)s", level=logging.WARNING)
f = jitlib.jit(lambda x, n: x * n, backend="interpreter")
f(np.ones((4, 3), np.float32), 3)
f(np.ones((5, 3), np.float32), 3)
"""


def _stderr(tmp_path, topics, *flags):
    env = dict(os.environ, JITLIB_LOG=topics, JITLIB_CACHE_DIR=str(tmp_path))
    env.pop("JITLIB_DEBUG", None)
    done = subprocess.run([sys.executable, "-c", PROGRAM, *flags], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stderr


@pytest.fixture(autouse=True)
def _fresh_logging(monkeypatch):
    monkeypatch.delenv("JITLIB_DEBUG", raising=False)
    logs.reset()
    yield
    logs.reset()


def test_topics_print_to_stderr_without_logging_setup(tmp_path):
    err = _stderr(tmp_path, "compiles,recompiles")
    assert re.search(r"^jitlib: compiles: compiled <lambda>\(x: f32\[4,3\], "
                     r"n: int in \[0, 127\]\) on interpreter in [\d.]+ ms$", err, re.M), err
    assert "jitlib: recompiles: <lambda>: argument 'x': shape (4, 3) -> (5, 3)" in err
    assert "_Signature" not in err and "TreeDef" not in err


def test_a_users_handler_gets_the_records_and_jitlib_adds_none(tmp_path):
    err = _stderr(tmp_path, "compiles", "--user-logging")
    assert "USER jitlib.compiles compiled <lambda>(x: f32[4,3]" in err
    assert "jitlib: compiles:" not in err


def test_an_unknown_topic_is_an_error_naming_the_valid_ones(monkeypatch):
    monkeypatch.setenv("JITLIB_LOG", "compiles,recompile")
    with pytest.raises(ValueError, match=r"unknown topic 'recompile'; valid: compiles, "
                                         r"recompiles, cache, buckets, passes"):
        jitlib.jit(lambda x: x + 1, backend="interpreter")(np.ones(3))


def test_topics_off_log_nothing(monkeypatch, caplog):
    monkeypatch.setenv("JITLIB_LOG", "")
    with caplog.at_level(logging.DEBUG):
        jitlib.jit(lambda x: x + 2, backend="interpreter")(np.ones(3))
    assert not [r for r in caplog.records if r.name.startswith("jitlib")]


def test_jitlib_debug_still_works_and_says_it_is_deprecated(monkeypatch, caplog):
    monkeypatch.setenv("JITLIB_DEBUG", "1")
    with caplog.at_level(logging.INFO, logger="jitlib.compiles"):
        jitlib.jit(lambda x: x + 3, backend="interpreter")(np.ones(2))
    assert "JITLIB_DEBUG=1 is deprecated: use JITLIB_LOG=cache,compiles" in caplog.text
    assert "compiled <lambda>(x: f64[2]) on interpreter" in caplog.text


def test_call_signatures_read_like_calls():
    f = jitlib.jit(lambda x, n, s, k: x, static_argnames=("k",), backend="interpreter")
    key, _, _ = f._key(f._bind(({"a": np.ones((8, 16), np.float32), "b": np.int8(1)},
                                300, 2.5), {"k": "abc"}))
    assert format_call("f", key) == ("f(x_0: f32[8,16], x_1: i8[], n: int in [256, "
                                     "32767], s: float, k='abc') on interpreter")


def test_a_slow_compile_reports_its_progress(monkeypatch, caplog):
    # every compile counts as slow here: the lines a 2 s compile prints
    monkeypatch.setattr(logs, "SLOW_COMPILE_S", 0.0)
    monkeypatch.setenv("JITLIB_CACHE_DIR", "")

    def several_kernels(x):
        y = np.exp(x - x.max(axis=1, keepdims=True))
        return y / y.sum(axis=1, keepdims=True), np.cumsum(x, axis=0) * 0.8125

    with caplog.at_level(logging.WARNING, logger="jitlib"):
        jitlib.jit(several_kernels, backend="cpu")(np.ones((64, 32), np.float32))
    lines = [r.getMessage() for r in caplog.records if r.name == "jitlib.compiles"]
    progress = [re.fullmatch(r"compiling several_kernels: (\d+)/(\d+) kernels, "
                             r"[\d.]+ s so far", line) for line in lines[:-1]]
    assert progress and all(progress), lines
    assert 1 <= int(progress[0][1]) <= int(progress[0][2])
    assert re.fullmatch(r"compiled several_kernels: \d+ kernels in [\d.]+ s", lines[-1])
