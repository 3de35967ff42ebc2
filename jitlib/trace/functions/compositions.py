"""NumPy functions that NumPy writes in terms of others jitlib traces, written the same way.

NumPy's own code for these starts with `asarray`, which a tracer cannot pass through, so
each is NumPy's algorithm again on tracers, step for step: the same products in the same
order (multi_dot's chain order and matrix_power's squarings come from shapes and
exponents, known while tracing), so results match eager NumPy to the bit where the
steps do.
"""
import operator

import numpy as np
from numpy.linalg import _linalg as numpy_linalg

from jitlib import errors
from jitlib.trace.functions._common import tracer
from jitlib.trace.functions.decompositions import check_matrices
from jitlib.trace.registry import implements


@implements(np.linalg.multi_dot, name="multi_dot")
def multi_dot(arrays, *, out=None):
    """The products of a chain in NumPy's cheapest order (its matrix-chain table, from the
    shapes); 1-d ends as a row and a column vector, as NumPy does."""
    if out is not None:
        raise errors.UnsupportedError("np.linalg.multi_dot(out=...) is not supported inside "
                                      "jit", hint="assign the result instead")
    arrays = [tracer(a) for a in arrays]
    n = len(arrays)
    if n < 2:
        raise errors.JitlibValueError("Expecting at least two arrays.",
                                      hint="multi_dot takes a list of two or more arrays")
    if n == 2:
        return np.dot(arrays[0], arrays[1])
    first, last = arrays[0].ndim, arrays[-1].ndim
    if first == 1:
        arrays[0] = arrays[0][None, :]
    if last == 1:
        arrays[-1] = arrays[-1][:, None]
    for a in arrays:
        if a.ndim != 2:
            raise errors.ShapeError(f"{a.ndim}-dimensional array given. Array must be "
                                    "two-dimensional", hint="multi_dot multiplies matrices "
                                    "(the first and last may be vectors)")
    if n == 3:
        result = numpy_linalg._multi_dot_three(*arrays)
    else:
        order = numpy_linalg._multi_dot_matrix_chain_order(arrays)
        result = numpy_linalg._multi_dot(arrays, order, 0, n - 1)
    if first == 1 and last == 1:
        return result[0, 0]
    return result.ravel() if first == 1 or last == 1 else result


@implements(np.linalg.matrix_power, name="matrix_power")
def matrix_power(a, n):
    """a to the integer power n by NumPy's binary powering (inv first for n < 0; the
    identity in a's dtype for n == 0)."""
    a = check_matrices(tracer(a))
    try:
        n = operator.index(n)
    except TypeError:
        raise errors.JitlibTypeError("exponent must be an integer",
                                     hint="pass n as a Python int (static)") from None
    if n == 0:
        eye = np.eye(a.shape[-1], dtype=a.dtype)
        return np.broadcast_to(eye, a.shape) + np.zeros_like(a)
    if n < 0:
        a, n = np.linalg.inv(a), -n
    if n == 1:
        return a
    if n == 2:
        return np.matmul(a, a)
    if n == 3:
        return np.matmul(np.matmul(a, a), a)
    z = result = None
    while n > 0:
        z = a if z is None else np.matmul(z, z)
        n, bit = divmod(n, 2)
        if bit:
            result = z if result is None else np.matmul(result, z)
    return result


@implements(np.linalg.tensorinv, name="tensorinv")
def tensorinv(a, ind=2):
    """inv of a reshaped to a square matrix (the first `ind` axes against the rest)."""
    a = tracer(a)
    if ind <= 0:
        raise errors.JitlibValueError("Invalid ind argument.", hint="ind must be positive")
    rows = int(np.prod(a.shape[ind:], dtype=np.int64))
    inverse = np.linalg.inv(a.reshape(rows, -1))
    return inverse.reshape(a.shape[ind:] + a.shape[:ind])


@implements(np.linalg.tensorsolve, name="tensorsolve")
def tensorsolve(a, b, axes=None):
    """x with tensordot(a, x, x.ndim) == b: solve on a reshaped square."""
    a, b = tracer(a), tracer(b)
    if axes is not None:
        order = [k for k in range(a.ndim) if k not in axes] + list(axes)
        a = a.transpose(order)
    shape = a.shape[-(a.ndim - b.ndim):]
    size = int(np.prod(shape, dtype=np.int64))
    if a.size != size ** 2:
        raise errors.JitlibValueError(
            "Input arrays must satisfy the requirement prod(a.shape[b.ndim:]) == "
            "prod(a.shape[:b.ndim])", hint=f"a has shape {a.shape}, b {b.shape}")
    return np.linalg.solve(a.reshape(size, size), b.ravel()).reshape(shape)


@implements(np.linalg.cond, name="cond")
def cond(x, p=None):
    """The condition number: singular values' ratio (p None, 2, -2), else
    norm(x, p) * norm(inv(x), p); NaN from a singular matrix becomes inf where x itself
    holds no NaN, as NumPy does."""
    x = check_matrices(tracer(x), square=p in (None, 2, -2), name="x")
    if p is None or p in (2, -2):
        s = np.linalg.svd(x, compute_uv=False)
        r = s[..., -1] / s[..., 0] if p == -2 else s[..., 0] / s[..., -1]
    else:
        r = np.linalg.norm(x, p, axis=(-2, -1)) * np.linalg.norm(np.linalg.inv(x), p,
                                                                  axis=(-2, -1))
    singular = np.isnan(r) & ~np.isnan(x).any(axis=(-2, -1))
    return np.where(singular, np.inf, r).astype(r.dtype)


# -- polynomials

@implements(np.polyder)
def polyder(p, m=1):
    """The m-th derivative's coefficients: p[:-1] * (n, n-1, ..., 1), m times."""
    m = int(m)
    if m < 0:
        raise errors.JitlibValueError("Order of derivative must be positive (see polyint)",
                                      hint="pass m >= 0")
    p = tracer(p)
    for _ in range(m):
        n = p.shape[0] - 1
        p = p[:-1] * np.arange(n, 0, -1)
    return p


@implements(np.polyint)
def polyint(p, m=1, k=None):
    """The m-th antiderivative's coefficients, the integration constants `k` (zeros by
    default) appended one per order, as NumPy does."""
    m = int(m)
    if m < 0:
        raise errors.JitlibValueError("Order of integral must be positive (see polyder)",
                                      hint="pass m >= 0")
    k = np.zeros(m, float) if k is None else k
    k = [k[i] for i in range(len(k))] if np.ndim(k) else [k]
    if len(k) == 1 and m > 1:
        k = k * m
    if len(k) < m:
        raise errors.JitlibValueError("k must be a scalar or a rank-1 array of length 1 or >m.",
                                      hint=f"pass {m} integration constants")
    p = tracer(p)
    for i in range(m):
        constant = np.reshape(np.asarray(k[i], dtype=float) if not hasattr(k[i], "shape")
                              else tracer(k[i]), (1,))
        p = np.concatenate((p / np.arange(p.shape[0], 0, -1), constant))
    return p


# -- the rest

@implements(np.diagflat)
def diagflat(v, k=0):
    """v flattened onto the k-th diagonal of a square matrix (np.diag of the ravel)."""
    return np.diag(tracer(v).ravel(), k)


@implements(np.sort_complex)
def sort_complex(a):
    """Sorted along the last axis (real part, then imaginary), as complex: 8/16-bit
    integers become complex64, the rest complex128, as NumPy does."""
    b = np.sort(tracer(a))
    if np.issubdtype(b.dtype, np.complexfloating):
        return b
    small = b.dtype.char in "bhBH"
    return b.astype(np.complex64 if small else np.complex128)


@implements(np.fft.hfft, name="hfft")
def hfft(a, n=None, axis=-1, norm=None, out=None):
    """The FFT of a Hermitian-symmetric signal given by its first half: irfft of the
    conjugate, with the norm's direction swapped, as NumPy computes it."""
    from numpy.fft._pocketfft import _swap_direction
    if out is not None:
        raise errors.UnsupportedError("np.fft.hfft(out=...) is not supported inside jit",
                                      hint="assign the result instead")
    a = tracer(a)
    n = (a.shape[axis] - 1) * 2 if n is None else n
    return np.fft.irfft(np.conjugate(a), n, axis, norm=_swap_direction(norm))


@implements(np.fft.ihfft, name="ihfft")
def ihfft(a, n=None, axis=-1, norm=None, out=None):
    """The inverse of hfft: the conjugate of rfft, with the norm's direction swapped."""
    from numpy.fft._pocketfft import _swap_direction
    if out is not None:
        raise errors.UnsupportedError("np.fft.ihfft(out=...) is not supported inside jit",
                                      hint="assign the result instead")
    a = tracer(a)
    n = a.shape[axis] if n is None else n
    return np.conjugate(np.fft.rfft(a, n, axis, norm=_swap_direction(norm)))
