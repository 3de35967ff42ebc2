"""jitlib in one page: jit plain NumPy, look at the IR, check against NumPy.

    python examples/quickstart.py
"""
import numpy as np

import jitlib
import jitlib.numpy as jnp


@jitlib.jit(backend="interpreter")
def layernorm(x, g, b):
    mu = x.mean(axis=-1, keepdims=True)
    var = np.var(x, axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-5) * g + b


@jitlib.jit(static_argnums=1)
def running_max(x, window):
    # in-place NumPy idioms keep their meaning inside jit
    out = np.zeros_like(x)
    for i in range(window, x.shape[0] + 1):
        out[i - 1] = x[i - window:i].max()
    return out


def main():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 8), dtype=np.float32)
    g, b = np.ones(8, np.float32), np.zeros(8, np.float32)

    y = layernorm(x, g, b)
    np.testing.assert_allclose(y, layernorm.fn(x, g, b), rtol=1e-5, atol=1e-6)
    print("layernorm matches NumPy, dtype", y.dtype)
    print(layernorm.lower(x, g, b).as_text())

    print("running_max:", running_max(np.arange(6.0), 3))
    # a functional update, as in JAX
    print("at[].add:", jitlib.jit(lambda v: v.at[jnp.array([0, 0, 2])].add(1.0))(np.zeros(3)))
    print("cache:", layernorm.cache_info())


if __name__ == "__main__":
    main()
