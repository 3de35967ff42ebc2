"""The README's main job runs, prints IR with the demo's own source lines, and checks itself."""
import subprocess
import sys
from pathlib import Path

import pytest

from jitlib import demo

QUICKSTART = Path(__file__).resolve().parents[1] / "examples" / "quickstart.py"


@pytest.mark.parametrize("backend", ["interpreter", "jax"])
def test_demo_runs_and_matches_numpy(backend, capsys):
    demo.run(backend, n=1000, rows=8, cols=16, repeats=2)
    out = capsys.readouterr().out
    assert out.count("matches eager NumPy") == 2
    assert 'loc("demo.py"' in out and "reduce_sum" in out


def test_examples_quickstart_runs():
    done = subprocess.run([sys.executable, str(QUICKSTART)], capture_output=True,
                          text=True, check=True)
    assert "layernorm matches NumPy" in done.stdout
