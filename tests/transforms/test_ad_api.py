"""grad, value_and_grad, vjp, jvp, jacfwd, jacrev, hessian on realistic plain-NumPy
functions, composed with each other and with jit, against JAX's own transforms of
the same functions written with jax.numpy."""
import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jitlib
from jitlib.testing import assert_allclose_tree, check_backends

jax.config.update("jax_enable_x64", True)

RTOL = 1e-9   # float64 throughout; reductions may add up in another order than XLA's


def close(actual, expected, rtol=RTOL):
    expected = jax.tree_util.tree_map(np.asarray, expected)
    assert_allclose_tree(actual, expected, rtol=rtol, atol=1e-12)


# -- the functions, each written once for either namespace

def mlp_loss(params, x, y, xp=np):
    h = xp.tanh(x @ params["w1"] + params["b1"])
    pred = h @ params["w2"] + params["b2"]
    return xp.mean((pred - y) ** 2)


def softmax_cross_entropy(w, x, labels, xp=np):
    logits = x @ w
    shifted = logits - xp.max(logits, axis=1, keepdims=True)
    log_probs = shifted - xp.log(xp.sum(xp.exp(shifted), axis=1, keepdims=True))
    return -xp.mean(xp.take_along_axis(log_probs, labels[:, None], axis=1))


def layernorm(x, gain, bias, xp=np):
    mean = xp.mean(x, axis=-1, keepdims=True)
    var = xp.mean((x - mean) ** 2, axis=-1, keepdims=True)
    return (x - mean) / xp.sqrt(var + 1e-5) * gain + bias


def attention(x, wq, wk, wv, xp=np):
    q, k, v = x @ wq, x @ wk, x @ wv
    scores = q @ k.T / xp.sqrt(float(q.shape[-1]))
    scores = scores - xp.max(scores, axis=-1, keepdims=True)
    weights = xp.exp(scores)
    weights = weights / xp.sum(weights, axis=-1, keepdims=True)
    return weights @ v


def with_jnp(fn):
    return functools.partial(fn, xp=jnp)


def rng(seed=0):
    return np.random.default_rng(seed)


@pytest.fixture(scope="module")
def mlp():
    r = rng(1)
    params = {"w1": r.normal(size=(4, 8)) * 0.5, "b1": r.normal(size=8) * 0.1,
              "w2": r.normal(size=(8, 2)) * 0.5, "b2": np.zeros(2)}
    return params, r.normal(size=(6, 4)), r.normal(size=(6, 2))


@pytest.fixture(scope="module")
def classifier():
    r = rng(2)
    return r.normal(size=(5, 3)), r.normal(size=(7, 5)), np.array([0, 2, 1, 1, 0, 2, 2])


@pytest.fixture(scope="module")
def sequence():
    r = rng(3)
    return (r.normal(size=(4, 6)),) + tuple(r.normal(size=(6, 6)) * 0.4 for _ in range(3))


# -- grad and value_and_grad

def test_grad_of_mlp_loss_over_a_dict_of_params(mlp):
    params, x, y = mlp
    close(jitlib.grad(mlp_loss)(params, x, y), jax.jit(jax.grad(with_jnp(mlp_loss)))(params, x, y))


def test_value_and_grad_with_argnums_tuple(classifier):
    w, x, labels = classifier
    value, (gw, gx) = jitlib.value_and_grad(softmax_cross_entropy, argnums=(0, 1))(w, x, labels)
    ref_value, ref = jax.jit(jax.value_and_grad(with_jnp(softmax_cross_entropy),
                                                argnums=(0, 1)))(w, x, labels)
    close((value, gw, gx), (ref_value,) + ref)


def test_grad_with_aux(sequence):
    def loss(x, wq, wk, wv, xp=np):
        out = attention(x, wq, wk, wv, xp)
        return xp.sum(out ** 2), {"out": out}
    g, aux = jitlib.grad(loss, argnums=1, has_aux=True)(*sequence)
    ref_g, ref_aux = jax.jit(jax.grad(with_jnp(loss), argnums=1, has_aux=True))(*sequence)
    close((g, aux), (ref_g, ref_aux))


def test_grad_of_layernorm_with_respect_to_every_argument():
    r = rng(4)
    x, gain, bias = r.normal(size=(3, 5)), r.normal(size=5), r.normal(size=5)

    def loss(x, gain, bias, xp=np):
        return xp.sum(xp.sin(layernorm(x, gain, bias, xp)))
    close(jitlib.grad(loss, argnums=(0, 1, 2))(x, gain, bias),
          jax.jit(jax.grad(with_jnp(loss), argnums=(0, 1, 2)))(x, gain, bias))


@pytest.mark.parametrize("backend", ["interpreter", "jax", "cpu"])
def test_jit_of_value_and_grad_runs_on_every_backend(mlp, backend):
    params, x, y = mlp
    step = jitlib.jit(jitlib.value_and_grad(mlp_loss), backend=backend)
    close(step(params, x, y), jax.jit(jax.value_and_grad(with_jnp(mlp_loss)))(params, x, y))


def test_transformed_programs_agree_across_backends(classifier):
    w, x, labels = classifier
    check_backends(jitlib.grad(softmax_cross_entropy), w, x, labels,
                   backends=("interpreter", "jax", "cpu"), rtol=RTOL)
    hvp = lambda w, v: jitlib.jvp(jitlib.grad(softmax_cross_entropy), (w, x, labels),
                                   (v, np.zeros_like(x), labels))[1]
    check_backends(hvp, w, rng(5).normal(size=w.shape),
                   backends=("interpreter", "jax", "cpu"), rtol=RTOL)


def test_hessian_through_scans_and_products_on_every_backend():
    def f(x, xp=np):
        return xp.sum(xp.tanh(x) ** 2 * xp.cumprod(x)) + xp.max(x) * xp.prod(x)
    x = np.array([0.3, -1.2, 0.8, 2.0])
    expected = check_backends(jitlib.hessian(f), x, backends=("interpreter", "jax", "cpu"),
                              rtol=RTOL)
    close(expected, jax.jit(jax.hessian(with_jnp(f)))(x))


def test_grad_of_jit(mlp):
    params, x, y = mlp
    jitted = jitlib.jit(mlp_loss, backend="interpreter")
    close(jitlib.grad(jitted)(params, x, y), jax.jit(jax.grad(with_jnp(mlp_loss)))(params, x, y))


def test_grad_of_grad_of_a_scalar_function():
    def f(x, xp=np):
        return xp.sin(x) * x ** 3 + xp.exp(-x * x)
    second = jitlib.grad(jitlib.grad(f))
    third = jitlib.jit(jitlib.grad(second), backend="interpreter")
    ref2 = jax.jit(jax.grad(jax.grad(with_jnp(f))))
    ref3 = jax.jit(jax.grad(jax.grad(jax.grad(with_jnp(f)))))
    for x in (-1.3, 0.4, 2.0):
        close(second(x), ref2(x))
        close(third(np.float64(x)), ref3(x))


def test_derivatives_flow_through_values_an_inner_function_captures():
    # the inner grad sees w as a constant; the outer grad differentiates through it
    def outer(w, x, xp=np, grad=jitlib.grad):
        inner = grad(lambda x: xp.sum(xp.sin(w * x) * x))(x)
        return xp.sum(inner * inner)
    w, x = rng(12).normal(size=3), rng(13).normal(size=3)
    ours = jitlib.grad(outer)(w, x)
    ref = jax.jit(jax.grad(lambda w, x: outer(w, x, jnp, jax.grad)))(w, x)
    close(ours, ref)
    close(jitlib.jit(jitlib.grad(outer), backend="cpu")(w, x), ref)


def test_python_scalars_and_keyword_arguments():
    def f(x, scale, *, shift):
        return np.sum(np.tanh(x * scale + shift))
    x = np.linspace(-1, 1, 4)
    g_x, g_scale = jitlib.grad(f, argnums=(0, 1))(x, 2.0, shift=0.5)
    ref = jax.grad(lambda x, s: jnp.sum(jnp.tanh(x * s + 0.5)), argnums=(0, 1))(x, 2.0)
    close((g_x, g_scale), ref)


def test_jvp_and_vjp_with_aux():
    def f(x):
        return np.sin(x), {"count": np.sum(x > 0)}
    x, t = np.linspace(-1, 1, 5), np.ones(5)
    out, tangent, aux = jitlib.jvp(f, (x,), (t,), has_aux=True)
    close((out, tangent), (np.sin(x), np.cos(x)))
    assert int(aux["count"]) == 2
    out, pull, aux = jitlib.vjp(f, x, has_aux=True)
    close(pull(t), (np.cos(x),))
    assert int(aux["count"]) == 2


def test_hessian_vector_product_is_jvp_of_grad(sequence):
    def loss(wq, x, wk, wv, xp=np):
        return xp.sum(attention(x, wq, wk, wv, xp) ** 2)
    x, wq, wk, wv = sequence
    v = rng(6).normal(size=wq.shape)
    hvp = jitlib.jvp(lambda w: jitlib.grad(loss)(w, x, wk, wv), (wq,), (v,))
    ref = jax.jit(lambda w, v: jax.jvp(lambda w: jax.grad(with_jnp(loss))(w, x, wk, wv),
                                       (w,), (v,)))(wq, v)
    close(hvp, ref)


def test_matmul_gradients_are_plain_dots_without_transposes():
    x = rng(11).normal(size=(4, 3))
    ir = jitlib.make_ir(jitlib.grad(lambda w, x: np.sum(np.tanh(x @ w)), argnums=(0, 1)))(
        np.ones((3, 2)), x).as_text()
    assert ir.count("dot_general(") == 3, ir
    assert "transpose" not in ir, ir


def test_gradients_of_empty_products_and_scans():
    x = np.ones((0, 3))
    g = jitlib.grad(lambda x: np.prod(x, axis=0).sum() + np.cumprod(x, axis=0).sum())(x)
    assert g.shape == (0, 3)


# -- vjp and jvp

def test_vjp_of_a_pytree_output(sequence):
    x, wq, wk, wv = sequence

    def f(x, wq, xp=np):
        out = attention(x, wq, wk, wv, xp)
        return {"out": out, "norm": xp.sum(out * out)}
    out, pull = jitlib.vjp(f, x, wq)
    ref_out, ref_pull = jax.vjp(jax.jit(with_jnp(f)), x, wq)
    ct = {"out": rng(7).normal(size=(4, 6)), "norm": np.float64(0.5)}
    close(out, ref_out)
    close(pull(ct), jax.jit(ref_pull)(ct))


def test_jvp_of_layernorm():
    r = rng(8)
    primals = (r.normal(size=(3, 5)), r.normal(size=5), r.normal(size=5))
    tangents = tuple(r.normal(size=p.shape) for p in primals)
    close(jitlib.jvp(layernorm, primals, tangents),
          jax.jit(lambda p, t: jax.jvp(with_jnp(layernorm), p, t))(primals, tangents))


def test_vjp_and_jvp_inside_jit(classifier):
    w, x, labels = classifier

    def both(w, v):
        out, pull = jitlib.vjp(lambda w: softmax_cross_entropy(w, x, labels), w)
        _, tangent = jitlib.jvp(lambda w: softmax_cross_entropy(w, x, labels), (w,), (v,))
        return pull(np.float64(1.0))[0], tangent
    v = rng(9).normal(size=w.shape)
    f = with_jnp(softmax_cross_entropy)
    close(jitlib.jit(both, backend="jax")(w, v),
          (jax.jit(jax.grad(f))(w, x, labels),
           jax.jit(lambda w, v: jax.jvp(lambda w: f(w, x, labels), (w,), (v,))[1])(w, v)))


def test_integer_inputs_get_zero_cotangents_in_vjp(classifier):
    w, x, labels = classifier
    _, pull = jitlib.vjp(softmax_cross_entropy, w, x, labels)
    gw, gx, glabels = pull(np.float64(1.0))
    assert glabels.dtype == labels.dtype and not glabels.any()
    close((gw, gx), jax.jit(jax.grad(with_jnp(softmax_cross_entropy), argnums=(0, 1)))(
        w, x, labels))


# -- Jacobians

@pytest.mark.parametrize("jac", ["jacfwd", "jacrev"])
def test_jacobians_of_layernorm(jac):
    r = rng(10)
    x, gain, bias = r.normal(size=(2, 3)), r.normal(size=3), r.normal(size=3)
    ours = getattr(jitlib, jac)(layernorm, argnums=(0, 1))(x, gain, bias)
    ref = jax.jit(getattr(jax, jac)(with_jnp(layernorm), argnums=(0, 1)))(x, gain, bias)
    close(ours, ref)


def test_jacobian_of_a_pytree_input_and_output():
    def f(p, xp=np):
        return {"a": xp.sin(p["u"]) * p["v"][0], "b": xp.sum(p["u"] ** 2)}
    p = {"u": np.linspace(-1, 1, 3), "v": np.array([2.0, 3.0])}
    close(jitlib.jacrev(f)(p), jax.jit(jax.jacrev(with_jnp(f)))(p))
    close(jitlib.jacfwd(f)(p), jax.jit(jax.jacfwd(with_jnp(f)))(p))


@pytest.mark.parametrize("jac", ["jacfwd", "jacrev"])
def test_jacobian_programs_do_not_grow_with_the_size(jac):
    # one vmapped jvp/vjp, not one per basis vector
    def f(x):
        return np.tanh(x) * np.sum(x * x)

    def size_of_ir(n):
        return len(jitlib.make_ir(getattr(jitlib, jac)(f))(np.ones(n)).instructions)
    assert size_of_ir(4) == size_of_ir(40)


def test_jacobians_of_empty_arrays():
    f = lambda x: np.sin(x) * 2.0
    for jac in (jitlib.jacfwd, jitlib.jacrev):
        assert jac(f)(np.ones((0, 2))).shape == (0, 2, 0, 2)
    assert jitlib.jacfwd(lambda x: np.ones(3) * np.sum(x))(np.ones(0)).shape == (3, 0)


def test_hessian_of_the_mlp_loss_in_the_last_layer(mlp):
    params, x, y = mlp

    w2 = params["w2"][:3]          # a 3x2 block keeps the Hessian small
    p = dict(params, w1=params["w1"][:, :3], b1=params["b1"][:3])

    def small(w2, xp=np):
        return mlp_loss(dict(p, w2=w2), x, y, xp)
    ref = jax.jit(jax.hessian(with_jnp(small)))(w2)
    close(jitlib.hessian(small)(w2), ref)
    close(jitlib.jit(jitlib.hessian(small), backend="jax")(w2), ref)


# -- errors a user can hit

def test_grad_of_a_non_scalar_output_is_a_clear_error():
    def f(x):
        return np.sin(x)
    with pytest.raises(jitlib.JitlibTypeError, match=r"scalar-output.*shape \(3,\)") as info:
        jitlib.grad(f)(np.ones(3))
    assert info.value.location.function.startswith("test_grad_of_a_non_scalar")


def test_grad_with_respect_to_an_integer_input_is_a_type_error():
    with pytest.raises(jitlib.JitlibTypeError, match="floating-point or complex inputs.*int64"):
        jitlib.grad(lambda x: (x * x).sum())(np.arange(3))


def test_bad_argnums_and_aux_are_reported():
    with pytest.raises(jitlib.JitlibTypeError, match="argnums"):
        jitlib.grad(lambda x: x.sum(), argnums=2)(np.ones(2))
    with pytest.raises(jitlib.JitlibTypeError, match="has_aux=True"):
        jitlib.grad(lambda x: x.sum(), has_aux=True)(np.ones(2))
    with pytest.raises(jitlib.JitlibTypeError, match="tangents"):
        jitlib.jvp(np.sin, (np.ones(2),), (np.ones(2), np.ones(2)))
