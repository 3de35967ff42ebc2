"""The public API is typed and its docstring examples run.

mypy --strict checks the modules and the usage file that pyproject.toml's [tool.mypy]
names (the public API: jit, make_ir, Lowered, the transforms, vmap, Array, buckets,
tree); the examples in the public functions' docstrings run as doctests.
"""
import doctest
import os
import subprocess
import sys

import pytest

import jitlib
import jitlib.buckets.config
import jitlib.transforms.autodiff
import jitlib.transforms.batching_api
from jitlib import api, tree

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_mypy_strict_passes_on_the_public_api(tmp_path):
    pytest.importorskip("mypy", reason="mypy comes with the test extra")
    # a fresh cache: a stale one from another mypy version can hide errors
    out = subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path)],
                         cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Success" in out.stdout


def test_mypy_catches_a_misuse_of_the_public_api(tmp_path):
    # the check has teeth: the same configuration rejects a wrong call
    pytest.importorskip("mypy", reason="mypy comes with the test extra")
    bad = tmp_path / "bad.py"
    bad.write_text("import jitlib\n\njitlib.jit(lambda x: x, backend='tpu')\n"
                   "jitlib.tree.unflatten([1], [2])\n")
    out = subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "c"),
                          "--strict", str(bad)], cwd=ROOT, capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 1, out.stdout
    assert "bad.py:3" in out.stdout and "bad.py:4" in out.stdout, out.stdout


@pytest.mark.parametrize("module", [api, tree, jitlib.buckets.config,
                                    jitlib.transforms.autodiff,
                                    jitlib.transforms.batching_api],
                         ids=lambda m: m.__name__)
def test_docstring_examples_run(module, monkeypatch):
    monkeypatch.chdir(ROOT)
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0, f"{module.__name__} has no examples"
    assert result.failed == 0
