"""`jitlib.Array`, an array in GPU memory, and DLPack exchange with other libraries.

An Array is a device pointer, a shape and a dtype (always C-contiguous), plus the object
that keeps its memory alive: a pool allocation of jitlib's CUDA device, returned to the pool
when the last Array using it goes, or another library's DLPack tensor, whose deleter runs
then. Results of the "gpu" backend are Arrays, so chained jitted calls stay on the device;
`np.asarray(a)` copies to the host.

DLPack goes both ways without copies: `a.__dlpack__()` hands out a capsule over the same
memory (`torch.from_dlpack(a)`, `jax.dlpack.from_dlpack(a)`, `cupy.from_dlpack(a)`), and
`jitlib.from_dlpack(x)` wraps any producer's GPU tensor. The capsule structures are built
with ctypes, so this module needs neither a compiler nor CUDA at import time; the device is
reached only when memory is touched.
"""
import ctypes
import math
from typing import Any

import numpy as np

from jitlib.array_methods import ArrayMethods
from jitlib.errors import JitlibError, JitlibTypeError
from jitlib.hlo import dtypes


class DeviceError(JitlibError, RuntimeError):
    """No usable CUDA GPU, or a CUDA driver call failed."""


# ---------------------------------------------------------------------------- the Array

class Array(ArrayMethods):
    """An N-d array in the GPU memory of jitlib's CUDA device.

    `shape`, `dtype`, `ndim`, `size`, `nbytes`; `np.asarray(a)` copies it to the host;
    `data_ptr()` is the device address (what Triton takes for a pointer argument).
    Results of ``backend="gpu"`` are Arrays, and behave as NumPy arrays: operators,
    indexing, ufuncs and NumPy functions run on the device (jitlib/array_methods.py), and
    what needs a Python object (`float(a)`, `print(a)`) copies to the host:

    >>> f = jitlib.jit(lambda x: x * 2.0, backend="gpu")   # doctest: +SKIP
    >>> a = f(np.arange(3.0))                              # doctest: +SKIP
    >>> a.shape, a.dtype, int(np.argmax(a[1:] * -1))       # doctest: +SKIP
    ((3,), dtype('float64'), 0)
    """

    __slots__ = ("_ptr", "shape", "dtype", "_keepalive", "_device", "__weakref__")
    shape: tuple[int, ...]
    dtype: np.dtype[Any]

    def __init__(self, ptr: int, shape: tuple[int, ...], dtype: Any, keepalive: Any,
                 device: Any) -> None:
        self._ptr = int(ptr)
        self.shape = tuple(int(d) for d in shape)
        self.dtype = np.dtype(dtype)
        self._keepalive = keepalive   # frees the memory when the last Array over it goes
        self._device = device

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    @property
    def device(self) -> Any:
        """jitlib's CUDA device this Array lives on."""
        return self._device

    def data_ptr(self) -> int:
        """The device address of the first element."""
        return self._ptr

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d jitlib.Array")
        return self.shape[0]

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray[Any, Any]:
        if copy is False:
            raise ValueError("a jitlib.Array lives on the GPU: np.asarray must copy it")
        host: np.ndarray[Any, Any] = self._device.to_numpy(self)
        return host if dtype is None else host.astype(dtype, copy=False)

    def copy(self) -> "Array":
        """A new Array with the same contents (a device-to-device copy)."""
        out: Array = self._device.copy(self)
        return out

    def block_until_ready(self) -> "Array":
        """Wait until the work that computes this Array has run (calls return before
        their kernels finish, as in JAX); returns the Array."""
        synchronize = getattr(self._device, "synchronize", None)
        if synchronize is not None:
            synchronize()
        return self

    def __repr__(self) -> str:
        type_str = f"{dtypes.name(self.dtype)}[{','.join(map(str, self.shape))}]"
        if self.size > 1000:
            return f"jitlib.Array({type_str} on {self._device})"
        body = np.array2string(np.asarray(self), separator=", ", prefix="jitlib.Array(")
        return f"jitlib.Array({body}, {type_str} on {self._device})"

    # -- DLPack, producer side

    def __dlpack_device__(self) -> tuple[int, int]:
        return (_DL_CUDA, self._device.ordinal)

    def __dlpack__(self, stream: int | None = None, *,
                   max_version: tuple[int, int] | None = None,
                   dl_device: tuple[int, int] | None = None, copy: bool | None = None) -> Any:
        """A DLPack capsule over this Array's memory (no copy).

        `stream` is the consumer's stream (DLPack: None or 1 the legacy default stream,
        2 the per-thread default stream, -1 none, else a CUstream handle): work jitlib
        queued on this Array is ordered before anything the consumer queues there.
        A consumer asking for `max_version >= (1, 0)` gets a versioned capsule.
        """
        if copy:
            raise BufferError("jitlib.Array exports its memory without copying (copy=True "
                              "asked for a copy)")
        if dl_device is not None and tuple(dl_device) != self.__dlpack_device__():
            raise BufferError(f"jitlib.Array lives on {self.__dlpack_device__()} and "
                              f"cannot be exported to device {tuple(dl_device)}")
        self._device.order_before(stream)
        versioned = max_version is not None and tuple(max_version) >= (1, 0)
        return _export(self, versioned)


def from_dlpack(x: Any) -> Array:
    """Wrap another library's GPU array (torch, jax, cupy: anything with `__dlpack__`) as a
    `jitlib.Array` over the same memory, without copying. The producer stays alive as long
    as the Array does.

    >>> a = jitlib.from_dlpack(torch.ones(3, device="cuda"))   # doctest: +SKIP
    >>> a.shape, a.dtype                                       # doctest: +SKIP
    ((3,), dtype('float32'))
    """
    if not hasattr(x, "__dlpack__") or not hasattr(x, "__dlpack_device__"):
        raise JitlibTypeError(
            f"from_dlpack takes an array with __dlpack__, got a {type(x).__name__}",
            hint="pass a torch, jax or cupy array that lives on the GPU")
    device_type, ordinal = x.__dlpack_device__()
    if int(device_type) not in (_DL_CUDA, _DL_CUDA_MANAGED):
        raise JitlibTypeError(
            f"from_dlpack wraps GPU memory without copying; this {type(x).__name__} lives "
            f"on DLPack device type {int(device_type)} ({_DL_DEVICE_NAMES.get(int(device_type), '?')})",
            hint="pass a host array straight to the jitted function (it is copied to the "
                 "GPU once), or move it to the GPU with its own library first")
    from jitlib.backends.triton.device import get_device
    device = get_device(int(ordinal))
    capsule = x.__dlpack__(stream=device.dlpack_stream)
    array: Array = _import(capsule, x, device)
    return array


# ---------------------------------------------------------------------------- DLPack ABI
# The structures of dlpack.h (v1.x), field for field.

_DL_CPU, _DL_CUDA, _DL_CUDA_HOST, _DL_CUDA_MANAGED = 1, 2, 3, 13
_DL_DEVICE_NAMES = {_DL_CPU: "CPU", _DL_CUDA: "CUDA", _DL_CUDA_HOST: "CUDA host",
                    _DL_CUDA_MANAGED: "CUDA managed"}
_DL_INT, _DL_UINT, _DL_FLOAT, _DL_BFLOAT, _DL_COMPLEX, _DL_BOOL = 0, 1, 2, 4, 5, 6
_FLAG_READ_ONLY = 1 << 0


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8),
                ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


class DLManagedTensor(ctypes.Structure):
    # deleter: void (*)(DLManagedTensor *), stored as a plain address
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p)]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [("version", DLPackVersion), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p), ("flags", ctypes.c_uint64),
                ("dl_tensor", DLTensor)]


_DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_CAPSULE_NAME = {False: b"dltensor", True: b"dltensor_versioned"}
_USED_NAME = b"used_dltensor"

# The capsule C API, with pointers passed as plain addresses: the capsule destructor runs
# while the capsule is being freed, when it must not be turned into a Python reference.
_PyCapsule_New = ctypes.pythonapi.PyCapsule_New
_PyCapsule_New.restype = ctypes.py_object
_PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_PyCapsule_IsValid = ctypes.pythonapi.PyCapsule_IsValid
_PyCapsule_IsValid.restype = ctypes.c_int
_PyCapsule_IsValid.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
_PyCapsule_GetPointer = ctypes.pythonapi.PyCapsule_GetPointer
_PyCapsule_GetPointer.restype = ctypes.c_void_p
_PyCapsule_GetPointer.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
_PyCapsule_SetName = ctypes.pythonapi.PyCapsule_SetName
_PyCapsule_SetName.restype = ctypes.c_int
_PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]


def dl_dtype(dtype):
    """(code, bits) of DLPack's DLDataType for a NumPy dtype."""
    dtype = np.dtype(dtype)
    if dtype == dtypes.BOOL:
        return _DL_BOOL, 8
    if dtypes.is_bfloat16(dtype):
        return _DL_BFLOAT, 16
    code = {"i": _DL_INT, "u": _DL_UINT, "f": _DL_FLOAT, "c": _DL_COMPLEX}.get(dtype.kind)
    if code is None or not dtypes.is_supported(dtype):
        raise JitlibTypeError(f"dtype {dtype} has no DLPack equivalent jitlib exports")
    return code, dtype.itemsize * 8


def numpy_dtype(code, bits, lanes):
    """The NumPy dtype of a DLDataType, or a JitlibTypeError for what jitlib lacks."""
    if (code, bits, lanes) == (_DL_BFLOAT, 16, 1):
        return dtypes.bfloat16
    dtype = _BY_DL_DTYPE.get((code, bits)) if lanes == 1 else None
    if dtype is None:
        raise JitlibTypeError(f"DLPack dtype (code={code}, bits={bits}, lanes={lanes}) is "
                              "not one jitlib supports",
                              hint="supported: " + ", ".join(dtypes.SUPPORTED_NAMES))
    return dtype


_BY_DL_DTYPE = {dl_dtype(d): d for d in dtypes.SUPPORTED}


# -- producer: one record per capsule, alive until the consumer's deleter (or the unused
# capsule's destructor) releases it

class _Export:
    """The memory of one exported capsule: the managed struct, its shape and strides, and
    the Array whose buffer the consumer now shares."""

    def __init__(self, array, versioned):
        n = array.ndim
        self.array = array
        self.shape = (ctypes.c_int64 * max(n, 1))(*array.shape)
        # explicit C-order strides in elements: older consumers read NULL differently
        strides, step = [], 1
        for d in reversed(array.shape):
            strides.append(step)
            step *= d
        self.strides = (ctypes.c_int64 * max(n, 1))(*reversed(strides))
        self.managed = (DLManagedTensorVersioned if versioned else DLManagedTensor)()
        t = self.managed.dl_tensor
        t.data = array.data_ptr() or None
        t.device = DLDevice(_DL_CUDA, array.device.ordinal)
        t.ndim = n
        code, bits = dl_dtype(array.dtype)
        t.dtype = DLDataType(code, bits, 1)
        t.shape = ctypes.cast(self.shape, ctypes.POINTER(ctypes.c_int64))
        t.strides = ctypes.cast(self.strides, ctypes.POINTER(ctypes.c_int64))
        t.byte_offset = 0
        if versioned:
            self.managed.version = DLPackVersion(1, 0)
            self.managed.flags = 0
        self.managed.deleter = ctypes.cast(_release_export, ctypes.c_void_p).value
        self.address = ctypes.addressof(self.managed)


_live_exports: dict[int, Any] = {}   # managed struct address -> _Export


@_DELETER
def _release_export(managed_address):
    # The consumer is done (or never took the capsule): let go of the Array. Runs from
    # foreign code at any time, interpreter shutdown included, so it must not raise.
    try:
        _live_exports.pop(managed_address, None)
    except Exception:
        pass


@_DELETER
def _capsule_destructor(capsule_address):
    # A capsule nobody consumed still has its original name: free what it holds.
    # A consumed one was renamed "used_dltensor*" and belongs to the consumer.
    try:
        for name in _CAPSULE_NAME.values():
            if _PyCapsule_IsValid(capsule_address, name):
                _release_export(_PyCapsule_GetPointer(capsule_address, name))
    except Exception:
        pass


def _export(array, versioned):
    record = _Export(array, versioned)
    _live_exports[record.address] = record
    return _PyCapsule_New(record.address, _CAPSULE_NAME[versioned],
                          ctypes.cast(_capsule_destructor, ctypes.c_void_p).value)


# -- consumer

class _Imported:
    """Keeps a consumed DLPack tensor alive: the producer object, and the managed struct
    whose deleter tells the producer we are done."""

    def __init__(self, managed_address, producer):
        self.managed_address = managed_address
        self.producer = producer

    def __del__(self):
        try:
            deleter = DLManagedTensor.from_address(self.managed_address).deleter
            if deleter:
                _DELETER(deleter)(self.managed_address)
        except Exception:
            pass   # interpreter shutdown: ctypes may already be gone


def _import(capsule, producer, device):
    name = _CAPSULE_NAME[False]
    if not _PyCapsule_IsValid(id(capsule), name):
        raise JitlibTypeError(
            f"{type(producer).__name__}.__dlpack__ returned no unused 'dltensor' capsule",
            hint="a DLPack capsule can be consumed only once; ask the producer for a new one")
    address = _PyCapsule_GetPointer(id(capsule), name)
    _PyCapsule_SetName(capsule, _USED_NAME)
    owner = _Imported(address, producer)   # from here on, dropping `owner` frees it
    t = DLManagedTensor.from_address(address).dl_tensor
    if t.device.device_type not in (_DL_CUDA, _DL_CUDA_MANAGED) \
            or t.device.device_id != device.ordinal:
        raise JitlibTypeError(f"the DLPack tensor is on device ({t.device.device_type}, "
                              f"{t.device.device_id}), not CUDA GPU {device.ordinal}")
    dtype = numpy_dtype(t.dtype.code, t.dtype.bits, t.dtype.lanes)
    shape = tuple(t.shape[i] for i in range(t.ndim))
    if t.strides and not is_c_contiguous(shape, [t.strides[i] for i in range(t.ndim)]):
        raise JitlibTypeError(
            f"from_dlpack got a strided {type(producer).__name__} (shape {shape}, strides "
            f"{[t.strides[i] for i in range(t.ndim)]} elements); jitlib.Array is C-contiguous",
            hint="make it contiguous first (torch: x.contiguous(), cupy: "
                 "cupy.ascontiguousarray(x))")
    return Array((t.data or 0) + t.byte_offset, shape, dtype, owner, device)


def is_c_contiguous(shape, strides):
    """Whether element strides describe a C-ordered dense layout; the stride of a
    dimension of size 1 does not matter, and nothing matters for an empty array."""
    if 0 in shape:
        return True
    step = 1
    for d, s in zip(reversed(shape), reversed(strides)):
        if d != 1 and s != step:
            return False
        step *= d
    return True


__all__ = ["Array", "from_dlpack", "DeviceError"]
