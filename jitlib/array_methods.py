"""What user code does with a `jitlib.Array`, as with a NumPy array.

Operators come from NumPy's `NDArrayOperatorsMixin`, which turns each into its ufunc
(`a + b` is `np.add(a, b)`, `a += b` is `np.add(a, b, out=(a,))`); ufuncs and NumPy
functions reach `__array_ufunc__` and `__array_function__`, which run them on the device
(jitlib/eager.py). So results stay Arrays, and in-place operators write into the Array's
memory, as NumPy writes into an ndarray: every reference to it sees the new values.

What needs a Python object (`float(a)`, `bool(a)`, `a.item()`, `a.tolist()`, `print(a)`)
copies the Array to the host, as `np.asarray(a)` does.
"""
import math
from typing import Any, Iterator

import numpy as np
from numpy.lib.mixins import NDArrayOperatorsMixin


class ArrayMethods(NDArrayOperatorsMixin):
    """The NumPy-like surface of `jitlib.Array` (the class adds memory and DLPack)."""

    __slots__ = ()
    shape: tuple[int, ...]
    dtype: np.dtype[Any]
    _device: Any

    # -- NumPy's protocols: everything runs on the device

    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any,
                        **kwargs: Any) -> Any:
        from jitlib.eager import array_ufunc
        return array_ufunc(ufunc, method, inputs, kwargs)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        from jitlib.eager import array_function
        return array_function(func, types, args, kwargs)

    def __getitem__(self, index: Any) -> Any:
        from jitlib.array_index import getitem
        return getitem(self, index)   # type: ignore[arg-type]

    def __setitem__(self, index: Any, value: Any) -> None:
        from jitlib.array_index import setitem
        setitem(self, index, value)   # type: ignore[arg-type]

    def __iter__(self) -> Iterator[Any]:
        if not self.shape:
            raise TypeError("iteration over a 0-d jitlib.Array")
        for i in range(self.shape[0]):
            yield self[i]

    def __contains__(self, value: Any) -> bool:
        return bool((self == value).any())

    # -- to Python objects, through the host

    def __bool__(self) -> bool:
        return bool(self._host())

    def __float__(self) -> float:
        return float(self._host())

    def __int__(self) -> int:
        return int(self._host())

    def __complex__(self) -> complex:
        return complex(self._host())

    def __index__(self) -> int:
        return self._host().__index__()

    def __format__(self, spec: str) -> str:
        return format(self._host(), spec)

    def __str__(self) -> str:
        return str(self._host())

    def item(self, *args: Any) -> Any:
        """The element as a Python number (a host copy), as `ndarray.item`."""
        return self._host().item(*args)

    def tolist(self) -> Any:
        """Nested Python lists of Python numbers (a host copy), as `ndarray.tolist`."""
        return self._host().tolist()

    def _host(self) -> np.ndarray[Any, Any]:
        return np.asarray(self)

    # -- views: same memory, another shape (an Array is always C-contiguous)

    def reshape(self, *shape: Any, order: str = "C") -> Any:
        """The same memory seen with another shape (no copy), as NumPy's view."""
        if order != "C":
            raise NotImplementedError("jitlib.Array reshapes in C order only")
        if len(shape) == 1 and not isinstance(shape[0], (int, np.integer)):
            shape = tuple(shape[0])
        return self._view(_resolved_shape(tuple(shape), self.shape))

    def ravel(self, order: str = "C") -> Any:
        return self.reshape(-1, order=order)

    def _view(self, shape: tuple[int, ...]) -> Any:
        from jitlib.array import Array
        this: Array = self   # type: ignore[assignment]
        return Array(this.data_ptr(), shape, this.dtype, this, this.device)

    # -- copies

    def astype(self, dtype: Any, copy: bool = True) -> Any:
        """The values converted to `dtype`, on the device, with NumPy's conversion rules."""
        if not copy and np.dtype(dtype) == self.dtype:
            return self
        from jitlib.eager import call
        return call("astype", _astype, (self, np.dtype(dtype)), {})

    def flatten(self) -> Any:
        return self.ravel().copy()

    @property
    def T(self) -> Any:
        return np.transpose(self)   # type: ignore[call-overload]

    @property
    def mT(self) -> Any:
        return np.matrix_transpose(self)   # type: ignore[call-overload]

    # -- methods that are NumPy functions (each runs as one on the device)

    def transpose(self, *axes: Any) -> Any:
        axes_arg = axes[0] if len(axes) == 1 else (axes or None)
        return np.transpose(self, axes_arg)   # type: ignore[call-overload]

    def sum(self, *args: Any, **kwargs: Any) -> Any:
        return np.sum(self, *args, **kwargs)   # type: ignore[call-overload]

    def prod(self, *args: Any, **kwargs: Any) -> Any:
        return np.prod(self, *args, **kwargs)   # type: ignore[call-overload]

    def mean(self, *args: Any, **kwargs: Any) -> Any:
        return np.mean(self, *args, **kwargs)   # type: ignore[call-overload]

    def std(self, *args: Any, **kwargs: Any) -> Any:
        return np.std(self, *args, **kwargs)   # type: ignore[call-overload]

    def var(self, *args: Any, **kwargs: Any) -> Any:
        return np.var(self, *args, **kwargs)   # type: ignore[call-overload]

    def max(self, *args: Any, **kwargs: Any) -> Any:
        return np.max(self, *args, **kwargs)   # type: ignore[call-overload]

    def min(self, *args: Any, **kwargs: Any) -> Any:
        return np.min(self, *args, **kwargs)   # type: ignore[call-overload]

    def argmax(self, *args: Any, **kwargs: Any) -> Any:
        return np.argmax(self, *args, **kwargs)   # type: ignore[call-overload]

    def argmin(self, *args: Any, **kwargs: Any) -> Any:
        return np.argmin(self, *args, **kwargs)   # type: ignore[call-overload]

    def any(self, *args: Any, **kwargs: Any) -> Any:
        return np.any(self, *args, **kwargs)   # type: ignore[call-overload]

    def all(self, *args: Any, **kwargs: Any) -> Any:
        return np.all(self, *args, **kwargs)   # type: ignore[call-overload]

    def cumsum(self, *args: Any, **kwargs: Any) -> Any:
        return np.cumsum(self, *args, **kwargs)   # type: ignore[call-overload]

    def clip(self, *args: Any, **kwargs: Any) -> Any:
        return np.clip(self, *args, **kwargs)   # type: ignore[call-overload]

    def round(self, *args: Any, **kwargs: Any) -> Any:
        return np.round(self, *args, **kwargs)   # type: ignore[call-overload]

    def squeeze(self, *args: Any, **kwargs: Any) -> Any:
        return np.squeeze(self, *args, **kwargs)   # type: ignore[call-overload]

    def swapaxes(self, axis1: int, axis2: int) -> Any:
        return np.swapaxes(self, axis1, axis2)   # type: ignore[call-overload]

    def dot(self, other: Any) -> Any:
        return np.dot(self, other)   # type: ignore[call-overload]


def _astype(x: Any, dtype: Any) -> Any:
    return x.astype(dtype)


def _resolved_shape(shape: tuple[Any, ...], old: tuple[int, ...]) -> tuple[int, ...]:
    """`shape` with its -1 filled in, or NumPy's ValueError where it does not fit."""
    dims = [int(d) for d in shape]
    size = math.prod(old)
    unknown = [i for i, d in enumerate(dims) if d == -1]
    known = math.prod(d for d in dims if d != -1)
    if len(unknown) > 1:
        raise ValueError("can only specify one unknown dimension")
    if any(d < -1 for d in dims):
        raise ValueError("negative dimensions not allowed")
    if unknown and known and size % known == 0:
        dims[unknown[0]] = size // known
    if math.prod(dims) != size or (unknown and known == 0):
        raise ValueError(f"cannot reshape array of size {size} into shape "
                         f"{tuple(shape)}")
    return tuple(dims)


__all__ = ["ArrayMethods"]
