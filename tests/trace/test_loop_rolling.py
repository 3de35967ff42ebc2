"""Loop rolling (issue 22 part 3): a plain Python `for` loop over traced arrays whose trips
trace to the same steps rolls back into one `while` (jitlib/trace/rolling.py).

These tests trace every trip and roll afterwards (JITLIB_ROLL_LOOPS=after): with the
default, most of these loops are traced once before the roller sees them
(tests/trace/test_loop_capture.py).

Each program runs eagerly and jitted on the interpreter, cpu and jax backends
(jitlib.testing.check_backends); the IR tests say what rolled and what did not.
"""
import numpy as np
import pytest

import jitlib
from jitlib.hlo.ops import Op
from jitlib.testing import check_backends
from jitlib.trace import rolling

BACKENDS = ("interpreter", "cpu", "jax")


@pytest.fixture(autouse=True)
def _roll_after_tracing(monkeypatch):
    monkeypatch.setenv("JITLIB_ROLL_LOOPS", "after")


def rng():
    return np.random.default_rng(223)


def ir(fn, *args, static_argnums=()):
    return jitlib.make_ir(fn, static_argnums=static_argnums)(*args)


def loops(module):
    return [i for i in module.instructions if i.op is Op.WHILE]


# -- programs

def jacobi(A0, steps):
    A = np.copy(A0)
    B = np.empty_like(A)
    B[:] = A
    for _ in range(steps):
        B[1:-1, 1:-1] = 0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:]
                              + A[2:, 1:-1] + A[:-2, 1:-1])
        A[1:-1, 1:-1] = B[1:-1, 1:-1]
    return A


def leapfrog(pos, vel, mass, dt, steps):
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
    return pos, vel


def rnn(xs, h, W, U, b):
    hs = np.zeros((xs.shape[0], h.shape[0]))
    for t in range(xs.shape[0]):
        h = np.tanh(h @ W + xs[t] @ U + b)
        hs[t] = h
    return h, hs


def nested(x, w, outer, inner):
    for _ in range(outer):
        y = np.cos(x) * w
        for _ in range(inner):
            x = 0.5 * x + np.sin(y) - 0.1 * x * x
        x = x / (1.0 + np.abs(x).max())
    return x


def index_squared(x, steps):
    for t in range(steps):
        x = np.sin(x) + 0.001 * (t * t)
    return x


def keeps_every_step(x, steps):
    seen = []
    for _ in range(steps):
        x = np.sin(x) * 0.9 + 0.1
        seen.append(x)
    return sum(seen[:-1]) + x


def jacobi_args(n, steps):
    return rng().standard_normal((n, n)), steps


def leapfrog_args(bodies, steps):
    r = rng()
    return (r.standard_normal((bodies, 3)), r.standard_normal((bodies, 3)),
            r.uniform(1.0, 2.0, bodies), 0.01, steps)


def rnn_args(steps):
    r = rng()
    return (r.standard_normal((steps, 8)), r.standard_normal(16),
            0.3 * r.standard_normal((16, 16)), r.standard_normal((8, 16)),
            r.standard_normal(16))


# -- against eager NumPy, on every backend

@pytest.mark.parametrize("steps", [6, 12])
def test_jacobi_stencil(steps):
    args = jacobi_args(12, steps)
    check_backends(jacobi, *args, backends=BACKENDS, static_argnums=(1,))
    assert len(loops(ir(jacobi, *args, static_argnums=(1,)))) == 1


def test_leapfrog_integrator():
    args = leapfrog_args(6, 10)
    check_backends(leapfrog, *args, backends=BACKENDS, static_argnums=(4,),
                   rtol=1e-12, atol=1e-12)
    assert len(loops(ir(leapfrog, *args, static_argnums=(4,)))) == 1


def test_rnn_cell_reads_xs_t_through_the_trip_counter():
    args = rnn_args(12)
    check_backends(rnn, *args, backends=BACKENDS, rtol=1e-12, atol=1e-12)
    (loop,) = loops(ir(rnn, *args))
    body = loop.attrs["body"]
    assert {i.op for i in body.instructions} >= {Op.DYNAMIC_SLICE, Op.DYNAMIC_UPDATE_SLICE}


def test_nested_loops_roll_inside_out():
    args = (rng().standard_normal(32), rng().standard_normal(32), 6, 10)
    check_backends(nested, *args, backends=BACKENDS, static_argnums=(2, 3),
                   rtol=1e-12, atol=1e-12)
    # the first outer trip stays as traced: its inner loop is a loop of its own
    first, outer = loops(ir(nested, *args, static_argnums=(2, 3)))
    assert first.attrs["trip_count"] == 9 and outer.attrs["trip_count"] == 5
    (inner,) = loops(outer.attrs["body"])
    assert inner.attrs["trip_count"] == 9
    for_lines = [nested.__code__.co_firstlineno + k for k in (1, 3)]
    assert [outer.loc.line, inner.loc.line] == for_lines


def test_a_loop_using_its_index_as_a_number_stays_straight_line():
    args = (rng().standard_normal(32), 40)
    check_backends(index_squared, *args, backends=BACKENDS, static_argnums=(1,))
    module = ir(index_squared, *args, static_argnums=(1,))
    assert not loops(module)
    assert sum(i.op is Op.SIN for i in module.instructions) == 40


def test_values_kept_from_every_trip_stay_straight_line():
    args = (rng().standard_normal(32), 30)
    check_backends(keeps_every_step, *args, backends=BACKENDS, static_argnums=(1,))
    assert not loops(ir(keeps_every_step, *args, static_argnums=(1,)))


# -- the IR

def test_the_rolled_program_does_not_grow_with_the_trip_count():
    sizes = {}
    for steps in (10, 100, 400):
        module = ir(jacobi, *jacobi_args(16, steps), static_argnums=(1,))
        (loop,) = loops(module)
        assert loop.attrs["trip_count"] == steps - 1
        sizes[steps] = len(module.instructions) + len(loop.attrs["body"].instructions)
    assert len(set(sizes.values())) == 1, sizes


def test_the_loop_shows_in_the_text_with_its_for_line():
    text = jitlib.jit(jacobi, static_argnums=(1,)).lower(*jacobi_args(12, 20)).as_text()
    assert text.count(" while(") == 1
    (line,) = [ln for ln in text.splitlines() if " while(" in ln]
    for_line = jacobi.__code__.co_firstlineno + 4
    assert "trip_count=19" in line and f"test_loop_rolling.py\":{for_line} jacobi" in line
    source = open(__file__).read().splitlines()[for_line - 1]
    assert source.strip().startswith("for _ in range(steps)")


def test_too_few_trips_or_ops_stay_straight_line():
    assert not loops(ir(jacobi, *jacobi_args(12, 2), static_argnums=(1,)))
    assert not loops(ir(lambda x: [x := np.sin(x) for _ in range(5)][-1], np.ones(3)))


def test_the_switch_turns_rolling_off(monkeypatch):
    monkeypatch.setenv("JITLIB_ROLL_LOOPS", "0")
    module = ir(jacobi, *jacobi_args(12, 20), static_argnums=(1,))
    assert not loops(module)


def test_a_carry_whose_type_settles_after_the_first_trip():
    def accumulate(x, steps):
        total = 0   # a Python int: the first trip makes it an array
        for _ in range(steps):
            total = total + np.tanh(x) * 2.0 - x * 0.5
            x = x * 0.99
        return total
    args = (rng().standard_normal(8).astype(np.float32), 40)
    check_backends(accumulate, *args, backends=BACKENDS, static_argnums=(1,))
    assert len(loops(ir(accumulate, *args, static_argnums=(1,)))) == 1


def test_minimum_sizes_are_the_documented_ones():
    assert (rolling.MIN_TRIPS, rolling.MIN_OPS) == (3, 64)
