"""vmap composed with grad: per-example gradients (`vmap(grad(f))`) and the gradient of a
batched loss (`grad` of a mean over `vmap`), against JAX's own transforms.

Each loss is written once for one example, over a NumPy-like namespace `xp`: jitlib
traces it with `xp=np` (plain NumPy code), JAX runs it with `xp=jax.numpy`.
"""
import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jitlib

jax.config.update("jax_enable_x64", True)   # float64 on both sides
BACKENDS = ["interpreter", "jax", "cpu"]
rng = np.random.default_rng(0)
BATCH = 6


def mlp_loss(p, x, y, xp=np):
    hidden = xp.maximum(x @ p["w1"] + p["b1"], 0.0)
    return ((xp.tanh(hidden @ p["w2"] + p["b2"]) - y) ** 2).sum()


def softmax_cross_entropy(p, x, label, xp=np):
    logits = x @ p["w"] + p["b"]
    shifted = logits - logits.max()
    return xp.log(xp.exp(shifted).sum()) - shifted[label]


def layernorm_loss(p, x, target, xp=np):
    mean = x.mean()
    var = ((x - mean) ** 2).mean()
    y = (x - mean) / xp.sqrt(var + 1e-5) * p["gamma"] + p["beta"]
    return ((y - target) ** 2).mean()


def attention_loss(p, x, target, xp=np):
    q, k, v = x @ p["wq"], x @ p["wk"], x @ p["wv"]
    scores = q @ k.T / np.sqrt(q.shape[-1])
    weights = xp.exp(scores - scores.max(-1, keepdims=True))
    out = (weights / weights.sum(-1, keepdims=True)) @ v
    return ((out - target) ** 2).sum()


def normal(*shape):
    return rng.normal(size=shape)


# (loss, params, per-example data arguments, batched on axis 0)
WORKLOADS = {
    "mlp": (mlp_loss, {"w1": normal(5, 8), "b1": normal(8), "w2": normal(8, 3),
                       "b2": normal(3)}, (normal(BATCH, 5), normal(BATCH, 3))),
    "softmax_cross_entropy": (softmax_cross_entropy, {"w": normal(5, 7), "b": normal(7)},
                              (normal(BATCH, 5), rng.integers(0, 7, size=BATCH))),
    "layernorm": (layernorm_loss, {"gamma": normal(9), "beta": normal(9)},
                  (normal(BATCH, 9), normal(BATCH, 9))),
    "attention": (attention_loss, {"wq": normal(4, 4), "wk": normal(4, 4), "wv": normal(4, 4)},
                  (normal(BATCH, 3, 4), normal(BATCH, 3, 4))),
}


def jax_version(loss):
    return functools.partial(loss, xp=jnp)


def assert_trees_close(got, want, rtol=1e-10):
    assert set(got) == set(want)
    for k in want:
        np.testing.assert_allclose(got[k], np.asarray(want[k]), rtol=rtol, atol=1e-12,
                                   err_msg=k)


# XLA's CPU compiler aborts the process (dot_op_emitter.cc "Check failed: ...
# IsMonotonicWithDim0Major") on two results that are each a transpose of a batched dot
# behind optimization barriers, which is how the jax backend lowers these gradients.
# Reproduced in pure jax; reported, not worked around here.
XLA_ABORTS = pytest.mark.skip(reason="XLA CPU dot emitter check failure (see comment)")
BACKEND_PARAMS = [pytest.param(name, backend,
                               marks=[XLA_ABORTS] if (name, backend) == ("attention", "jax")
                               else [])
                  for name in WORKLOADS for backend in BACKENDS]


@pytest.mark.parametrize("name, backend", BACKEND_PARAMS)
def test_per_example_grads_match_jax(name, backend):
    loss, params, data = WORKLOADS[name]
    in_axes = (None,) + (0,) * len(data)
    want = jax.vmap(jax.grad(jax_version(loss)), in_axes=in_axes)(params, *data)
    per_example = jitlib.jit(jitlib.vmap(jitlib.grad(loss), in_axes=in_axes), backend=backend)
    assert_trees_close(per_example(params, *data), want)


@pytest.mark.parametrize("name", ["mlp", "softmax_cross_entropy"])
def test_per_example_grads_match_a_loop_of_grad(name):
    loss, params, data = WORKLOADS[name]
    got = jitlib.vmap(jitlib.grad(loss), in_axes=(None,) + (0,) * len(data))(params, *data)
    for i in range(BATCH):
        assert_trees_close({k: g[i] for k, g in got.items()},
                           jitlib.grad(loss)(params, *(d[i] for d in data)), rtol=1e-12)


@pytest.mark.parametrize("name", WORKLOADS)
def test_grad_of_a_mean_over_vmap_matches_jax(name):
    loss, params, data = WORKLOADS[name]
    in_axes = (None,) + (0,) * len(data)

    def batch_loss(p, *d):
        return jitlib.vmap(loss, in_axes=in_axes)(p, *d).mean()

    def jax_batch_loss(p, *d):
        return jax.vmap(jax_version(loss), in_axes=in_axes)(p, *d).mean()
    want = jax.grad(jax_batch_loss)(params, *data)
    assert_trees_close(jitlib.jit(jitlib.grad(batch_loss), backend="interpreter")(
        params, *data), want)


def test_per_example_grads_over_batched_params():
    # An ensemble: every example has its own weights too (in_axes 0 everywhere).
    loss, params, data = WORKLOADS["mlp"]
    stacked = {k: np.stack([v * (1 + 0.1 * b) for b in range(BATCH)]) for k, v in params.items()}
    want = jax.vmap(jax.grad(jax_version(loss)))(stacked, *data)
    assert_trees_close(jitlib.vmap(jitlib.grad(loss))(stacked, *data), want)
