"""jitlib.random: key-based, counter-based random numbers, like jax.random.

    import jitlib.random as jr

    key = jr.key(0)
    k1, k2 = jr.split(key)
    x = jr.normal(k1, (1000,))

A key is a uint32 array of shape (2,) (JAX's raw keys), so it passes into and out of
jitted functions like any array. The numbers are Threefry-2x32 of each element's index,
turned into floats with exactly rounded operations only, so:

- outside jit each function returns NumPy arrays (the IR evaluated by the interpreter);
- inside jit it traces into integer and float ops that fuse with the code around them,
  and the cpu, gpu, interpreter and jax backends give the same bits;
- `key`, `split`, `fold_in`, `uniform`, `randint`, `bernoulli` and `permutation` give
  jax.random's numbers for the same raw key (threefry, partitionable mode, its
  default); `normal` is within a few ulps of jax.random.normal (its own log and erfinv).

docs/random.md says when to use this and when NumPy's `np.random`.
"""
import operator

import numpy as np

from jitlib import errors
from jitlib.hlo import build as B
from jitlib.hlo import dtypes
from jitlib.hlo.interpreter import evaluate
from jitlib.hlo.ir import Module
from jitlib.hlo.ops import Op
from jitlib.random import sampling as S
from jitlib.random import threefry as T
from jitlib.trace.context import current_trace
from jitlib.trace.tracer import Tracer, as_instr, is_weak

__all__ = ["key", "PRNGKey", "split", "fold_in", "uniform", "normal", "randint",
           "bernoulli", "permutation", "key_data"]

U32 = T.U32
# Inside jit, permutation ranks by n x n compares (the IR has no sort): O(n^2) work, which
# past this size costs far more than permuting outside jit.
MAX_TRACED_PERMUTATION = 1 << 14


# -- tracing or evaluating

def _tracing(*values):
    return current_trace() is not None or any(isinstance(v, Tracer) for v in values)


def _finish(results, traced):
    """Tracers for the IR values `results` inside a trace; else their values, computed by
    the interpreter (the reference semantics every backend matches)."""
    single = not isinstance(results, (list, tuple))
    results = [results] if single else list(results)
    if traced:
        out = [Tracer(r) for r in results]
    else:
        out = evaluate(Module("jitlib_random", [], results), [])
    return out[0] if single else out


def _key_instr(key, fn):
    shape = key.shape if isinstance(key, Tracer) else np.shape(key)
    dtype = key.dtype if isinstance(key, Tracer) else np.asarray(key).dtype
    if tuple(shape) != (2,) or np.dtype(dtype) != U32:
        hint = "make one with jitlib.random.key(seed) (or jax.random.PRNGKey)"
        if len(shape) > 1 and shape[-1] == 2:
            hint = "pass one key (keys[i]), or map over the keys with jitlib.vmap"
        raise errors.JitlibTypeError(
            f"jitlib.random.{fn}: a key is a uint32 array of shape (2,), got "
            f"{np.dtype(dtype).name}{list(shape)}", hint=hint)
    if isinstance(key, Tracer):
        return key.instr
    return B.constant(np.asarray(key, U32))


def _shape(shape, fn):
    try:
        return (operator.index(shape),) if np.ndim(shape) == 0 else tuple(
            operator.index(d) for d in shape)
    except TypeError:
        raise errors.JitlibTypeError(
            f"jitlib.random.{fn}: shape must be an int or a tuple of ints, got {shape!r}",
            hint="shapes are static: pass Python ints, not traced values") from None


def _float_dtype(dtype, fn):
    dt = dtypes.canonicalize(dtype)
    if dt not in dtypes.FLOATS:
        raise errors.JitlibTypeError(
            f"jitlib.random.{fn}: dtype must be a float type, got {dt.name}",
            hint="float16, bfloat16, float32 or float64")
    return dt


def _operand(x, dtype, shape, fn, what):
    """`x` (a tracer, array or scalar) as an IR value of `dtype` broadcast to `shape`."""
    have = tuple(x.shape) if isinstance(x, Tracer) else np.shape(x)
    try:
        fits = np.broadcast_shapes(have, shape) == tuple(shape)
    except ValueError:
        fits = False
    if not fits:
        raise errors.ShapeError(
            f"jitlib.random.{fn}: {what} of shape {have} does not broadcast to the sample "
            f"shape {tuple(shape)}")
    if isinstance(x, Tracer):
        instr = B.convert(x.instr, dtype)
    else:
        instr = B.constant(np.asarray(x).astype(dtype))
    return B.broadcast_to(instr, shape)


# -- keys

def key(seed):
    """A key from an integer seed: its 64 bits as two uint32 words (high first); a seed
    of 32 bits or fewer has a zero high word, as in JAX."""
    if isinstance(seed, Tracer):
        if not dtypes.is_integer(seed.dtype) or seed.shape != ():
            raise errors.JitlibTypeError(
                f"jitlib.random.key: the seed must be an integer scalar, got "
                f"{seed.dtype.name}{list(seed.shape)}")
        s = seed.instr
        if s.dtype.itemsize == 8:
            wide = B.convert(s, T.U64)
            hi = B.convert(B.binary(Op.DIV, wide, T.full(1 << 32, wide)), U32)
        else:
            hi = B.full(0, (), U32)
        lo = B.convert(s, U32)
        return Tracer(B.concatenate([B.reshape(hi, (1,)), B.reshape(lo, (1,))], 0))
    if isinstance(seed, (bool, np.bool_)) or not (
            isinstance(seed, int) or np.issubdtype(np.asarray(seed).dtype, np.integer)):
        raise errors.JitlibTypeError(
            f"jitlib.random.key: the seed must be an integer, got {type(seed).__name__}")
    arr = np.asarray(np.int64(seed) if isinstance(seed, int) else seed)
    if arr.shape != ():
        raise errors.JitlibTypeError("jitlib.random.key: the seed must be a scalar")
    bits = int(arr.astype(np.uint64)) if arr.dtype.itemsize == 8 else int(arr) & 0xFFFFFFFF
    return np.array([bits >> 32, bits & 0xFFFFFFFF], U32)


PRNGKey = key


def key_data(key):
    """The key's uint32 words (a key is its own data; for JAX compatibility)."""
    return key


def split(key, num=2):
    """`num` new independent keys, as a uint32 array of shape (num, 2)."""
    k = _key_instr(key, "split")
    return _finish(T.derive_keys(k, operator.index(num)), _tracing(key))


def fold_in(key, data):
    """A new key from `key` and an integer `data` (wrapped to uint32 if it is an
    array; a Python int must lie in [0, 2^32))."""
    k = _key_instr(key, "fold_in")
    if isinstance(data, Tracer):
        if not dtypes.is_integer(data.dtype) or data.shape != ():
            raise errors.JitlibTypeError("jitlib.random.fold_in: data must be an integer "
                                         f"scalar, got {data.dtype.name}{list(data.shape)}")
        d = B.convert(data.instr, U32)
    else:
        if isinstance(data, int) and not 0 <= data < 1 << 32:
            raise OverflowError(f"jitlib.random.fold_in: data {data} is out of range for "
                                "uint32")
        d = B.constant(np.asarray(data).astype(U32))
    return _finish(T.fold_in(k, d), _tracing(key, data))


# -- distributions

def uniform(key, shape=(), dtype=np.float32, minval=0.0, maxval=1.0):
    """Floats uniform in [minval, maxval): `dtype`'s mantissa width of random bits each,
    scaled (like jax.random.uniform, the scaling may round up to maxval)."""
    shape, dt = _shape(shape, "uniform"), _float_dtype(dtype, "uniform")
    k = _key_instr(key, "uniform")
    lo = _operand(minval, dt, shape, "uniform", "minval")
    hi = _operand(maxval, dt, shape, "uniform", "maxval")
    return _finish(S.uniform(k, shape, dt, lo, hi), _tracing(key, minval, maxval))


def normal(key, shape=(), dtype=np.float32):
    """Standard normal floats: sqrt(2) * erfinv(u), u uniform in (-1, 1)."""
    shape, dt = _shape(shape, "normal"), _float_dtype(dtype, "normal")
    return _finish(S.normal(_key_instr(key, "normal"), shape, dt), _tracing(key))


def _int_bound(x, dtype, shape, what):
    """A randint bound as int64 of `shape` (floats truncated, as JAX's astype(int))."""
    wide = np.dtype(np.int64)
    if isinstance(x, Tracer):
        if not (dtypes.is_integer(x.dtype) or dtypes.is_float(x.dtype)):
            raise errors.JitlibTypeError(f"jitlib.random.randint: {what} must be a number")
        if x.dtype == np.uint64:
            raise errors.JitlibTypeError("jitlib.random.randint: uint64 bounds are not "
                                         "supported", hint="pass int64 bounds")
    elif isinstance(x, int):
        x = np.int64(x)   # OverflowError past int64, as NumPy
    return _operand(x, wide, shape, "randint", what)


def randint(key, shape, minval, maxval, dtype=np.int32):
    """Integers uniform in [minval, maxval) (bounds clipped into `dtype`; maxval above
    its maximum reaches the maximum), by JAX's two-draw modulo, in int32 for narrower
    types."""
    shape, dt = _shape(shape, "randint"), dtypes.canonicalize(dtype)
    if not dtypes.is_integer(dt):
        raise errors.JitlibTypeError(f"jitlib.random.randint: dtype must be an integer "
                                     f"type, got {dt.name}")
    k = _key_instr(key, "randint")
    lo64 = _int_bound(minval, dt, shape, "minval")
    hi64 = _int_bound(maxval, dt, shape, "maxval")
    info = np.iinfo(dt)
    top = min(int(info.max), int(np.iinfo(np.int64).max))
    # types under 32 bits draw in int32 (less modulo bias), maxval clipped one past the top
    drawn = dt if info.bits >= 32 else np.dtype(np.int32)
    bottom = B.full(int(info.min), shape, np.int64)
    ceiling = B.full(top + (drawn != dt), shape, np.int64)
    drawn_top = min(int(np.iinfo(drawn).max), int(np.iinfo(np.int64).max))
    above_max = B.compare(hi64, B.full(drawn_top, shape, np.int64), "GT")
    lo = B.convert(B.clamp(bottom, lo64, ceiling), drawn)
    hi = B.convert(B.clamp(bottom, hi64, ceiling), drawn)
    out = B.convert(S.randint(k, shape, lo, hi, above_max, drawn), dt)
    return _finish(out, _tracing(key, minval, maxval))


def bernoulli(key, p=0.5, shape=None):
    """Booleans, True with probability p: uniform(key, shape, p's type) < p (a Python
    float p is float32, as in JAX)."""
    have = tuple(p.shape) if isinstance(p, Tracer) else np.shape(p)
    shape = have if shape is None else _shape(shape, "bernoulli")
    pdt = np.dtype(p.dtype if isinstance(p, Tracer) else np.asarray(p).dtype)
    dt = pdt if pdt in dtypes.FLOATS and not is_weak(p) else np.dtype(np.float32)
    k = _key_instr(key, "bernoulli")
    u = S.uniform(k, shape, dt, B.full(0.0, shape, dt), B.full(1.0, shape, dt))
    out = B.compare(u, _operand(p, dt, shape, "bernoulli", "p"), "LT")
    return _finish(out, _tracing(key, p))


def permutation(key, x, axis=0):
    """A random permutation of range(x) for an integer x (int64), or of `x` along `axis`:
    JAX's shuffle (stable sorts by fresh 32-bit keys). Inside jit it costs O(n^2) and is
    limited to MAX_TRACED_PERMUTATION elements."""
    k = _key_instr(key, "permutation")
    if np.ndim(x) == 0 and not isinstance(x, Tracer):
        n, arr = operator.index(x), None
    else:
        if np.ndim(x) == 0:
            raise errors.JitlibTypeError("jitlib.random.permutation: x must be an int or "
                                         "an array of at least one dimension",
                                         hint="the length is static: pass a Python int")
        axis = operator.index(axis) % len(x.shape)
        n, arr = x.shape[axis], x
    rounds = S.shuffle_rounds(n)
    keys = S.sort_keys(k, n, rounds)
    if not _tracing(key, x):
        order = np.arange(n, dtype=np.int64)
        for ks in _finish(keys, False) if keys else ():
            order = order[np.argsort(ks, kind="stable")]
        return order if arr is None else np.take(np.asarray(arr), order, axis)
    if n > MAX_TRACED_PERMUTATION:
        raise errors.UnsupportedError(
            f"jitlib.random.permutation of {n} elements inside jit: it ranks by n x n "
            f"compares (jitlib's IR has no sort), limited to {MAX_TRACED_PERMUTATION}",
            hint="permute outside the jitted function and pass the result in")
    order = B.iota((n,), dtypes.INDEX)
    for ks in keys:
        order = B.gather(order, S.stable_order(ks), 0)
    if arr is None:
        return Tracer(order)
    return Tracer(B.gather(as_instr(arr), order, axis))
