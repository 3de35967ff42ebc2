"""Train a small MLP with jitlib: the loss is plain NumPy, its gradient comes from
jitlib.value_and_grad, and jit compiles both into one program.

    python examples/mlp_training.py
"""
import numpy as np

import jitlib


def init_params(rng, sizes):
    """Weights scaled by 1/sqrt(fan-in), zero biases, as a dict (a pytree)."""
    params = {}
    for i, (n_in, n_out) in enumerate(zip(sizes[:-1], sizes[1:])):
        params[f"w{i}"] = (rng.standard_normal((n_in, n_out)) / np.sqrt(n_in)).astype(np.float32)
        params[f"b{i}"] = np.zeros(n_out, np.float32)
    return params


def predict(params, x):
    layers = len(params) // 2
    for i in range(layers):
        x = x @ params[f"w{i}"] + params[f"b{i}"]
        if i < layers - 1:
            x = np.tanh(x)
    return x


def loss(params, x, y):
    return np.mean((predict(params, x) - y) ** 2)


def synthetic_data(rng, n):
    """A smooth target a linear model cannot fit: y = sin(3 x0) * cos(2 x1)."""
    x = rng.uniform(-1, 1, (n, 2)).astype(np.float32)
    y = (np.sin(3 * x[:, :1]) * np.cos(2 * x[:, 1:])).astype(np.float32)
    return x, y


def train(steps=300, learning_rate=0.1, backend="cpu", report_every=50, seed=0):
    """Full-batch SGD; returns the loss at every step."""
    rng = np.random.default_rng(seed)
    x, y = synthetic_data(rng, 256)
    params = init_params(rng, [2, 32, 32, 1])
    loss_and_grad = jitlib.jit(jitlib.value_and_grad(loss), backend=backend)
    losses = []
    for step in range(steps):
        value, grads = loss_and_grad(params, x, y)
        params = {k: p - learning_rate * grads[k] for k, p in params.items()}
        losses.append(float(value))
        if report_every and step % report_every == 0:
            print(f"step {step:4d}  loss {float(value):.5f}")
    if report_every:
        print(f"final     loss {losses[-1]:.5f} (started at {losses[0]:.5f})")
    return losses


if __name__ == "__main__":
    train()
