"""The anchor workloads as plain NumPy functions, with small inputs, for tests.

The same math as benchmarks/workloads.py, written the way a user writes it (np.* on
arrays), so the tests trace exactly what users trace.
"""
import math

import numpy as np


def ew_chain(a, b, c):
    return np.maximum((a + b) * c, 0.0)


def gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))


def softmax_rows(x):
    m = np.max(x, axis=-1, keepdims=True)
    e = np.exp(x - m)
    return e / np.sum(e, axis=-1, keepdims=True)


def layernorm(x, g, b):
    mu = np.mean(x, axis=-1, keepdims=True)
    var = np.mean((x - mu) * (x - mu), axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-5) * g + b


def logsumexp_rows(x):
    m = np.max(x, axis=-1, keepdims=True)
    return np.log(np.sum(np.exp(x - m), axis=-1)) + m[..., 0]


def mlp(x, w1, b1, w2, b2):
    h = np.maximum(x @ w1 + b1, 0.0)
    return h @ w2 + b2


def attention(q, k, v):
    s = (q @ np.swapaxes(k, -1, -2)) * (1.0 / math.sqrt(q.shape[-1]))
    m = np.max(s, axis=-1, keepdims=True)
    p = np.exp(s - m)
    p = p / np.sum(p, axis=-1, keepdims=True)
    return p @ v


def _f32(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


# inputs per workload; odd row lengths keep vector tails exercised
ARGS = {
    ew_chain: lambda rng: [_f32(rng, 1000) for _ in range(3)],
    gelu_tanh: lambda rng: [_f32(rng, 1000)],
    softmax_rows: lambda rng: [_f32(rng, 16, 33)],
    layernorm: lambda rng: [_f32(rng, 16, 33), _f32(rng, 33), _f32(rng, 33)],
    logsumexp_rows: lambda rng: [_f32(rng, 16, 33)],
    mlp: lambda rng: [_f32(rng, 16, 16), _f32(rng, 16, 32), _f32(rng, 32), _f32(rng, 32, 16),
                      _f32(rng, 16)],
    attention: lambda rng: [_f32(rng, 2, 16, 8) for _ in range(3)],
}
