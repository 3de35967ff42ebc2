"""Shared test configuration.

Hypothesis profiles: "ci" (the default) keeps property tests bounded so the
suite stays fast on 2 cores; HYPOTHESIS_PROFILE=fuzz runs long fuzzing sessions.
"""
import os

from hypothesis import HealthCheck, settings

settings.register_profile("ci", max_examples=40, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("fuzz", max_examples=5000, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
