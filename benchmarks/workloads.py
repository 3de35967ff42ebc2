"""The anchor workloads, each written once against a NumPy-like namespace `xp`.

`WORKLOADS[name]` is `fn(xp, *arrays)`; `xp` is `numpy` (eager, and what jitlib traces:
`jitlib.make_ir(lambda *a: fn(np, *a))(*arrays)`) or `jax.numpy` (under `jax.jit`), so every
figure comes from the same math. `inputs(name, rng, scale)` makes the float32 arguments
(complex64 for the FFT):
"small" for quick checks, "large" for timing (data well past the caches).
"""
import math

import numpy as np


def ew_chain(xp, a, b, c):
    # three eager NumPy kernels, one fused kernel
    return xp.maximum((a + b) * c, 0.0)


def gelu_tanh(xp, x):
    return 0.5 * x * (1.0 + xp.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))


def softmax_rows(xp, x):
    m = xp.max(x, axis=-1, keepdims=True)
    e = xp.exp(x - m)
    return e / xp.sum(e, axis=-1, keepdims=True)


def layernorm(xp, x, g, b):
    mu = xp.mean(x, axis=-1, keepdims=True)
    var = xp.mean((x - mu) * (x - mu), axis=-1, keepdims=True)
    return (x - mu) / xp.sqrt(var + 1e-5) * g + b


def logsumexp_rows(xp, x):
    m = xp.max(x, axis=-1, keepdims=True)
    return xp.log(xp.sum(xp.exp(x - m), axis=-1)) + m[..., 0]


def mlp(xp, x, w1, b1, w2, b2):
    h = xp.maximum(x @ w1 + b1, 0.0)
    return h @ w2 + b2


def attention(xp, q, k, v):
    scale = 1.0 / math.sqrt(q.shape[-1])   # a Python float: weak, the result stays float32
    s = (q @ xp.swapaxes(k, -1, -2)) * scale
    p = xp.exp(s - xp.max(s, axis=-1, keepdims=True))
    return (p / xp.sum(p, axis=-1, keepdims=True)) @ v


def mse_loss(xp, w1, w2, x, y):
    # the forward pass; frameworks with grad differentiate it w.r.t. (w1, w2)
    out = xp.tanh(x @ w1) @ w2
    return xp.mean((out - y) ** 2)


def sort_values(xp, x):
    return xp.sort(x)


def fft_c64(xp, x):
    return xp.fft.fft(x)


def cholesky_solve(xp, a, b):
    # a @ x = b for a batch of SPD systems through the Cholesky factor, as NumPy-only code
    # writes it (NumPy has no triangular solve)
    low = xp.linalg.cholesky(a)
    y = xp.linalg.solve(low, b)
    return xp.linalg.solve(xp.swapaxes(low, -1, -2), y)


def histogram_256(xp, x):
    return xp.histogram(x, bins=256, range=(-4.0, 4.0))[0]


def complex_wave(xp, z, x):
    # a wave-function update as physics code writes it: a phase, a mix, a density
    psi = xp.exp(1j * x) * z + z / 3
    return xp.abs(psi) ** 2


def tiny(xp, x):
    # dispatch overhead: the work is nothing, the call is everything
    return x + 1.0


WORKLOADS = {f.__name__: f for f in (
    ew_chain, gelu_tanh, softmax_rows, layernorm, logsumexp_rows, mlp, attention, mse_loss,
    sort_values, fft_c64, cholesky_solve, histogram_256, complex_wave, tiny)}

SIZES = {
    "small": dict(n=1 << 12, rows=64, cols=128, mm=64, hid=128, att=(4, 64, 32),
                  batch=32, feat=64, sort=1 << 12, fft=1 << 12, spd=(4, 32, 4)),
    "large": dict(n=1 << 24, rows=4096, cols=4096, mm=1024, hid=4096, att=(32, 512, 64),
                  batch=512, feat=784, sort=1 << 22, fft=1 << 20, spd=(64, 256, 16)),
}


def _normal(rng, *shape, scale=1.0):
    return rng.standard_normal(shape, dtype=np.float32) * scale   # NEP 50: stays float32


def inputs(name, rng, scale="large"):
    """The float32 arguments of workload `name` at `scale` ("small" or "large")."""
    s = SIZES[scale]
    if name == "ew_chain":
        return [_normal(rng, s["n"]) for _ in range(3)]
    if name == "gelu_tanh":
        return [_normal(rng, s["n"])]
    if name in ("softmax_rows", "logsumexp_rows"):
        return [_normal(rng, s["rows"], s["cols"])]
    if name == "layernorm":
        return [_normal(rng, s["rows"], s["cols"]), _normal(rng, s["cols"]),
                _normal(rng, s["cols"])]
    if name == "mlp":
        m, h = s["mm"], s["hid"]
        return [_normal(rng, m, m), _normal(rng, m, h, scale=0.03), _normal(rng, h),
                _normal(rng, h, m, scale=0.03), _normal(rng, m)]
    if name == "attention":
        return [_normal(rng, *s["att"]) for _ in range(3)]
    if name == "mse_loss":
        b, f = s["batch"], s["feat"]
        return [_normal(rng, f, 512, scale=0.05), _normal(rng, 512, 10, scale=0.05),
                _normal(rng, b, f), _normal(rng, b, 10)]
    if name == "sort_values":
        return [_normal(rng, s["sort"])]
    if name == "fft_c64":
        n = s["fft"]
        return [(_normal(rng, n) + 1j * _normal(rng, n)).astype(np.complex64)]
    if name == "cholesky_solve":
        batch, n, rhs = s["spd"]
        g = _normal(rng, batch, n, n, scale=n ** -0.5)
        spd = g @ np.swapaxes(g, -1, -2) + np.eye(n, dtype=np.float32)   # well conditioned
        return [spd, _normal(rng, batch, n, rhs)]
    if name == "histogram_256":
        return [_normal(rng, s["n"])]
    if name == "complex_wave":
        n = s["n"] // 4   # complex64 in, float32 beside it and out: 16 bytes an element
        return [(_normal(rng, n) + 1j * _normal(rng, n)).astype(np.complex64), _normal(rng, n)]
    if name == "tiny":
        return [_normal(rng, 4)]
    raise KeyError(f"unknown workload {name!r}; known: {', '.join(WORKLOADS)}")


def nbytes(value):
    """Bytes of an array or of anything with `.shape` and `.dtype` (jax.ShapeDtypeStruct)."""
    return math.prod(value.shape) * np.dtype(value.dtype).itemsize


def min_bytes(arrays, outputs):
    """Bytes a perfect fused program must move: every input read once, every output written
    once. `outputs` is one array or a sequence of them."""
    if hasattr(outputs, "shape"):
        outputs = [outputs]
    return sum(nbytes(a) for a in arrays) + sum(nbytes(o) for o in outputs)


def dynamic_batch_sizes(n_calls=200, lo=1, hi=256, seed=0):
    """The shifting-batch scenario: request sizes an inference service might see."""
    rng = np.random.default_rng(seed)
    return [int(v) for v in rng.integers(lo, hi + 1, size=n_calls)]
