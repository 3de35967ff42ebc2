"""Threefry-2x32 (20 rounds) and random bits, built from IR integer ops.

Everything here takes and returns IR values (`Instr`), so the same code is what the
interpreter evaluates eagerly and what a jitted function traces: the generator is plain
integer arithmetic inside the user's kernels. The IR has no shift ops; on uint32 a shift
by a constant is a wrapping multiply or an unsigned divide by a power of two, which the
LLVM and Triton backends compile to the shift itself.

The stream is JAX's with raw uint32 keys and `jax_threefry_partitionable` (its default):
element i of a sample of any shape uses counter (hi, lo) = the 64-bit flat index i, and
`split(key, n)[i]` = `fold_in(key, i)` = threefry(key, (0, i)).
"""
import numpy as np

from jitlib.hlo import build as B
from jitlib.hlo.ops import Op

U32 = np.dtype(np.uint32)
U64 = np.dtype(np.uint64)
_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_PARITY = 0x1BD11BDA   # Threefry's key-schedule constant (Salmon et al., SC'11)


def full(value, like):
    """The constant `value` in the shape and dtype of `like`."""
    return B.full(value, like.shape, like.dtype)


def add(a, b):
    return B.binary(Op.ADD, a, b)


def xor(a, b):
    return B.binary(Op.XOR, a, b)


def shift_left(x, n):
    # wraps: the bits shifted past the top are dropped, as by a shift
    return B.binary(Op.MUL, x, full(1 << n, x)) if n else x


def shift_right(x, n):
    # unsigned: truncating division by 2^n is the logical shift
    return B.binary(Op.DIV, x, full(1 << n, x)) if n else x


def rotate_left(x, n):
    return B.binary(Op.OR, shift_left(x, n), shift_right(x, 32 - n))


def threefry2x32(k0, k1, x0, x1):
    """The two uint32 words of Threefry-2x32-20 of counter (x0, x1) under key (k0, k1).
    All four operands are uint32 of one shape."""
    ks = (k0, k1, xor(xor(k0, k1), full(_PARITY, k0)))
    x0, x1 = add(x0, ks[0]), add(x1, ks[1])
    for i in range(5):
        for r in _ROTATIONS[i % 2]:
            x0 = add(x0, x1)
            x1 = xor(rotate_left(x1, r), x0)
        # key injection i+1: words shifted by one, plus the injection count
        x0 = add(x0, ks[(i + 1) % 3])
        x1 = add(add(x1, ks[(i + 2) % 3]), full(i + 1, x1))
    return x0, x1


def key_words(key, shape=()):
    """The key's two words as uint32 scalars broadcast to `shape`."""
    words = []
    for i in range(2):
        w = B.reshape(B.slice(key, (i,), (i + 1,)), ())
        words.append(B.broadcast_in_dim(w, shape, ()))
    return words


def counters(shape):
    """(hi, lo) words of each element's flat (row-major) index, as uint32 of `shape`."""
    n = int(np.prod(shape, dtype=np.int64))
    if n >= 1 << 32:
        raise ValueError(f"jitlib.random draws at most 2**32 - 1 numbers at once, "
                         f"asked for shape {tuple(shape)}")
    lo = B.reshape(B.iota((n,), U32), shape)
    return B.full(0, shape, U32), lo


def hash_counters(key, shape):
    """threefry(key, flat index) for every element of `shape`: two uint32 words each."""
    hi, lo = counters(shape)
    k0, k1 = key_words(key, shape)
    return threefry2x32(k0, k1, hi, lo)


def derive_keys(key, num):
    """`num` new keys, as a uint32 [num, 2]: key i is threefry(key, (0, i))."""
    b0, b1 = hash_counters(key, (num,))
    return B.concatenate([B.reshape(b0, (num, 1)), B.reshape(b1, (num, 1))], 1)


def fold_in(key, data):
    """threefry(key, (0, data)) for a uint32 scalar `data`, as a key."""
    k0, k1 = key_words(key)
    b0, b1 = threefry2x32(k0, k1, B.full(0, (), U32), data)
    return B.concatenate([B.reshape(b0, (1,)), B.reshape(b1, (1,))], 0)


def split_pair(key):
    """(split(key)[0], split(key)[1]) as two keys."""
    keys = derive_keys(key, 2)
    return tuple(B.reshape(B.slice(keys, (i, 0), (i + 1, 2)), (2,)) for i in range(2))


def bits32(key, shape):
    """32 random bits per element: the XOR of the two words (JAX's 32-bit stream)."""
    return xor(*hash_counters(key, shape))


def bits(key, nbits, shape):
    """`nbits` (8, 16, 32 or 64) random bits per element, as the unsigned type of that
    width: the 64-bit stream is the two words (first high); narrower ones are the low
    bits of the 32-bit stream."""
    if nbits == 64:
        b0, b1 = hash_counters(key, shape)
        return B.binary(Op.OR, shift_left(B.convert(b0, U64), 32), B.convert(b1, U64))
    word = bits32(key, shape)
    if nbits == 32:
        return word
    return B.convert(word, np.dtype(f"uint{nbits}"))   # keeps the low bits, as astype does
