"""Transformed programs on the Triton backend: grad, value_and_grad, jvp, vmap and their
compositions give the interpreter's answer. On a CUDA GPU (`pytest -m gpu`) at realistic
sizes; without one, the same programs at small sizes on Triton's interpreter, so CI
still runs the generated kernels of every transformed program."""
import numpy as np
import pytest

import jitlib
from jitlib import backends
from jitlib.backends.triton import TritonBackend
from jitlib.testing import assert_allclose_tree
from test_ad_api import attention, layernorm, mlp_loss, softmax_cross_entropy
from triton_marks import require_triton

require_triton()


def _inputs(n, d, h, seed=0):
    r = np.random.default_rng(seed)
    params = {"w1": r.standard_normal((d, h)) * 0.3, "b1": r.standard_normal(h) * 0.1,
              "w2": r.standard_normal((h, 1)) * 0.3, "b2": np.zeros(1)}
    params = {k: v.astype(np.float32) for k, v in params.items()}
    x = r.standard_normal((n, d)).astype(np.float32)
    y = r.standard_normal((n, 1)).astype(np.float32)
    labels = r.integers(0, h, n)
    return params, x, y, labels


def _programs(n, d, h):
    params, x, y, labels = _inputs(n, d, h)
    w = params["w1"]
    ln_g, ln_b = np.ones(d, np.float32), np.zeros(d, np.float32)
    # scaled so that attention scores are O(1): with saturated softmax rows the gradient
    # cancels, and float32 summation order alone moves it by 1% (seen on the H200)
    wq, wk, wv = (np.random.default_rng(k).standard_normal((d, d)).astype(np.float32)
                  / np.float32(d) for k in (1, 2, 3))

    def per_example(p, xi, yi):
        return mlp_loss(p, xi[None], yi[None])

    return {
        "value_and_grad(mlp_loss)": (jitlib.value_and_grad(mlp_loss), (params, x, y)),
        "grad(softmax_cross_entropy)": (jitlib.grad(softmax_cross_entropy), (w, x, labels)),
        "grad(sum(layernorm))": (jitlib.grad(lambda x: layernorm(x, ln_g, ln_b).sum()), (x,)),
        "grad(sum(attention))": (jitlib.grad(lambda wq: attention(x, wq, wk, wv).sum()),
                                 (wq,)),
        "vmap(grad(mlp_loss))": (jitlib.vmap(jitlib.grad(per_example), in_axes=(None, 0, 0)),
                                 (params, x, y)),
        "jvp(grad) (HVP)": (lambda w, t: jitlib.jvp(
            jitlib.grad(lambda w: softmax_cross_entropy(w, x, labels)), (w,), (t,))[1],
            (w, np.ones_like(w))),
    }


def _check(device, sizes, monkeypatch, rtol, atol=1e-5):
    monkeypatch.setitem(backends._instances, "gpu", TritonBackend(device))
    for name, (fn, args) in _programs(*sizes).items():
        got = jitlib.jit(fn, backend="gpu")(*args)
        got = jitlib.tree.tree_map(np.asarray, got)
        want = jitlib.jit(fn, backend="interpreter")(*args)
        assert_allclose_tree(got, want, rtol=rtol, atol=atol, err_msg=f"{name} on {device}")


def test_transformed_programs_on_tritons_interpreter(monkeypatch):
    from jitlib.backends.triton.host import HostDevice
    _check(HostDevice(), (6, 4, 5), monkeypatch, rtol=2e-5)


@pytest.mark.gpu
@pytest.mark.skipif(not backends._cuda_gpu_visible(), reason="needs a CUDA GPU")
def test_transformed_programs_on_the_gpu(monkeypatch):
    from jitlib.backends.triton import default_device
    # float32 sums of 256-512 terms in another order: within 1e-3 of the float64 answer
    _check(default_device(), (512, 256, 128), monkeypatch, rtol=2e-3, atol=1e-4)
