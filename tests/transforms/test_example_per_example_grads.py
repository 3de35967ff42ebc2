"""examples/per_example_grads.py runs, checks itself against a loop of grad, and its
per-example gradients agree with central finite differences of the eager NumPy loss."""
import importlib.util
import subprocess
import sys
from pathlib import Path

import numpy as np

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "per_example_grads.py"


def load_example():
    spec = importlib.util.spec_from_file_location("per_example_grads", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_script_runs_and_checks_itself():
    done = subprocess.run([sys.executable, str(EXAMPLE)], capture_output=True, text=True,
                          check=True)
    assert "per-example gradients match a loop of grad over 16 examples" in done.stdout
    assert "'w1': (16, 8, 32)" in done.stdout


def test_per_example_grads_match_finite_differences():
    example = load_example()
    batch, d, hidden, classes = 3, 4, 5, 3
    rng = np.random.default_rng(1)
    params = example.init(rng, d, hidden, classes)
    x, labels = rng.normal(size=(batch, d)), rng.integers(0, classes, size=batch)
    grads = example.per_example_grads(params, x, labels)
    eps = 1e-6
    for i in range(batch):
        for name, value in params.items():
            numeric = np.zeros_like(value)
            for j in np.ndindex(value.shape):
                bumped = {k: v.copy() for k, v in params.items()}
                bumped[name][j] += eps
                up = example.loss(bumped, x[i], labels[i])
                bumped[name][j] -= 2 * eps
                down = example.loss(bumped, x[i], labels[i])
                numeric[j] = (up - down) / (2 * eps)
            np.testing.assert_allclose(grads[name][i], numeric, rtol=1e-5, atol=1e-7,
                                       err_msg=f"example {i}, {name}")
