"""np.fft on tracers: each transform is one `fft` op (XLA's: over trailing dims) between
the slicing or zero-padding `n`/`s` ask for and transposes that bring `axes` last.

The interpreter runs the op with NumPy's own pocketfft, so the default norm is NumPy's
answer bit for bit; norm="ortho" and "forward" scale the result afterwards (within an
ulp or two of NumPy's, which scales inside the transform). The cpu backend runs long 1-D
complex transforms in six steps on all cores (backends/llvm/host_fft.py): as accurate as
NumPy's, not its bits. The result dtype is the one
NumPy's loop picks (float32 and complex64 stay single precision, integers go double).
"""
import functools
import math

import numpy as np

from jitlib import errors
from jitlib.hlo import build as B
from jitlib.hlo import dtypes
from jitlib.hlo.ops import Op
from jitlib.trace import tracer as T
from jitlib.trace.functions._common import apply, finish, int_arg, tracer
from jitlib.trace.registry import implements, lookup

_NORMS = (None, "backward", "ortho", "forward")


@functools.lru_cache(maxsize=None)
def _result_dtype(kind, dtype):
    """The dtype NumPy's transform gives for an input of `dtype` (asked of NumPy)."""
    probe = {"FFT": np.fft.fft, "IFFT": np.fft.ifft, "RFFT": np.fft.rfft,
             "IRFFT": np.fft.irfft}[kind]
    return np.dtype(probe(np.zeros(4, dtype)).dtype)


def _fit(v, axis, n):
    """`v` cut or zero-padded along `axis` to length n, as NumPy does for n=/s=."""
    have = v.shape[axis]
    if n < have:
        limit = list(v.shape)
        limit[axis] = n
        return B.slice(v, [0] * v.ndim, limit)
    if n > have:
        zero = B.constant(np.zeros((), v.dtype))
        high = [0] * v.ndim
        high[axis] = n - have
        return B.pad(v, zero, [0] * v.ndim, high)
    return v


def _axes_and_lengths(x, s, axes, default_axes, inverse_real):
    """NumPy's _cook_nd_args: the transformed axes and each one's length."""
    if axes is None:
        axes = default_axes if s is None else range(-len(s), 0)
    axes = [T.normalize_axis(a, x.ndim) for a in axes]
    if len(set(axes)) != len(axes):
        raise errors.JitlibTypeError("np.fft: repeated axes are not supported inside jit",
                                     hint="transform each axis once")
    if s is None:
        s = [x.shape[a] for a in axes]
        if inverse_real and axes:
            s[-1] = 2 * (x.shape[axes[-1]] - 1)
    s = [int_arg(n, "an fft length") for n in s]
    if len(s) != len(axes):
        raise errors.ShapeError("np.fft: s and axes must have the same length",
                                hint="give one length per transformed axis")
    if any(n < 1 for n in s):
        raise errors.ShapeError(f"Invalid number of FFT data points ({min(s)}) specified.",
                                hint="lengths must be at least 1")
    return axes, s


def _transform(kind, a, s, axes, norm, out, fname, default_axes):
    if norm not in _NORMS:
        raise errors.JitlibTypeError(f'Invalid norm value {norm}; should be "backward", '
                                     '"ortho" or "forward".')
    x = tracer(a)
    if dtypes.is_bfloat16(x.dtype):
        raise errors.UnsupportedError(f"np.fft.{fname} of bfloat16 (NumPy has no loop "
                                      "for it)", hint="convert to float32 first")
    axes, lengths = _axes_and_lengths(x, s, axes, default_axes(x), kind == "IRFFT")
    if not axes:
        return finish(x, out, fname)
    if len(axes) > 3:
        raise errors.UnsupportedError(f"np.fft.{fname} over {len(axes)} axes (at most 3 "
                                      "inside jit)", hint="transform in steps of up to 3 axes")
    dt = _result_dtype(kind, np.dtype(x.dtype))
    work = dt if kind != "RFFT" else dtypes.part_type(dt)
    if kind == "IRFFT":
        work = dtypes.complex_type(dt)
    v = B.convert(x.instr, work)
    for a, n in zip(axes, lengths):
        v = _fit(v, a, n // 2 + 1 if kind == "IRFFT" and a == axes[-1] else n)
    rest = [d for d in range(x.ndim) if d not in axes]
    perm = rest + axes
    v = B.transpose(v, perm)
    r = B.make(Op.FFT, [v], dict(fft_type=kind, fft_length=tuple(lengths)))
    r = B.transpose(r, [perm.index(d) for d in range(x.ndim)])
    result = _normalize(T.Tracer(r), kind, norm, math.prod(lengths))
    return finish(result, out, fname)


def _normalize(y, kind, norm, n):
    """The XLA op's scaling (1/n on the inverse) turned into norm's."""
    inverse = kind in ("IFFT", "IRFFT")
    factor = {None: 1.0, "backward": 1.0, "ortho": math.sqrt(n) if inverse else 1 / math.sqrt(n),
              "forward": float(n) if inverse else 1.0 / n}[norm]
    if factor == 1.0:
        return y
    part = dtypes.part_type(y.dtype) if dtypes.is_complex(y.dtype) else y.dtype
    scale = T.Tracer(B.constant(np.array(factor, part)))
    return T.Tracer(B.convert(apply(np.multiply, y, scale).instr, y.dtype))


def _one_axis(axis):
    return lambda x: [axis]


def _last_two(x):
    return [-2, -1]


def _every_axis(x):
    return list(range(x.ndim))


def _register(kind, one, two, many):
    @implements(getattr(np.fft, one), name=f"fft.{one}")
    def one_d(a, n=None, axis=-1, norm=None, out=None):
        s = None if n is None else [n]
        return _transform(kind, a, s, [axis], norm, out, one, _one_axis(axis))

    @implements(getattr(np.fft, two), name=f"fft.{two}")
    def two_d(a, s=None, axes=(-2, -1), norm=None, out=None):
        return _transform(kind, a, s, axes, norm, out, two, _last_two)

    @implements(getattr(np.fft, many), name=f"fft.{many}")
    def n_d(a, s=None, axes=None, norm=None, out=None):
        return _transform(kind, a, s, axes, norm, out, many, _every_axis)

    for fn, name in ((one_d, one), (two_d, two), (n_d, many)):
        fn.__name__ = fn.__qualname__ = name
        fn.__doc__ = (f"the fft op ({kind}) over the transformed axes, moved last; "
                      "n/s cut or zero-pad, norm scales after")


_register("FFT", "fft", "fft2", "fftn")
_register("IFFT", "ifft", "ifft2", "ifftn")
_register("RFFT", "rfft", "rfft2", "rfftn")
_register("IRFFT", "irfft", "irfft2", "irfftn")


def _shift(x, axes, sign, fname):
    x = tracer(x)
    if axes is None:
        axes = list(range(x.ndim))
    elif isinstance(axes, (int, np.integer)):
        axes = [axes]
    axes = [T.normalize_axis(a, x.ndim) for a in axes]
    shifts = [sign * (x.shape[a] // 2) for a in axes]
    return lookup("roll")(x, shifts, axes)


@implements(np.fft.fftshift, name="fft.fftshift")
def fftshift(x, axes=None):
    """np.roll by half of each axis (zero frequency to the centre)."""
    return _shift(x, axes, 1, "fftshift")


@implements(np.fft.ifftshift, name="fft.ifftshift")
def ifftshift(x, axes=None):
    """np.roll back by half of each axis (fftshift's inverse)."""
    return _shift(x, axes, -1, "ifftshift")
