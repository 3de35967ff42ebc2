"""jit's matmul_precision and the "matmul_precision" setting: how coarsely products may
round, as JAX names it. The choice is recorded on each dot_general (its IR text shows
it), keys the compile cache, survives the transforms, and reaches the backends: jax's
lax.Precision, Triton's input_precision (tests/backends/triton/test_triton_f32_dots.py).
The interpreter and the cpu backend keep NumPy's products whatever is asked."""
import ml_dtypes
import numpy as np
import pytest

import jitlib
from jitlib import config
from jitlib.hlo.ops import Op
from jitlib.hlo.parser import ParseError, parse_module
from jitlib.hlo.printer import print_module
from jitlib.hlo.verifier import verify

rng = np.random.default_rng(0)
X = rng.standard_normal((6, 8)).astype(np.float32)
W = rng.standard_normal((8, 5)).astype(np.float32)


def layer(x, w):
    return np.tanh(x @ w)


def dots(module):
    """Every dot_general of `module`, in kernels and regions too."""
    found = []
    for instr in module.instructions:
        if instr.op is Op.DOT_GENERAL:
            found.append(instr)
        for key in ("body", "cond"):
            if key in instr.attrs:
                found += dots(instr.attrs[key])
    return found


@pytest.fixture
def setting():
    yield
    config.update("matmul_precision", "highest")


@pytest.mark.parametrize("precision", ["high", "default"])
def test_the_option_is_on_every_product_and_in_the_text(precision):
    module = jitlib.make_ir(jitlib.jit(layer, matmul_precision=precision))(X, W)
    assert [d.attrs.get("precision") for d in dots(module)] == [precision]
    text = print_module(module)
    assert f"precision={precision}" in text
    again = parse_module(text)
    verify(again)
    assert print_module(again) == text


def test_highest_is_numpys_and_writes_nothing():
    module = jitlib.make_ir(layer)(X, W)
    assert [d.attrs.get("precision") for d in dots(module)] == [None]
    assert "precision=" not in print_module(module)


def test_the_parser_takes_only_known_precisions():
    module = jitlib.make_ir(jitlib.jit(layer, matmul_precision="high"))(X, W)
    text = print_module(module).replace("precision=high", "precision=tf32")
    with pytest.raises(ParseError, match="precision='tf32' should be one of high, default"):
        parse_module(text)


def test_an_unknown_name_is_refused_where_it_is_given():
    with pytest.raises(ValueError, match="matmul_precision='fast'"):
        jitlib.jit(layer, matmul_precision="fast")
    with pytest.raises(ValueError, match="highest or high or default"):
        config.update("matmul_precision", "fast")


def test_the_setting_keys_the_compile_cache(setting):
    f = jitlib.jit(layer, backend="interpreter")
    f(X, W)
    config.update("matmul_precision", "default")
    assert config.get("matmul_precision") == "default"
    f(X, W)
    assert f.cache_info().misses == 2
    assert "precision=default" in f.lower(X, W).as_text()
    config.update("matmul_precision", "highest")
    f(X, W)
    assert f.cache_info().misses == 2   # the first entry again
    # a jit option wins over the setting
    g = jitlib.jit(layer, matmul_precision="high", backend="interpreter")
    config.update("matmul_precision", "default")
    assert "precision=high" in g.lower(X, W).as_text()


@pytest.mark.parametrize("backend", ["interpreter", "cpu", "jax"])
@pytest.mark.parametrize("precision", ["highest", "high", "default"])
def test_f32_values_on_backends_without_tf32(backend, precision):
    # none of these runs TF32 products (jax on the CPU neither): NumPy's answer each time
    got = jitlib.jit(layer, backend=backend, matmul_precision=precision)(X, W)
    np.testing.assert_allclose(got, layer(X, W), rtol=2e-6, atol=2e-6)
    assert got.dtype == np.float32


@pytest.mark.parametrize("backend", ["interpreter", "cpu", "jax"])
def test_bf16_products_keep_their_type_under_default(backend):
    x, w = X.astype(ml_dtypes.bfloat16), W.astype(ml_dtypes.bfloat16)
    numpy_like = jitlib.jit(lambda x, w: x @ w, backend=backend)(x, w)
    assert numpy_like.dtype == np.float32 == (x @ w).dtype   # NumPy's promotion
    fast = jitlib.jit(lambda x, w: x @ w, backend=backend, matmul_precision="default")(x, w)
    assert fast.dtype == ml_dtypes.bfloat16
    # summed in f32, rounded once to bf16: jax's bf16 x bf16 -> bf16
    np.testing.assert_array_equal(fast, numpy_like.astype(ml_dtypes.bfloat16))
    # an explicit dtype= is the user's: kept
    given = jitlib.jit(lambda x, w: np.matmul(x, w, dtype=np.float32), backend=backend,
                       matmul_precision="default")(x, w)
    assert given.dtype == np.float32


def test_transforms_keep_the_precision():
    loss = lambda x, w: layer(x, w).sum()
    grad = jitlib.jit(jitlib.grad(loss, argnums=(0, 1)), matmul_precision="default")
    module = jitlib.make_ir(grad)(X, W)
    assert len(dots(module)) >= 3
    assert {d.attrs.get("precision") for d in dots(module)} == {"default"}
    batched = jitlib.jit(jitlib.vmap(layer, in_axes=(0, None)), matmul_precision="high")
    module = jitlib.make_ir(batched)(np.stack([X, X]), W)
    assert {d.attrs.get("precision") for d in dots(module)} == {"high"}
