"""Shared test configuration.

- The disk cache: every run gets its own temporary JITLIB_CACHE_DIR (subprocesses inherit
  it), removed at the end, so a run neither fills nor reads ~/.cache/jitlib.
- Slow tests (`@pytest.mark.slow`: long fuzz budgets, exhaustive sweeps) are deselected by
  default so CI stays within budget on 2 cores. JITLIB_SLOW_TESTS=1 runs everything, with
  the "slow" Hypothesis profile; `-m slow` runs the slow tests alone; any other `-m`
  expression, or a test named by its node id, chooses for itself.
- Hypothesis profiles: "ci" (the default) keeps property tests bounded; "slow" (the slow
  job) tries five times as many examples; HYPOTHESIS_PROFILE=fuzz runs long sessions.
"""
import atexit
import importlib.util
import os
import shutil
import sys
import tempfile

import pytest
from hypothesis import HealthCheck, settings

_cache = tempfile.mkdtemp(prefix="jitlib-test-cache-")
os.environ["JITLIB_CACHE_DIR"] = _cache
atexit.register(shutil.rmtree, _cache, ignore_errors=True)

# Without Triton installed, `import triton` would find tests/backends/triton as a namespace
# package (pytest puts tests/backends on sys.path for the tests there): mark it absent.
if importlib.util.find_spec("triton") is None:
    sys.modules["triton"] = None

# bfloat16 is loaded on first need (jitlib/hlo/dtypes.py); the tests' dtype tables
# (dtypes.SUPPORTED, REAL, FLOATS) must hold it whichever test file is collected first
from jitlib.hlo import dtypes as _dtypes  # noqa: E402
_dtypes.bfloat16

SLOW = os.environ.get("JITLIB_SLOW_TESTS", "") not in ("", "0")

settings.register_profile("ci", max_examples=40, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("slow", max_examples=200, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("fuzz", max_examples=5000, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "slow" if SLOW else "ci"))


def pytest_collection_modifyitems(config, items):
    if SLOW or config.option.markexpr or any("::" in arg for arg in config.args):
        return
    slow = [item for item in items if item.get_closest_marker("slow")]
    if slow:
        config.hook.pytest_deselected(items=slow)
        items[:] = [item for item in items if not item.get_closest_marker("slow")]


def pytest_report_header(config):
    return f"jitlib disk cache for this run: {_cache}"


@pytest.fixture
def no_loop_rolling(monkeypatch):
    """Python loops trace straight line (JITLIB_ROLL_LOOPS=0), as before loop rolling: for
    tests that need a long program and build it with a Python loop."""
    monkeypatch.setenv("JITLIB_ROLL_LOOPS", "0")
