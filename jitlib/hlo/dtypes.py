"""Element types of the IR: NumPy dtypes under short, printable names.

Promotion is NumPy 2's own (NEP 50): we ask `np.result_type`, passing Python
scalars as the weak values they are, so traced code promotes exactly as eager
NumPy does.
"""
import math
import sys

import numpy as np

_NAMES = {
    np.dtype(np.bool_): "bool",
    np.dtype(np.int8): "i8", np.dtype(np.int16): "i16",
    np.dtype(np.int32): "i32", np.dtype(np.int64): "i64",
    np.dtype(np.uint8): "u8", np.dtype(np.uint16): "u16",
    np.dtype(np.uint32): "u32", np.dtype(np.uint64): "u64",
    np.dtype(np.float16): "f16",
    np.dtype(np.float32): "f32", np.dtype(np.float64): "f64",
    np.dtype(np.complex64): "c64", np.dtype(np.complex128): "c128",
}
_BY_NAME = {name: dt for dt, name in _NAMES.items()}
_DTYPE_CLASSES = {type(dt) for dt in _NAMES}

# bfloat16 is ml_dtypes', whose import takes half a second with NumPy 2.4 (it registers
# thousands of ufunc loops), five times the rest of `import jitlib`. So it is loaded on
# first need: a bfloat16 dtype or name reaching `canonicalize`, `from_name("bf16")`, or
# the attribute `bfloat16` of this module. Until then no array can have that dtype, and
# the tables below hold the other dtypes only; `_load_bfloat16` adds it to each.
_BF16_NAMES = ("bf16", "bfloat16")
_bfloat16 = None
IR_NAMES = ("bool", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f16", "bf16", "f32",
            "f64", "c64", "c128")   # every dtype's, bf16 included before it is loaded
SUPPORTED_NAMES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                   "uint64", "float16", "bfloat16", "float32", "float64", "complex64",
                   "complex128")   # for messages: what `canonicalize` accepts

SUPPORTED = tuple(_NAMES)
REAL = tuple(dt for dt in SUPPORTED if dt.kind != "c")   # bool, integers and floats
FLOATS = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64))
SIGNED = tuple(np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64))
UNSIGNED = tuple(np.dtype(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64))
INTEGERS = SIGNED + UNSIGNED
COMPLEX = (np.dtype(np.complex64), np.dtype(np.complex128))
# each complex type and the float type of its real and imaginary parts
_PARTS = {COMPLEX[0]: np.dtype(np.float32), COMPLEX[1]: np.dtype(np.float64)}
_WHOLE = {part: whole for whole, part in _PARTS.items()}
BOOL = np.dtype(np.bool_)
INDEX = np.dtype(np.int64)   # NumPy's intp on 64-bit: argmax, sizes, indices


def _load_bfloat16():
    """Import ml_dtypes and make bfloat16 one of the supported dtypes."""
    global _bfloat16, SUPPORTED, REAL, FLOATS
    if _bfloat16 is None:
        import ml_dtypes
        bf16 = np.dtype(ml_dtypes.bfloat16)
        # in its place after float16, so every table keeps one order whenever it loads
        names = list(_NAMES.items())
        at = next(i for i, (_, n) in enumerate(names) if n == "f16") + 1
        _NAMES.clear()
        _NAMES.update(names[:at] + [(bf16, "bf16")] + names[at:])
        _BY_NAME["bf16"] = bf16
        _DTYPE_CLASSES.add(type(bf16))
        SUPPORTED = tuple(_NAMES)
        REAL = tuple(dt for dt in SUPPORTED if dt.kind != "c")
        FLOATS = (np.dtype(np.float16), bf16, np.dtype(np.float32), np.dtype(np.float64))
        _bfloat16 = bf16
    return _bfloat16


def __getattr__(attr):
    if attr == "bfloat16":
        return _load_bfloat16()
    raise AttributeError(f"module {__name__!r} has no attribute {attr!r}")


def is_bfloat16(dtype) -> bool:
    """Whether `dtype` is ml_dtypes' bfloat16, without importing ml_dtypes for a no."""
    if _bfloat16 is None:
        if "ml_dtypes" not in sys.modules:
            return False     # nothing can have that dtype yet
        _load_bfloat16()
    return dtype == _bfloat16


class _NarrowFloats:
    """float16 and bfloat16 (`dt in NARROW_FLOATS`): stored narrow, computed in float32."""

    def __contains__(self, dtype):
        return dtype == _F16 or is_bfloat16(dtype)


_F16 = np.dtype(np.float16)
NARROW_FLOATS = _NarrowFloats()


if "ml_dtypes" in sys.modules:   # already paid for: arrays may have it
    _load_bfloat16()


def canonicalize(dtype) -> np.dtype:
    """A supported np.dtype from anything np.dtype accepts, or a short IR name."""
    if dtype.__class__ in _DTYPE_CLASSES and dtype in _NAMES:   # the hot case: already one
        return dtype
    if isinstance(dtype, str) and dtype in _BY_NAME:
        return _BY_NAME[dtype]
    if _bfloat16 is None and (dtype in _BF16_NAMES if isinstance(dtype, str)
                              else "ml_dtypes" in sys.modules):
        _load_bfloat16()   # asked for by name, or a value of ml_dtypes' may be here
        return canonicalize(dtype)
    dt = np.dtype(dtype)
    if not dt.isnative:
        dt = dt.newbyteorder("=")   # values are what count: byte order is storage only
    if dt not in _NAMES:
        raise TypeError(f"jitlib does not support dtype {dt}; supported: "
                        + ", ".join(SUPPORTED_NAMES))
    return dt


def nbytes(shape, dtype) -> int:
    """Bytes of a C-contiguous array of `shape` and `dtype`."""
    return math.prod(shape) * np.dtype(dtype).itemsize


def is_supported(dtype) -> bool:
    try:
        canonicalize(dtype)
    except TypeError:
        return False
    return True


def name(dtype) -> str:
    """The short IR name: f32, i64, bool, bf16, ..."""
    return _NAMES[canonicalize(dtype)]


def from_name(short: str) -> np.dtype:
    if short == "bf16":
        return _load_bfloat16()
    try:
        return _BY_NAME[short]
    except KeyError:
        raise ValueError(f"unknown dtype name {short!r}; known: {', '.join(_BY_NAME)}") from None


def is_float(dtype) -> bool:
    return canonicalize(dtype) in FLOATS


def is_complex(dtype) -> bool:
    return canonicalize(dtype) in COMPLEX


def is_inexact(dtype) -> bool:
    """Float or complex: the dtypes of NumPy's transcendental loops."""
    dt = canonicalize(dtype)
    return dt in FLOATS or dt in COMPLEX


def part_type(dtype) -> np.dtype:
    """The float dtype of a complex dtype's real and imaginary parts (c64 -> f32)."""
    return _PARTS[canonicalize(dtype)]


def complex_type(dtype) -> np.dtype:
    """The complex dtype whose parts are `dtype` (f32 -> c64, f64 -> c128)."""
    dt = canonicalize(dtype)
    if dt not in _WHOLE:
        raise TypeError(f"no complex dtype has {dt} parts; complex values are c64 or c128")
    return _WHOLE[dt]


def is_integer(dtype) -> bool:
    return canonicalize(dtype) in INTEGERS


def is_signed(dtype) -> bool:
    return canonicalize(dtype) in SIGNED


def is_unsigned(dtype) -> bool:
    return canonicalize(dtype) in UNSIGNED


def is_bool(dtype) -> bool:
    return canonicalize(dtype) == BOOL


def result_type(*args) -> np.dtype:
    """NumPy 2 promotion. Python bool/int/float/complex arguments are weak."""
    return canonicalize(np.result_type(*args))


def accumulation_type(dtype) -> np.dtype:
    """The dtype NumPy's sum/prod/cumsum give for `dtype` by default.

    Small integers and bool accumulate in the platform integer (int64/uint64);
    floats keep their type.
    """
    dt = np.dtype(dtype)
    if dt == BOOL or (dt in SIGNED and dt.itemsize < 8):
        return np.dtype(np.int64)
    if dt in UNSIGNED and dt.itemsize < 8:
        return np.dtype(np.uint64)
    return dt


def mean_type(dtype) -> np.dtype:
    """The dtype of np.mean: integers and bool give float64, complex stays complex."""
    dt = np.dtype(dtype)
    return dt if dt in FLOATS or dt in COMPLEX else np.dtype(np.float64)


def finfo(dtype):
    if is_bfloat16(dtype):
        import ml_dtypes
        return ml_dtypes.finfo(dtype)
    return np.finfo(dtype)


def iinfo(dtype):
    return np.iinfo(dtype)


def lowest(dtype):
    """The identity of max: -inf for floats, the minimum for integers, False for bool
    (complex values have no order in the IR: -inf, as the real part's)."""
    dt = np.dtype(dtype)
    if dt in FLOATS or dt in COMPLEX:
        return -np.inf
    if dt == BOOL:
        return False
    return int(np.iinfo(dt).min)


def highest(dtype):
    dt = np.dtype(dtype)
    if dt in FLOATS or dt in COMPLEX:
        return np.inf
    if dt == BOOL:
        return True
    return int(np.iinfo(dt).max)
