"""A catalogue of realistic NumPy programs, written exactly as a user would write them.

Every function below is plain NumPy: it runs eagerly as is, and jitlib must trace it through
NumPy's own protocols and reproduce the eager result, dtypes included. Some programs promote
to float64 on purpose (``np.sqrt(d)`` is a strong float64 scalar under NEP 50); the jitted
result must promote the same way.
"""

from __future__ import annotations

import collections
import dataclasses
import math
from typing import Callable

import numpy as np


@dataclasses.dataclass(frozen=True)
class Program:
    """One catalogue entry: ``fn(*make_args(rng))`` is the computation under test.

    ``rtol``/``atol`` override the per-dtype defaults; only the deepest float32 pipelines set
    them, to leave room for backends and optimisers that reassociate long sums.
    """

    name: str
    fn: Callable
    make_args: Callable[[np.random.Generator], tuple]
    static_argnums: tuple = ()
    rtol: float | None = None
    atol: float | None = None


PROGRAMS: list[Program] = []


def program(make_args, *, static_argnums=(), rtol=None, atol=None):
    """Register the decorated function in PROGRAMS under its own name."""

    def register(fn):
        PROGRAMS.append(Program(fn.__name__, fn, make_args, tuple(static_argnums), rtol, atol))
        return fn

    return register


# --- input makers ------------------------------------------------------------------------------


def normal(rng, *shape, dtype=np.float32, scale=1.0):
    """Standard-normal samples of ``dtype``, times ``scale``."""
    return (rng.standard_normal(shape) * scale).astype(dtype)


def uniform(rng, *shape, low=0.0, high=1.0, dtype=np.float32):
    return rng.uniform(low, high, shape).astype(dtype)


def ints(rng, *shape, low=0, high=10, dtype=np.int64):
    return rng.integers(low, high, shape).astype(dtype)


def mask(rng, *shape, p=0.5):
    return rng.random(shape) < p


def f32(*shapes):
    """An args maker: one float32 normal array per shape."""
    return lambda rng: tuple(normal(rng, *s) for s in shapes)


def f64(*shapes):
    return lambda rng: tuple(normal(rng, *s, dtype=np.float64) for s in shapes)


# --- activations -------------------------------------------------------------------------------


@program(f32((4, 10)))
def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@program(f64((3, 7)))
def log_softmax(x):
    shifted = x - np.max(x, axis=-1, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=-1, keepdims=True))


@program(f32((5, 6)))
def logsumexp(x):
    m = np.max(x, axis=1)
    return m + np.log(np.sum(np.exp(x - m[:, None]), axis=1))


@program(lambda rng: (normal(rng, 2, 5, 8, scale=4.0),))
def softmax_float16_logits(x):
    x = x.astype(np.float16)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@program(f32((3, 17)))
def gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


@program(f32((3, 17)))
def gelu_tanh_np_constant(x):
    # np.sqrt of a Python float is a strong float64 scalar: the result is float64 (NEP 50).
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * np.power(x, 3))))


@program(f32((6, 9)))
def gelu_sigmoid(x):
    return x / (1.0 + np.exp(-1.702 * x))


@program(f32((2, 3, 11)))
def silu(x):
    return x * (1 / (1 + np.exp(-x)))


@program(lambda rng: (normal(rng, 40, scale=10.0),))
def softplus(x):
    return np.maximum(x, 0) + np.log1p(np.exp(-np.abs(x)))


@program(f32((4, 12)))
def mish(x):
    softplus = np.logaddexp(x, 0)
    return x * np.tanh(softplus)


@program(f64((5, 5)))
def sigmoid(x):
    return 1 / (1 + np.exp(-x))


@program(f32((3, 8)))
def relu_family(x):
    return {
        "relu": np.maximum(x, 0),
        "leaky_relu": np.where(x > 0, x, 0.01 * x),
        "elu": np.where(x > 0, x, np.expm1(np.minimum(x, 0))),
        "relu6": np.clip(x, 0, 6),
    }


@program(f32((10,)))
def hard_swish(x):
    return x * np.clip(x + 3, 0, 6) / 6


# --- normalisation -----------------------------------------------------------------------------


@program(lambda rng: (normal(rng, 2, 5, 16, scale=3.0), normal(rng, 16), normal(rng, 16)))
def layernorm(x, gamma, beta, eps=1e-5):
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


@program(f32((4, 32), (32,)))
def rmsnorm(x, weight):
    rms = np.sqrt(np.mean(np.square(x), axis=-1, keepdims=True) + 1e-6)
    return x / rms * weight


@program(lambda rng: (normal(rng, 2, 3, 4, 4), normal(rng, 3), uniform(rng, 3, low=0.5, high=2),
                      normal(rng, 3), normal(rng, 3)))
def batchnorm_inference(x, running_mean, running_var, gamma, beta):
    scale = gamma / np.sqrt(running_var + 1e-5)
    shift = beta - running_mean * scale
    return x * scale[None, :, None, None] + shift[None, :, None, None]


@program(lambda rng: (normal(rng, 50, 4, scale=5.0) + 3,))
def standardize_features(x):
    return (x - x.mean(axis=0)) / (x.std(axis=0) + 1e-8)


@program(lambda rng: (uniform(rng, 4, 9, low=-2, high=5),))
def minmax_scale(x):
    lo = x.min(axis=1, keepdims=True)
    hi = x.max(axis=1, keepdims=True)
    return (x - lo) / (hi - lo)


@program(lambda rng: (rng.integers(0, 256, (2, 5, 5, 3)).astype(np.uint8),
                      np.array([0.485, 0.456, 0.406], np.float32),
                      np.array([0.229, 0.224, 0.225], np.float32)))
def image_normalize(img, mean, std):
    x = img.astype(np.float32) / 255.0
    return (x - mean) / std


@program(f32((6, 10)))
def l2_normalize(x):
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


# --- multilayer perceptrons --------------------------------------------------------------------


@program(lambda rng: (normal(rng, 8, 5), normal(rng, 5, 16, scale=0.4), normal(rng, 16),
                      normal(rng, 16, 3, scale=0.3), normal(rng, 3)))
def mlp2(x, w1, b1, w2, b2):
    h = np.maximum(x @ w1 + b1, 0)
    return h @ w2 + b2


@program(lambda rng: (normal(rng, 2, 4, 6),
                      [(normal(rng, 6, 12, scale=0.4), normal(rng, 12)),
                       (normal(rng, 12, 12, scale=0.3), normal(rng, 12)),
                       (normal(rng, 12, 2, scale=0.3), normal(rng, 2))]))
def mlp3_params_list(x, params):
    for w, b in params[:-1]:
        x = np.tanh(np.matmul(x, w) + b)
    w, b = params[-1]
    return np.dot(x, w) + b


@program(lambda rng: (normal(rng, 7, 4, dtype=np.float64),
                      {"w1": normal(rng, 4, 8, dtype=np.float64), "b1": np.zeros(8),
                       "w2": normal(rng, 8, 1, dtype=np.float64), "b2": np.zeros(1)}))
def mlp_dict_params_f64(x, params):
    h = np.tanh(x @ params["w1"] + params["b1"])
    return (h @ params["w2"] + params["b2"]).squeeze(-1)


# --- attention ---------------------------------------------------------------------------------


def _softmax(x, axis=-1):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


@program(f32((6, 8), (6, 8), (6, 8)))
def attention_single_head(q, k, v):
    scores = q @ k.T / math.sqrt(q.shape[-1])
    return _softmax(scores) @ v


@program(f32((5, 4), (5, 4), (5, 4)))
def attention_np_sqrt_scale(q, k, v):
    # np.sqrt(int) is a float64 scalar, so the whole result is float64 (NEP 50).
    scores = q @ k.T / np.sqrt(q.shape[-1])
    return _softmax(scores) @ v


@program(f32((2, 6, 8), (2, 6, 8), (2, 6, 8)))
def causal_attention_tril(q, k, v):
    t = q.shape[1]
    scores = np.matmul(q, k.transpose(0, 2, 1)) * q.shape[-1] ** -0.5
    causal = np.tril(np.ones((t, t), dtype=bool))
    scores = np.where(causal, scores, -np.inf)
    return _softmax(scores) @ v


@program(lambda rng: (normal(rng, 2, 5, 12), normal(rng, 12, 12, scale=0.3),
                      normal(rng, 12, 12, scale=0.3), normal(rng, 12, 12, scale=0.3),
                      normal(rng, 12, 12, scale=0.3), 3), static_argnums=(5,), atol=1e-5)
def multi_head_attention(x, wq, wk, wv, wo, n_heads):
    b, t, c = x.shape
    d = c // n_heads

    def heads(y):
        return y.reshape(b, t, n_heads, d).transpose(0, 2, 1, 3)

    q, k, v = heads(x @ wq), heads(x @ wk), heads(x @ wv)
    scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(d)
    causal = np.arange(t)[:, None] >= np.arange(t)[None, :]
    scores = np.where(causal, scores, -1e9)
    out = _softmax(scores) @ v
    return out.transpose(0, 2, 1, 3).reshape(b, t, c) @ wo


@program(f32((2, 3, 5, 4), (2, 3, 5, 4), (2, 3, 5, 4)))
def attention_einsum(q, k, v):
    scores = np.einsum("bhqd,bhkd->bhqk", q, k) / 2.0
    weights = _softmax(scores)
    return np.einsum("bhqk,bhkd->bhqd", weights, v)


def _gpt_params(rng, c=16):
    return {
        "ln1": {"g": 1 + normal(rng, c, scale=0.1), "b": normal(rng, c, scale=0.1)},
        "ln2": {"g": 1 + normal(rng, c, scale=0.1), "b": normal(rng, c, scale=0.1)},
        "attn": {"w_qkv": normal(rng, c, 3 * c, scale=0.25), "b_qkv": normal(rng, 3 * c),
                 "w_out": normal(rng, c, c, scale=0.25), "b_out": normal(rng, c)},
        "mlp": {"w_in": normal(rng, c, 4 * c, scale=0.25), "b_in": normal(rng, 4 * c),
                "w_out": normal(rng, 4 * c, c, scale=0.12), "b_out": normal(rng, c)},
    }


def _layer_norm(x, p):
    mu = x.mean(-1, keepdims=True)
    var = x.var(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-5) * p["g"] + p["b"]


def _gelu(x):
    return 0.5 * x * (1 + np.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))


@program(lambda rng: (normal(rng, 2, 6, 16), _gpt_params(rng), 4), static_argnums=(2,),
         atol=2e-5)
def gpt_block(x, params, n_head):
    b, t, c = x.shape
    hd = c // n_head
    a = params["attn"]
    qkv = _layer_norm(x, params["ln1"]) @ a["w_qkv"] + a["b_qkv"]
    q, k, v = np.split(qkv, 3, axis=-1)
    q, k, v = (y.reshape(b, t, n_head, hd).swapaxes(1, 2) for y in (q, k, v))
    att = (q @ k.swapaxes(-2, -1)) * (1.0 / math.sqrt(hd))
    future = np.triu(np.ones((t, t), dtype=bool), k=1)
    att[..., future] = -np.inf
    y = _softmax(att) @ v
    y = y.swapaxes(1, 2).reshape(b, t, c)
    x = x + (y @ a["w_out"] + a["b_out"])
    m = params["mlp"]
    h = _gelu(_layer_norm(x, params["ln2"]) @ m["w_in"] + m["b_in"])
    return x + h @ m["w_out"] + m["b_out"]


@program(lambda rng: (normal(rng, 2, 6, 8),))
def rotary_embedding(x):
    t, d = x.shape[-2], x.shape[-1]
    inv_freq = 1.0 / (10000 ** (np.arange(0, d, 2) / d))
    angles = np.outer(np.arange(t), inv_freq)
    cos, sin = np.cos(angles).astype(x.dtype), np.sin(angles).astype(x.dtype)
    x1, x2 = x[..., ::2], x[..., 1::2]
    rotated = np.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], axis=-1)
    return rotated.reshape(x.shape)


@program(lambda rng: (ints(rng, 2, 5, high=20, dtype=np.int32), normal(rng, 20, 8)))
def embedding_lookup(token_ids, table):
    emb = table[token_ids]
    return emb, emb.mean(axis=1)


# --- losses and metrics ------------------------------------------------------------------------


@program(lambda rng: (normal(rng, 8, 5, scale=2.0), ints(rng, 8, high=5)))
def cross_entropy(logits, labels):
    logp = logits - logits.max(axis=1, keepdims=True)
    logp = logp - np.log(np.exp(logp).sum(axis=1, keepdims=True))
    return -logp[np.arange(logits.shape[0]), labels].mean()


@program(lambda rng: (normal(rng, 7, 5), ints(rng, 7, high=5)))
def nll_take_along_axis(logits, labels):
    logp = logits - np.log(np.exp(logits).sum(axis=-1, keepdims=True))
    picked = np.take_along_axis(logp, labels[:, None], axis=1)
    return -picked.squeeze(1)


@program(lambda rng: (normal(rng, 6, 4), ints(rng, 6, high=4)))
def cross_entropy_label_smoothing(logits, labels):
    k = logits.shape[-1]
    one_hot = (labels[:, None] == np.arange(k)).astype(logits.dtype)
    target = one_hot * 0.9 + 0.1 / k
    logp = logits - np.log(np.sum(np.exp(logits), axis=-1, keepdims=True))
    return np.mean(-np.sum(target * logp, axis=-1))


@program(lambda rng: (ints(rng, 7, high=5, dtype=np.int32), 5), static_argnums=(1,))
def one_hot(labels, k):
    return {"float": (labels[:, None] == np.arange(k)).astype(np.float32),
            "bool": np.arange(k)[None, :] == labels[:, None]}


@program(f32((4, 6), (4, 6)))
def regression_losses(pred, target):
    err = pred - target
    abs_err = np.abs(err)
    huber = np.where(abs_err < 1.0, 0.5 * err**2, abs_err - 0.5)
    return {"mse": np.mean(err**2), "mae": np.mean(abs_err), "huber": huber.mean()}


@program(lambda rng: (normal(rng, 12), np.where(mask(rng, 12), 1.0, -1.0).astype(np.float32)))
def hinge_loss(scores, y):
    return np.mean(np.maximum(0, 1 - y * scores))


@program(lambda rng: (normal(rng, 3, 10, scale=3.0), mask(rng, 3, 10).astype(np.float32)))
def bce_with_logits(z, y):
    loss = np.maximum(z, 0) - z * y + np.log1p(np.exp(-np.abs(z)))
    return loss.mean(axis=1)


@program(lambda rng: (normal(rng, 9, 3), ints(rng, 9, high=3)))
def focal_loss(logits, labels, gamma=2.0):
    p = _softmax(logits)
    pt = p[np.arange(len(labels)), labels]
    return np.sum(-((1 - pt) ** gamma) * np.log(pt)) / len(labels)


@program(f32((5, 4), (5, 4), (5, 4)))
def triplet_loss(anchor, positive, negative, margin=0.5):
    d_ap = np.sum((anchor - positive) ** 2, axis=1)
    d_an = np.sum((anchor - negative) ** 2, axis=1)
    return np.maximum(d_ap - d_an + margin, 0.0).mean()


@program(lambda rng: (_softmax(normal(rng, 4, 6, dtype=np.float64)),
                      _softmax(normal(rng, 4, 6, dtype=np.float64))))
def entropy_and_kl(p, q):
    entropy = -(p * np.log(p)).sum(axis=-1)
    kl = np.sum(p * (np.log(p) - np.log(q)), axis=-1)
    return entropy, kl


@program(lambda rng: (normal(rng, 10, 3), normal(rng, 3), uniform(rng, 3, low=0.5, high=2)))
def gaussian_log_prob(x, mu, sigma):
    z = (x - mu) / sigma
    return -0.5 * np.sum(z**2 + 2 * np.log(sigma) + math.log(2 * math.pi), axis=-1)


@program(lambda rng: (normal(rng, 10, 4), ints(rng, 10, high=4)))
def top1_accuracy(logits, labels):
    return (logits.argmax(axis=-1) == labels).mean()


@program(lambda rng: (normal(rng, 10, 4), ints(rng, 10, high=4, dtype=np.int32)))
def correct_count(logits, labels):
    pred = np.argmax(logits, axis=1)
    return np.sum(pred == labels), np.argmax(logits, axis=1, keepdims=True)


@program(f32((5, 8), (5, 8)))
def cosine_similarity(a, b):
    num = np.sum(a * b, axis=1)
    den = np.sqrt(np.sum(a * a, axis=1)) * np.sqrt(np.sum(b * b, axis=1))
    return num / np.maximum(den, 1e-8)


# --- distances and clustering ------------------------------------------------------------------


@program(f64((6, 3), (4, 3)))
def pairwise_sq_dists(a, b):
    return np.sum(a**2, axis=1)[:, None] + np.sum(b**2, axis=1)[None, :] - 2 * a @ b.T


@program(lambda rng: (normal(rng, 5, 3), normal(rng, 4, 3), 0.7), static_argnums=(2,))
def rbf_kernel(x, y, sigma):
    d2 = ((x[:, None, :] - y[None, :, :]) ** 2).sum(-1)
    return np.exp(-d2 / (2 * sigma**2))


@program(f32((12, 2), (3, 2)))
def kmeans_assign(x, centroids):
    d = ((x[:, None, :] - centroids[None, :, :]) ** 2).sum(axis=-1)
    labels = d.argmin(axis=1)
    return labels, d.min(axis=1)


@program(lambda rng: (normal(rng, 12, 2), ints(rng, 12, high=3), 3), static_argnums=(2,))
def kmeans_update(x, labels, k):
    onehot = (labels[:, None] == np.arange(k)[None, :]).astype(x.dtype)
    counts = onehot.sum(axis=0)
    return onehot.T @ x / np.maximum(counts, 1)[:, None]


@program(lambda rng: (normal(rng, 8, 3), ints(rng, 8, high=4), 4), static_argnums=(2,))
def segment_sum(data, segment_ids, num_segments):
    onehot = (segment_ids[None, :] == np.arange(num_segments)[:, None]).astype(data.dtype)
    return onehot @ data


# --- polynomials, scans, stencils --------------------------------------------------------------


@program(lambda rng: (normal(rng, 5, dtype=np.float64), uniform(rng, 7, low=-2, high=2,
                                                                   dtype=np.float64)))
def polyval_horner(coeffs, x):
    y = np.zeros_like(x)
    for i in range(coeffs.shape[0]):
        y = y * x + coeffs[i]
    return y


@program(f32((6, 3)))
def running_mean(x):
    # float32 / int64 promotes to float64.
    return np.cumsum(x, axis=0) / np.arange(1, x.shape[0] + 1)[:, None]


@program(lambda rng: (normal(rng, 20), 4), static_argnums=(1,))
def moving_average(x, w):
    n = x.shape[0]
    return sum(x[i:n - w + 1 + i] for i in range(w)) / w


@program(lambda rng: (normal(rng, 15, dtype=np.float64), 0.9), static_argnums=(1,))
def discounted_returns(rewards, gamma):
    out = np.zeros_like(rewards)
    running = 0.0
    for t in reversed(range(rewards.shape[0])):
        running = rewards[t] + gamma * running
        out[t] = running
    return out


@program(f32((12,)))
def finite_differences(x):
    return x[1:] - x[:-1], x[2:] - 2 * x[1:-1] + x[:-2]


@program(f32((3, 9)))
def np_diff(x):
    return np.diff(x, axis=-1), np.diff(x, n=2, axis=0)


@program(lambda rng: (uniform(rng, 20, dtype=np.float64), np.linspace(0.0, 2.0, 20)))
def trapezoid_integral(y, x):
    return np.sum((y[1:] + y[:-1]) * (x[1:] - x[:-1]) / 2)


@program(f32((6, 7)))
def laplacian_pad(u):
    p = np.pad(u, 1)
    return p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:] - 4 * u


@program(f64((5, 6)))
def laplacian_periodic_roll(u):
    return (np.roll(u, 1, axis=0) + np.roll(u, -1, axis=0) + np.roll(u, 1, axis=1)
            + np.roll(u, -1, axis=1) - 4 * u)


@program(f32((2, 3, 7, 6), (4, 3, 3, 3)), atol=1e-5)
def conv2d_valid(x, w):
    kh, kw = w.shape[2:]
    ho, wo = x.shape[2] - kh + 1, x.shape[3] - kw + 1
    out = np.zeros((x.shape[0], w.shape[0], ho, wo), dtype=x.dtype)
    for i in range(kh):
        for j in range(kw):
            patch = x[:, :, i:i + ho, j:j + wo]
            out = out + np.einsum("nchw,oc->nohw", patch, w[:, :, i, j])
    return out


@program(f32((5, 5), (3, 3)))
def conv2d_single_channel(img, k):
    h, w = img.shape[0] - 2, img.shape[1] - 2
    out = np.zeros_like(img[:h, :w])
    for i in range(3):
        for j in range(3):
            out += k[i, j] * img[i:i + h, j:j + w]
    return out


@program(f32((2, 3, 6, 8)))
def pooling_reshape(x):
    n, c, h, w = x.shape
    blocks = x.reshape(n, c, h // 2, 2, w // 2, 2)
    return blocks.max(axis=(3, 5)), blocks.mean(axis=(3, 5))


@program(f32((2, 3, 4)))
def nearest_upsample(x):
    n, h, w = x.shape
    y = np.broadcast_to(x[:, :, None, :, None], (n, h, 2, w, 2))
    return y.reshape(n, 2 * h, 2 * w)


@program(lambda rng: (uniform(rng, 2, 4, 4, 3),))
def rgb_to_gray_uint8(img):
    gray = img @ np.array([0.299, 0.587, 0.114], dtype=np.float32)
    return (gray * 255).round().clip(0, 255).astype(np.uint8)


# --- linear algebra building blocks -----------------------------------------------------------


@program(f32((4, 10)))
def gram_matrix(features):
    return features @ features.T / features.shape[1]


@program(f32((4,), (3,)))
def outer_products(a, b):
    return np.outer(a, b), a[:, None] * b[None, :], np.multiply.outer(b, a)


@program(f32((3, 4), (4, 5), (2, 3, 4), (2, 4, 5), (4,)))
def einsum_contractions(a, b, x, y, v):
    return (np.einsum("ij,jk->ik", a, b), np.einsum("bij,bjk->bik", x, y),
            np.einsum("ij,j->i", a, v), np.einsum("ij->ji", a), np.einsum("i,i->", v, v))


@program(f64((3, 4, 5), (4, 5, 2), (3, 4)))
def tensordot_axes(a, b, c):
    return (np.tensordot(a, b, axes=([1, 2], [0, 1])), np.tensordot(a, b, axes=2),
            np.tensordot(c, a, axes=([0, 1], [0, 1])))


@program(f32((3, 4, 4), (3, 4)))
def batched_matvec(a, x):
    return np.einsum("bij,bj->bi", a, x), (a @ x[..., None])[..., 0]


@program(lambda rng: (normal(rng, 3, 3, scale=0.5), 5), static_argnums=(1,))
def matrix_power_loop(a, n):
    result = np.eye(a.shape[0], dtype=a.dtype)
    for _ in range(n):
        result = result @ a
    return result


# --- masking and selection ---------------------------------------------------------------------


@program(f32((4, 6)))
def clip_with_where(x, lo=-0.5, hi=0.5):
    return np.where(x > hi, hi, np.where(x < lo, lo, x))


@program(lambda rng: (normal(rng, 5, 6), mask(rng, 5, 6, p=0.7)))
def masked_fill_and_sum(x, keep):
    return np.where(keep, x, 0.0).sum(axis=1), np.where(~keep, -np.inf, x).max(axis=1)


@program(lambda rng: (normal(rng, 4, 7), mask(rng, 4, 7, p=0.7)))
def masked_mean(x, m):
    # float32 / int64 counts gives float64.
    return (x * m).sum(axis=1) / np.maximum(m.sum(axis=1), 1)


@program(lambda rng: (uniform(rng, 30), 5), static_argnums=(1,))
def bin_counts(x, nbins):
    edges = np.linspace(0, 1, nbins + 1)
    inside = (x[:, None] >= edges[None, :-1]) & (x[:, None] < edges[None, 1:])
    return inside.sum(axis=0)


@program(lambda rng: (normal(rng, 5, 5),))
def tril_triu_masks(x):
    return np.tril(x), np.triu(x, 1), np.tril(x, -1) + np.triu(x.T)


@program(lambda rng: (np.where(mask(rng, 4, 5, p=0.2), np.nan, normal(rng, 4, 5)),))
def nan_to_num_cleanup(x):
    too_big = x > 2.0
    x = np.where(too_big, np.inf, np.where(x < -2.0, -np.inf, x))
    return np.nan_to_num(x, nan=0.0, posinf=1e3, neginf=-1e3), too_big.any()


@program(lambda rng: (np.where(mask(rng, 3, 4, p=0.3), np.nan,
                               normal(rng, 3, 4, dtype=np.float64)),))
def isfinite_cleanup(x):
    ok = np.isfinite(x)
    return np.where(ok, x, 0.0).sum(axis=0) / ok.sum(axis=0).clip(1), np.isnan(x).sum()


@program(lambda rng: (normal(rng, 6), mask(rng, 6, p=0.8)))
def dropout_given_mask(x, keep, rate=0.2):
    return np.where(keep, x / (1.0 - rate), 0)


@program(lambda rng: (normal(rng, 200, dtype=np.float64, scale=2.0) + 0.5,))
def inlier_statistics(x):
    # statistics of the samples within 2 sigma, by boolean indexing (a data-dependent count)
    inliers = np.abs(x - x.mean()) < 2 * x.std()
    clean = x[inliers]
    return clean.mean(), clean.std(ddof=1), clean.max() - clean.min(), np.count_nonzero(~inliers)


@program(lambda rng: (normal(rng, 64, 3), ints(rng, 64, high=4), 4), static_argnums=(2,))
def class_centroids(points, labels, n_classes):
    # each class's mean point and spread, selecting its rows with a boolean mask
    centroids = np.zeros((n_classes, points.shape[1]), dtype=points.dtype)
    spread = np.zeros(n_classes, dtype=points.dtype)
    for c in range(n_classes):
        members = points[labels == c]
        centroids[c] = members.mean(axis=0)
        spread[c] = np.sqrt(((members - centroids[c]) ** 2).sum(axis=1)).max()
    return centroids, spread


# --- reductions, scans, shape manipulation -----------------------------------------------------


@program(lambda rng: (normal(rng, 6, 5, scale=2.0) + 1,))
def var_std_ddof(x):
    return x.var(axis=0, ddof=1), np.std(x, ddof=0), np.var(x, axis=1, keepdims=True)


@program(lambda rng: (uniform(rng, 3, 4, low=0.5, high=1.5),))
def prod_cumprod(x):
    return x.prod(axis=1), np.cumprod(x, axis=1), np.prod(x)


@program(f32((3, 8)))
def reverse_cumsum(x):
    flipped = np.flip(np.cumsum(np.flip(x, axis=-1), axis=-1), axis=-1)
    return flipped, x[:, ::-1].cumsum(1)[:, ::-1]


@program(lambda rng: (ints(rng, 3, 7, low=-50, high=50, dtype=np.int32),))
def roll_shift(x):
    return np.roll(x, 3), np.roll(x, -1, axis=1), np.roll(x, (1, 2), axis=(0, 1))


@program(f32((3, 8)))
def stack_split_concat(x):
    parts = np.split(x, 4, axis=1)
    sums = np.stack([p.sum(axis=1) for p in parts], axis=-1)
    left, right = np.array_split(x, 2, axis=0)
    return np.concatenate([x, sums], axis=1), np.vstack([right, left]), np.hstack(parts[::-1])


@program(f32((2, 3, 4)))
def axes_shuffle(x):
    return (np.moveaxis(x, -1, 0), x.swapaxes(0, 1), np.expand_dims(x, 1).squeeze(1),
            x[:, None, :, None], x.T, x.reshape(-1, 4).ravel(), np.transpose(x, (1, 2, 0)))


@program(lambda rng: (normal(rng, 0, 4), normal(rng, 3, 4)))
def empty_inputs(x, y):
    return x.sum(axis=0), x.mean(axis=1), x * 2, x.reshape(-1, 2), np.concatenate([x, y])


@program(lambda rng: (np.array(rng.uniform(0.5, 2), np.float32),
                      np.array(rng.uniform(-2, 2), np.float32)))
def zero_d_inputs(a, b):
    return np.sqrt(a * a + b * b), np.arctan2(b, a), np.maximum(a, b) * 2


@program(lambda rng: (normal(rng, 4, 4), normal(rng, 4, 4, dtype=np.float16),
                      ints(rng, 4, 4, dtype=np.int32), ints(rng, 4, 4, dtype=np.int8)))
def mixed_dtype_promotion(a32, a16, i32, i8):
    return {
        "f32+f16": a32 + a16,
        "f16*2": a16 * 2,
        "i32*0.5": i32 * 0.5,
        "i32+f32": i32 + a32,
        "i8+i32": i8 + i32,
        "i8*3": i8 * 3,
        "i32/i32": i32 / (i32 + 11),
        "f16.sum": a16.sum(axis=0),
        "i8.sum": i8.sum(),
        "i32.mean": i32.mean(axis=1),
    }


# --- integers and booleans ---------------------------------------------------------------------


@program(lambda rng: (ints(rng, 5, 6, low=-1000, high=1000, dtype=np.int32),
                      np.where(mask(rng, 5, 6), 1, -1).astype(np.int32)
                      * ints(rng, 5, 6, low=1, high=20, dtype=np.int32)))
def integer_arithmetic(a, b):
    return {
        "floordiv": a // b,
        "mod": a % b,
        "floor_divide_const": np.floor_divide(a, 7),
        "remainder_neg": np.remainder(-a, 7),
        "fmod": np.fmod(a, b),
        "neg_mod_const": a % -3,
        "abs": np.abs(a),
        "sign": np.sign(b),
        "clip": np.clip(a, -5, 5),
        "matmul": a @ b.T,
    }


@program(lambda rng: (ints(rng, 4, 8, low=-(2**20), high=2**20, dtype=np.int32),
                      ints(rng, 4, 8, low=0, high=2**20, dtype=np.int32)))
def bit_ops_int32(a, b):
    return (a & 0xFF, a | b, a ^ b, ~a, a << 3, a >> 2, np.left_shift(b, 4),
            np.right_shift(a, b % 8), np.bitwise_and(a, b) == (a & b))


@program(lambda rng: (ints(rng, 10, low=-100, high=100), ints(rng, 10, low=1, high=9)))
def int64_mixed(a, b):
    q = np.abs(a) // 2 + (a % 3) * b
    return q, np.maximum(a, b), np.minimum.reduce(a), a.sum(), q.max(), np.power(b, 3)


@program(lambda rng: (mask(rng, 4, 6), mask(rng, 4, 6)))
def bool_logic(a, b):
    return {
        "any": np.any(a, axis=1),
        "all": b.all(),
        "xor": a ^ b,
        "not": ~a,
        "and_or": (a & b) | ~b,
        "logical": np.logical_or(np.logical_not(a), np.logical_and(a, b)),
        "count": a.sum(axis=0),
        "mean": b.mean(),
        "eq": a == b,
    }


# --- in-place idioms ---------------------------------------------------------------------------


@program(f32((3, 4)))
def inplace_arithmetic(x):
    y = x.copy()
    y += 1
    y *= 2
    y -= x
    y /= 3
    return y


@program(f32((3, 5)))
def shift_right_with_zeros(x):
    y = np.zeros_like(x)
    y[:, 1:] = x[:, :-1]
    return y


@program(f32((4, 5)))
def mask_assign(x):
    x = x.copy()
    x[x < 0] = 0
    x[:, 0] = -1.0
    x[1] += 10
    return x


@program(f32((3, 3), (3, 3)))
def ufunc_out_argument(a, b):
    c = np.empty_like(a)
    np.add(a, b, out=c)
    np.multiply(c, 2, out=c)
    np.exp(-c, out=c)
    return c


@program(lambda rng: (ints(rng, 12, high=5), normal(rng, 12)))
def scatter_add_at(idx, vals):
    out = np.zeros_like(vals[:5])
    np.add.at(out, idx, vals)
    return out


# --- structured results and static arguments ---------------------------------------------------

Stats = collections.namedtuple("Stats", ["mean", "std", "min", "max"])


@program(f32((5, 4)))
def summary_stats_namedtuple(x):
    return Stats(x.mean(axis=0), x.std(axis=0), x.min(axis=0), x.max(axis=0))


@program(f32((6,), (6,)))
def nested_dict_result(a, b):
    return {"sum": a + b, "pair": (a * b, [a - b, None]), "scalars": {"dot": a @ b}}


@program(lambda rng: (normal(rng, 5), 4), static_argnums=(1,))
def power_sum_static(x, p):
    return sum(x**k for k in range(p))


@program(lambda rng: (normal(rng, 3, 4), 1.5), static_argnums=(1,))
def softmax_temperature_static(x, temperature):
    return _softmax(x / temperature)


@program(lambda rng: (normal(rng, 12, 3), normal(rng, 3, scale=0.1), mask(rng, 12).astype(
    np.float32), 0.5), static_argnums=(3,))
def logistic_regression_step(x, w, y, lr):
    p = 1 / (1 + np.exp(-(x @ w)))
    grad = x.T @ (p - y) / x.shape[0]
    return w - lr * grad


def _adam_args(rng):
    params = {"w": normal(rng, 3, 3), "b": normal(rng, 3)}
    grads = {"w": normal(rng, 3, 3), "b": normal(rng, 3)}
    m = {"w": normal(rng, 3, 3, scale=0.1), "b": normal(rng, 3, scale=0.1)}
    v = {"w": uniform(rng, 3, 3, high=0.1), "b": uniform(rng, 3, high=0.1)}
    return params, grads, (m, v), 3


@program(_adam_args, static_argnums=(3,))
def adam_step(params, grads, state, t, lr=1e-2, b1=0.9, b2=0.999):
    m_state, v_state = state
    new_params, new_m, new_v = {}, {}, {}
    for key in params:
        g = grads[key]
        m = b1 * m_state[key] + (1 - b1) * g
        v = b2 * v_state[key] + (1 - b2) * g * g
        m_hat = m / (1 - b1**t)
        v_hat = v / (1 - b2**t)
        new_params[key] = params[key] - lr * m_hat / (np.sqrt(v_hat) + 1e-8)
        new_m[key], new_v[key] = m, v
    return new_params, (new_m, new_v)


@program(lambda rng: ([normal(rng, 4, 3, scale=3.0), normal(rng, 3, scale=3.0)], 1.0),
         static_argnums=(1,))
def clip_by_global_norm(grads, max_norm):
    norm = np.sqrt(sum(np.sum(g**2) for g in grads))
    scale = np.minimum(1.0, max_norm / (norm + 1e-6))
    return [g * scale for g in grads], norm


@program(f32((3, 5)))
def sinusoidal_position_add(x):
    t, d = x.shape
    pos = np.arange(t)[:, None]
    div = np.exp(np.arange(0, d, 2) * (-math.log(10000.0) / d))
    pe = np.zeros((t, d))
    pe[:, 0::2] = np.sin(pos * div)
    pe[:, 1::2] = np.cos(pos * div)[:, : d // 2]
    return x + pe.astype(np.float32)


# --- programs that write into their arguments and into buffers they make (issue 21) ---------
# Written the way NumPy code in the wild is: the function returns nothing (or a norm) and
# leaves its result in an argument; loops fill preallocated buffers element by element.


@program(lambda rng: (normal(rng, 12, 12, dtype=np.float64), np.zeros((12, 12)), 2))
def jacobi_2d_in_place(A, B, steps):
    for _ in range(steps):
        B[1:-1, 1:-1] = 0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:]
                              + A[2:, 1:-1] + A[:-2, 1:-1])
        A[1:-1, 1:-1] = 0.2 * (B[1:-1, 1:-1] + B[1:-1, :-2] + B[1:-1, 2:]
                              + B[2:, 1:-1] + B[:-2, 1:-1])


@program(lambda rng: (normal(rng, 6, 3, dtype=np.float64), normal(rng, 6, 3, dtype=np.float64),
                      uniform(rng, 6, low=1.0, high=2.0, dtype=np.float64), 0.01, 3))
def leapfrog_nbody(pos, vel, mass, dt, steps):
    def accel(p):
        d = p[None, :, :] - p[:, None, :]
        r2 = (d ** 2).sum(-1) + 0.01
        inv = mass[None, :] / (r2 * np.sqrt(r2))
        np.fill_diagonal(inv, 0.0)
        return (d * inv[:, :, None]).sum(1)
    a = accel(pos)
    for _ in range(steps):
        vel += 0.5 * dt * a
        pos += dt * vel
        a = accel(pos)
        vel += 0.5 * dt * a
    return 0.5 * (mass[:, None] * vel ** 2).sum()


@program(lambda rng: (normal(rng, 5, 5, dtype=np.float64) + 5 * np.eye(5),))
def lu_decompose_rows(A):
    """Doolittle LU with row loops, in place: L below the diagonal, U on and above."""
    n = A.shape[0]
    for k in range(n - 1):
        A[k + 1:, k] /= A[k, k]
        A[k + 1:, k + 1:] -= np.outer(A[k + 1:, k], A[k, k + 1:])


@program(lambda rng: (normal(rng, 8, 4), normal(rng, 4, 3), np.zeros(3, np.float32), 0.1))
def sgd_linear_regression_step(X, W, b, lr):
    """One training step that updates its parameters in place, as training loops do."""
    pred = X @ W + b
    err = pred - X[:, :3]
    W -= lr * (X.T @ err) / len(X)
    b -= lr * err.mean(axis=0)
    return (err ** 2).mean()


@program(lambda rng: (uniform(rng, 32, dtype=np.float64) * 10,))
def histogram_by_loop_into_buffer(x):
    counts = np.zeros(5)
    edges = np.linspace(0.0, 10.0, 6)
    for i in range(len(edges) - 1):
        counts[i] = ((x >= edges[i]) & (x < edges[i + 1])).sum()
    return counts


@program(lambda rng: (ints(rng, 24, 32, low=40, high=180, dtype=np.uint8),))
def equalize_image_histogram(img):
    hist, _ = np.histogram(img, bins=256, range=(0, 256))
    cdf = hist.cumsum()
    cdf_min = np.where(cdf > 0, cdf, img.size).min()
    lut = np.round((cdf - cdf_min) / (img.size - cdf_min) * 255)
    return np.clip(lut, 0, 255).astype(np.uint8)[img]


@program(lambda rng: (ints(rng, 60, high=5), uniform(rng, 60, dtype=np.float64)))
def weighted_label_counts(labels, weights):
    counts, _ = np.histogram(labels, bins=5, range=(0, 5))
    totals, _ = np.histogram(labels, bins=5, range=(0, 5), weights=weights)
    return counts, totals / np.maximum(counts, 1)


@program(lambda rng: (ints(rng, 20, 2, high=8), uniform(rng, 20, low=0.5, high=2.0,
                                                        dtype=np.float64)))
def assemble_edge_stiffness(edges, stiffness):
    n_nodes = 8
    local = np.array([[1.0, -1.0], [-1.0, 1.0]])
    K = np.zeros((n_nodes, n_nodes))
    np.add.at(K, (edges[:, :, None], edges[:, None, :]), stiffness[:, None, None] * local)
    load = np.zeros(n_nodes)
    np.add.at(load, edges.ravel(), np.repeat(stiffness / 2, 2))
    return K, load


@program(lambda rng: (normal(rng, 7, dtype=np.float64),))
def cumulative_max_by_loop(x):
    out = np.empty_like(x)
    out[0] = x[0]
    for i in range(1, len(x)):
        out[i] = np.maximum(out[i - 1], x[i])
    return out


# --- Python loops over time steps and epochs, with histories (issue 22) -----------------------
# Long enough that jit traces each loop's body once (jitlib/trace/loop_capture.py), or, where
# a Python number changes each trip, runs the trips as Python.


@program(lambda rng: (uniform(rng, 32, dtype=np.float64), 12))
def heat_diffusion_snapshots(u, steps):
    """Explicit 1-D heat equation, fixed ends, a snapshot of the rod every step."""
    u = u.copy()
    snapshots = []
    for _ in range(steps):
        u[1:-1] = u[1:-1] + 0.4 * (u[2:] - 2 * u[1:-1] + u[:-2])
        snapshots.append(u.copy())
    return np.stack(snapshots), u.mean()


@program(lambda rng: (normal(rng, 40, 3, dtype=np.float64), uniform(rng, 40) > 0.5,
                      np.zeros(3), 15), static_argnums=(3,))
def logistic_regression_training(X, y, w, epochs):
    """Full-batch gradient descent that keeps its loss history, updating w in place."""
    losses = []
    for epoch in range(epochs):
        p = 1.0 / (1.0 + np.exp(-(X @ w)))
        losses.append(-np.mean(y * np.log(p + 1e-12) + (1 - y) * np.log(1 - p + 1e-12)))
        w -= 0.5 * X.T @ (p - y) / len(y)
    return np.array(losses)


@program(lambda rng: (normal(rng, 4, dtype=np.float64), normal(rng, 4, dtype=np.float64)))
def damped_oscillator_trajectory(x, v):
    """Semi-implicit Euler with a Python clock: t changes every trip, so the trips stay
    Python trips."""
    t, dt = 0.0, 0.05
    xs = []
    for _ in range(20):
        v = v - dt * (x + 0.1 * v) + dt * 0.01 * t
        x = x + dt * v
        t += dt
        xs.append(x)
    return np.stack(xs), t


def _spd_system(rng):
    a = rng.standard_normal((10, 10))
    return a @ a.T + 10 * np.eye(10), rng.standard_normal(10)


@program(_spd_system)
def gaussian_elimination_solve(A, b):
    """Textbook elimination and back substitution: slices that shrink each trip (traced
    once, as windows: jitlib/trace/windows.py)."""
    A, b = A.copy(), b.copy()
    n = len(b)
    for k in range(n - 1):
        factors = A[k + 1:, k] / A[k, k]
        A[k + 1:, k:] -= np.outer(factors, A[k, k:])
        b[k + 1:] -= factors * b[k]
    x = np.zeros_like(b)
    for i in range(n - 1, -1, -1):
        x[i] = (b[i] - A[i, i + 1:] @ x[i + 1:]) / A[i, i]
    return x, np.abs(A @ x - b).max()


@program(lambda rng: (rng.standard_normal((9, 6)),))
def householder_least_squares_r(A):
    """R of A = QR by Householder reflections, and |R|'s diagonal (the column norms that
    least squares divides by): one element of each shrinking column written."""
    A = A.copy()
    for k in range(A.shape[1]):
        x = A[k:, k]
        v = x.copy()
        v[0] += np.sign(x[0]) * np.linalg.norm(x)
        v /= np.linalg.norm(v)
        A[k:, k:] -= 2.0 * np.outer(v, v @ A[k:, k:])
    R = np.triu(A[:A.shape[1]])
    return R, np.abs(np.diag(R))


@program(lambda rng: (_spd_system(rng)[0],))
def cholesky_banachiewicz_in_place(A):
    """Cholesky by columns, written over the caller's matrix's lower triangle."""
    n = A.shape[0]
    for j in range(n):
        A[j, j] = np.sqrt(A[j, j] - np.dot(A[j, :j], A[j, :j]))
        A[j + 1:, j] = (A[j + 1:, j] - A[j + 1:, :j] @ A[j, :j]) / A[j, j]
    return np.tril(A).sum()


@program(lambda rng: (normal(rng, 6, 2, dtype=np.float64),
                      np.abs(normal(rng, 6, 2, dtype=np.float64)) * 5,
                      uniform(rng, 6, low=0.01, high=0.1, dtype=np.float64)))
def projectile_trajectories(pos, vel, drag):
    """Explicit Euler with quadratic drag, the trajectory kept as a copy a step and made
    an array after the loop (np.array of the list), then its highest points."""
    dt, g = 0.01, np.array([0.0, -9.81])
    traj = []
    for _ in range(200):
        speed = np.sqrt((vel * vel).sum(axis=1, keepdims=True))
        vel = vel + dt * (g - drag[:, None] * speed * vel)
        pos = pos + dt * vel
        traj.append(pos.copy())
    traj = np.array(traj)
    return traj, traj[:, :, 1].max(axis=0)


@program(lambda rng: tuple(normal(rng, *s, scale=0.3) for s in
                           ((40, 8), (16,), (8, 16), (16, 16), (8, 16), (16, 16))))
def gru_like_sequence(xs, h, Wz, Uz, Wh, Uh):
    """A gated recurrent cell over a sequence: hidden states appended each step, stacked
    after the loop, and their mean."""
    states = []
    for t in range(xs.shape[0]):
        z = 1.0 / (1.0 + np.exp(-(xs[t] @ Wz + h @ Uz)))
        cand = np.tanh(xs[t] @ Wh + (z * h) @ Uh)
        h = (1 - z) * h + z * cand
        states.append(h)
    hs = np.stack(states)
    return hs, hs.mean(axis=0)


# --- solvers, stencils and simulations as people write them in plain NumPy -------------------


def _spd_rhs(rng, n=24):
    m = rng.standard_normal((n, n))
    return m @ m.T + n * np.eye(n), rng.standard_normal(n)


@program(lambda rng: (*_spd_rhs(rng), 12), static_argnums=(2,))
def conjugate_gradient_fixed_steps(A, b, iters):
    """Conjugate gradients for a fixed number of steps, updating x and r in place."""
    x = np.zeros_like(b)
    r = b - A @ x
    p = r.copy()
    rs = r @ r
    for _ in range(iters):
        Ap = A @ p
        alpha = rs / (p @ Ap)
        x += alpha * p
        r -= alpha * Ap
        rs_new = r @ r
        p = r + (rs_new / rs) * p
        rs = rs_new
    return x, np.sqrt(rs)


@program(lambda rng: (uniform(rng, 30, dtype=np.float64), 4 + uniform(rng, 30, dtype=np.float64),
                      uniform(rng, 30, dtype=np.float64), uniform(rng, 30, dtype=np.float64)))
def thomas_tridiagonal_solve(a, b, c, d):
    """The Thomas algorithm: a forward sweep into np.empty buffers, then back substitution
    over a reversed range."""
    n = d.shape[0]
    cp, dp, x = np.empty(n), np.empty(n), np.empty(n)
    cp[0] = c[0] / b[0]
    dp[0] = d[0] / b[0]
    for i in range(1, n):
        m = b[i] - a[i] * cp[i - 1]
        cp[i] = c[i] / m
        dp[i] = (d[i] - a[i] * dp[i - 1]) / m
    x[-1] = dp[-1]
    for i in range(n - 2, -1, -1):
        x[i] = dp[i] - cp[i] * x[i + 1]
    return x


@program(lambda rng: ((rng.random((16, 16)) < 0.3).astype(np.int8), 6), static_argnums=(1,))
def game_of_life_rolls(board, steps):
    """Conway's game of life on a torus: neighbour counts from eight rolls, int8 cells."""
    for _ in range(steps):
        n = sum(np.roll(np.roll(board, i, 0), j, 1)
                for i in (-1, 0, 1) for j in (-1, 0, 1) if (i, j) != (0, 0))
        board = ((n == 3) | ((board == 1) & (n == 2))).astype(board.dtype)
    return board, board.sum()


@program(lambda rng: (np.array([1.0, 1.0, 1.0]) + 0.1 * rng.random(3), 0.01, 40),
         static_argnums=(2,))
def lorenz_rk4_trajectory(state, dt, steps):
    """RK4 on the Lorenz system, the right-hand side built with np.array from unpacked
    components, each state written into a preallocated trajectory."""
    def f(s):
        x, y, z = s
        return np.array([10.0 * (y - x), x * (28.0 - z) - y, x * y - (8.0 / 3.0) * z])
    traj = np.empty((steps + 1, 3))
    traj[0] = state
    for i in range(steps):
        k1 = f(state)
        k2 = f(state + 0.5 * dt * k1)
        k3 = f(state + 0.5 * dt * k2)
        k4 = f(state + dt * k3)
        state = state + dt / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)
        traj[i + 1] = state
    return traj


@program(lambda rng: (np.exp(-np.linspace(-3, 3, 64) ** 2).astype(np.float32), 1.0, 0.1, 0.05,
                      30), static_argnums=(4,))
def upwind_advection_periodic(u, c, dx, dt, steps):
    """First-order upwind advection with periodic boundaries through np.roll."""
    for _ in range(steps):
        u = u - c * dt / dx * (u - np.roll(u, 1))
    return u


@program(lambda rng: (uniform(rng, 20, 16),))
def sobel_edge_magnitude(img):
    """Sobel gradients from shifted slices, their magnitude normalised into the interior of
    a zeroed image."""
    gx = (img[:-2, 2:] + 2 * img[1:-1, 2:] + img[2:, 2:]
          - img[:-2, :-2] - 2 * img[1:-1, :-2] - img[2:, :-2])
    gy = (img[2:, :-2] + 2 * img[2:, 1:-1] + img[2:, 2:]
          - img[:-2, :-2] - 2 * img[:-2, 1:-1] - img[:-2, 2:])
    mag = np.hypot(gx, gy)
    out = np.zeros_like(img)
    out[1:-1, 1:-1] = mag / mag.max()
    return out


@program(lambda rng: (normal(rng, 60, 2, dtype=np.float64), normal(rng, 3, 2, dtype=np.float64),
                      4), static_argnums=(2,))
def kmeans_lloyd_in_place(X, centers, iters):
    """Lloyd's k-means: labels by argmin over broadcast distances, each centre rewritten in
    the caller's array (kept where its cluster is empty)."""
    k = centers.shape[0]
    for _ in range(iters):
        d = ((X[:, None, :] - centers[None, :, :]) ** 2).sum(-1)
        labels = d.argmin(axis=1)
        for j in range(k):
            m = labels == j
            cnt = m.sum()
            centers[j] = np.where(cnt > 0, (X * m[:, None]).sum(0) / np.maximum(cnt, 1),
                                  centers[j])
    return labels


@program(lambda rng: (normal(rng, 48, 5, dtype=np.float64), ints(rng, 48, high=3),
                      np.zeros((5, 3)), 0.5, 16), static_argnums=(4,))
def minibatch_softmax_regression(X, y, W, lr, bs):
    """One epoch of softmax regression over minibatches sliced in a Python loop, the
    gradient through fancy-index assignment, W updated in place."""
    n = X.shape[0]
    for start in range(0, n, bs):
        xb, yb = X[start:start + bs], y[start:start + bs]
        logits = xb @ W
        logits -= logits.max(axis=1, keepdims=True)
        p = np.exp(logits)
        p /= p.sum(axis=1, keepdims=True)
        p[np.arange(len(yb)), yb] -= 1
        W -= lr * xb.T @ p / len(yb)
    return W


@program(lambda rng: (uniform(rng, 10, 12, dtype=np.float64), np.array([0.25, 0.5, 0.25])))
def separable_blur_apply_along_axis(img, kernel):
    """A separable blur: np.convolve along rows, then columns, through apply_along_axis."""
    tmp = np.apply_along_axis(lambda r: np.convolve(r, kernel, mode="same"), 1, img)
    return np.apply_along_axis(lambda c: np.convolve(c, kernel, mode="same"), 0, tmp)


@program(lambda rng: (_spd_rhs(rng, 12)[0], 2, 20), static_argnums=(1, 2))
def power_method_with_deflation(A, k, iters):
    """The k largest eigenpairs by power iteration, deflating a copy of A after each."""
    n = A.shape[0]
    vals, vecs = np.zeros(k), np.zeros((n, k))
    B = A.copy()
    for j in range(k):
        v = np.ones(n) / np.sqrt(n)
        for _ in range(iters):
            w = B @ v
            v = w / np.linalg.norm(w)
        lam = v @ B @ v
        vals[j] = lam
        vecs[:, j] = v
        B -= lam * np.outer(v, v)
    return vals, vecs


@program(lambda rng: (np.sin(np.linspace(0, np.pi, 16)), 0.5, 5), static_argnums=(2,))
def implicit_heat_steps(u, alpha, steps):
    """Backward Euler for the heat equation: a tridiagonal matrix from np.eye with offsets,
    one np.linalg.solve per step."""
    n = u.shape[0]
    A = np.eye(n) * (1 + 2 * alpha) - alpha * (np.eye(n, k=1) + np.eye(n, k=-1))
    for _ in range(steps):
        u = np.linalg.solve(A, u)
    return u


@program(lambda rng: (uniform(rng, 8, 10, dtype=np.float64), 13, 17), static_argnums=(1, 2))
def bilinear_resize(img, out_h, out_w):
    """Bilinear resampling: floor indices from np.linspace, four gathered corners."""
    h, w = img.shape
    ys, xs = np.linspace(0, h - 1, out_h), np.linspace(0, w - 1, out_w)
    y0, x0 = np.floor(ys).astype(int), np.floor(xs).astype(int)
    y1, x1 = np.minimum(y0 + 1, h - 1), np.minimum(x0 + 1, w - 1)
    wy, wx = (ys - y0)[:, None], (xs - x0)[None, :]
    a, b = img[y0][:, x0], img[y0][:, x1]
    c, d = img[y1][:, x0], img[y1][:, x1]
    return a * (1 - wy) * (1 - wx) + b * (1 - wy) * wx + c * wy * (1 - wx) + d * wy * wx


@program(lambda rng: (uniform(rng, 10, 9, dtype=np.float64), uniform(rng, 10, 9, dtype=np.float64),
                      0.1, 3), static_argnums=(3,))
def gauss_seidel_sweeps(u, f, h, sweeps):
    """Gauss-Seidel for the Poisson equation: a row loop inside the sweeps' loop, each row
    reading the row above as the previous trip wrote it, u updated in place."""
    for _ in range(sweeps):
        for i in range(1, u.shape[0] - 1):
            u[i, 1:-1] = 0.25 * (u[i - 1, 1:-1] + u[i + 1, 1:-1] + u[i, :-2] + u[i, 2:]
                                 - h * h * f[i, 1:-1])
    return u


@program(f64((9, 5)))
def gram_schmidt_qr(A):
    """Classical Gram-Schmidt with a triangular loop nest writing Q and R entry by entry."""
    m, n = A.shape
    Q, R = np.zeros((m, n)), np.zeros((n, n))
    for j in range(n):
        v = A[:, j].copy()
        for i in range(j):
            R[i, j] = Q[:, i] @ A[:, j]
            v -= R[i, j] * Q[:, i]
        R[j, j] = np.linalg.norm(v)
        Q[:, j] = v / R[j, j]
    return Q, R


@program(lambda rng: (normal(rng, 24, 5, dtype=np.float64), normal(rng, 24, 2, dtype=np.float64),
                      normal(rng, 5, 8, dtype=np.float64, scale=0.3),
                      normal(rng, 8, 2, dtype=np.float64, scale=0.3), 0.05, 8),
         static_argnums=(5,))
def mlp_training_epochs(X, y, W1, W2, lr, epochs):
    """Full-batch training of a two-layer ReLU network with hand-written backprop: the
    ReLU's gradient masked by boolean assignment, weights updated in place."""
    for _ in range(epochs):
        h = np.maximum(X @ W1, 0)
        err = h @ W2 - y
        gW2 = h.T @ err / len(X)
        gh = err @ W2.T
        gh[h <= 0] = 0
        gW1 = X.T @ gh / len(X)
        W1 -= lr * gW1
        W2 -= lr * gW2
    return W1, W2, np.mean(err ** 2)


@program(f32((2, 3, 8, 8), (4, 3, 3, 3)), atol=1e-5)
def conv2d_sliding_windows(x, w):
    """A valid 3x3 convolution as im2col: sliding_window_view over the spatial axes, then
    one einsum with the filters."""
    patches = np.lib.stride_tricks.sliding_window_view(x, w.shape[2:], axis=(2, 3))
    return np.einsum("nchwij,ocij->nohw", patches, w)


@program(lambda rng: (0.99, 0.01, 0.0, 0.3, 0.1, 0.5, 40), static_argnums=(6,))
def sir_epidemic_history(s, i, r, beta, gamma, dt, steps):
    """Euler steps of the SIR model on Python floats, each step's state written into a
    row of a history array as a tuple."""
    hist = np.zeros((steps, 3))
    for t in range(steps):
        new_inf, new_rec = beta * s * i * dt, gamma * i * dt
        s, i, r = s - new_inf, i + new_inf - new_rec, r + new_rec
        hist[t] = (s, i, r)
    return hist


@program(lambda rng: (uniform(rng, 300, high=10.0, dtype=np.float64),
                      uniform(rng, 300, dtype=np.float64), 16, 10.0), static_argnums=(2,))
def particle_charge_deposit(x, q, n_cells, L):
    """Cloud-in-cell deposition: floor indices, periodic wrap, np.add.at twice."""
    rho = np.zeros(n_cells)
    cell = np.floor(x / L * n_cells).astype(np.int64) % n_cells
    frac = x / L * n_cells - np.floor(x / L * n_cells)
    np.add.at(rho, cell, q * (1 - frac))
    np.add.at(rho, (cell + 1) % n_cells, q * frac)
    return rho


@program(lambda rng: ((rng.random(32) < 0.5).astype(np.uint8), 12), static_argnums=(1,))
def rule30_automaton(cells, steps):
    """Wolfram's rule 30 on uint8 cells with rolls and bitwise ops, rows of a history."""
    out = np.zeros((steps, cells.size), dtype=np.uint8)
    for t in range(steps):
        out[t] = cells
        cells = np.roll(cells, 1) ^ (cells | np.roll(cells, -1))
    return out


@program(lambda rng: (np.array([1.0, -1.5]) + 0.01 * rng.random(2), 8), static_argnums=(1,))
def newton_on_a_2x2_system(x, iters):
    """Newton's method: residual and Jacobian built with np.array from scalars, one
    np.linalg.solve a step."""
    for _ in range(iters):
        F = np.array([x[0] ** 2 + x[1] ** 2 - 4.0, np.exp(x[0]) + x[1] - 1.0])
        J = np.array([[2 * x[0], 2 * x[1]], [np.exp(x[0]), 1.0]])
        x = x - np.linalg.solve(J, F)
    return x


@program(lambda rng: (normal(rng, 10, 4, dtype=np.float64), np.zeros(6), np.zeros(6),
                      normal(rng, 4, 24, dtype=np.float64, scale=0.3),
                      normal(rng, 6, 24, dtype=np.float64, scale=0.3), np.zeros(24)))
def lstm_over_a_sequence(xs, h, c, W, U, b):
    """An LSTM cell over a sequence: the four gates from np.split of one product."""
    for t in range(xs.shape[0]):
        i, f, g, o = np.split(xs[t] @ W + h @ U + b, 4)
        i, f, o = 1 / (1 + np.exp(-i)), 1 / (1 + np.exp(-f)), 1 / (1 + np.exp(-o))
        c = f * c + i * np.tanh(g)
        h = o * np.tanh(c)
    return h, c


@program(lambda rng: (rng.dirichlet(np.ones(6), size=(3, 6)), rng.random((3, 6)), 0.9, 15),
         static_argnums=(3,))
def value_iteration(P, R, gamma, iters):
    """Value iteration for a small MDP: batched transition products, max and argmax over
    the actions."""
    V = np.zeros(P.shape[-1])
    for _ in range(iters):
        Q = R + gamma * P @ V
        V = Q.max(axis=0)
    return V, Q.argmax(axis=0)


@program(lambda rng: (np.where(rng.random((10, 10)) < 0.4, rng.random((10, 10)) * 10, 1e9),))
def floyd_warshall_paths(D):
    """All-pairs shortest paths: one broadcast minimum per intermediate vertex."""
    for k in range(D.shape[0]):
        D = np.minimum(D, D[:, k, None] + D[None, k, :])
    return D


@program(lambda rng: (100 * np.exp(np.cumsum(rng.standard_normal(300) * 0.01)),))
def drawdown_statistics(prices):
    """Running peak by np.maximum.accumulate, the worst drawdown and where, volatility of
    log returns."""
    peak = np.maximum.accumulate(prices)
    dd = (prices - peak) / peak
    returns = np.diff(np.log(prices))
    return dd.min(), returns.std(ddof=1) * np.sqrt(252), np.argmin(dd)


@program(lambda rng: (normal(rng, 5, 5, dtype=np.float64, scale=0.5), 4, 10),
         static_argnums=(1, 2))
def matrix_exponential_taylor(A, squarings, terms):
    """The matrix exponential by scaling, a Taylor series and repeated squaring."""
    A = A / 2 ** squarings
    E, term = np.eye(A.shape[0]), np.eye(A.shape[0])
    for k in range(1, terms):
        term = term @ A / k
        E = E + term
    for _ in range(squarings):
        E = E @ E
    return E


@program(lambda rng: (normal(rng, 60, dtype=np.float64), 5), static_argnums=(1,))
def rolling_window_max(x, w):
    """A rolling maximum over sliding_window_view."""
    return np.lib.stride_tricks.sliding_window_view(x, w).max(axis=-1)



@program(lambda rng: (normal(rng, 96, 6, dtype=np.float64), normal(rng, 96, dtype=np.float64),
                      np.zeros(6), 0.05, 4, 16), static_argnums=(4, 5))
def sgd_minibatch_epochs(X, y, w, lr, epochs, batch):
    """Least squares by minibatch SGD: epochs of minibatches, the weights updated in place
    (a loop nest whose inner loop slices the data at its counter)."""
    n = X.shape[0]
    for epoch in range(epochs):
        for s in range(0, n, batch):
            xb, yb = X[s:s + batch], y[s:s + batch]
            grad = xb.T @ (xb @ w - yb) / batch
            w -= lr * grad
    return w


@program(lambda rng: (normal(rng, 24, dtype=np.float64),))
def bubble_sort_swaps(a):
    """Bubble sort with a swap through a tuple assignment, the inner pass as long as the
    part not sorted yet."""
    a = a.copy()
    n = len(a)
    for i in range(n):
        for j in range(n - 1 - i):
            a[j], a[j + 1] = np.minimum(a[j], a[j + 1]), np.maximum(a[j], a[j + 1])
    return a


@program(lambda rng: (ints(rng, 14, high=4), ints(rng, 17, high=4)))
def edit_distance_table(a, b):
    """Levenshtein distance by dynamic programming, filling the table entry by entry."""
    m, n = len(a), len(b)
    D = np.zeros((m + 1, n + 1))
    D[:, 0] = np.arange(m + 1)
    D[0, :] = np.arange(n + 1)
    for i in range(1, m + 1):
        for j in range(1, n + 1):
            cost = a[i - 1] != b[j - 1]
            D[i, j] = np.minimum(np.minimum(D[i - 1, j] + 1, D[i, j - 1] + 1),
                                 D[i - 1, j - 1] + cost)
    return D[m, n], D


@program(lambda rng: (_spd_rhs(rng, 12)[0],))
def cholesky_by_columns(A):
    """The Cholesky factor column by column, with slices as long as the column number."""
    n = A.shape[0]
    L = np.zeros_like(A)
    for j in range(n):
        L[j, j] = np.sqrt(A[j, j] - L[j, :j] @ L[j, :j])
        L[j + 1:, j] = (A[j + 1:, j] - L[j + 1:, :j] @ L[j, :j]) / L[j, j]
    return L


@program(lambda rng: (400, 30, 5), static_argnums=(0, 1, 2))
def random_walk_first_passage(n_paths, steps, seed):
    """Monte Carlo random walks drawing fresh normals every step from a generator made
    inside, with the fraction of paths that ever crossed a barrier."""
    rng = np.random.default_rng(seed)
    x = np.zeros(n_paths)
    crossed = np.zeros(n_paths, dtype=bool)
    for _ in range(steps):
        x += rng.standard_normal(n_paths) * 0.1
        crossed |= x > 0.5
    return x.mean(), crossed.mean()


@program(lambda rng: (np.sin(np.linspace(0, 2 * np.pi, 64, endpoint=False))
                      + 0.1 * rng.standard_normal(64), 0.1, 1e-3, 12), static_argnums=(3,))
def spectral_heat_steps(u, nu, dt, steps):
    """The heat equation by a spectral method: FFT, the decay of each mode, inverse FFT,
    every step (the decay factor written inside the loop, as people do)."""
    n = u.shape[0]
    k = np.fft.fftfreq(n, d=1.0 / n) * 2 * np.pi
    for _ in range(steps):
        uh = np.fft.fft(u)
        uh *= np.exp(-nu * k**2 * dt)
        u = np.fft.ifft(uh).real
    return u


@program(lambda rng: (rng.random(50), np.zeros(50), 0.2, 9), static_argnums=(3,))
def explicit_heat_double_buffer(u, out, alpha, steps):
    """Explicit heat steps between two buffers the caller passes, trading names every
    step: which of the caller's arrays holds the last step depends on the parity."""
    for _ in range(steps):
        out[1:-1] = u[1:-1] + alpha * (u[2:] - 2 * u[1:-1] + u[:-2])
        out[0], out[-1] = u[0], u[-1]
        u, out = out, u
    return u


def _tracking_problem(rng, steps=20):
    F = np.array([[1, 0, 1, 0], [0, 1, 0, 1], [0, 0, 1, 0], [0, 0, 0, 1.0]])
    H = np.array([[1, 0, 0, 0], [0, 1, 0, 0.0]])
    return (rng.standard_normal((steps, 2)), F, H, np.eye(4) * 0.01, np.eye(2) * 0.1,
            np.zeros(4), np.eye(4))


@program(_tracking_problem)
def kalman_filter_track(zs, F, H, Q, R, x0, P0):
    """A Kalman filter over a track of measurements: predict, gain through a small
    inverse, update, each state written into a preallocated history."""
    x, P = x0.copy(), P0.copy()
    out = np.empty((zs.shape[0], x0.shape[0]))
    for t in range(zs.shape[0]):
        x = F @ x
        P = F @ P @ F.T + Q
        S = H @ P @ H.T + R
        K = P @ H.T @ np.linalg.inv(S)
        x = x + K @ (zs[t] - H @ x)
        P = (np.eye(P.shape[0]) - K @ H) @ P
        out[t] = x
    return out


@program(lambda rng: (uniform(rng, 8, 500, dtype=np.float64), 16), static_argnums=(1,))
def histograms_per_frame(frames, bins):
    """One histogram per frame of a video-like stack, written into a preallocated table."""
    hists = np.empty((frames.shape[0], bins))
    for t in range(frames.shape[0]):
        hists[t], _ = np.histogram(frames[t], bins=bins, range=(0.0, 1.0))
    return hists


# --- control flow the way a JAX user writes it (issue 22) -------------------------------------
# jitlib.numpy's fori_loop, while_loop, scan, cond and switch run plain Python outside jit, so
# each program below is its own eager reference. They live in their own list: jitted, they
# keep `while` and `conditional` ops at the top level, which PROGRAMS' checks do not expect.

import jitlib.numpy as jnp  # noqa: E402 - the control flow functions, for this section only

CONTROL_FLOW: list[Program] = []


def control_flow_program(make_args, *, static_argnums=(), rtol=None, atol=None):
    """Register the decorated function in CONTROL_FLOW under its own name."""

    def register(fn):
        CONTROL_FLOW.append(Program(fn.__name__, fn, make_args, tuple(static_argnums), rtol,
                                    atol))
        return fn

    return register


@control_flow_program(lambda rng: (uniform(rng, 6, low=0.5, high=50.0, dtype=np.float64),))
def newton_sqrt_to_tolerance(a):
    """Newton's iteration for sqrt(a) until the residual is small, at most 50 steps."""

    def not_converged(state):
        x, it = state
        return (np.abs(x * x - a).max() > 1e-10 * a.max()) & (it < 50)

    def newton(state):
        x, it = state
        return 0.5 * (x + a / x), it + 1

    x, iterations = jnp.while_loop(not_converged, newton, (a + 1.0, 0))
    return x, iterations


def _spd(rng, n, dtype=np.float64):
    x = normal(rng, n, n, dtype=dtype)
    return x @ x.T / n + np.eye(n, dtype=dtype)


@control_flow_program(lambda rng: (_spd(rng, 8), normal(rng, 8, dtype=np.float64), 30),
                      static_argnums=(2,))
def power_iteration(A, v, iters):
    """The dominant eigenpair: multiply, normalize, repeat; the Rayleigh quotient at the end."""

    def step(i, v):
        w = A @ v
        return w / np.linalg.norm(w)

    v = jnp.fori_loop(0, iters, step, v / np.linalg.norm(v))
    return v @ A @ v, v


@control_flow_program(lambda rng: (normal(rng, 6, 6) + 8 * np.eye(6, dtype=np.float32),
                                   normal(rng, 6), 25), static_argnums=(2,))
def jacobi_linear_solve(A, b, iters):
    """x = D^-1 (b - R x) on a diagonally dominant system; returns x and its residual."""
    d = np.diag(A)
    R = A - np.diag(d)
    x = jnp.fori_loop(0, iters, lambda i, x: (b - R @ x) / d, np.zeros_like(b))
    return x, np.linalg.norm(A @ x - b)


@control_flow_program(lambda rng: (np.zeros(16, np.float32), normal(rng, 12, 5),
                                   normal(rng, 16, 16, scale=0.25), normal(rng, 5, 16, scale=0.4),
                                   normal(rng, 16, 3, scale=0.3)))
def elman_rnn_scan(h0, xs, W, U, V):
    """An RNN over a sequence: the last hidden state and a readout at every step."""

    def cell(h, x):
        h = np.tanh(h @ W + x @ U)
        return h, h @ V

    h, ys = jnp.scan(cell, h0, xs)
    return h, ys


@control_flow_program(lambda rng: (normal(rng, 20, 3, dtype=np.float64), 0.3))
def exponential_moving_average_scan(xs, alpha):
    """A running statistic by scan: the EMA at every step, and the plain running total."""

    def update(carry, x):
        ema, total = carry
        ema = (1 - alpha) * ema + alpha * x
        total = total + x
        return (ema, total), ema

    (last, total), emas = jnp.scan(update, (xs[0], np.zeros_like(xs[0])), xs)
    return last, total, emas


@control_flow_program(lambda rng: (normal(rng, 10, scale=3.0), 1.0))
def clip_by_norm_with_cond(g, max_norm):
    """Scale a gradient down only when its norm is too large, as optax's clip does."""
    norm = np.sqrt((g * g).sum())
    return jnp.cond(norm > max_norm, lambda g: g * (max_norm / norm), lambda g: g, g)


@control_flow_program(lambda rng: (normal(rng, 4, 5), 2))
def activation_by_index_switch(x, which):
    """An activation picked at run time by index: relu, tanh, gelu (tanh form), identity."""
    def gelu(v):
        return 0.5 * v * (1.0 + np.tanh(0.7978845608 * (v + 0.044715 * v ** 3)))

    branches = [lambda v: np.maximum(v, 0.0), np.tanh, gelu, lambda v: v]
    return jnp.switch(which, branches, x)


@control_flow_program(lambda rng: (_spd(rng, 5), normal(rng, 5, dtype=np.float64), 0.2, 60),
                      static_argnums=(3,))
def gradient_descent_on_quadratic(A, b, lr, steps):
    """Minimize 0.5 x'Ax - b'x by gradient steps, halving the rate every 20 steps."""

    def step(i, x):
        rate = jnp.cond(i < 20, lambda: lr, lambda: lr * 0.5)
        return x - rate * (A @ x - b)

    x = jnp.fori_loop(0, steps, step, np.zeros_like(b))
    return x, 0.5 * x @ A @ x - b @ x


@control_flow_program(lambda rng: (uniform(rng, 7, low=1.0, high=30.0, dtype=np.float64),))
def cube_root_by_bisection(y):
    """Bisection, elementwise, until every bracket is narrower than 1e-9."""

    def wide(state):
        lo, hi = state
        return (hi - lo).max() > 1e-9

    def halve(state):
        lo, hi = state
        mid = 0.5 * (lo + hi)
        above = mid ** 3 > y
        return np.where(above, lo, mid), np.where(above, mid, hi)

    lo, hi = jnp.while_loop(wide, halve, (np.zeros_like(y), y.copy()))
    return 0.5 * (lo + hi)


def _noisy_signal(rng):
    t = np.sort(uniform(rng, 64, high=6.0, dtype=np.float64))
    return t, np.sin(t) + normal(rng, 64, dtype=np.float64, scale=0.1)


@program(_noisy_signal)
def smooth_resample_and_differentiate(t, y):
    kernel = np.array([1.0, 4.0, 6.0, 4.0, 1.0]) / 16.0
    smooth = np.convolve(y, kernel, mode="same")
    grid = np.linspace(0.5, 5.5, 40)
    resampled = np.interp(grid, t, smooth)
    slope = np.gradient(resampled, grid, edge_order=2)
    area = np.trapezoid(resampled, grid)
    return slope, area


@program(lambda rng: (normal(rng, 6, 30, dtype=np.float64), uniform(rng, 30, high=2.0),
                      ints(rng, 30, high=8)))
def weighted_summary_with_gaps(x, w, label):
    x = np.where(x > 2.0, np.nan, x)
    keep = np.isin(label, [1, 3, 5])
    weights = np.where(keep, w, 0.0).astype(np.float64) + 1e-3
    mean, total = np.average(np.nan_to_num(x), axis=1, weights=weights, returned=True)
    spread = np.nanstd(x, axis=1, ddof=1)
    peak = np.nanargmax(x, axis=1)
    running = np.nancumsum(x, axis=1)[:, -1]
    return mean, total, spread, peak, running


# --- complex values and spectra ----------------------------------------------------------------
# A catalogue of their own: the compiled backends run some of their kernels on the
# interpreter (logs, powers, products, FFTs off the cpu's host path), so the suites
# asserting every kernel native leave them out.

COMPLEX: list[Program] = []


def complex_program(make_args, *, rtol=None, atol=None):
    """Register the decorated function in COMPLEX under its own name."""

    def register(fn):
        COMPLEX.append(Program(fn.__name__, fn, make_args, (), rtol, atol))
        return fn

    return register


def _periodic_samples(rng):
    x = np.linspace(0.0, 2 * np.pi, 64, endpoint=False)
    return (np.sin(3 * x) + 0.5 * np.cos(5 * x) + normal(rng, 64, dtype=np.float64, scale=0.01),)


def _long_noise(rng):
    return ((normal(rng, 1 << 16) + 1j * normal(rng, 1 << 16)).astype(np.complex64),)


@complex_program(_long_noise)
def spectral_lowpass_long(z):
    # a 2^16-point transform and its inverse: long enough for the cpu backend's six-step
    # FFT on all cores
    spectrum = np.fft.fft(z)
    freqs = np.fft.fftfreq(z.size)
    smooth = np.fft.ifft(np.where(np.abs(freqs) < 0.05, spectrum, 0))
    return smooth, np.abs(spectrum).max() / z.size


@complex_program(_periodic_samples)
def spectral_derivative(u):
    # d/dx of a periodic signal: multiply its spectrum by i*k and transform back
    n = u.shape[0]
    k = np.fft.rfftfreq(n, d=2 * np.pi / n) * 2 * np.pi
    du = np.fft.irfft(1j * k * np.fft.rfft(u), n=n)
    smooth = np.fft.irfft(np.fft.rfft(u) * np.exp(-(k / 8.0) ** 2), n=n)
    return du, smooth


@complex_program(lambda rng: (normal(rng, 16, 16), normal(rng, 3, 3)))
def convolve_2d_via_fft2(image, kernel):
    # circular convolution: the product of the zero-padded kernel's spectrum and the image's
    padded = np.zeros_like(image)
    padded[:3, :3] = kernel
    padded = np.roll(padded, (-1, -1), axis=(0, 1))
    blurred = np.fft.ifft2(np.fft.fft2(image) * np.fft.fft2(padded)).real
    return blurred.astype(image.dtype), np.abs(np.fft.fftshift(np.fft.fft2(image)))[8, 8]


@complex_program(lambda rng: (np.linspace(0.0, 10.0, 200), uniform(rng, 3, low=0.05, high=0.3,
                                                           dtype=np.float64)))
def damped_oscillators(t, damping):
    # x(t) = Re(A e^{(-zeta w + i w sqrt(1 - zeta^2)) t}) for three oscillators at once
    omega = np.array([1.0, 2.5, 4.0])
    rate = -damping * omega + 1j * omega * np.sqrt(1 - damping ** 2)
    amplitude = np.array([1.0, 0.5 - 0.5j, 2j])
    z = amplitude[:, None] * np.exp(rate[:, None] * t[None, :])
    x = z.real
    energy = 0.5 * (np.abs(rate[:, None] * z) ** 2 + (omega[:, None] * np.abs(z)) ** 2)
    return x, energy[:, -1], np.angle(z[:, 100])


@complex_program(lambda rng: (normal(rng, 2, dtype=np.float64, scale=0.2), 0.9 + uniform(
    rng, 1, high=0.2, dtype=np.float64)))
def contour_integral_residue(center, radius):
    # (1/2 pi i) * contour integral of 1/(z - p) over a circle around the pole p: the
    # residue 1 (and 0 for the pole outside), by the trapezoidal rule on the circle
    theta = np.linspace(0.0, 2 * np.pi, 256, endpoint=False)
    c = center[0] + 1j * center[1]
    z = c + radius[0] * np.exp(1j * theta)
    dz = 1j * (z - c) * (2 * np.pi / theta.size)
    inside = np.sum(dz / (z - c)) / (2j * np.pi)
    outside = np.sum(dz / (z - (c + 3.0))) / (2j * np.pi)
    moment = np.sum(z ** 2 * dz / (z - c)) / (2j * np.pi)
    return inside, outside, moment, np.abs(moment - c ** 2)


@complex_program(lambda rng: (np.linspace(-10.0, 10.0, 128, endpoint=False),))
def split_step_wave_packet(x):
    # a Gaussian wave packet in a harmonic well, split-step Fourier steps: half a potential
    # kick, a free flight in k-space, another half kick; its norm is kept and its mean
    # position oscillates
    dt, n = 0.01, x.size
    k = 2 * np.pi * np.fft.fftfreq(n, d=x[1] - x[0])
    potential = 0.5 * x ** 2
    psi = np.exp(-(x - 2.0) ** 2 + 1j * 0.5 * x) / np.pi ** 0.25
    half_kick = np.exp(-0.5j * potential * dt)
    flight = np.exp(-0.5j * k ** 2 * dt)
    for _ in range(20):
        psi = half_kick * psi
        psi = np.fft.ifft(flight * np.fft.fft(psi))
        psi = half_kick * psi
    density = np.abs(psi) ** 2
    dx = x[1] - x[0]
    return psi, density.sum() * dx, (x * density).sum() * dx


@complex_program(lambda rng: (normal(rng, 32, dtype=np.float64), normal(rng, 32, dtype=np.float64)))
def complex_rotations_and_ratios(re, im):
    # elementwise complex arithmetic as signal code writes it: phasors, conjugate
    # products, ratios, magnitudes and a comparison
    z = re + 1j * im
    phasor = np.exp(1j * np.linspace(0.0, np.pi, z.size))
    rotated = z * phasor
    cross = (rotated * np.conj(z)).real
    ratio = (z + 2.0) / (rotated - 3.0j)
    same = (rotated == z) | (np.abs(ratio) > 1.0)
    return rotated, cross, ratio, np.abs(ratio - z), same, -z.conj()


def _airfoil_angles(rng):
    return np.linspace(0.0, 2 * np.pi, 180, endpoint=False), np.array([0.08])


@complex_program(_airfoil_angles)
def karman_trefftz_airfoil_flow(theta, angle_of_attack):
    # potential flow past a Karman-Trefftz airfoil: a circle's flow with circulation (its
    # complex potential uses log), mapped by a non-integer power of (zeta-1)/(zeta+1);
    # the surface speed and the lift come from the map's derivative
    exponent, radius = 1.9, 1.1
    center = -0.1 + 0.05j
    zeta = center + radius * np.exp(1j * theta)
    alpha = angle_of_attack[0]
    beta = np.arcsin(center.imag / radius)
    gamma = 4 * np.pi * radius * np.sin(alpha + beta)   # Kutta condition at zeta = 1
    w = (zeta - center) * np.exp(-1j * alpha)
    potential = w + radius ** 2 / w + 1j * gamma / (2 * np.pi) * np.log(w)
    u = np.exp(-1j * alpha) * (1 - radius ** 2 / w ** 2) + 1j * gamma / (2 * np.pi * (zeta - center))
    ratio = (zeta - 1) / (zeta + 1)
    z = exponent * (1 + ratio ** exponent) / (1 - ratio ** exponent)
    dz = 4 * exponent ** 2 * ratio ** exponent / ((zeta ** 2 - 1) * (1 - ratio ** exponent) ** 2)
    dz = np.where(np.abs(zeta - 1) < 1e-9, 1.0, dz)
    speed = np.abs(u / dz)
    pressure = 1 - speed ** 2
    chord = z.real.max() - z.real.min()
    return z, potential.imag, pressure, gamma / chord, np.sinh(np.tanh(w)).mean()


@complex_program(lambda rng: (np.linspace(-2.0, 2.0, 9), np.array([1.5])))
def rabi_oscillation_rk4(detuning, rabi):
    # two-level amplitudes under a drive, one per detuning, stepped by RK4 in the rotating
    # frame: a time loop of complex arithmetic (the rolled body's kernels are complex)
    dt = 0.02

    def slope(cg, ce):
        return (-0.5j * (-detuning * cg + rabi * ce), -0.5j * (rabi * cg + detuning * ce))

    cg = np.ones(detuning.shape, dtype=complex)
    ce = np.zeros(detuning.shape, dtype=complex)
    for _ in range(150):
        k1g, k1e = slope(cg, ce)
        k2g, k2e = slope(cg + 0.5 * dt * k1g, ce + 0.5 * dt * k1e)
        k3g, k3e = slope(cg + 0.5 * dt * k2g, ce + 0.5 * dt * k2e)
        k4g, k4e = slope(cg + dt * k3g, ce + dt * k3e)
        cg = cg + dt / 6 * (k1g + 2 * k2g + 2 * k3g + k4g)
        ce = ce + dt / 6 * (k1e + 2 * k2e + 2 * k3e + k4e)
    excited = np.abs(ce) ** 2
    return excited, np.abs(cg) ** 2 + excited, np.angle(cg)


@complex_program(lambda rng: (np.add.outer(np.linspace(-1.5, 1.5, 12) * 1j, np.linspace(-2, 1, 15)),))
def mandelbrot_escape_counts(c):
    """Escape counts of the Mandelbrot iteration with masked complex updates
    (`z[alive] = z[alive] ** 2 + c[alive]`), counts added from a boolean mask."""
    z = np.zeros_like(c)
    counts = np.zeros(c.shape, dtype=np.int32)
    for _ in range(12):
        alive = np.abs(z) <= 2.0
        z[alive] = z[alive] ** 2 + c[alive]
        counts += alive
    return counts


# --- linear algebra ---------------------------------------------------------------------------


def _gp_data(rng):
    x = np.sort(uniform(rng, 20, high=5.0, dtype=np.float64))
    y = np.sin(x) + normal(rng, 20, dtype=np.float64, scale=0.1)
    return x, y, np.linspace(0.0, 5.0, 12)


@program(_gp_data)
def gaussian_process_posterior(x, y, x_new):
    def rbf(a, b):
        return np.exp(-0.5 * (a[:, None] - b[None, :]) ** 2 / 0.7**2)
    k = rbf(x, x) + 0.01 * np.eye(len(x))
    chol = np.linalg.cholesky(k)
    alpha = np.linalg.solve(chol.T, np.linalg.solve(chol, y))
    k_star = rbf(x_new, x)
    mean = k_star @ alpha
    v = np.linalg.solve(chol, k_star.T)
    var = 1.0 - np.sum(v**2, axis=0)
    log_likelihood = (-0.5 * y @ alpha - np.sum(np.log(np.diag(chol)))
                      - 0.5 * len(x) * np.log(2 * np.pi))
    return mean, var, log_likelihood


def _polyfit_data(rng):
    t = np.linspace(-1.0, 1.0, 40)
    return t, 0.5 - t + 2.0 * t**3 + normal(rng, 40, dtype=np.float64, scale=0.05)


@program(_polyfit_data)
def least_squares_polynomial_fit(t, y):
    design = np.stack([np.ones_like(t), t, t**2, t**3], axis=1)
    coef, residuals, rank, singular = np.linalg.lstsq(design, y, rcond=None)
    fitted = design @ coef
    r2 = 1.0 - np.sum((y - fitted) ** 2) / np.sum((y - y.mean()) ** 2)
    return coef, residuals, rank, singular, r2


@program(lambda rng: (normal(rng, 50, 3, dtype=np.float64) @ np.array(
    [[2.0, 0.5, 0.1, 0.0, 0.3], [0.0, 1.0, 0.4, 0.2, 0.0], [0.0, 0.0, 0.3, 0.1, 0.2]]),))
def principal_components(samples):
    centered = samples - samples.mean(axis=0)
    cov = np.cov(centered, rowvar=False)
    values, vectors = np.linalg.eigh(cov)     # ascending: the last are the largest
    top = vectors[:, -2:]
    explained = values[::-1] / values.sum()
    # the projection back is the same whichever sign each eigenvector has
    reconstruction = centered @ top @ top.T
    corr = np.corrcoef(samples, rowvar=False)
    return explained, reconstruction, corr


def _logistic_data(rng):
    features = normal(rng, 60, 3, dtype=np.float64)
    labels = (features @ np.array([1.5, -2.0, 0.5]) + normal(rng, 60, dtype=np.float64)) > 0
    return features, labels.astype(np.float64)


@program(_logistic_data)
def logistic_regression_newton(features, labels):
    w = np.zeros(features.shape[1])
    for _ in range(5):
        p = 1.0 / (1.0 + np.exp(-(features @ w)))
        gradient = features.T @ (p - labels) + 0.1 * w
        hessian = (features * (p * (1 - p))[:, None]).T @ features + 0.1 * np.eye(len(w))
        w = w - np.linalg.solve(hessian, gradient)
    sign, logdet = np.linalg.slogdet(hessian)
    return w, sign * logdet, np.linalg.inv(hessian)


@program(lambda rng: (normal(rng, 4, 3, 3, dtype=np.float64),
                      normal(rng, 4, 3, dtype=np.float64)))
def batched_gaussian_log_density(factors, points):
    cov = factors @ np.swapaxes(factors, -1, -2) + 0.5 * np.eye(3)
    _, logdet = np.linalg.slogdet(cov)
    solved = np.linalg.solve(cov, points[..., None])[..., 0]
    mahalanobis = np.sum(points * solved, axis=-1)
    spread = np.linalg.norm(cov, ord=2, axis=(-2, -1)) / np.linalg.norm(cov, "nuc",
                                                                        axis=(-2, -1))
    return -0.5 * (mahalanobis + logdet + 3 * np.log(2 * np.pi)), spread, np.linalg.det(cov)


@program(lambda rng: (uniform(rng, 5, 5, dtype=np.float64) + 0.1,))
def markov_chain_long_run(counts):
    transition = counts / counts.sum(axis=1, keepdims=True)
    start = np.full(transition.shape[0], 1.0 / transition.shape[0])
    after_64 = start @ np.linalg.matrix_power(transition, 64)
    # the stationary distribution: (I - P^T) pi = 0 with sum(pi) = 1, as least squares
    system = np.vstack([np.eye(5) - transition.T, np.ones((1, 5))])
    stationary = np.linalg.lstsq(system, np.r_[np.zeros(5), 1.0], rcond=None)[0]
    return after_64, stationary, np.linalg.cond(np.eye(5) - 0.5 * transition)


def _bodies(rng):
    return (normal(rng, 48, 3, dtype=np.float64), normal(rng, 48, 3, dtype=np.float64, scale=0.1),
            np.empty((48, 3)), uniform(rng, 48, low=0.5, high=1.5, dtype=np.float64))


@program(_bodies)
def leapfrog_into_buffers(pos, vel, acc, mass):
    # a simulation keeping its state in arrays it was handed: acc is filled, never read
    # first; r ** -3 is a constant integer power
    dt = 0.01
    for _ in range(3):
        d = pos[None, :, :] - pos[:, None, :]
        dist = np.sqrt((d ** 2).sum(-1) + 0.05)
        acc[...] = (d * (mass[None, :] * dist ** -3)[:, :, None]).sum(1)
        vel += dt * acc
        pos += dt * vel
    return 0.5 * ((vel ** 2).sum(-1) * mass).sum()


def _link_matrix(rng):
    return ((rng.random((300, 300)) < 0.05).astype(np.float64),)


@program(_link_matrix)
def pagerank_power_method(adj):
    # a web graph's ranks by repeated vector-matrix products (gemv both ways), with the
    # dangling pages' zero out-degree patched through a mask first
    out_degree = adj.sum(axis=1)
    out_degree[out_degree == 0] = 1.0
    transition = adj / out_degree[:, None]
    n = adj.shape[0]
    rank = np.full(n, 1.0 / n)
    for _ in range(30):
        rank = 0.15 / n + 0.85 * (rank @ transition)
    hubs = transition @ rank
    return rank, hubs / hubs.sum()


def _ridge_batches(rng):
    return (normal(rng, 16, 96, 64, dtype=np.float64), normal(rng, 16, 96, dtype=np.float64))


@program(_ridge_batches)
def batched_ridge_regression(X, y):
    # one ridge fit per batch through the normal equations' Cholesky factor, as NumPy-only
    # code writes it (no triangular solve in NumPy): enough work for the LAPACK batch to
    # be shared between threads
    gram = np.swapaxes(X, -1, -2) @ X + 0.5 * np.eye(X.shape[-1])
    rhs = np.swapaxes(X, -1, -2) @ y[..., None]
    low = np.linalg.cholesky(gram)
    coef = np.linalg.solve(np.swapaxes(low, -1, -2), np.linalg.solve(low, rhs))[..., 0]
    residual = y - (X @ coef[..., None])[..., 0]
    return coef, (residual ** 2).mean(-1)


@program(_polyfit_data)
def polynomial_motion_profile(t, y):
    design = np.vander(t, 4)
    coef = np.linalg.lstsq(design, y, rcond=None)[0]
    velocity = np.polyval(np.polyder(coef), t)
    position = np.polyint(coef, k=[0.0])
    travelled = np.polyval(position, t[-1]) - np.polyval(position, t[0])
    normal_eq = np.linalg.multi_dot([design.T, design, coef])    # = design.T @ y at the fit
    return velocity, travelled, normal_eq
