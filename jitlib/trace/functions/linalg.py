"""Contractions: matmul, matvec, vecmat, dot, tensordot, einsum, inner, outer, vdot, vecdot.

Everything lowers to one `dot_general` per pair of operands, after converting
both to the promoted dtype (NumPy converts array_likes first, so Python scalars
are strong here). bool contractions are an or of ands, as in NumPy.
"""
import numpy as np

from jitlib import errors
from jitlib.hlo import build as B
from jitlib.hlo import dtypes
from jitlib.hlo.ops import Op
from jitlib.trace import tracer as T
from jitlib.trace.context import matmul_precision
from jitlib.trace.functions import reductions, shapes
from jitlib.trace.functions._common import (
    apply, apply_operator, canonical_dtype, finish, given, is_inexact, tracer)
from jitlib.trace.functions.selection import diagonal
from jitlib.trace.registry import implements

_MATMUL_SIGNATURE = "(n?,k),(k,m?)->(n?,m?)"


def _fmt(shape):
    return "(" + ",".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


def _dot(*args, **kwargs):
    """B.dot_general at the trace's matmul_precision (jit's option or the setting)."""
    return B.dot_general(*args, precision=matmul_precision(), **kwargs)


def _promoted(a, b, dtype=None):
    x, y = tracer(a), tracer(b)
    dt = canonical_dtype(dtype) if given(dtype) else dtypes.result_type(x.dtype, y.dtype)
    return x, y, B.convert(x.instr, dt), B.convert(y.instr, dt)


@implements(np.matmul, name="matmul")
def matmul(x1, x2, /, out=None, *, dtype=None, casting="same_kind", order="K", subok=True):
    """dot_general with broadcast batch dims; 1-d operands gain and lose a unit dim."""
    x, y = tracer(x1), tracer(x2)
    # NumPy's loop: bfloat16 matmul computes and returns float32
    out_dt = np.matmul.resolve_dtypes((x.dtype, y.dtype, None))[-1]
    x, y, a, b = _promoted(x, y, dtype if given(dtype) else out_dt)
    for i, t in enumerate((x, y)):
        if t.ndim == 0:
            raise errors.ShapeError(
                f"matmul: Input operand {i} does not have enough dimensions (has 0, gufunc "
                f"core with signature {_MATMUL_SIGNATURE} requires 1)",
                hint="use np.multiply (or *) with a scalar")
    if x.ndim == 1:
        a = B.reshape(a, (1,) + a.shape)
    if y.ndim == 1:
        b = B.reshape(b, b.shape + (1,))
    if a.shape[-1] != b.shape[-2]:
        raise errors.ShapeError(
            f"matmul: Input operand 1 has a mismatch in its core dimension 0, with gufunc "
            f"signature {_MATMUL_SIGNATURE} (size {b.shape[-2]} is different from "
            f"{a.shape[-1]})",
            hint="the first operand's last dim must equal the second's second-to-last: check the "
                 "shapes (a transpose .T missing?)")
    batch = T.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a = T.broadcast(a, batch + a.shape[-2:])
    b = T.broadcast(b, batch + b.shape[-2:])
    nb = len(batch)
    r = _dot(a, b, (nb + 1,), (nb,), range(nb), range(nb))
    shape = batch + ((a.shape[-2],) if x.ndim > 1 else ()) + ((b.shape[-1],) if y.ndim > 1
                                                             else ())
    r = B.reshape(r, shape)
    if _keeps_16_bit(x.dtype, y.dtype, r.dtype, dtype):
        # matmul_precision="default": bf16 @ bf16 is bf16 (summed in f32), as in jax/torch
        r = B.convert(r, x.dtype)
    return finish(T.Tracer(r), out, "matmul")


def _keeps_16_bit(x_dt, y_dt, out_dt, dtype):
    """Whether a product of two same 16-bit float operands returns their type rather
    than NumPy's (bf16 @ bf16 is f32 in NumPy): under matmul_precision="default" only."""
    return (matmul_precision() == "default" and not given(dtype) and x_dt == y_dt
            and dtypes.is_float(x_dt) and np.dtype(x_dt).itemsize == 2 and out_dt != x_dt)


@implements(np.dot)
def dot(a, b, out=None):
    """dot_general over a's last and b's second-to-last dim; multiply for 0-d operands."""
    x, y = tracer(a), tracer(b)
    if x.ndim == 0 or y.ndim == 0:
        return finish(apply(np.multiply, x, y), out, "dot")
    x, y, av, bv = _promoted(x, y)
    bc = 0 if y.ndim == 1 else y.ndim - 2
    if x.shape[-1] != y.shape[bc]:
        raise errors.ShapeError(
            f"shapes {_fmt(x.shape)} and {_fmt(y.shape)} not aligned: {x.shape[-1]} (dim "
            f"{x.ndim - 1}) != {y.shape[bc]} (dim {bc})",
            hint="a's last dim must equal b's second-to-last (its only dim if 1-d)")
    return finish(T.Tracer(_dot(av, bv, (x.ndim - 1,), (bc,))), out, "dot")


@implements(np.inner)
def inner(a, b, /):
    """dot_general over the last dims of both; multiply for 0-d operands."""
    x, y = tracer(a), tracer(b)
    if x.ndim == 0 or y.ndim == 0:
        return apply(np.multiply, x, y)
    x, y, av, bv = _promoted(x, y)
    if x.shape[-1] != y.shape[-1]:
        raise errors.ShapeError(
            f"shapes {_fmt(x.shape)} and {_fmt(y.shape)} not aligned: {x.shape[-1]} (dim "
            f"{x.ndim - 1}) != {y.shape[-1]} (dim {y.ndim - 1})",
            hint="the last dims of both arrays must agree")
    return T.Tracer(_dot(av, bv, (x.ndim - 1,), (y.ndim - 1,)))


@implements(np.outer)
def outer(a, b, out=None):
    """multiply of a as a column and b as a row (both flattened)."""
    x, y = tracer(a), tracer(b)
    col = T.Tracer(B.reshape(x.instr, (x.size, 1)))
    row = T.Tracer(B.reshape(y.instr, (1, y.size)))
    return finish(apply(np.multiply, col, row), out, "outer")


@implements(np.vdot)
def vdot(a, b, /):
    """dot_general of both flattened, the first conjugated (the identity on real arrays)."""
    x, y, av, bv = _promoted(a, b)
    if dtypes.is_complex(av.dtype):
        av = B.unary(Op.CONJ, av)
    if x.size != y.size:
        raise errors.ShapeError(f"vdot: inputs have different sizes ({x.size} and {y.size})",
                                hint="both arrays must have the same number of elements")
    return T.Tracer(_dot(B.reshape(av, (x.size,)), B.reshape(bv, (y.size,)), (0,),
                                  (0,)))


@implements(np.vecdot, name="vecdot")
def vecdot(x1, x2, /, *, axis=-1, dtype=None, out=None):
    """dot_general over each operand's axis, the other (broadcast) dims batch dims."""
    x, y, a, b = _promoted(x1, x2, dtype)
    for i, t in enumerate((x, y)):
        if t.ndim == 0:
            raise errors.ShapeError(f"vecdot: Input operand {i} does not have enough "
                                    "dimensions (has 0, gufunc core with signature "
                                    "(n),(n)->() requires 1)",
                                    hint="use np.multiply (or *) with a scalar")
    ax, ay = T.normalize_axis(axis, x.ndim), T.normalize_axis(axis, y.ndim)
    n = x.shape[ax]
    if y.shape[ay] != n:
        raise errors.ShapeError(
            "vecdot: Input operand 1 has a mismatch in its core dimension 0, with gufunc "
            f"signature (n),(n)->() (size {y.shape[ay]} is different from {n})",
            hint="both arrays must have the same size along axis")
    a = B.transpose(a, [d for d in range(x.ndim) if d != ax] + [ax])
    b = B.transpose(b, [d for d in range(y.ndim) if d != ay] + [ay])
    if dtypes.is_complex(a.dtype):
        a = B.unary(Op.CONJ, a)   # the vector dot product conjugates its first operand
    batch = T.broadcast_shapes(a.shape[:-1], b.shape[:-1])
    a, b = T.broadcast(a, batch + (n,)), T.broadcast(b, batch + (n,))
    dims = range(len(batch))
    r = _dot(a, b, (len(batch),), (len(batch),), dims, dims)
    return finish(T.Tracer(r), out, "vecdot")


def _core_dims_error(fname, signature, operand, needed, have):
    return errors.ShapeError(
        f"{fname}: Input operand {operand} does not have enough dimensions (has {have}, "
        f"gufunc core with signature {signature} requires {needed})",
        hint="give the matrix operand two dimensions and the vector one at least one")


def _since_numpy_2_2(name):
    """[np.NAME] where this NumPy has it (matvec and vecmat came in 2.2), else []: the
    jnp names work either way."""
    return [getattr(np, name)] if hasattr(np, name) else []


@implements(*_since_numpy_2_2("matvec"), name="matvec")
def matvec(x1, x2, /, *, dtype=None, out=None):
    """matmul of each matrix (..., m, n) with each vector (..., n), the unit dim dropped."""
    x, v = tracer(x1), tracer(x2)
    if x.ndim < 2:
        raise _core_dims_error("matvec", "(m,n),(n)->(m)", 0, 2, x.ndim)
    if v.ndim < 1:
        raise _core_dims_error("matvec", "(m,n),(n)->(m)", 1, 1, v.ndim)
    column = T.Tracer(B.reshape(v.instr, v.shape + (1,)))
    r = matmul(x, column, dtype=dtype)
    return finish(T.Tracer(B.reshape(r.instr, r.shape[:-1])), out, "matvec")


@implements(*_since_numpy_2_2("vecmat"), name="vecmat")
def vecmat(x1, x2, /, *, dtype=None, out=None):
    """matmul of each vector (..., n) with each matrix (..., n, m): conj(v) @ A, and
    conjugation is the identity on real arrays."""
    v, x = tracer(x1), tracer(x2)
    if v.ndim < 1:
        raise _core_dims_error("vecmat", "(n),(n,m)->(m)", 0, 1, v.ndim)
    if x.ndim < 2:
        raise _core_dims_error("vecmat", "(n),(n,m)->(m)", 1, 2, x.ndim)
    row = T.Tracer(B.reshape(v.instr, v.shape[:-1] + (1, v.shape[-1])))
    r = matmul(row, x, dtype=dtype)
    return finish(T.Tracer(B.reshape(r.instr, r.shape[:-2] + r.shape[-1:])), out, "vecmat")


@implements(np.tensordot)
def tensordot(a, b, axes=2):
    """dot_general over the paired axes; free dims of a, then of b."""
    x, y, av, bv = _promoted(a, b)
    if isinstance(axes, (int, np.integer)):
        n = int(axes)
        if n < 0 or n > x.ndim or n > y.ndim:
            raise errors.ShapeError("shape-mismatch for sum",
                                    hint="the paired axes must exist and have equal sizes")
        a_axes, b_axes = list(range(x.ndim - n, x.ndim)), list(range(n))
    else:
        a_axes, b_axes = axes
        a_axes = [a_axes] if isinstance(a_axes, (int, np.integer)) else list(a_axes)
        b_axes = [b_axes] if isinstance(b_axes, (int, np.integer)) else list(b_axes)
    if len(a_axes) != len(b_axes):
        raise errors.ShapeError("shape-mismatch for sum",
                                hint="the paired axes must exist and have equal sizes")
    a_axes = [T.normalize_axis(d, x.ndim) for d in a_axes]
    b_axes = [T.normalize_axis(d, y.ndim) for d in b_axes]
    if any(x.shape[i] != y.shape[j] for i, j in zip(a_axes, b_axes)):
        raise errors.ShapeError("shape-mismatch for sum",
                                hint="the paired axes must exist and have equal sizes")
    return T.Tracer(_dot(av, bv, a_axes, b_axes))


# -- einsum

_ELLIPSIS_LABELS = [chr(0x100 + i) for i in range(64)]


def _interleaved_subscripts(args):
    """einsum(a, [0, 1], b, [1, 2], [0, 2]) as 'ab,bc->ac' plus the operands."""
    def letters(sub):
        out = []
        for s in sub:
            if s is Ellipsis:
                out.append("...")
            elif isinstance(s, (int, np.integer)) and 0 <= s < 52:
                out.append("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"[s])
            else:
                raise errors.ShapeError(
                    f"subscript {s!r} is not within the valid range [0, 52)",
                    hint="use subscripts 0..51")
        return "".join(out)
    output = letters(args[-1]) if len(args) % 2 else None
    pairs = args[:len(args) - len(args) % 2]
    text = ",".join(letters(s) for s in pairs[1::2])
    return (text if output is None else text + "->" + output), list(pairs[0::2])


def _parse(subscripts, ndims):
    subscripts = subscripts.replace(" ", "")
    inputs, arrow, output = subscripts.partition("->")
    in_subs = inputs.split(",")
    if len(in_subs) != len(ndims):
        raise errors.ShapeError(f"einsum: {len(in_subs)} subscripts for {len(ndims)} operands "
                                "(more operands than subscripts given, or fewer)",
                                hint="give one comma-separated subscript term per operand")
    labels, ell_max = [], 0
    for i, (sub, ndim) in enumerate(zip(in_subs, ndims)):
        for c in sub.replace("...", ""):
            if not c.isalpha():
                raise errors.ShapeError(f"invalid subscript '{c}' in einstein sum subscripts "
                                        "string, subscripts must be letters",
                                        hint="use the letters a-z and A-Z")
        if "..." in sub:
            n_ell = ndim - (len(sub) - 3)
            if n_ell < 0:
                raise errors.ShapeError("einstein sum subscripts string contains too many "
                                        f"subscripts for operand {i}",
                                        hint="give one letter per dim of each operand")
            ell_max = max(ell_max, n_ell)
            ell = "".join(_ELLIPSIS_LABELS[n_ell - 1 - j] for j in range(n_ell))
            sub = sub.replace("...", ell)
        elif len(sub) > ndim:
            raise errors.ShapeError("einstein sum subscripts string contains too many "
                                    f"subscripts for operand {i}",
                                    hint="give one letter per dim of each operand")
        elif len(sub) < ndim:
            raise errors.ShapeError("operand has more dimensions than subscripts given in "
                                    "einstein sum, but no '...' ellipsis provided to "
                                    "broadcast the extra dimensions.",
                                    hint="give one letter per dim, or '...' for the leading dims")
        labels.append(sub)
    ell_all = "".join(_ELLIPSIS_LABELS[ell_max - 1 - j] for j in range(ell_max))
    if not arrow:
        counts = {}
        for sub in labels:
            for c in sub:
                counts[c] = counts.get(c, 0) + 1
        output = ell_all + "".join(sorted(c for c, k in counts.items()
                                          if k == 1 and c not in ell_all))
    else:
        if "..." in output:
            output = output.replace("...", ell_all)
        elif ell_max:
            raise errors.ShapeError("output has more dimensions than subscripts given in "
                                    "einstein sum, but no '...' ellipsis provided to "
                                    "broadcast the extra dimensions.",
                                    hint="add '...' to the output subscripts")
        for c in output:
            if output.count(c) > 1:
                raise errors.ShapeError("einstein sum subscripts string includes output "
                                        f"subscript '{c}' multiple times",
                                        hint="name each output index once")
            if not any(c in sub for sub in labels):
                raise errors.ShapeError("einstein sum subscripts string included output "
                                        f"subscript '{c}' which never appeared in an input",
                                        hint="every output index must appear in an input")
    return labels, output


def _collapse_repeats(t, labels):
    """Diagonals for labels repeated within one operand ('ii->i', 'ii')."""
    while len(set(labels)) != len(labels):
        c = next(c for c in labels if labels.count(c) > 1)
        p = labels.index(c)
        q = labels.index(c, p + 1)
        if t.shape[p] != t.shape[q]:
            raise errors.ShapeError(f"dimensions in operand for collapsing index '{c}' don't "
                                    f"match ({t.shape[p]} != {t.shape[q]})",
                                    hint="a repeated index needs dims of equal size")
        t = T.Tracer(diagonal(t, 0, p, q).instr)
        labels = labels[:p] + labels[p + 1:q] + labels[q + 1:] + c
    return t, labels


def _sum_out(v, labels, keep):
    dims = [i for i, c in enumerate(labels) if c not in keep]
    if not dims:
        return v, labels
    op = Op.REDUCE_OR if dtypes.is_bool(v.dtype) else Op.REDUCE_SUM
    return B.reduce(op, v, dims), "".join(c for c in labels if c in keep)


@implements(np.einsum)
def einsum(*operands, out=None, optimize=False, dtype=None, order="K", casting="safe"):
    """dot_general pairwise left to right; reduce_sum, gather (ii) and transpose around it.

    Indices summed within one operand are reduced first; a repeated index in one
    operand takes its diagonal; size-1 dims broadcast as in NumPy."""
    if not operands:
        raise errors.JitlibTypeError("einsum needs subscripts and operands",
                                     hint="np.einsum('ij,jk->ik', a, b)")
    if isinstance(operands[0], str):
        subscripts, arrays = operands[0], list(operands[1:])
    else:
        subscripts, arrays = _interleaved_subscripts(operands)
    ts = [tracer(a) for a in arrays]
    labels, output = _parse(subscripts, [t.ndim for t in ts])
    dt = canonical_dtype(dtype) if given(dtype) else dtypes.result_type(*[t.dtype for t in ts])
    terms = []
    for t, sub in zip(ts, labels):
        t, sub = _collapse_repeats(t, sub)
        terms.append([B.convert(t.instr, dt), sub])
    sizes = {}
    for v, sub in terms:
        for c, d in zip(sub, v.shape):
            if sizes.get(c, 1) not in (1, d) and d != 1:
                raise errors.ShapeError(
                    "operands could not be broadcast together with remapped shapes: "
                    f"subscript '{c}' has sizes {sizes[c]} and {d}",
                    hint="an index must have the same size (or 1) in every operand")
            sizes[c] = max(sizes.get(c, 1), d)
    for term in terms:
        v, sub = term
        full_shape = [sizes[c] for c in sub]
        if list(v.shape) != full_shape:
            term[0] = T.broadcast(v, full_shape)
    for i, term in enumerate(terms):
        keep = set(output).union(*[sub for j, (_, sub) in enumerate(terms) if j != i])
        term[0], term[1] = _sum_out(term[0], term[1], keep)
    v, cur = terms[0]
    for i in range(1, len(terms)):
        w, nxt = terms[i]
        later = set(output).union(*[sub for _, sub in terms[i + 1:]])
        v, cur = _sum_out(v, cur, later | set(nxt))
        batch = [c for c in cur if c in nxt and c in later]
        contract = [c for c in cur if c in nxt and c not in later]
        v = _dot(v, w, [cur.index(c) for c in contract],
                          [nxt.index(c) for c in contract], [cur.index(c) for c in batch],
                          [nxt.index(c) for c in batch])
        cur = ("".join(batch) + "".join(c for c in cur if c not in nxt)
               + "".join(c for c in nxt if c not in cur))
    v, cur = _sum_out(v, cur, set(output))
    v = B.transpose(v, [cur.index(c) for c in output])
    return finish(T.Tracer(v), out, "einsum")


# -- norms

def _sum_abs(x, axes, keepdims=False):
    return reductions.sum(apply_operator(np.absolute, x), axes, keepdims=keepdims)


@implements(np.linalg.norm, name="norm")
def norm(x, ord=None, axis=None, keepdims=False):
    """Composite, NumPy's recipe: sqrt of a dot or of sums of squares; max/min/sums of |x|;
    the largest, smallest or summed singular values for matrix ord=2, -2, 'nuc'."""
    t = tracer(x)
    if not is_inexact(t.dtype):
        t = tracer(t, np.float64)
    if axis is None:
        two_norm = ord is None or (ord in ("f", "fro") and t.ndim == 2) or (
            ord == 2 and t.ndim == 1)
        if two_norm:
            flat = B.reshape(t.instr, (t.size,))
            if dtypes.is_complex(t.dtype):   # NumPy: re.dot(re) + im.dot(im)
                re, im = B.unary(Op.REAL, flat), B.unary(Op.IMAG, flat)
                sq = B.binary(Op.ADD, _dot(re, re, (0,), (0,)),
                              _dot(im, im, (0,), (0,)))
            else:
                sq = _dot(flat, flat, (0,), (0,))
            ret = apply(np.sqrt, T.Tracer(sq))
            return T.Tracer(B.reshape(ret.instr, (1,) * t.ndim)) if keepdims else ret
        axis = tuple(range(t.ndim))
    axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    if len(axes) == 1:
        return _vector_norm(t, ord, axes, keepdims)
    if len(axes) == 2:
        return _matrix_norm(t, ord, axes, keepdims)
    raise errors.ShapeError("Improper number of dimensions to norm.",
                            hint="pass axis as an int or a pair of ints")


def _abs_squared(x):
    """x*x, or (conj(x) * x).real for complex x (NumPy's norms)."""
    if dtypes.is_complex(x.dtype):
        return apply_operator(np.multiply, apply(np.conjugate, x), x).real
    return apply_operator(np.multiply, x, x)


def _vector_norm(x, ord, axes, keepdims):
    if ord == np.inf:
        return reductions.max(apply_operator(np.absolute, x), axes, keepdims=keepdims, initial=0)
    if ord == -np.inf:
        return reductions.min(apply_operator(np.absolute, x), axes, keepdims=keepdims)
    if ord == 0:
        nonzero = T.Tracer(B.convert(B.convert(x.instr, dtypes.BOOL), x.dtype))
        return reductions.sum(nonzero, axes, keepdims=keepdims)
    if ord == 1:
        return _sum_abs(x, axes, keepdims)
    if ord is None or ord == 2:
        return apply(np.sqrt, reductions.sum(_abs_squared(x), axes, keepdims=keepdims))
    if isinstance(ord, str):
        raise errors.ShapeError(f"Invalid norm order '{ord}' for vectors",
                                hint="use ord=None, 1, 2, np.inf, -np.inf, 0 or another number")
    powered = apply_operator(np.power, apply_operator(np.absolute, x), ord)
    ret = reductions.sum(powered, axes, keepdims=keepdims)
    return apply(np.power, ret, np.reciprocal(np.asarray(ord, dtype=ret.dtype)))


def _matrix_norm(x, ord, axes, keepdims):
    row, col = (T.normalize_axis(a, x.ndim) for a in axes)
    if row == col:
        raise errors.ShapeError("Duplicate axes given.", hint="pass two different axes")
    if ord in (2, -2, "nuc"):
        # NumPy's _multi_svd_norm: the matrix dims moved last, then the singular values
        s = T.Tracer(B.svd(shapes.moveaxis(x, (row, col), (-2, -1)).instr, "s"))
        reduce = {2: reductions.max, -2: reductions.min, "nuc": reductions.sum}[ord]
        ret = reduce(s, -1)
    elif ord in (1, -1):
        reduce = reductions.max if ord == 1 else reductions.min
        ret = reduce(_sum_abs(x, row), col - 1 if col > row else col)
    elif ord in (np.inf, -np.inf):
        reduce = reductions.max if ord == np.inf else reductions.min
        ret = reduce(_sum_abs(x, col), row - 1 if row > col else row)
    elif ord in (None, "fro", "f"):
        ret = apply(np.sqrt, reductions.sum(_abs_squared(x), (row, col)))
    else:
        raise errors.ShapeError("Invalid norm order for matrices.",
                                hint="use ord='fro', 1, -1, np.inf or -np.inf")
    if keepdims:
        shape = list(x.shape)
        shape[row] = shape[col] = 1
        ret = T.Tracer(B.reshape(ret.instr, shape))
    return ret


# -- np.linalg's Array API functions

@implements(np.linalg.matmul, name="linalg_matmul")
def linalg_matmul(x1, x2, /):
    """matmul."""
    return matmul(x1, x2)


@implements(np.linalg.tensordot, name="linalg_tensordot")
def linalg_tensordot(x1, x2, /, *, axes=2):
    """tensordot."""
    return tensordot(x1, x2, axes)


@implements(np.linalg.outer, name="linalg_outer")
def linalg_outer(x1, x2, /):
    """outer of two 1-d arrays."""
    a, b = tracer(x1), tracer(x2)
    if a.ndim != 1 or b.ndim != 1:
        raise errors.ShapeError("Input arrays must be one-dimensional, but they are "
                                f"x1.ndim={a.ndim} and x2.ndim={b.ndim}.",
                                hint="use np.outer, which flattens its inputs")
    return outer(a, b)


@implements(np.linalg.vecdot, name="linalg_vecdot")
def linalg_vecdot(x1, x2, /, *, axis=-1):
    """vecdot."""
    return vecdot(x1, x2, axis=axis)


@implements(np.linalg.matrix_transpose, name="linalg_matrix_transpose")
def linalg_matrix_transpose(x, /):
    """transpose (a view) of the last two dims."""
    return shapes.matrix_transpose(x)


@implements(np.linalg.diagonal, name="linalg_diagonal")
def linalg_diagonal(x, /, *, offset=0):
    """diagonal of the last two dims (a read-only view)."""
    return diagonal(x, offset, -2, -1)


@implements(np.linalg.trace, name="linalg_trace")
def linalg_trace(x, /, *, offset=0, dtype=None):
    """reduce_sum of the diagonal of the last two dims."""
    return reductions.sum(diagonal(x, offset, -2, -1), -1, dtype)


@implements(np.linalg.matrix_norm, name="matrix_norm")
def matrix_norm(x, /, *, keepdims=False, ord="fro"):
    """norm over the last two dims."""
    return norm(x, ord, (-2, -1), keepdims)


@implements(np.linalg.vector_norm, name="vector_norm")
def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
    """norm over axis (several axes are merged into one first)."""
    t = tracer(x)
    if axis is None:
        res = norm(T.Tracer(B.reshape(t.instr, (t.size,))), ord, 0)
        axes = tuple(range(t.ndim))
    else:
        axes = T.normalize_axes(axis, t.ndim) if isinstance(axis, (tuple, list)) else (
            T.normalize_axis(axis, t.ndim),)
        rest = [d for d in range(t.ndim) if d not in axes]
        moved = B.transpose(t.instr, list(axes) + rest)
        merged = int(np.prod([t.shape[d] for d in axes], dtype=np.int64))
        res = norm(T.Tracer(B.reshape(moved, (merged,) + tuple(t.shape[d] for d in rest))),
                   ord, 0)
    if keepdims:
        shape = [1 if d in axes else n for d, n in enumerate(t.shape)]
        res = T.Tracer(B.reshape(res.instr, shape))
    return res


def _component(v, i):
    return T.Tracer(B.reshape(B.slice(v, (0,) * (v.ndim - 1) + (i,), v.shape[:-1] + (i + 1,)),
                              v.shape[:-1]))


@implements(np.cross)
def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """Composite: products of the vectors' components (3-vectors, or 2-vectors' z)."""
    if axis is not None:
        axisa = axisb = axisc = axis
    x, y = tracer(a), tracer(b)
    dt = dtypes.result_type(x.dtype, y.dtype)
    u = B.convert(shapes.moveaxis(x, axisa, -1).instr, dt)
    v = B.convert(shapes.moveaxis(y, axisb, -1).instr, dt)
    if u.shape[-1] not in (2, 3) or v.shape[-1] not in (2, 3):
        raise errors.ShapeError("incompatible dimensions for cross product\n"
                                "(dimension must be 2 or 3)",
                                hint="the vector axis must have 2 or 3 elements")
    if u.shape[-1] != v.shape[-1]:
        raise errors.UnsupportedError("np.cross of a 2-vector with a 3-vector is not "
                                      "supported inside jit", hint="pad the 2-vector with a 0")
    us = [_component(u, i) for i in range(u.shape[-1])]
    vs = [_component(v, i) for i in range(v.shape[-1])]

    def term(i, j):
        return apply(np.subtract, apply(np.multiply, us[i], vs[j]),
                     apply(np.multiply, us[j], vs[i]))
    if u.shape[-1] == 2:
        return term(0, 1)
    parts = [term(1, 2), term(2, 0), term(0, 1)]
    shape = parts[0].shape + (1,)
    stacked = B.concatenate([B.reshape(p.instr, shape) for p in parts], len(shape) - 1)
    return shapes.moveaxis(T.Tracer(stacked), -1, axisc)


@implements(np.linalg.cross, name="linalg_cross")
def linalg_cross(x1, x2, /, *, axis=-1):
    """cross of 3-vectors along axis."""
    x, y = tracer(x1), tracer(x2)
    if x.shape[axis] != 3 or y.shape[axis] != 3:
        raise errors.ShapeError("Both input arrays must be (arrays of) 3-dimensional vectors, "
                                f"but they are {x.shape[axis]} and {y.shape[axis]} "
                                "dimensional instead.", hint="use np.cross for 2-vectors")
    return cross(x, y, axis=axis)
