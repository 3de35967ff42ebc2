"""vmap on realistic functions (MLP, softmax cross-entropy, layernorm, attention), written
in plain NumPy, composed with jit and run on every CPU backend.

Each batched program must equal, on "interpreter", "jax" and "cpu":
- the eager NumPy function applied per example in a Python loop, and
- `jax.vmap` of the JAX backend's lowering of the per-example Module.
"""
import jax
import numpy as np
import pytest

import jitlib
from jitlib.backends.jax import _lower

BACKENDS = ["interpreter", "jax", "cpu"]
rng = np.random.default_rng(0)


def mlp(x, w1, b1, w2, b2):
    return np.maximum(x @ w1 + b1, 0.0) @ w2 + b2


def softmax_cross_entropy(logits, label):
    shifted = logits - logits.max()
    return np.log(np.exp(shifted).sum()) - shifted[label]


def layernorm(x, gamma, beta):
    mean = x.mean()
    var = ((x - mean) ** 2).mean()
    return (x - mean) / np.sqrt(var + 1e-5) * gamma + beta


def attention(q, k, v):
    scores = q @ k.T / np.sqrt(q.shape[-1])
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    return (weights / weights.sum(-1, keepdims=True)) @ v


def normal(*shape):
    return rng.normal(size=shape)


# (name, function, batched arguments, in_axes)
WORKLOADS = [
    ("mlp", mlp, (normal(8, 6), normal(6, 16), normal(16), normal(16, 3), normal(3)),
     (0, None, None, None, None)),
    ("mlp_ensemble", mlp, (normal(6), normal(4, 6, 16), normal(4, 16), normal(4, 16, 3),
                           normal(4, 3)), (None, 0, 0, 0, 0)),
    ("softmax_cross_entropy", softmax_cross_entropy,
     (normal(8, 10), rng.integers(0, 10, size=8)), (0, 0)),
    ("layernorm_columns", layernorm, (normal(12, 5), normal(12), normal(12)), (1, None, None)),
    ("attention", attention, (normal(5, 4, 8), normal(5, 6, 8), normal(6, 5, 8)), (0, 0, 1)),
]
IDS = [w[0] for w in WORKLOADS]


def per_example(args, in_axes, b):
    return [a if ax is None else np.take(a, b, axis=ax) for a, ax in zip(args, in_axes)]


def loop_reference(fn, args, in_axes):
    size = next(a.shape[ax] for a, ax in zip(args, in_axes) if ax is not None)
    return np.stack([fn(*per_example(args, in_axes, b)) for b in range(size)])


@pytest.mark.parametrize("name, fn, args, in_axes", WORKLOADS, ids=IDS)
def test_vmap_matches_a_loop_on_every_backend(name, fn, args, in_axes):
    want = loop_reference(fn, args, in_axes)
    np.testing.assert_allclose(jitlib.vmap(fn, in_axes=in_axes)(*args), want, rtol=1e-12,
                               atol=1e-12)
    outs = {}
    for backend in BACKENDS:
        batched = jitlib.jit(jitlib.vmap(fn, in_axes=in_axes), backend=backend)
        outs[backend] = batched(*args)
        np.testing.assert_allclose(outs[backend], want, rtol=1e-10, atol=1e-12,
                                   err_msg=f"{backend}:\n{batched.lower(*args).as_text()}")
    # The JAX backend follows the interpreter's rounding; only the cpu kernels may reorder.
    np.testing.assert_allclose(outs["jax"], outs["interpreter"], rtol=1e-13, atol=1e-14)


@pytest.mark.parametrize("name, fn, args, in_axes", WORKLOADS, ids=IDS)
def test_vmap_matches_jax_vmap_of_the_per_example_module(name, fn, args, in_axes):
    module = jitlib.make_ir(fn)(*per_example(args, in_axes, 0))
    (want,) = jax.vmap(_lower(module), in_axes=in_axes)(*map(jax.numpy.asarray, args))
    got = jitlib.jit(jitlib.vmap(fn, in_axes=in_axes), backend="interpreter")(*args)
    np.testing.assert_allclose(got, np.asarray(want), rtol=1e-12, atol=1e-12)


def test_jit_of_nested_vmap_on_the_cpu_backend():
    # all-pairs attention scores: per query row, per key row
    q, k = normal(4, 8), normal(6, 8)
    score = jitlib.vmap(jitlib.vmap(lambda a, b: np.tanh(a @ b), in_axes=(None, 0)),
                        in_axes=(0, None))
    np.testing.assert_allclose(jitlib.jit(score, backend="cpu")(q, k), np.tanh(q @ k.T),
                               rtol=1e-12)


def test_vmap_of_a_jitted_loss_averaged_under_jit():
    # A grad(vmap)-style loss: the mean of per-example losses, all inside one jit.
    loss = jitlib.jit(softmax_cross_entropy)
    logits, labels = normal(8, 10), rng.integers(0, 10, size=8)

    @jitlib.jit
    def mean_loss(logits, labels):
        return jitlib.vmap(loss)(logits, labels).mean()
    want = np.mean([softmax_cross_entropy(l, y) for l, y in zip(logits, labels)])
    np.testing.assert_allclose(mean_loss(logits, labels), want, rtol=1e-12)
