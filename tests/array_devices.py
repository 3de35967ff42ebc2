"""Stand-ins for jitlib's CUDA device on a machine without a GPU.

`HostDevice`: device memory that is host memory, counting the copies to the host.
`InterpretedDevice`: HostDevice running the gpu backend's kernels under Triton's
interpreter, with the CUDA device's own `run_executable`. The fixture
`gpu_backend_on_host` makes one the gpu backend's device for a test.
"""
import ctypes

import numpy as np
import pytest

from jitlib.array import Array
from triton_marks import require_triton


class HostDevice:
    """Device memory that is host memory; counts the copies to the host."""

    ordinal = 0
    dlpack_stream = 1

    def __init__(self):
        self.to_host = 0
        self.ordered = []

    def __repr__(self):
        return "host"

    def empty(self, shape, dtype):
        buf = np.zeros(shape, dtype)
        return Array(buf.ctypes.data, shape, dtype, buf, self)

    def from_numpy(self, a):
        out = self.empty(a.shape, a.dtype)
        view(out)[...] = a
        return out

    def to_numpy(self, array):
        self.to_host += 1
        return view(array).copy()

    def copy(self, array):
        return self.from_numpy(view(array))

    def view(self, array, shape):
        return Array(array.data_ptr(), shape, array.dtype, array._keepalive, self)

    def reinterpret(self, array, shape, dtype):
        return Array(array.data_ptr(), shape, dtype, array._keepalive, self)

    def copy_into(self, dst, src):
        view(dst)[...] = view(src) if isinstance(src, Array) else src

    def order_before(self, stream):
        self.ordered.append(stream)


def view(array):
    """The host memory behind an Array of HostDevice, as an ndarray (no copy)."""
    raw = (ctypes.c_char * max(array.nbytes, 1)).from_address(array.data_ptr())
    return np.frombuffer(raw, array.dtype, count=array.size).reshape(array.shape)



class InterpretedDevice(HostDevice):
    """HostDevice running the gpu backend's kernels under Triton's interpreter, with the
    CUDA device's own `run_executable`: the jit path of the GPU, minus the GPU."""

    name = "host arrays (Triton interpreter)"
    interpreted = True

    def __init__(self):
        super().__init__()
        self.to_device = 0

    def from_numpy(self, a):
        self.to_device += 1
        # as the CUDA device: np.ascontiguousarray would make a 0-d array 1-d
        return super().from_numpy(np.asarray(a, order="C"))

    def launch(self, kernel, config, buffers):
        from jitlib.backends.triton.host import launch_interpreted
        launch_interpreted(kernel, config, buffers)

    def run_executable(self, executable, args):
        from jitlib.backends.triton.device import Device
        return Device.run_executable(self, executable, args)


@pytest.fixture
def gpu_backend_on_host(monkeypatch):
    require_triton()
    from jitlib import backends, eager
    from jitlib.backends.triton import TritonBackend
    device = InterpretedDevice()
    monkeypatch.setitem(backends._instances, "gpu", TritonBackend(device=device))
    # eager Array programs were compiled for the previous stand-in's device
    eager.clear_cache()
    yield device
    eager.clear_cache()

