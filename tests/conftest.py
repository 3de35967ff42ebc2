"""Shared test configuration.

Hypothesis profiles: "ci" (the default) keeps property tests bounded so the
suite stays fast on 2 cores; HYPOTHESIS_PROFILE=fuzz runs long fuzzing sessions.
"""
import os

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile("ci", max_examples=40, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("fuzz", max_examples=5000, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(autouse=True, scope="session")
def _test_cache_dir(tmp_path_factory):
    """The suite's disk cache is its own: never the user's ~/.cache/jitlib. (Tests that
    need an empty one set JITLIB_CACHE_DIR themselves.)"""
    patch = pytest.MonkeyPatch()
    patch.setenv("JITLIB_CACHE_DIR", str(tmp_path_factory.mktemp("jitlib-cache")))
    yield
    patch.undo()
