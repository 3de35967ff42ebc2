"""Control flow as IR (issue 22 part 2): fori_loop, while_loop, scan, cond and switch with
JAX's signatures, as `while` and `conditional` ops with regions, on every backend.

Each program runs eagerly (the same functions run plain Python loops outside a trace)
and jitted on every backend (jitlib.testing.check_backends), and where JAX has the same
primitive, against jax.lax too.
"""
import numpy as np
import pytest

import jitlib
import jitlib.numpy as jnp
from jitlib import errors
from jitlib.hlo.ops import Op
from jitlib.hlo.parser import parse_module
from jitlib.hlo.printer import print_module
from jitlib.hlo.verifier import verify
from jitlib.testing import check_backends

BACKENDS = ("interpreter", "cpu", "jax")


def rng():
    return np.random.default_rng(22)


# -- programs

def jacobi(A, B, steps):
    def sweep(i, grids):
        A, B = grids
        B = B.copy()
        B[1:-1, 1:-1] = 0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:]
                              + A[2:, 1:-1] + A[:-2, 1:-1])
        A = A.copy()
        A[1:-1, 1:-1] = 0.2 * (B[1:-1, 1:-1] + B[1:-1, :-2] + B[1:-1, 2:]
                              + B[2:, 1:-1] + B[:-2, 1:-1])
        return A, B
    return jnp.fori_loop(0, steps, sweep, (A, B))


def newton_sqrt(a):
    # a while loop whose trip count depends on the data
    def not_done(state):
        x, k = state
        return (np.abs(x * x - a).max() > 1e-12) & (k < 100)

    def step(state):
        x, k = state
        return 0.5 * (x + a / x), k + 1
    return jnp.while_loop(not_done, step, (np.ones_like(a), 0))


def rnn(h0, xs, W, U):
    def cell(h, x):
        h = np.tanh(h @ W + x @ U)
        return h, h.sum()
    return jnp.scan(cell, h0, xs)


def rnn_reverse(h0, xs, W):
    return jnp.scan(lambda h, x: (np.tanh(h @ W + x), h * 2.0), h0, xs, reverse=True)


def cumulative_by_scan(xs):
    return jnp.scan(lambda c, x: (c + x, c), np.zeros(xs.shape[1:], xs.dtype), xs)


def piecewise(x):
    return jnp.cond(x.sum() > 0, lambda v: np.exp(v) - 1.0, lambda v: v * v, x)


def pick(k, x):
    return jnp.switch(k, [lambda v: v + 1.0, lambda v: np.sin(v), lambda v: v[::-1]], x)


def loop_with_cond(x, n):
    def body(i, v):
        return jnp.cond(i % 2 == 0, lambda u: u * 1.5, lambda u: u - 0.25, v)
    return jnp.fori_loop(0, n, body, x)


def nested_loops(x):
    def outer(i, v):
        return jnp.fori_loop(0, 3, lambda j, u: u + (i * j) * 0.01, v) * 0.9
    return jnp.fori_loop(0, 4, outer, x)


def closure_and_counter(x, w):
    scale = w * 2.0            # read from the body: computed once, outside the loop

    def body(i, v):
        return v * scale + i
    return jnp.fori_loop(1, 6, body, x)


def traced_bounds(x, n):
    return jnp.fori_loop(0, n, lambda i, v: v + i, x)


def float_accumulator(xs):
    # a Python float in the carry: weakly typed, it becomes the body's float32
    return jnp.fori_loop(0, xs.shape[0], lambda i, t: t + xs[i].sum(), 0.0)


def dict_carry(x):
    def body(i, s):
        return {"x": s["x"] * 0.5, "total": s["total"] + s["x"].sum()}
    return jnp.fori_loop(0, 5, body, {"x": x, "total": np.float64(0.0)})


def writes_result_into_argument(A, steps):
    A[...] = jnp.fori_loop(0, steps, lambda i, a: a * 0.5 + 1.0, A)


def reshaped_value_read_by_a_loop_and_a_kernel(a):
    # the reshape was once copied into both kernels that read it, leaving the loop,
    # which reads it from memory, with no kernel writing it ("fusion formed a cycle")
    v = a.reshape(1, 9)
    return v.sum(), jnp.fori_loop(0, 2, lambda i, c: -v, v)


def entries_set_in_a_loop(A):
    # R[i, i] = ... flattens R for its scatter and reshapes it back: the loop carries R
    # flat instead; the body and the condition read it through reshapes only
    n = A.shape[0]

    def body(R):
        R = R.copy()
        i = (R.reshape(-1)[0] * 7).astype(np.int64) % n
        R[i, i] += A[i] @ A[i] + 1.0
        return R
    return jnp.while_loop(lambda R: R.reshape(-1).sum() < 6, body, np.zeros((n, n)))


def decay_steps(u, nu, steps):
    # the decay factor is the same every step: computed once before the loop
    k = np.arange(u.shape[0]) * 0.5
    return jnp.fori_loop(0, steps, lambda i, u: u * np.exp(-nu * k**2) + 0.1, u)


def relax_until_small(A, x):
    # a data-dependent trip count: the sum of the carried, unchanged A moves out of the
    # loop, its factorization stays (a loop that runs no trips must not factor A)
    def body(s):
        x, r, A = s
        x = x - np.linalg.solve(A, x) * A.sum() / 20   # shrinks x by about 0.8 a trip
        return x, np.abs(x).max(), A
    return jnp.while_loop(lambda s: s[1] > 0.5, body, (x, np.abs(x).max(), A))[:2]


CASES = [
    (jacobi, lambda r: (r.random((12, 12)), r.random((12, 12)), 7), (2,)),
    (newton_sqrt, lambda r: (r.random(6) + 0.5,), ()),
    (rnn, lambda r: (np.zeros(4), r.random((6, 3)), r.random((4, 4)) * 0.5,
                     r.random((3, 4))), ()),
    (rnn_reverse, lambda r: (np.zeros(3), r.random((5, 3)), r.random((3, 3))), ()),
    (cumulative_by_scan, lambda r: (r.random((7, 2)).astype(np.float32),), ()),
    (piecewise, lambda r: (r.random(5) - 0.2,), ()),
    (piecewise, lambda r: (-r.random(5),), ()),
    (pick, lambda r: (0, r.random(4)), ()),
    (pick, lambda r: (1, r.random(4)), ()),
    (pick, lambda r: (7, r.random(4)), ()),
    (pick, lambda r: (-3, r.random(4)), ()),
    (loop_with_cond, lambda r: (r.random(3), 5), (1,)),
    (nested_loops, lambda r: (r.random(3),), ()),
    (closure_and_counter, lambda r: (r.random(3), r.random(3)), ()),
    (traced_bounds, lambda r: (r.random(3), np.int64(4)), ()),
    (float_accumulator, lambda r: (r.random((5, 3)).astype(np.float32),), ()),
    (dict_carry, lambda r: (r.random(3),), ()),
    (writes_result_into_argument, lambda r: (r.random((3, 2)), 4), (1,)),
    (reshaped_value_read_by_a_loop_and_a_kernel, lambda r: (r.random((3, 3)),), ()),
    (entries_set_in_a_loop, lambda r: (r.random((4, 3)),), ()),
    (decay_steps, lambda r: (r.random(6), 0.3, 5), (2,)),
    (decay_steps, lambda r: (r.random(6), 0.3, np.int64(0)), ()),
    (relax_until_small, lambda r: (r.random((3, 3)) + 3 * np.eye(3), r.random(3) + 2), ()),
    (relax_until_small, lambda r: (r.random((3, 3)) + 3 * np.eye(3), r.random(3) * 0.1), ()),
]


@pytest.mark.parametrize("fn, make, static", CASES,
                         ids=[f"{c[0].__name__}-{i}" for i, c in enumerate(CASES)])
def test_matches_eager(fn, make, static):
    check_backends(fn, *make(rng()), backends=BACKENDS, static_argnums=static)


@pytest.mark.gpu
@pytest.mark.parametrize("fn, make, static", CASES,
                         ids=[f"{c[0].__name__}-{i}" for i, c in enumerate(CASES)])
def test_gpu_matches_eager(fn, make, static):
    from cuda_marks import no_gpu_reason
    reason = no_gpu_reason()
    if reason:
        pytest.skip(reason)
    check_backends(fn, *make(rng()), backends=("gpu",), static_argnums=static)


def test_matches_jax_lax():
    lax = pytest.importorskip("jax").lax
    import jax.numpy as jnp_

    r = rng()
    h0, xs, W, U = np.zeros(4), r.random((6, 3)), r.random((4, 4)) * 0.5, r.random((3, 4))
    want = lax.scan(lambda h, x: (jnp_.tanh(h @ W + x @ U),) * 2, h0, xs)
    got = jitlib.jit(lambda h0, xs: jnp.scan(lambda h, x: (np.tanh(h @ W + x @ U),) * 2,
                                             h0, xs))(h0, xs)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, np.asarray(w), rtol=1e-6)
    a = r.random(5) + 0.5
    want = lax.while_loop(lambda s: s[1] < 20, lambda s: (0.5 * (s[0] + a / s[0]), s[1] + 1),
                          (jnp_.ones(5), 0))[0]
    got = jitlib.jit(lambda a: jnp.while_loop(lambda s: s[1] < 20,
                                              lambda s: (0.5 * (s[0] + a / s[0]), s[1] + 1),
                                              (np.ones(5), 0))[0])(a)
    np.testing.assert_allclose(got, np.asarray(want), rtol=1e-6)


# -- the IR

def test_loop_is_one_while_with_its_trip_count():
    A, B = rng().random((8, 8)), rng().random((8, 8))
    module = jitlib.jit(jacobi, static_argnums=2).lower(A, B, 1000).module
    loops = [i for i in module.instructions if i.op is Op.WHILE]
    assert len(loops) == 1 and loops[0].attrs["trip_count"] == 1000
    assert len(module.instructions) < 12   # one body, not a thousand
    text = print_module(module)
    assert parse_module(text) == module
    verify(module)


def test_regions_print_parse_and_optimize():
    x = rng().random(3)
    lowered = jitlib.jit(loop_with_cond, static_argnums=1).lower(x, 5)
    text = lowered.as_text()
    assert "while(" in text and "conditional(" in text and "trip_count=5" in text
    optimized = lowered.as_text("optimized")
    assert "fusion(" in optimized   # the regions' bodies became kernels too
    assert parse_module(text) == lowered.module


def test_one_trip_and_constant_branch_are_inlined():
    from jitlib.fusion.pipeline import optimize

    def f(x):
        y = jnp.fori_loop(0, 1, lambda i, v: v * 3.0, x)
        return jnp.cond(True, lambda v: v + 1.0, lambda v: v, y)   # concrete: one branch
    module = optimize(jitlib.jit(f).lower(np.ones(3)).module)
    assert not any(i.op in (Op.WHILE, Op.CONDITIONAL) for i in module.instructions)
    np.testing.assert_allclose(jitlib.jit(f)(np.ones(3)), 4.0)


def test_a_carry_read_and_set_through_reshapes_is_carried_in_their_shape():
    from jitlib.fusion.pipeline import optimize
    module = optimize(jitlib.jit(entries_set_in_a_loop).lower(rng().random((4, 3))).module)
    (loop,) = [i for i in module.instructions if i.op is Op.WHILE]
    shapes = [p.shape for p in loop.attrs["body"].params]
    assert (16,) in shapes and (4, 4) not in shapes, print_module(module)
    assert (16,) in [p.shape for p in loop.attrs["cond"].params]
    # a carry read as it is keeps its shape
    module = optimize(jitlib.jit(dict_carry).lower(rng().random(3)).module)
    (loop,) = [i for i in module.instructions if i.op is Op.WHILE]
    assert (3,) in [p.shape for p in loop.attrs["body"].params]


def test_costly_values_no_trip_changes_are_computed_before_the_loop():
    from jitlib.fusion.pipeline import run_pipeline

    def body_ops(fn, *args, static=()):
        module = run_pipeline(jitlib.jit(fn, static_argnums=static).lower(*args).module)
        (loop,) = [i for i in module.instructions if i.op is Op.WHILE]
        return {i.op for i in loop.attrs["body"].instructions}, module
    ops, module = body_ops(decay_steps, np.ones(6), 0.3, 5, static=(2,))
    assert Op.EXP not in ops, print_module(module)
    assert Op.EXP in {i.op for i in module.instructions}
    ops, module = body_ops(relax_until_small, np.eye(3) * 4, np.ones(3))
    assert Op.REDUCE_SUM not in ops and Op.LU in ops, print_module(module)


# -- errors at the user's line

def test_carry_that_changes_type_is_an_error():
    def f(x):
        return jnp.fori_loop(0, 3, lambda i, v: v.sum(), x)
    with pytest.raises(errors.JitlibTypeError, match="keeps its shape and dtype") as info:
        jitlib.jit(f)(np.ones(3))
    assert "test_control_flow.py" in str(info.value)


def test_body_writing_outside_is_an_error():
    def f(x, out):
        def body(i, v):
            out[i] = v.sum()
            return v
        return jnp.fori_loop(0, 3, body, x)
    with pytest.raises(errors.UnsupportedError, match="writes into an array from outside"):
        jitlib.jit(f)(np.ones(3), np.zeros(3))


def test_host_random_in_a_body_is_an_error():
    def f(x):
        return jnp.fori_loop(0, 3, lambda i, v: v + np.random.rand(3), x)
    with pytest.raises(errors.UnsupportedError, match="draw once, when jit traces it"):
        jitlib.jit(f)(np.ones(3))


def test_escaped_body_value_is_an_error():
    kept = []

    def f(x):
        def body(i, v):
            kept.append(v)
            return v + 1.0
        y = jnp.fori_loop(0, 2, body, x)
        return y + kept[0]
    with pytest.raises(errors.EscapedTracerError):
        jitlib.jit(f)(np.ones(3))


def test_branches_of_different_types_are_an_error():
    def f(x):
        return jnp.cond(x.sum() > 0, lambda v: v, lambda v: v.sum(), x)
    with pytest.raises(errors.JitlibTypeError, match="branches return different types"):
        jitlib.jit(f)(np.ones(3))


def test_eager_calls_run_python():
    assert jnp.fori_loop(0, 4, lambda i, v: v + i, 0) == 6
    assert jnp.while_loop(lambda v: v < 10, lambda v: v * 2, 1) == 16
    carry, ys = jnp.scan(lambda c, x: (c + x, c * 1), 0, np.arange(4))
    assert carry == 6 and list(ys) == [0, 0, 1, 3]
    assert jnp.switch(5, [lambda: 1, lambda: 2]) == 2
