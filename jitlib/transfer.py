"""`device_put` and `device_get`: moving pytrees of arrays between host and device, as in
JAX. The device is the gpu backend's (jitlib's CUDA GPU); where the default backend is
not "gpu", the host is the device and `device_put` gives NumPy arrays.
"""
from typing import Any

import numpy as np

from jitlib import config, tree
from jitlib.array import Array


def default_device() -> Any:
    """The device `device_put` fills by default: the gpu backend's, or None (the host)
    where the default backend is another."""
    if config.default_backend() != "gpu":
        return None
    from jitlib.backends import get_backend
    return get_backend("gpu").device


def device_put(x: Any, device: Any = None) -> Any:
    """`x` (an array, a scalar, or a pytree of them) copied to `device`: each leaf becomes
    a `jitlib.Array` there, an Array already there stays as it is.

    `device`: an Array's `.device`; by default the gpu backend's device where "gpu" is
    the default backend, else the host, where the leaves become NumPy arrays (copies, as
    JAX's device_put on its CPU gives new arrays).

    >>> a = jitlib.device_put(np.arange(3.0))     # doctest: +SKIP
    >>> a.device, (a * 2).sum().item()            # doctest: +SKIP
    (cuda:0, 6.0)
    """
    if device is None:
        device = default_device()
    return tree.tree_map(lambda leaf: _put(leaf, device), x)


def _put(leaf: Any, device: Any) -> Any:
    if isinstance(leaf, Array):
        if device is None:
            return np.asarray(leaf)
        if leaf.device is not device:
            from jitlib.array import DeviceError
            raise DeviceError(f"device_put: the Array lives on {leaf.device}, not on "
                              f"{device}; jitlib moves arrays between a GPU and the host "
                              "only", hint="device_get it first, then device_put")
        return leaf
    # the device copy is the new array; only the host needs one of its own
    host = np.array(leaf, copy=True) if device is None else np.asarray(leaf)
    if host.dtype == object:
        from jitlib.errors import JitlibTypeError
        raise JitlibTypeError(f"device_put takes arrays and numbers, got a "
                              f"{type(leaf).__name__}")
    return host if device is None else device.from_numpy(host)


def device_get(x: Any) -> Any:
    """`x` with every `jitlib.Array` in it copied to a host NumPy array; other leaves (NumPy
    arrays, numbers) are returned as they are.

    >>> np.asarray(jitlib.device_get({"w": jitlib.device_put(np.ones(2))})["w"])  # doctest: +SKIP
    array([1., 1.])
    """
    if isinstance(x, Array):   # the common case, without walking a tree
        return np.asarray(x)
    if isinstance(x, np.ndarray):
        return x
    return tree.tree_map(lambda leaf: np.asarray(leaf) if isinstance(leaf, Array) else leaf,
                         x)


__all__ = ["device_put", "device_get", "default_device"]
