"""Python `for` loops traced once (jitlib/trace/loop_capture.py): the same values and
caller-visible state as eager NumPy on every backend, a trace whose size does not grow
with the trip count, and Python's own loop wherever the trips do not provably repeat."""
import numpy as np
import pytest

import jitlib
from jitlib import errors
from jitlib.hlo.ops import Op
from benchmarks.loop_workloads import jacobi_plain as jacobi

BACKENDS = ["interpreter", "cpu", "jax"]


def _ops(module):
    """Every instruction of `module` and of the regions inside it."""
    count = 0
    for instr in module.instructions:
        count += 1
        for attr in ("body", "cond"):
            region = instr.attrs.get(attr) if instr.op is Op.WHILE else None
            if region is not None:
                count += _ops(region)
    return count


def _whiles(module):
    return sum(instr.op is Op.WHILE for instr in module.instructions)


def _check(fn, args, backend, static=(), rtol=1e-6):
    """jit(fn) and fn agree on the results and on what they leave in the arguments."""
    eager_args = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    jit_args = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    want = fn(*eager_args)
    got = jitlib.jit(fn, backend=backend, static_argnums=static)(*jit_args)
    for g, w in zip(_tuple(got), _tuple(want)):
        np.testing.assert_allclose(g, w, rtol=rtol, atol=1e-6)
        assert np.asarray(g).dtype == np.asarray(w).dtype
    for g, w in zip(jit_args, eager_args):
        if isinstance(w, np.ndarray):
            np.testing.assert_allclose(g, w, rtol=rtol, atol=1e-6)


def _tuple(x):
    return x if isinstance(x, tuple) else (x,)


def _traced(fn, args, static=()):
    return jitlib.jit(fn, static_argnums=static).lower(*args).module


# -- loops that capture

def leapfrog(pos, vel, steps):
    dt = 0.01
    for _ in range(steps):
        vel = vel - 0.5 * dt * pos
        pos = pos + dt * vel
        vel = vel - 0.5 * dt * pos
    return pos, vel


def smooth_in_place(x, steps):
    for _ in range(steps):        # writes into the caller's array every trip
        x[1:-1] = 0.5 * x[1:-1] + 0.25 * (x[:-2] + x[2:])
    return x.sum()


def running_sum(xs):
    acc = np.zeros(xs.shape[1], xs.dtype)
    for t in range(xs.shape[0]):
        acc = acc + xs[t] * 0.5
    return acc, t


def gather_rows(xs):
    out = np.empty_like(xs)
    for t in range(xs.shape[0]):
        out[t] = np.tanh(xs[t]) * t
    return out


def nested(x, outer, inner):
    for _ in range(outer):
        for _k in range(inner):
            x = x * 0.9 + 0.1
        x = np.sqrt(np.abs(x))
    return x


def gauss_seidel_rows(u, f, sweeps):
    # a loop inside a captured loop's body: each row reads the rows the trip before wrote
    for _ in range(sweeps):
        for i in range(1, u.shape[0] - 1):
            u[i, 1:-1] = 0.25 * (u[i - 1, 1:-1] + u[i + 1, 1:-1] + u[i, :-2] + u[i, 2:]
                                 - 0.01 * f[i, 1:-1])
    return u.sum()


def heat_into(u, out, steps):
    # two buffers that trade names each step: which array the caller's u and out end as
    # depends on the parity of the trip count
    for _ in range(steps):
        out[1:-1] = u[1:-1] + 0.2 * (u[2:] - 2 * u[1:-1] + u[:-2])
        out[0], out[-1] = u[0], u[-1]
        u, out = out, u
    return u


def rotate_three(a, b, c, steps):
    # three arrays renamed in a cycle, one written each trip
    for _ in range(steps):
        c[1:] = a[1:] + 0.5 * b[:-1]
        a, b, c = b, c, a
    return a * 1.0, c.sum()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", ["jacobi", "leapfrog", "in_place", "index", "rows",
                                  "nested", "gauss_seidel"])
def test_captured_loops_match_eager_numpy(case, backend):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((12, 5)).astype(np.float32)
    fn, args, static = {
        "jacobi": (jacobi, (x, x[::-1].copy(), 9), (2,)),
        "leapfrog": (leapfrog, (x, x * 0.1, 30), (2,)),
        "in_place": (smooth_in_place, (x[:, 0].copy(), 25), (1,)),
        "index": (running_sum, (x,), ()),
        "rows": (gather_rows, (x,), ()),
        "nested": (nested, (x, 6, 5), (1, 2)),
        "gauss_seidel": (gauss_seidel_rows, (x.astype(np.float64), x[::-1].copy(), 5), (2,)),
    }[case]
    _check(fn, args, backend, static)


@pytest.mark.parametrize("fn, make", [
    (jacobi, lambda n: (np.ones((8, 8), np.float32), np.zeros((8, 8), np.float32), n)),
    (leapfrog, lambda n: (np.ones(4), np.zeros(4), n)),
    (smooth_in_place, lambda n: (np.ones(16), n)),
])
def test_the_trace_does_not_grow_with_the_trip_count(fn, make):
    static = (len(make(1)) - 1,)
    small, large = (_traced(fn, make(n), static) for n in (10, 1000))
    assert _whiles(large) == 1, large
    assert _ops(large) == _ops(small)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("steps", [7, 8, 9])
def test_arrays_that_swap_names_are_carried_by_name(steps, backend):
    x = np.random.default_rng(3).random((3, 10))
    _check(heat_into, (x[0].copy(), np.zeros(10), steps), backend, (2,))
    _check(rotate_three, (x[0].copy(), x[1].copy(), x[2].copy(), steps), backend, (3,))
    for fn, args in ((heat_into, (x[0], x[1])), (rotate_three, tuple(x))):
        module = _traced(fn, (*args, steps), (len(args),))
        assert _whiles(module) == 1 and _ops(module) == _ops(
            _traced(fn, (*args, 100 + steps), (len(args),)))


def test_a_loop_inside_a_captured_loop_is_traced_once_too():
    # 400 rows: the row loop is a while inside the sweeps' while, not 400 rows of ops
    # (each row's ops were traced, their slices' offsets all different, 254 kernels)
    def traced(rows):
        return _traced(gauss_seidel_rows, (np.ones((rows, 8)), np.ones((rows, 8)), 5), (2,))
    small, large = traced(22), traced(402)
    assert _ops(small) < 200 and _ops(large) < 200, (_ops(small), _ops(large))
    outer = [i for i in large.instructions if i.op is Op.WHILE][-1]
    assert any(i.op is Op.WHILE for i in outer.attrs["body"].instructions), outer


def test_loop_variable_and_names_bound_in_the_loop_are_seen_after_it():
    def f(x):
        for i in range(7):
            y = x * i
        return y + i, np.float32(i)
    for backend in BACKENDS:
        _check(f, (np.arange(3, dtype=np.float32),), backend)
    assert _whiles(_traced(f, (np.arange(3, dtype=np.float32),))) == 1


def test_a_view_taken_before_the_loop_sees_the_in_place_writes():
    def f(x):
        x = x.copy()
        head = x[:2]
        for _ in range(10):
            x[:] = x * 0.5 + 1.0
        return head.copy(), x
    for backend in BACKENDS:
        _check(f, (np.arange(6, dtype=np.float64),), backend)


def collected(x):
    hs = []
    for _ in range(6):
        x = np.tanh(x)
        hs.append(x)
    return np.stack(hs)


def two_a_trip(x):
    out, sums = [], []
    for t in range(7):
        x = x * 0.5 + t
        out.append(x)
        out.append(-x)
        sums.append(x.sum())
    return out, np.array(sums)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn", [collected, two_a_trip], ids=lambda f: f.__name__)
def test_values_appended_each_trip_become_stacked_outputs(fn, backend):
    x = np.linspace(-1.0, 1.0, 5).astype(np.float32)
    _check(fn, (x,), backend)
    assert _whiles(_traced(fn, (x,))) == 1


def _trip_counts(module):
    return [i.attrs["trip_count"] for i in module.instructions if i.op is Op.WHILE]


def promoted_on_the_first_trip(x):
    h = np.zeros(x.shape)               # float64 until the first trip makes it float32
    for t in range(7):
        h = np.tanh(x + h.astype(np.float32) * 0.5)
    return h


def python_value_set_on_the_first_trip(x):
    scale = None
    for _ in range(6):
        scale = 0.5 if scale is None else scale
        x = x * scale + 1
    return x


def argument_written_every_trip(x):
    for i in range(6):
        x[i % 3] += i * x[(i + 1) % 3]
    return x.sum()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn, trips", [
    (promoted_on_the_first_trip, 5), (python_value_set_on_the_first_trip, 4),
    (argument_written_every_trip, 6), (smooth_in_place, 25)], ids=lambda v: getattr(
        v, "__name__", str(v)))
def test_the_loop_takes_the_python_trips_where_they_began_alike(fn, trips, backend):
    # all trips roll where the state before the first trip is carried as after the
    # second (the Python trips' ops are then dead); else the loop takes the trips after
    # them, as the first two trips made their own state
    args = (np.linspace(-1, 1, 6).astype(np.float32),) + ((25,) if fn is smooth_in_place
                                                         else ())
    static = (1,) if fn is smooth_in_place else ()
    _check(fn, args, backend, static)
    assert _trip_counts(_traced(fn, args, static)) == [trips]


def test_stacking_a_collected_list_reads_the_loop_output_whole():
    module = jitlib.jit(collected).lower(np.ones(3)).module
    # the loop takes all six trips (the two Python ones too) and its stacked output is
    # the result whole: no row by row slices, no concatenate
    assert not [i for i in module.instructions if i.op is Op.CONCATENATE], module
    (result,) = module.results
    assert result.op is Op.GET_OUTPUT and result.operands[0].op is Op.WHILE
    assert result.operands[0].attrs["trip_count"] == 6


# -- loops that stay Python loops, with Python's results

def counter_carried(x):
    t = 0.0
    for _ in range(8):
        x = x + t
        t += 0.5        # a Python float that changes every trip: not a traced value
    return x


def growing(x):
    for _ in range(5):
        x = np.concatenate([x, x[-1:] + 1])
    return x


def branch_on_index(x):
    for i in range(8):
        if i % 3 == 0:
            x = x * 2.0
        else:
            x = x - 1.0
    return x


def early_exit(x):
    for i in range(10):
        x = x + i
        if i == 4:
            break
    return x


def swapped(a, b):
    for _ in range(5):
        a, b = b, a + b
    return a, b


def reads_its_list(x):
    hs = [x]
    for _ in range(6):
        hs.append(np.tanh(hs[-1]))    # reads the list: not rewritten
    return np.stack(hs)


def appends_the_index(x):
    ts = []
    for t in range(6):
        x = x + 1.0
        ts.append(t)                  # a Python int per trip: stays a Python loop
    return x * np.array(ts).sum()


def drawn(x):
    for _ in range(6):
        x = x + np.random.standard_normal(x.shape)
    return x


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn", [counter_carried, growing, branch_on_index, early_exit,
                                swapped, reads_its_list, appends_the_index],
                         ids=lambda f: f.__name__)
def test_loops_that_do_not_repeat_run_as_python(fn, backend):
    x = np.linspace(-1.0, 1.0, 6)
    args = (x, x[::-1].copy()) if fn is swapped else (x,)
    _check(fn, args, backend)


def test_random_draws_inside_a_loop_are_new_every_trip_and_every_call():
    x = np.zeros(4)
    f = jitlib.jit(drawn)
    np.random.seed(3)
    got = [f(x), f(x)]
    next_after_jit = np.random.standard_normal()
    np.random.seed(3)
    want = [drawn(x), drawn(x)]
    assert np.random.standard_normal() == next_after_jit   # the caller's stream moved alike
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def monte_carlo(x, steps):
    # two draws a trip from one generator, one of them a Python float
    rng = np.random.default_rng(11)
    hits = np.zeros(x.shape, dtype=bool)
    for _ in range(steps):
        x = x + rng.standard_normal(x.shape) * 0.1 + 0.01 * rng.random()
        hits |= x > 1.0
    return x, hits.mean()


def shuffled_every_trip(x, steps):
    # an index draw (shuffle of a traced array) from the global stream, every trip
    for _ in range(steps):
        np.random.shuffle(x)
        x[0] += 1.0
    return x * 1.0


@pytest.mark.parametrize("backend", BACKENDS)
def test_draws_in_a_loop_traced_once_are_each_trips_draws(backend):
    x = np.random.default_rng(2).random(7)
    _check(monte_carlo, (x, 9), backend, (1,), rtol=0)
    f = jitlib.jit(shuffled_every_trip, static_argnums=1, backend=backend)
    np.random.seed(4)
    got = [f(x.copy(), 7), f(x.copy(), 7)]
    after_jit = np.random.standard_normal()
    np.random.seed(4)
    want = [shuffled_every_trip(x.copy(), 7), shuffled_every_trip(x.copy(), 7)]
    assert np.random.standard_normal() == after_jit   # the stream moved alike
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def nested_draws(x, outer, inner):
    # the inner loop draws: it cannot stack its draws inside an outer loop traced once,
    # so the outer trips run as Python, each inner loop drawing its own rows
    rng = np.random.default_rng(5)
    for _ in range(outer):
        for _ in range(inner):
            x = x + rng.standard_normal(x.shape)
        x = x * 0.5
    return x, rng.random()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("outer, inner", [(5, 4), (6, 2), (4, 6)])
def test_draws_in_nested_loops_are_eager_numpys(outer, inner, backend):
    _check(nested_draws, (np.zeros(3), outer, inner), backend, (1, 2), rtol=0)


def test_a_loop_that_draws_is_one_while_whatever_its_trip_count():
    x = np.zeros(5)
    small, large = (_traced(monte_carlo, (x, n), (1,)) for n in (10, 1000))
    assert _whiles(large) == 1 and _ops(large) == _ops(small)
    # the remaining trips' draws are one stacked parameter each, filled before the call
    assert [p.shape for p in large.params][-2:] == [(998, 5), (998,)]


def test_a_draw_in_a_body_traced_once_as_one_trip_is_refused():
    import jitlib.numpy as jnp

    def f(x):
        rng = np.random.default_rng(0)
        return jnp.fori_loop(0, 3, lambda i, c: c + rng.standard_normal(2), x)
    with pytest.raises(errors.UnsupportedError, match="once per trip") as info:
        jitlib.jit(f)(np.zeros(2))
    assert "test_loop_capture.py" in str(info.value)


def test_an_error_inside_a_captured_body_names_the_users_line():
    def f(x, y):
        for _ in range(6):
            x = x + y          # (3,) + (4,): raised on the first trip, as NumPy would
        return x
    with pytest.raises(errors.ShapeError) as info:
        jitlib.jit(f)(np.ones(3), np.ones(4))
    assert info.value.location.line == f.__code__.co_firstlineno + 2
    assert "test_loop_capture.py" in info.value.location.file


def test_the_while_region_carries_the_line_of_the_for():
    text = jitlib.jit(leapfrog, static_argnums=2).lower(np.ones(3), np.ones(3), 50).as_text()
    (line,) = [ln for ln in text.splitlines() if " while(" in ln]
    assert f'test_loop_capture.py":{leapfrog.__code__.co_firstlineno + 2}' in line, line


def test_roll_loops_off_keeps_the_straight_line_trace(monkeypatch):
    monkeypatch.setenv("JITLIB_ROLL_LOOPS", "0")
    module = _traced(leapfrog, (np.ones(3), np.ones(3), 20), (2,))
    assert _whiles(module) == 0


def rows_used_after_the_loop(x, n):
    hs = []
    for t in range(n):
        x = np.tanh(x) + 0.01 * t
        hs.append(x)
    whole, middle = np.stack(hs), np.stack(hs[3:7])
    every_other, across = np.stack(hs[::2]), np.stack(hs, axis=1)
    hs[2] += 1.0                      # a row written: stacking sees the write
    return whole, middle, every_other, across, np.stack(hs), hs[-1] * 2


@pytest.mark.parametrize("backend", BACKENDS)
def test_rows_a_loop_appended_behave_as_arrays(backend):
    _check(rows_used_after_the_loop, (np.linspace(-1, 1, 5), 9), backend, (1,))


def test_stacking_the_rows_a_loop_appended_makes_none_of_them(monkeypatch):
    # the rows stay unmade until read: np.stack of a run of them is a slice of the loop's
    # stacked output, so tracing builds as many instructions at 1,000 trips as at 10
    # (a slice and a reshape a row, then a concatenate, were ~50 ms of an RNN's trace)
    from jitlib.hlo import build
    made = []
    real = build.make
    monkeypatch.setattr(build, "make", lambda *a, **k: made.append(1) or real(*a, **k))
    counts = []
    for n in (10, 1000):
        made.clear()
        _traced(collected_n, (np.ones(3), n), (1,))
        counts.append(len(made))
    assert counts[1] - counts[0] < 20, counts


def collected_n(x, n):
    hs = []
    for _ in range(n):
        x = np.tanh(x)
        hs.append(x)
    return np.stack(hs)


def test_stacking_a_thousand_captured_rows_makes_one_slice():
    # np.stack of a captured loop's per-trip rows joins each run of adjacent rows into one
    # slice of the stacked buffer without a slice per joined prefix (1000 trips: was ~1000
    # instructions, 20 ms of the first call)
    from jitlib.hlo import build
    x = build.parameter(0, (1000, 4), np.float32)
    rows = [build.slice(x, (t, 0), (t + 1, 4)) for t in range(1000)]
    log = []
    saved = build.swap_log(log)
    try:
        joined = build.concatenate(rows[:400] + [build.slice(x, (0, 0), (1, 4))] + rows[400:],
                                   0)
    finally:
        build.swap_log(saved)
    assert joined.op is Op.CONCATENATE
    assert [o.attrs["start"][0] for o in joined.operands] == [0, 0, 400]
    assert [o.attrs["limit"][0] for o in joined.operands] == [400, 1, 1000]
    assert sum(instr.op is Op.SLICE for instr, _ in log) == 3    # one a run
    assert build.concatenate(rows, 0) is x


# -- an inner range whose bound is the outer loop's variable

def gram_schmidt(A):
    m, n = A.shape
    Q, R = np.zeros((m, n)), np.zeros((n, n))
    for j in range(n):
        v = A[:, j].copy()
        for i in range(j):                # as many trips as the outer counter says
            R[i, j] = Q[:, i] @ A[:, j]
            v -= R[i, j] * Q[:, i]
        R[j, j] = np.linalg.norm(v)
        Q[:, j] = v / R[j, j]
    return Q, R


def lower_solve_rows(L, b):
    x = np.zeros_like(b)
    for i in range(L.shape[0]):
        s = b[i]
        for k in range(i):                # s, bound anew each trip, is carried
            s = s - L[i, k] * x[k]
        x[i] = s / L[i, i]
    return x


def counted_products(L, b):
    x, flops = np.zeros_like(b), 0
    for i in range(L.shape[0]):
        for k in range(i):                # a Python int changed each trip: runs as Python
            x[i] += L[i, k] * b[k]
            flops += 2
    return x, flops


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_triangular_loop_nest_is_traced_once(backend):
    A = np.random.default_rng(4).standard_normal((12, 7))
    _check(gram_schmidt, (A,), backend, rtol=1e-10)
    small, large = (_traced(gram_schmidt, (np.ones((40, n)),)) for n in (6, 30))
    assert _ops(small) == _ops(large) and _whiles(large) == 1, large


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn", [lower_solve_rows, counted_products])
def test_triangular_nests_carry_what_they_can_and_run_the_rest_as_python(fn, backend):
    rng = np.random.default_rng(5)
    L = np.tril(rng.standard_normal((9, 9))) + 4 * np.eye(9)
    _check(fn, (L, rng.standard_normal(9)), backend, rtol=1e-10)
