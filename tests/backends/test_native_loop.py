"""The cpu backend's native loops (llvm/native_loop.py) and its windowed
dynamic_update_slice kernels (kernels._dynamic_update), against the interpreter, bit for
bit: both reorder no arithmetic, they only move where values live."""
import numpy as np
import pytest

import jitlib
import jitlib.numpy as jnp
import programs
from jitlib.backends.control import LoopRunner
from jitlib.backends.llvm.native_loop import NativeLoop


def rng():
    return np.random.default_rng(10)


def loop_runners(fn, *args):
    """The runners of the cpu executable's top-level loops."""
    executable = jitlib.jit(fn, backend="cpu").lower(*args).compile()
    return [r for _, r in executable._steps if isinstance(r, (NativeLoop, LoopRunner))]


def same_bits(fn, *args):
    want = jitlib.jit(fn, backend="interpreter")(*args)
    got = jitlib.jit(fn, backend="cpu")(*args)
    for g, w in zip(jitlib.tree.leaves(got), jitlib.tree.leaves(want)):
        np.testing.assert_array_equal(g, w)
        assert np.asarray(g).dtype == np.asarray(w).dtype


def sweeps(A, B):
    def sweep(i, grids):
        A, B = grids
        B = B.copy()
        B[1:-1, 1:-1] = 0.25 * (A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1] + A[:-2, 1:-1])
        return B, A * 1.0
    return jnp.fori_loop(0, 9, sweep, (A, B))


def running_sums(xs):
    # scan's ys are scattered into a stacked buffer, written in place trip by trip
    return jnp.scan(lambda c, x: (c + x, c * 2.0), np.zeros(xs.shape[1]), xs)


def halvings(x):
    # a condition read each trip: the trip count depends on the data
    return jnp.while_loop(lambda s: s[0].max() > 1.0, lambda s: (s[0] * 0.5, s[1] + 1),
                          (x, 0))


def with_invariant(x, w):
    return jnp.fori_loop(0, 5, lambda i, c: np.sin(c) * w + i, x)


def swapped(a, b):
    return jnp.fori_loop(0, 5, lambda i, c: (c[1], c[0] + 1.0), (a, b))


def jacobi(A, B):
    # each sweep writes the other grid's interior from this one: both carries are
    # updated in place, only their windows stored
    def step(i, grids):
        A, B = grids
        B[1:-1, 1:-1] = 0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1]
                               + A[:-2, 1:-1])
        A[1:-1, 1:-1] = 0.2 * (B[1:-1, 1:-1] + B[1:-1, :-2] + B[1:-1, 2:] + B[2:, 1:-1]
                               + B[:-2, 1:-1])
        return A, B
    return jnp.fori_loop(0, 7, step, (A, B))


def smoothing_1d(x):
    # the window is computed from the carry itself: its kernel reads the carry twice, so
    # it must not write the carry's memory while reading it
    def step(i, x):
        x = x.copy()
        x[1:-1] = 0.5 * (x[:-2] + x[2:])
        return x
    return jnp.fori_loop(0, 6, step, x)


@pytest.mark.parametrize("fn, make, layout", [
    (jacobi, lambda r: (r.random((9, 11)), r.random((9, 11))), "in place"),
    (smoothing_1d, lambda r: (r.random(13),), "ping-pong"),
    (sweeps, lambda r: (r.random((10, 12)), r.random((10, 12))), "ping-pong"),
    (running_sums, lambda r: (r.random((7, 3)),), "in place"),
    (halvings, lambda r: (r.random(5) * 100,), "ping-pong"),
    (with_invariant, lambda r: (r.random(4), r.random(4)), "invariant"),
    (swapped, lambda r: (r.random(3), r.random(3)), "moved"),
])
def test_small_loops_run_natively_with_the_interpreters_bits(fn, make, layout):
    args = make(rng())
    (runner,) = loop_runners(fn, *args)
    assert isinstance(runner, NativeLoop)
    assert any(layout in (entry, entry[0]) for entry in runner.layout), runner.layout
    same_bits(fn, *args)


def layer_steps(x, w1, b1, w2):
    def step(i, x):
        h = np.maximum(x @ w1 + b1, 0)
        return np.tanh(h @ w2) * 0.5 + x
    return jnp.fori_loop(0, 20, step, x)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_small_products_call_the_blas_from_the_native_loop(dtype):
    r = rng()
    args = [r.random((8, 16)), r.random((16, 32)) * 0.1, r.random(32), r.random((32, 16)) * 0.1]
    args = [a.astype(dtype) for a in args]
    (runner,) = loop_runners(layer_steps, *args)
    assert isinstance(runner, NativeLoop) and runner._body.dots
    # the compiled tanh is within an ulp of NumPy's; the gemm is the same library's
    np.testing.assert_allclose(jitlib.jit(layer_steps, backend="cpu")(*args),
                               layer_steps(*args), rtol=1e-5 if dtype == np.float32 else 1e-13)


def power_steps(A, v):
    # a matrix-vector and a vector-vector product: each one gemm call
    def step(i, v):
        w = A @ v
        return w / np.sqrt(w @ w)
    return jnp.fori_loop(0, 15, step, v)


def transposed_steps(A, x):
    # A.T @ x and x @ A.T read A as it is, with the gemm's transpose flag
    return jnp.fori_loop(0, 6, lambda i, x: np.tanh(A.T @ x) + 0.5 * (x @ A.T), x)


@pytest.mark.parametrize("fn, products", [(power_steps, 2), (transposed_steps, 2)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_vector_and_transposed_products_stay_in_the_native_loop(fn, products, dtype):
    r = rng()
    A, v = (r.random((24, 24)) / 24).astype(dtype), r.random(24).astype(dtype)
    (runner,) = loop_runners(fn, A, v)
    assert isinstance(runner, NativeLoop) and len(runner._body.dots) == products
    np.testing.assert_allclose(jitlib.jit(fn, backend="cpu")(A, v), fn(A, v),
                               rtol=2e-5 if dtype == np.float32 else 1e-12)


def test_a_body_of_large_kernels_keeps_the_host_loop_and_its_threads():
    from jitlib.backends.llvm import parallel
    side = int((parallel.MIN_LOOP_PARALLEL_BYTES / 16) ** 0.5) + 8   # past the threshold
    x = rng().random((side, side))
    f = lambda x: jnp.fori_loop(0, 3, lambda i, c: np.sqrt(c) + 1.0, x)  # noqa: E731
    (runner,) = loop_runners(f, x)
    assert isinstance(runner, LoopRunner)
    same_bits(f, x)


def test_a_host_driven_loop_hands_an_unchanged_carry_on_as_it_is():
    # copying it every trip was a full pass over memory (16 MB of stacked draws a trip)
    from jitlib.backends.llvm import parallel
    side = int((parallel.MIN_LOOP_PARALLEL_BYTES / 16) ** 0.5) + 8
    x, w = rng().random((side, side)), rng().random((side, side))
    f = lambda x, w: jnp.fori_loop(  # noqa: E731
        0, 3, lambda i, c: (np.sqrt(c[0]) + c[1], c[1]), (x, w))
    (runner,) = loop_runners(f, x, w)
    assert isinstance(runner, LoopRunner)
    counter = np.array(0, np.int64)
    assert runner._body([counter, x, w])[2] is w
    same_bits(f, x, w)


def test_a_kernel_reading_one_row_of_a_large_table_is_small():
    # it reads a row, not the table: it stays in the native loop, on this thread
    from jitlib.backends.llvm import parallel
    table = rng().random((parallel.min_parallel_bytes() // (8 * 64) + 8, 64))
    f = lambda table, x: jnp.fori_loop(0, 6, lambda i, c: c * 0.5 + table[i], x)  # noqa: E731
    (runner,) = loop_runners(f, table, rng().random(64))
    assert isinstance(runner, NativeLoop)
    same_bits(f, table, rng().random(64))


def test_a_strided_initial_carry_takes_the_host_loop():
    a = rng().random((6, 4)).T   # not C-contiguous: the native loop does not take it
    same_bits(lambda a: jnp.fori_loop(0, 3, lambda i, c: c * 2.0 + 1.0, a), a)


def test_zero_trips_give_the_initial_carry():
    x = rng().random(4)
    same_bits(lambda x, n: jnp.fori_loop(0, n, lambda i, c: c + 1.0, x), x, np.int64(0))
    np.testing.assert_array_equal(
        jitlib.jit(lambda x: jnp.fori_loop(0, 0, lambda i, c: c + 1.0, x), backend="cpu")(x),
        x)


def test_many_trips_are_one_native_call():
    x = rng().random(8).astype(np.float32)
    f = lambda x: jnp.fori_loop(0, 100_000, lambda i, c: c * np.float32(0.5) + 1, x)  # noqa: E731
    (runner,) = loop_runners(f, x)
    assert isinstance(runner, NativeLoop) and runner.trips == 100_000
    same_bits(f, x)


def inner_keeps_a_carry(x, w):
    # the inner loop hands w back unchanged, and the outer body reads what it handed back
    def inner(i, c):
        return np.sqrt(c[0] * c[1] + 1.0) + i, c[1]

    def outer(j, c):
        y, w2 = jnp.fori_loop(0, 4, inner, (c, w))
        return y * w2 + 0.25
    return jnp.fori_loop(0, 3, outer, x)


def inner_with_a_condition(x):
    # the inner trip count depends on the data: its condition runs natively too
    def outer(j, c):
        return jnp.while_loop(lambda s: s.max() > 1.0, lambda s: s * 0.5, c * 3.0 + j)
    return jnp.fori_loop(0, 5, outer, x)


@pytest.mark.parametrize("fn, make", [
    # Gram-Schmidt's nest: an inner loop as long as the outer counter, setting entries
    # of R (carried flat by both loops) and a column of Q in each outer trip
    (programs.gram_schmidt_qr, lambda r: (r.standard_normal((12, 6)),)),
    (inner_keeps_a_carry, lambda r: (r.random(5), r.random(5))),
    (inner_with_a_condition, lambda r: (r.random(4) * 10,)),
])
def test_nested_loops_run_as_one_native_call(fn, make):
    args = make(rng())
    (runner,) = loop_runners(fn, *args)
    assert isinstance(runner, NativeLoop) and runner._body.loops
    same_bits(fn, *args)


# -- windowed dynamic_update_slice kernels

def window_update(x, u, *starts):
    """x * 2 with sqrt(u) + 1 over the window at traced `starts` (clamped into range):
    NumPy has no spelling for it; as lax.dynamic_update_slice, straight in the IR."""
    from jitlib.hlo import build
    from jitlib.trace.tracer import Tracer, as_instr
    return Tracer(build.dynamic_update_slice(
        as_instr(x * 2.0), as_instr(np.sqrt(u) + 1.0), [as_instr(s) for s in starts]))


@pytest.mark.parametrize("shape, window, at", [
    ((6, 7), (2, 3), (1, 2)),
    ((6, 7), (2, 3), (5, 6)),             # past the end: the clamp moves the window in
    ((6, 7), (2, 3), (-4, 1)),
    ((6, 7), (6, 7), (0, 0)),
    ((3, 4, 5), (2, 1, 5), (1, 3, 0)),
    ((1500, 130), (700, 20), (3, 100)),   # large: shared between threads by rows
    ((50,), (9,), (45,)),                 # 1-D, a kernel that runs whole
    ((300_000,), (9,), (45,)),            # 1-D and shared: the per-element form
])
def test_dynamic_update_kernels_match_the_interpreter(shape, window, at):
    r = rng()
    same_bits(window_update, r.random(shape), r.random(window), *map(np.int64, at))


def test_a_static_window_write_like_a_stencils():
    def f(x):
        y = x.copy()
        y[1:-1, 1:-1] = 0.25 * (x[1:-1, :-2] + x[1:-1, 2:] + x[2:, 1:-1] + x[:-2, 1:-1])
        return y
    same_bits(f, rng().random((33, 65)))


def test_a_body_past_the_threads_threshold_still_runs_natively():
    # 256x256 float64: each kernel moves 1.5 MB, shared out at the top level, but a
    # loop body's kernels run whole up to MIN_LOOP_PARALLEL_BYTES
    args = rng().random((256, 256)), rng().random((256, 256))
    (runner,) = loop_runners(sweeps, *args)
    assert isinstance(runner, NativeLoop)
    same_bits(sweeps, *args)
