"""jvp, grad and vmap of programs with fori_loop, scan, while_loop, cond and switch,
against jax's own transforms of the same programs written with jax.lax.

Each program is written once over a control-flow namespace `L` (jitlib.numpy or
jax.lax) and a math namespace `m` (numpy or jax.numpy). jitlib's transforms run eagerly
(the interpreter) and under jit on the interpreter, cpu and jax backends.
"""
import functools

import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import jitlib
import jitlib.numpy as jnp
from jitlib import errors
from jitlib.hlo.ops import Op

jax.config.update("jax_enable_x64", True)   # float64 on both sides
BACKENDS = ["interpreter", "cpu", "jax"]
RTOL = 1e-9


def normal(*shape, seed=0):
    return np.random.default_rng(seed).normal(size=shape)


# -- programs: (x, w) -> array, x of shape (3,), w of shape (3,)

def fori(x, w, L=jnp, m=np):
    return L.fori_loop(0, 5, lambda i, v: m.sin(v * w) + 0.1 * i * v, x)


def scan_rnn(x, w, L=jnp, m=np, reverse=False):
    xs = m.stack([x, x * w, m.cos(x)])
    h, ys = L.scan(lambda h, xt: (m.tanh(h * w + xt), h * h), x * 0.5, xs, reverse=reverse)
    return h + ys.sum(0)


scan_reverse = functools.partial(scan_rnn, reverse=True)
scan_reverse.__name__ = "scan_reverse"


def scan_pytree(x, w, L=jnp, m=np):
    # xs a dict, the carry a tuple, ys a tuple
    xs = {"a": m.stack([x, w]), "b": m.stack([w, x * x])}

    def step(carry, xt):
        h, s = carry
        h = m.sin(h * xt["a"]) + xt["b"]
        return (h, s + h.sum()), (h, s * 2.0)
    (h, s), (hs, ss) = L.scan(step, (x, 0.0 * x.sum()), xs)
    return h * s + hs.sum(0) + ss.sum()


def while_converge(x, w, L=jnp, m=np):
    # the trip count depends on the data
    def cond(state):
        v, k = state
        return (m.abs(v).sum() < 30.0) & (k < 50)

    def body(state):
        v, k = state
        return v * 1.3 + w, k + 1
    return L.while_loop(cond, body, (x, 0))[0]


def cond_sign(x, w, L=jnp, m=np):
    return L.cond(x.sum() > 0, lambda a, b: m.exp(a) * b, lambda a, b: a * a - b, x, w)


def switch_three(x, w, L=jnp, m=np):
    k = (m.abs(x[0]) * 3).astype(np.int64)   # clamped: any index picks a branch
    return L.switch(k, [lambda a, b: a * b, lambda a, b: m.sin(a) + b,
                        lambda a, b: a / (1.0 + b * b)], x, w)


def loop_of_cond(x, w, L=jnp, m=np):
    def body(i, v):
        return L.cond(i % 2 == 0, lambda u: u * w, lambda u: m.sin(u), v)
    return L.fori_loop(0, 4, body, x)


PROGRAMS = [fori, scan_rnn, scan_reverse, scan_pytree, while_converge, cond_sign,
            switch_three, loop_of_cond]
# reverse mode needs a known trip count, as in JAX
REVERSIBLE = [p for p in PROGRAMS if p is not while_converge]


def jax_version(program):
    return functools.partial(program, L=jax.lax, m=jjnp)


def inputs(seed=0):
    # positive x: cond_sign takes its true branch; a second seed takes the false one
    x, w = np.abs(normal(3, seed=seed)) + 0.1, normal(3, seed=seed + 10) * 0.5
    return (x, w) if seed % 2 == 0 else (-x, w)


def close(got, want):
    for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=RTOL, atol=1e-12)


def ids(programs):
    return [p.__name__ for p in programs]


# -- jvp

@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("program", PROGRAMS, ids=ids(PROGRAMS))
def test_jvp_matches_jax(program, seed):
    primals = inputs(seed)
    tangents = (normal(3, seed=5), normal(3, seed=6))
    want = jax.jvp(jax_version(program), primals, tangents)
    close(jitlib.jvp(program, primals, tangents), want)
    for backend in BACKENDS:
        jitted = jitlib.jit(lambda p, t: jitlib.jvp(program, p, t), backend=backend)
        close(jitted(primals, tangents), want)


# -- grad

def loss(program):
    def f(x, w, **kw):
        return (program(x, w, **kw) ** 2).sum()
    return f


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("program", REVERSIBLE, ids=ids(REVERSIBLE))
def test_grad_matches_jax(program, seed):
    x, w = inputs(seed)
    want = jax.grad(loss(jax_version(program)), argnums=(0, 1))(x, w)
    assert np.abs(np.asarray(want[1])).max() > 0   # w matters: the check can fail
    close(jitlib.grad(loss(program), argnums=(0, 1))(x, w), want)
    for backend in BACKENDS:
        close(jitlib.jit(jitlib.grad(loss(program), argnums=(0, 1)), backend=backend)(x, w),
              want)


@pytest.mark.parametrize("program", [fori, scan_rnn, cond_sign], ids=ids([fori, scan_rnn,
                                                                          cond_sign]))
def test_vjp_of_a_vector_output(program):
    x, w = inputs()
    ct = normal(3, seed=7)
    _, pull = jax.vjp(jax_version(program), x, w)
    out, jl_pull = jitlib.vjp(program, x, w)
    close(out, program(x, w))
    close(jl_pull(ct), pull(ct))


def test_grad_of_grad_through_a_counted_loop():
    x, w = inputs()

    def f(x, L=jnp, m=np):
        return (fori(x, w, L, m) ** 2).sum()
    second = jax.grad(lambda x: jax.grad(functools.partial(f, L=jax.lax, m=jjnp))(x).sum())
    close(jitlib.grad(lambda x: jitlib.grad(f)(x).sum())(x), second(x))


def test_grad_of_while_loop_is_an_error_at_the_users_line():
    x, w = inputs()
    with pytest.raises(errors.UnsupportedError, match="does not work for a while_loop") \
            as info:
        jitlib.grad(loss(while_converge))(x, w)
    message = str(info.value)
    assert "test_control_flow_transforms.py" in message and "fori_loop" in message
    assert "scan" in message
    # fori_loop with traced bounds has no trip count either
    with pytest.raises(errors.UnsupportedError, match="while_loop"):
        jitlib.jit(jitlib.grad(lambda x, n: jnp.fori_loop(0, n, lambda i, v: v * v, x).sum()),
                   backend="interpreter")(x, np.int64(3))


def test_grad_saves_only_what_the_backward_loop_reads():
    # scan's xs and ys buffers are not stacked per trip: the saving loop's stacks hold
    # the counter and the hidden state only (trips x carry), never trips x xs
    x, w = inputs()
    module = jitlib.make_ir(jitlib.grad(loss(scan_rnn)))(x, w)
    loops = [i for i in module.instructions if i.op is Op.WHILE]
    assert len(loops) == 3   # the forward scan, the saving loop, the backward loop
    stacked = [o.shape for loop in loops for o in loop.operands if len(o.shape) == 2]
    assert (3, 3) in stacked and all(s[0] == 3 for s in stacked)
    assert not any(len(o.shape) == 3 for loop in loops for o in loop.operands)


# -- vmap

@pytest.mark.parametrize("in_axes", [(0, None), (None, 0), (0, 0)])
@pytest.mark.parametrize("program", PROGRAMS, ids=ids(PROGRAMS))
def test_vmap_matches_jax(program, in_axes):
    x, w = inputs()
    xs = np.stack([inputs(s)[0] for s in range(4)])   # some examples take other branches
    ws = np.stack([inputs(s)[1] for s in range(4)])
    args = tuple(b if a == 0 else u for a, b, u in zip(in_axes, (xs, ws), (x, w)))
    want = jax.vmap(jax_version(program), in_axes=in_axes)(*args)
    close(jitlib.vmap(program, in_axes=in_axes)(*args), want)
    for backend in BACKENDS:
        close(jitlib.jit(jitlib.vmap(program, in_axes=in_axes), backend=backend)(*args), want)


@pytest.mark.parametrize("program", REVERSIBLE, ids=ids(REVERSIBLE))
def test_vmap_of_grad_matches_jax(program):
    xs = np.stack([inputs(s)[0] for s in range(4)])
    w = inputs()[1]
    want = jax.vmap(jax.grad(loss(jax_version(program)), argnums=(0, 1)), in_axes=(0, None))(
        xs, w)
    per_example = jitlib.vmap(jitlib.grad(loss(program), argnums=(0, 1)), in_axes=(0, None))
    close(per_example(xs, w), want)
    for backend in BACKENDS:
        close(jitlib.jit(per_example, backend=backend)(xs, w), want)


def test_grad_of_vmap_matches_jax():
    xs = np.stack([inputs(s)[0] for s in range(4)])
    w = inputs()[1]

    def total(xs, w, L=jnp, m=np):
        vm = jax.vmap if L is jax.lax else jitlib.vmap
        return vm(lambda x: loss(loop_of_cond)(x, w, L=L, m=m))(xs).sum()
    want = jax.grad(functools.partial(total, L=jax.lax, m=jjnp), argnums=(0, 1))(xs, w)
    close(jitlib.grad(total, argnums=(0, 1))(xs, w), want)


def test_vmap_keeps_a_shared_predicate_a_conditional():
    # an unbatched predicate stays a conditional; a batched one becomes a select
    x, w = inputs()
    ws = np.stack([w, w * 2])
    shared = jitlib.make_ir(jitlib.vmap(cond_sign, in_axes=(None, 0)))(x, ws)
    per_example = jitlib.make_ir(jitlib.vmap(cond_sign, in_axes=(0, None)))(np.stack([x, -x]), w)
    assert any(i.op is Op.CONDITIONAL for i in shared.instructions)
    assert not any(i.op is Op.CONDITIONAL for i in per_example.instructions)
    assert any(i.op is Op.SELECT for i in per_example.instructions)


def test_vmap_of_a_while_loop_runs_each_example_its_own_trips():
    starts = np.array([[0.1, 0.1, 0.1], [5.0, 5.0, 5.0]])
    w = np.zeros(3)

    def trips(x, w, L=jnp, m=np):
        def body(state):
            v, k = state
            return v * 1.3 + w, k + 1
        return L.while_loop(lambda s: m.abs(s[0]).sum() < 30.0, body, (x, 0))[1]
    got = jitlib.vmap(trips, in_axes=(0, None))(starts, w)
    assert got[0] > got[1]   # the small start needs more trips
    np.testing.assert_array_equal(got, [trips(s, w) for s in starts])
