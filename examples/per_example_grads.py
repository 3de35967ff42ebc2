"""Per-example gradients with `vmap(grad(loss))`, the first step of DP-SGD.

    python examples/per_example_grads.py

A small MLP classifier, its loss written in plain NumPy for ONE example. `grad` gives
the gradient for that example; `vmap` maps it over a batch, so one compiled program
returns a gradient per example (the weights are shared: in_axes=None). The result is
checked against a Python loop of `grad`, then each example's gradient is clipped to
norm 1 and averaged, as differentially private SGD does.
"""
import numpy as np

import jitlib


def loss(params, x, label):
    """Softmax cross-entropy of a one-hidden-layer MLP on one example x of shape (d,)."""
    hidden = np.tanh(x @ params["w1"] + params["b1"])
    logits = hidden @ params["w2"] + params["b2"]
    shifted = logits - logits.max()
    return np.log(np.exp(shifted).sum()) - shifted[label]


# A gradient per example: params shared by every example, x and label mapped over axis 0.
per_example_grads = jitlib.jit(
    jitlib.vmap(jitlib.grad(loss), in_axes=(None, 0, 0)), backend="cpu")


def init(rng, d, hidden, classes):
    return {"w1": rng.normal(0, d ** -0.5, (d, hidden)), "b1": np.zeros(hidden),
            "w2": rng.normal(0, hidden ** -0.5, (hidden, classes)), "b2": np.zeros(classes)}


def clipped_mean(grads, max_norm=1.0):
    """Each example's gradient (all parameters together) scaled to norm <= max_norm,
    then averaged over the batch."""
    norms = np.sqrt(sum((g.reshape(len(g), -1) ** 2).sum(1) for g in grads.values()))
    scale = np.minimum(1.0, max_norm / norms)
    return {k: (g * scale.reshape((-1,) + (1,) * (g.ndim - 1))).mean(0)
            for k, g in grads.items()}, norms


def main(batch=16, d=8, hidden=32, classes=4, seed=0):
    rng = np.random.default_rng(seed)
    params = init(rng, d, hidden, classes)
    x = rng.normal(size=(batch, d))
    labels = rng.integers(0, classes, size=batch)

    grads = per_example_grads(params, x, labels)
    print({k: g.shape for k, g in grads.items()})

    one_grad = jitlib.grad(loss)
    for i in range(batch):
        looped = one_grad(params, x[i], labels[i])
        for k in params:
            np.testing.assert_allclose(grads[k][i], looped[k], rtol=1e-10, atol=1e-12)
    print(f"per-example gradients match a loop of grad over {batch} examples")

    mean_grad, norms = clipped_mean(grads)
    print("per-example gradient norms:", np.array2string(norms, precision=3))
    print("clipped mean gradient norm:",
          f"{np.sqrt(sum((g ** 2).sum() for g in mean_grad.values())):.4f}")
    return grads


if __name__ == "__main__":
    main()
