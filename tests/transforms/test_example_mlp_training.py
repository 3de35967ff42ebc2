"""examples/mlp_training.py runs, and its loss goes down."""
import pathlib
import runpy
import sys

import numpy as np

import jitlib
from jitlib.testing import assert_allclose_tree

EXAMPLE = pathlib.Path(__file__).parents[2] / "examples" / "mlp_training.py"


def load_example():
    return runpy.run_path(str(EXAMPLE))


def test_the_script_prints_a_falling_loss(capsys, monkeypatch):
    monkeypatch.setattr(sys, "argv", [str(EXAMPLE)])
    runpy.run_path(str(EXAMPLE), run_name="__main__")
    lines = capsys.readouterr().out.splitlines()
    reported = [float(line.split("loss")[1].split()[0]) for line in lines if "loss" in line]
    assert len(reported) >= 3, lines
    assert reported[-1] < 0.1 * reported[0], lines


def test_sgd_steps_decrease_the_loss_on_every_backend():
    example = load_example()
    for backend in ("interpreter", "cpu"):
        losses = example["train"](steps=40, backend=backend, report_every=0)
        assert all(b < a for a, b in zip(losses, losses[1:])), (backend, losses)


def test_the_jitted_gradient_equals_the_eager_one():
    example = load_example()
    rng = np.random.default_rng(1)
    x, y = example["synthetic_data"](rng, 32)
    params = example["init_params"](rng, [2, 8, 1])
    eager = jitlib.value_and_grad(example["loss"])(params, x, y)
    jitted = jitlib.jit(jitlib.value_and_grad(example["loss"]), backend="cpu")(params, x, y)
    assert_allclose_tree(jitted, eager, rtol=1e-4, atol=1e-6)
