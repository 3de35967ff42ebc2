"""pmap and its collectives on N virtual devices, against the same computation done
on one device with NumPy; interpreter and cpu backends; 1, 2 and 4 devices."""
import numpy as np
import pytest

import jitlib
import jitlib.numpy as jnp
from jitlib import errors
from jitlib.hlo.ops import Op

BACKENDS = ["interpreter", "cpu"]


@pytest.fixture(params=[1, 2, 4])
def n(request, monkeypatch):
    monkeypatch.setenv("JITLIB_VIRTUAL_DEVICES", str(request.param))
    return request.param


def data(n, *shape, seed=0):
    return np.random.default_rng(seed).standard_normal((n, *shape))


def shift(n):
    return [(k, (k + 1) % n) for k in range(n)]


# each: (per-device function of x, what every device k gets, from all of xs)
COLLECTIVES = {
    "psum": (lambda x: jnp.psum(x, "i"), lambda xs, k: _fold(np.add, xs)),
    "pmean": (lambda x: jnp.pmean(x, "i"), lambda xs, k: _fold(np.add, xs) / len(xs)),
    "pmax": (lambda x: jnp.pmax(x, "i"), lambda xs, k: xs.max(axis=0)),
    "pmin": (lambda x: jnp.pmin(x, "i"), lambda xs, k: xs.min(axis=0)),
    "all_gather": (lambda x: jnp.all_gather(x, "i", axis=1),
                   lambda xs, k: np.stack(list(xs), axis=1)),
    "psum_scatter": (lambda x: jnp.psum_scatter(np.outer(np.ones(x.shape[0]), x), "i"),
                     lambda xs, k: _fold(np.add, xs)),
    "ppermute": (lambda x: jnp.ppermute(x, "i", shift(x.shape[0])),
                 lambda xs, k: xs[(k - 1) % len(xs)]),
    "axis_index": (lambda x: jnp.axis_index("i") * x,
                   lambda xs, k: k * xs[k]),
}


def _fold(ufunc, xs):
    out = xs[0]
    for x in xs[1:]:
        out = ufunc(out, x)
    return out


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", sorted(COLLECTIVES))
def test_each_collective_against_numpy(name, backend, n):
    fn, want = COLLECTIVES[name]
    # per-device x of length n: psum_scatter's and ppermute's sizes follow the devices
    xs = data(n, n)
    got = jitlib.pmap(fn, axis_name="i", backend=backend)(xs)
    for k in range(n):
        np.testing.assert_allclose(got[k], want(xs, k), rtol=1e-12, atol=1e-12)


def test_psum_adds_in_device_order_bitwise(monkeypatch):
    monkeypatch.setenv("JITLIB_VIRTUAL_DEVICES", "4")
    xs = np.float32([[1e8], [1.0], [-1e8], [1.0]])
    for backend in BACKENDS:
        got = jitlib.pmap(lambda x: jnp.psum(x, "i"), axis_name="i", backend=backend)(xs)
        assert got.tolist() == [[1.0]] * 4   # ((1e8 + 1) - 1e8) + 1 in float32


def test_in_axes_none_and_out_axes(monkeypatch):
    monkeypatch.setenv("JITLIB_VIRTUAL_DEVICES", "2")
    xs, w = data(3, 2, seed=1), data(2)[0]
    f = jitlib.pmap(lambda x, w: x * w + jnp.psum(x, "i"), axis_name="i",
                    in_axes=(1, None), out_axes=1)
    got = f(xs, w)
    want = xs * w + xs.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_a_psum_of_a_constant_is_the_axis_size(n):
    got = jitlib.pmap(lambda x: x + jnp.psum(1.0, "i"), axis_name="i")(np.zeros(n))
    assert got.tolist() == [float(n)] * n


# -- a data-parallel training step: per-device grads, pmean, update

def _loss(w, x, y):
    return np.mean((x @ w - y) ** 2)


def _grad_numpy(w, x, y):
    return 2 * x.T @ (x @ w - y) / len(y)


@pytest.mark.parametrize("backend", BACKENDS)
def test_data_parallel_step_equals_one_device(backend, n):
    rng = np.random.default_rng(3)
    x, w = rng.standard_normal((8 * n, 3)), rng.standard_normal(3)
    y = x @ np.array([1.0, -2.0, 0.5])

    def step(w, x, y):
        g = jnp.pmean(jitlib.grad(_loss)(w, x, y), "i")
        return w - 0.1 * g, jnp.pmean(_loss(w, x, y), "i")

    shards = lambda a: a.reshape(n, -1, *a.shape[1:])   # noqa: E731
    new_w, loss = jitlib.pmap(step, axis_name="i", in_axes=(None, 0, 0),
                              backend=backend)(w, shards(x), shards(y))
    # equal shards: the mean of the shard means is the full batch's mean
    for k in range(n):
        np.testing.assert_allclose(new_w[k], w - 0.1 * _grad_numpy(w, x, y), rtol=1e-10)
        np.testing.assert_allclose(loss[k], _loss(w, x, y), rtol=1e-10)


@pytest.mark.parametrize("backend", BACKENDS)
def test_grad_through_collectives_as_jax(backend, monkeypatch):
    # d/dx_k of sum_j psum(x)_j^2 over devices: psum's transpose is psum, so each
    # device gets sum over devices of 2 * psum(x); all_gather's is psum_scatter.
    monkeypatch.setenv("JITLIB_VIRTUAL_DEVICES", "2")
    xs = data(2, 3, seed=4)

    def per_device(x):
        g1 = jitlib.grad(lambda v: np.sum(jnp.psum(v, "i") ** 2))(x)
        g2 = jitlib.grad(lambda v: np.sum(jnp.all_gather(v, "i")[1] * 3.0))(x)
        g3 = jitlib.grad(lambda v: np.sum(jnp.ppermute(v, "i", [(0, 1)]) * 5.0))(x)
        return g1, g2, g3

    g1, g2, g3 = jitlib.pmap(per_device, axis_name="i", backend=backend)(xs)
    total = xs.sum(axis=0)
    np.testing.assert_allclose(g1, np.stack([2 * 2 * total] * 2), rtol=1e-12)
    # device 1's x is gathered at [1] on both devices: 3 from each
    np.testing.assert_allclose(g2, np.stack([np.zeros(3), np.full(3, 6.0)]))
    # device 0 sends to 1; device 1 weighs what it receives by 5
    np.testing.assert_allclose(g3, np.stack([np.full(3, 5.0), np.zeros(3)]))


# -- the IR and the cpu backend's stages

def test_collectives_are_ir_ops_and_the_cpu_compiles_between_them(monkeypatch):
    monkeypatch.setenv("JITLIB_VIRTUAL_DEVICES", "2")
    f = jitlib.pmap(lambda x: np.exp(jnp.psum(np.sin(x), "i")) * 2.0, axis_name="i")
    xs = data(2, 5)
    np.testing.assert_allclose(f(xs)[0], np.exp(np.sin(xs).sum(axis=0)) * 2.0, rtol=1e-12)
    text = f.lower(xs).as_text()
    assert "f64[5] all_reduce(%0), axis_name=i, axis_size=2, reduction=sum" in text
    (executor, _), = f._cache.values()
    kernels = [e for e in executor.compiled if e is not None]
    assert len(kernels) == 2 and not any(e.fallbacks for e in kernels)
    assert [[i.op for i in s.collectives] for s in executor.stages] == [[], [Op.ALL_REDUCE]]


# -- errors

def test_devices_lists_the_virtual_devices(n):
    assert [d.id for d in jitlib.devices()] == list(range(n))
    assert jitlib.device_count() == n


def test_a_collective_outside_pmap_names_the_unbound_axis():
    with pytest.raises(NameError, match="unbound axis name: 'i'"):
        jnp.psum(np.ones(3), "i")
    with pytest.raises(errors.UnboundAxisError, match="unbound axis name: 'j'"):
        jitlib.pmap(lambda x: jnp.psum(x, "j"), axis_name="i")(np.ones((1, 2)))
    with pytest.raises(NameError, match="unbound axis name: 'i'"):
        jitlib.jit(lambda x: jnp.axis_index("i") + x)(np.ones(2))


def test_more_slices_than_devices_is_refused(monkeypatch):
    monkeypatch.setenv("JITLIB_VIRTUAL_DEVICES", "2")
    with pytest.raises(errors.ShapeError, match="size 4 needs 4 devices, but only 2"):
        jitlib.pmap(lambda x: x, axis_name="i")(np.ones((4, 3)))
    with pytest.raises(errors.ShapeError, match="devices of length 2 but the mapped axis "
                                                "has size 1"):
        jitlib.pmap(lambda x: x, devices=jitlib.devices())(np.ones((1, 3)))


def test_inconsistent_mapped_sizes_are_refused(monkeypatch):
    monkeypatch.setenv("JITLIB_VIRTUAL_DEVICES", "4")
    with pytest.raises(errors.ShapeError, match="inconsistent sizes"):
        jitlib.pmap(lambda x, y: x + y)(np.ones((2, 3)), np.ones((3, 3)))


def test_differentiating_pmax_is_refused(monkeypatch):
    monkeypatch.setenv("JITLIB_VIRTUAL_DEVICES", "2")
    f = jitlib.pmap(lambda x: jitlib.grad(lambda v: np.sum(jnp.pmax(v, "i")))(x),
                    axis_name="i")
    with pytest.raises(errors.UnsupportedError, match="differentiating pmax over axis 'i'"):
        f(np.ones((2, 3)))


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_collective_inside_a_loop_is_refused_with_the_reason(backend, monkeypatch):
    monkeypatch.setenv("JITLIB_VIRTUAL_DEVICES", "2")
    f = jitlib.pmap(lambda x: jnp.fori_loop(0, 3, lambda i, c: jnp.psum(c, "i"), x),
                    axis_name="i", backend=backend)
    with pytest.raises(errors.UnsupportedError, match="collective inside a while region"):
        f(np.ones((2, 3)))


@pytest.mark.parametrize("backend", BACKENDS)
def test_jvp_of_collectives_is_the_collective_of_the_tangents(backend, monkeypatch):
    monkeypatch.setenv("JITLIB_VIRTUAL_DEVICES", "2")
    xs, ts = data(2, 2, seed=5), data(2, 2, seed=6)

    def per_device(x, t):
        f = lambda v: jnp.all_gather(jnp.psum_scatter(np.outer(np.ones(2), v), "i"), "i")  # noqa
        return jitlib.jvp(lambda v: jnp.psum(v * v, "i") + f(v)[0], (x,), (t,))[1]

    got = jitlib.pmap(per_device, axis_name="i", backend=backend)(xs, ts)
    # psum(2 x t) + psum(t): every row of the scattered outer product is psum(v)
    want = (2 * xs * ts).sum(axis=0) + ts.sum(axis=0)
    np.testing.assert_allclose(got, np.stack([want, want]), rtol=1e-12)


def test_values_cross_several_stages_on_the_cpu(monkeypatch):
    # x's sine is read two collectives later, and axis_index in the last stage
    monkeypatch.setenv("JITLIB_VIRTUAL_DEVICES", "4")

    def per_device(x):
        s = np.sin(x)
        a = jnp.psum(s, "i")
        b = jnp.pmax(a * x, "i")
        return s * b + jnp.axis_index("i"), jnp.all_gather(b - s, "i")

    xs = data(4, 3, seed=7)
    f = jitlib.pmap(per_device, axis_name="i")
    got = f(xs)
    want = jitlib.pmap(per_device, axis_name="i", backend="interpreter")(xs)
    for g, w in zip(got, want):   # the cpu's sin may differ from NumPy's in the last ulp
        np.testing.assert_allclose(g, w, rtol=1e-14, atol=1e-15)
    (executor, _), = f._cache.values()
    assert len(executor.stages) == 4
    s = np.sin(xs)
    b = (s.sum(axis=0) * xs).max(axis=0)
    np.testing.assert_allclose(got[0], s * b + np.arange(4)[:, None], rtol=1e-12)
