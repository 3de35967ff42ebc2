"""Tests that render Triton source need the Triton compiler, though not a GPU: it comes
with the `triton` extra (or `gpu`), not with `test`. Without it they skip, saying so."""
import importlib.util

import pytest

REASON = ("needs Triton, not installed (the `triton` extra adds it, no GPU needed: "
          "pip install -e '.[test,triton]')")


def triton_installed():
    spec = importlib.util.find_spec("triton")
    # absent, or only tests/backends/triton found as a namespace package
    return spec is not None and spec.origin is not None


def require_triton():
    """Skip the calling test (or module) unless Triton is installed."""
    if not triton_installed():
        pytest.skip(REASON, allow_module_level=True)
