"""Counted loops replayed as CUDA graphs (jitlib/backends/triton/graphs.py), on a stand-in
device whose "graph" records the kernels and copies queued during a capture and runs
them again at each launch, as a CUDA graph replays fixed addresses: a trip that read
memory a later trip overwrote, or a carry left in a reused arena, gives wrong numbers
here as it would on the GPU. The same loops on the H200: test_triton_gpu.py.
"""
import numpy as np
import pytest

import jitlib
import jitlib.numpy as jnp
from jitlib.backends.triton import graphs
from array_devices import InterpretedDevice, view


class RecordingDevice(InterpretedDevice):
    """InterpretedDevice that can capture: work queued inside `capture` is recorded."""

    def __init__(self):
        super().__init__()
        self._recording = None
        self.graphs_launched = 0

    def capturing(self):
        return self._recording is not None

    def capture(self, take):
        device = self

        class Capture:
            def __enter__(self):
                self.take, self.graph = take, None
                device._recording = []
                return self

            def __exit__(self, *exc):
                self.graph, device._recording = device._recording, None
                return False
        return Capture()

    def launch_graph(self, graph):
        self.graphs_launched += 1
        for step in graph:
            step()

    def _queue(self, step):
        if self._recording is None:
            step()
        else:
            self._recording.append(step)

    def empty(self, shape, dtype):
        if self._recording is not None:
            return self._capture_take(shape, dtype)
        return super().empty(shape, dtype)

    def from_numpy(self, a):
        assert self._recording is None, "a host copy inside a capture"
        return super().from_numpy(a)

    def launch(self, kernel, config, buffers):
        self._queue(lambda: InterpretedDevice.launch(self, kernel, config, buffers))

    def copy(self, array):
        out = self.empty(array.shape, array.dtype)
        self._queue(lambda: view(out).__setitem__(..., view(array)))
        return out

    def copy_into(self, dst, src):
        self._queue(lambda: view(dst).__setitem__(..., view(src)))


@pytest.fixture
def dev(monkeypatch):
    from jitlib import backends, eager
    from jitlib.backends.triton import TritonBackend
    device = RecordingDevice()
    real_capture = device.capture

    def capture(take):
        device._capture_take = take
        return real_capture(take)
    device.capture = capture
    monkeypatch.setitem(backends._instances, "gpu", TritonBackend(device=device))
    eager.clear_cache()
    yield device
    eager.clear_cache()


def jacobi(a, steps):
    def sweep(i, a):
        b = a.copy()
        b[1:-1, 1:-1] = 0.25 * (a[1:-1, :-2] + a[1:-1, 2:] + a[:-2, 1:-1] + a[2:, 1:-1])
        return b
    return jnp.fori_loop(0, steps, sweep, a)


def passed_on(a, b, steps):
    # each trip passes the last trip's value on, and reads the one before reversed: the
    # arena it lived in is written again by the trip that reads it (5000 elements: the
    # interpreter runs the kernel in several blocks, so a clobbered read shows)
    return jnp.fori_loop(0, steps, lambda i, c: (c[1], c[0][::-1] * 0.5 + c[1]), (a, b))


def swapped(a, b, x, steps):
    # two carried arguments trade places each trip: after an odd number of trips each
    # slot's final value sits in the other slot
    return jnp.fori_loop(0, steps, lambda i, c: (c[1], c[0], c[2] * 0.5 + c[0]), (a, b, x))


def with_invariant(x, w, steps):
    # w rides along unchanged; x's new value depends on it
    return jnp.fori_loop(0, steps, lambda i, c: (c[0] * 0.5 + c[1], c[1]), (x, w))


def eager(fn, *args):
    return jitlib.jit(fn, backend="interpreter", static_argnums=(len(args) - 1,))(*args)


@pytest.mark.parametrize("max_kernels", [4096, 3])   # one graph, or several and a rest
@pytest.mark.parametrize("case", ["jacobi", "passed_on", "swapped", "invariant"])
def test_graph_replays_match_the_host_driven_loop(dev, monkeypatch, max_kernels, case):
    monkeypatch.setattr(graphs, "MAX_KERNELS", max_kernels)
    rng = np.random.default_rng(0)
    fn, make = {
        "jacobi": (jacobi, lambda: (rng.standard_normal((6, 7)), 5)),
        "passed_on": (passed_on, lambda: (rng.standard_normal(5000),
                                           rng.standard_normal(5000), 7)),
        "swapped": (swapped, lambda: (rng.standard_normal(4), rng.standard_normal(4),
                                      rng.standard_normal(4), 7)),
        "invariant": (with_invariant, lambda: (rng.standard_normal(3),
                                                rng.standard_normal(3), 6)),
    }[case]
    f = jitlib.jit(fn, backend="gpu", static_argnums=(len(make()) - 1,))
    for call in range(3):    # the first call drives the loop, later ones replay graphs
        args = make()
        got = jitlib.tree.leaves(f(*args))
        want = jitlib.tree.leaves(eager(fn, *args))
        for g, w in zip(got, want):
            np.testing.assert_allclose(view(g), w, rtol=1e-12, err_msg=f"call {call}")
    assert dev.graphs_launched >= 2


def test_a_body_with_a_host_fallback_stays_host_driven(dev, monkeypatch):
    monkeypatch.setattr(graphs, "graphable", lambda body: "not a generated kernel")
    f = jitlib.jit(jacobi, backend="gpu", static_argnums=(1,))
    a = np.random.default_rng(1).standard_normal((5, 5))
    for _ in range(2):
        np.testing.assert_allclose(view(f(a, 3)), eager(jacobi, a, 3), rtol=1e-12)
    assert dev.graphs_launched == 0
