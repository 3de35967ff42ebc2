"""jitlib: a tracing JIT for NumPy-style Python.

    import jitlib

    @jitlib.jit
    def f(x, w):
        return np.maximum(x @ w, 0.0)

Public names are re-exported here; `jitlib.numpy` is the jax.numpy-like namespace.
"""
__version__ = "0.1.0"

from jitlib import buckets, config, errors, random, tree  # noqa: E402
from jitlib.api import CacheInfo, Jitted, Lowered, jit, make_ir  # noqa: E402
from jitlib.array import Array, from_dlpack  # noqa: E402
from jitlib.transfer import device_get, device_put  # noqa: E402
from jitlib.errors import (  # noqa: E402
    JitlibError, JitlibTypeError, ShapeError, TracerConversionError, UnsupportedError)
from jitlib.transforms.batching_api import vmap  # noqa: E402
from jitlib.parallel.devices import device_count, devices  # noqa: E402
from jitlib.parallel.pmap import pmap  # noqa: E402
from jitlib.transforms.autodiff import (  # noqa: E402
    grad, hessian, jacfwd, jacrev, jvp, value_and_grad, vjp)

__all__ = [
    "jit", "make_ir", "Jitted", "Lowered", "CacheInfo", "errors", "random", "tree", "buckets",
    "Array", "from_dlpack", "device_put", "device_get", "config",
    "JitlibError", "JitlibTypeError", "ShapeError", "TracerConversionError",
    "UnsupportedError", "vmap", "pmap", "devices", "device_count",
    "grad", "value_and_grad", "vjp", "jvp", "jacfwd", "jacrev", "hessian",
]
