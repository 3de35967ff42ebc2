"""np.linalg's factorizations and solvers, from the linear-algebra ops.

cholesky, qr, eigh and svd are the ops of the same names; solve is LU with partial
pivoting and two triangular solves (LAPACK's gesv), inv solves against the identity,
det and slogdet read the LU factors' diagonal and pivots (as NumPy does), lstsq, pinv
and matrix_rank go through the SVD with NumPy's cutoffs. Every function takes stacks
of matrices (batch dims leading) where NumPy does.

Inside jit nothing can raise on values: where NumPy raises LinAlgError (a singular or
non-positive-definite matrix) the results hold inf or NaN instead, as in JAX.
cholesky, eigh and eigvalsh symmetrize their input ((a + a.T) / 2) as jax.numpy does,
so derivatives are JAX's; on the symmetric matrices these functions are meant for that
changes nothing, while NumPy would read only one triangle of a non-symmetric one.
"""
import numpy as np

from jitlib import errors
from jitlib.hlo import build as B
from jitlib.hlo import dtypes
from jitlib.hlo import matrix as M
from jitlib.hlo.ops import Op
from jitlib.trace import tracer as T
from jitlib.trace.functions import reductions
from jitlib.trace.functions._common import apply, tracer
from jitlib.trace.registry import implements

_F32, _F64 = np.dtype(np.float32), np.dtype(np.float64)


def _dtype(*ts):
    """NumPy's linalg type: float32 if every input is, else float64 (ints too)."""
    for t in ts:
        if dtypes.is_float(t.dtype) and t.dtype.itemsize == 2:   # float16, bfloat16
            raise errors.JitlibTypeError(f"array type {dtypes.name(t.dtype)} is unsupported "
                                         "in linalg", hint="convert to np.float32 first")
    return _F32 if all(t.dtype == _F32 for t in ts) else _F64


def _matrices(a, square=True, name="a"):
    """`a` as a float Tracer's instr, checked to be a (stack of) (square) matrices."""
    t = check_matrices(tracer(a), square, name)
    return B.convert(t.instr, _dtype(t))


def check_matrices(t, square=True, name="a"):
    """Tracer `t`, after NumPy's checks that it is a (stack of) (square) matrices."""
    if t.ndim < 2:
        raise errors.ShapeError(f"{t.ndim}-dimensional array given. Array must be at least "
                                "two-dimensional", hint=f"pass {name} as a 2-d matrix (or a "
                                "stack of them)")
    if square and t.shape[-1] != t.shape[-2]:
        raise errors.ShapeError("Last 2 dimensions of the array must be square",
                                hint=f"{name} has shape {t.shape}")
    return t


def _wrap(*instrs):
    return tuple(T.Tracer(i) for i in instrs) if len(instrs) > 1 else T.Tracer(instrs[0])


def _symmetrized(x):
    half = B.full(0.5, x.shape, x.dtype)
    return B.binary(Op.MUL, B.binary(Op.ADD, x, M.mT(x)), half)


# -- factorizations

@implements(np.linalg.cholesky, name="cholesky")
def cholesky(a, /, *, upper=False):
    """The cholesky op on (a + a.T) / 2; NaN where a is not positive definite."""
    lower = B.cholesky(_symmetrized(_matrices(a)))
    return _wrap(M.mT(lower) if upper else lower)


@implements(np.linalg.qr, name="qr")
def qr(a, mode="reduced"):
    """The qr op: Q and R ('reduced', 'complete') or R alone ('r')."""
    x = _matrices(a, square=False)
    if mode not in ("reduced", "complete", "r"):
        raise errors.UnsupportedError(f"np.linalg.qr mode={mode!r} is not supported inside jit",
                                      hint="use mode='reduced', 'complete' or 'r'")
    full = mode == "complete"
    r = B.qr(x, "r", full)
    if mode == "r":
        return _wrap(r)
    return np.linalg._linalg.QRResult(*_wrap(B.qr(x, "q", full), r))


@implements(np.linalg.eigh, name="eigh")
def eigh(a, UPLO="L"):
    """The eigh op on (a + a.T) / 2: eigenvalues ascending, eigenvectors as columns."""
    x = _symmetrized(_matrices(a))
    return np.linalg._linalg.EighResult(*_wrap(B.eigh(x, "values"), B.eigh(x, "vectors")))


@implements(np.linalg.eigvalsh, name="eigvalsh")
def eigvalsh(a, UPLO="L"):
    """The eigh op's values on (a + a.T) / 2, ascending."""
    return _wrap(B.eigh(_symmetrized(_matrices(a)), "values"))


@implements(np.linalg.svd, name="svd")
def svd(a, full_matrices=True, compute_uv=True, hermitian=False):
    """The svd op: U, S (descending), Vh, or S alone."""
    x = _matrices(a, square=False)
    s = B.svd(x, "s")
    if not compute_uv:
        return _wrap(s)
    u, vh = B.svd(x, "u", full_matrices), B.svd(x, "vh", full_matrices)
    return np.linalg._linalg.SVDResult(*_wrap(u, s, vh))


@implements(np.linalg.svdvals, name="svdvals")
def svdvals(x, /):
    """The svd op's singular values, descending."""
    return _wrap(B.svd(_matrices(x, square=False, name="x"), "s"))


# -- solving through LU

def _lu_solve(x, rhs):
    """x^-1 @ rhs for square x and matrices rhs with the same batch dims (gesv)."""
    packed, perm = B.lu(x, "lu"), B.lu(x, "permutation")
    y = B.triangular_solve(packed, M.rows_at(rhs, perm), lower=True, unit_diagonal=True)
    return B.triangular_solve(packed, y, lower=False)


@implements(np.linalg.solve, name="solve")
def solve(a, b):
    """LU with partial pivoting, then two triangular solves (LAPACK's gesv).

    b is one vector only when 1-d (NumPy 2's rule), else a stack of matrices broadcast
    against a."""
    ta, tb = tracer(a), tracer(b)
    dt = _dtype(ta, tb)
    x = B.convert(_matrices(ta), dt)
    rhs = B.convert(tb.instr, dt)
    vector = tb.ndim == 1
    if vector:
        rhs = B.reshape(rhs, rhs.shape + (1,))
    if rhs.ndim < 2 or rhs.shape[-2] != x.shape[-1]:
        raise errors.ShapeError(
            f"solve: Input operand 1 has a mismatch in its core dimension 0 (size "
            f"{tb.shape[0] if vector else tb.shape[-2:]} against a's {x.shape[-1]})",
            hint="b must be a vector of a's order or a stack of matrices with that many rows")
    batch = T.broadcast_shapes(x.shape[:-2], rhs.shape[:-2])
    out = _lu_solve(T.broadcast(x, batch + x.shape[-2:]),
                    T.broadcast(rhs, batch + rhs.shape[-2:]))
    return _wrap(B.reshape(out, out.shape[:-1]) if vector else out)


@implements(np.linalg.inv, name="inv")
def inv(a):
    """solve against the identity, as NumPy's gesv call does."""
    x = _matrices(a)
    return _wrap(_lu_solve(x, B.broadcast_to(M.eye(x.shape[-2:], x.dtype), x.shape)))


def _sign_and_log(x):
    """slogdet from the LU factors: signs and logs of U's diagonal, one sign per swap."""
    if x.shape[-1] == 0:     # the empty product
        return B.full(1, x.shape[:-2], x.dtype), B.full(0, x.shape[:-2], x.dtype)
    packed, pivots = B.lu(x, "lu"), B.lu(x, "pivots")
    diag = M.diag_part(packed)
    moved = B.compare(pivots, B.iota(pivots.shape, dtypes.INDEX, pivots.ndim - 1), "NE")
    swaps = B.reduce(Op.REDUCE_SUM, B.convert(moved, dtypes.INDEX), (pivots.ndim - 1,))
    odd = B.compare(B.binary(Op.REM, swaps, B.full(2, swaps.shape, dtypes.INDEX)),
                    B.full(0, swaps.shape, dtypes.INDEX), "NE")
    parity = B.select(odd, B.full(-1, odd.shape, x.dtype), B.full(1, odd.shape, x.dtype))
    last = (diag.ndim - 1,)
    sign = B.binary(Op.MUL, parity, B.reduce(Op.REDUCE_PROD, B.unary(Op.SIGN, diag), last))
    logdet = B.reduce(Op.REDUCE_SUM, B.unary(Op.LOG, B.unary(Op.ABS, diag)), last)
    return sign, logdet


@implements(np.linalg.slogdet, name="slogdet")
def slogdet(a):
    """Sign and log|det| from the LU factors (sign 0 and -inf for a singular matrix)."""
    return np.linalg._linalg.SlogdetResult(*_wrap(*_sign_and_log(_matrices(a))))


@implements(np.linalg.det, name="det")
def det(a):
    """sign * exp(logdet) from the LU factors, NumPy's own formula."""
    sign, logdet = _sign_and_log(_matrices(a))
    return _wrap(B.binary(Op.MUL, sign, B.unary(Op.EXP, logdet)))


# -- through the SVD

def _reciprocal_above(s, cutoff):
    """1/s where s > cutoff (a value per matrix), else 0."""
    wide = B.broadcast_in_dim(cutoff, s.shape, tuple(range(s.ndim - 1)))
    keep = B.compare(s, wide, "GT")
    one = B.full(1, s.shape, s.dtype)
    safe = B.select(keep, s, one)
    return B.select(keep, B.binary(Op.DIV, one, safe), B.full(0, s.shape, s.dtype)), keep


def _largest(s):
    return B.reduce(Op.REDUCE_MAX, s, (s.ndim - 1,))


@implements(np.linalg.pinv, name="pinv")
def pinv(a, rcond=None, hermitian=False, *, rtol=np._NoValue):
    """V diag(1/s) U^T over the singular values above rcond * max(s)."""
    x = _matrices(a, square=False)
    if rcond is None:
        rcond = (1e-15 if rtol is np._NoValue else
                 max(x.shape[-2:]) * np.finfo(x.dtype).eps if rtol is None else rtol)
    u, s, vh = B.svd(x, "u"), B.svd(x, "s"), B.svd(x, "vh")
    cutoff = B.binary(Op.MUL, _largest(s), T.broadcast(tracer(rcond, x.dtype).instr,
                                                       s.shape[:-1]))
    inv_s, _ = _reciprocal_above(s, cutoff)
    scaled = B.binary(Op.MUL, M.mT(vh), B.broadcast_in_dim(
        inv_s, vh.shape[:-2] + (vh.shape[-1], vh.shape[-2]),
        tuple(range(s.ndim - 1)) + (s.ndim,)))
    return _wrap(M.mm(scaled, M.mT(u)))


@implements(np.linalg.matrix_rank, name="matrix_rank")
def matrix_rank(A, tol=None, hermitian=False, *, rtol=None):
    """The count of singular values above tol (default: max(s) * max(M, N) * eps)."""
    t = tracer(A)
    if t.ndim < 2:
        nonzero = reductions.any(apply(np.not_equal, t, 0))
        return _wrap(B.convert(nonzero.instr, dtypes.INDEX))
    x = _matrices(t, square=False, name="A")
    s = B.svd(x, "s")
    if tol is None:
        factor = max(x.shape[-2:]) * np.finfo(x.dtype).eps if rtol is None else rtol
        cutoff = B.binary(Op.MUL, _largest(s), B.full(factor, s.shape[:-1], x.dtype))
    else:
        cutoff = B.full(tol, s.shape[:-1], x.dtype)
    _, keep = _reciprocal_above(s, cutoff)
    return _wrap(B.reduce(Op.REDUCE_SUM, B.convert(keep, dtypes.INDEX), (s.ndim - 1,)))


@implements(np.linalg.lstsq, name="lstsq")
def lstsq(a, b, rcond=None):
    """NumPy's gelsd through the SVD: singular values at most rcond * max(s) count as 0.

    The residuals (when M > N) are always computed: NumPy gives an empty array for a
    rank-deficient a, a value-dependent shape jit cannot have."""
    ta, tb = tracer(a), tracer(b)
    dt = _dtype(ta, tb)
    if ta.ndim != 2 or tb.ndim not in (1, 2):
        raise errors.ShapeError(f"{ta.ndim}-dimensional array given. Array must be "
                                "two-dimensional", hint="lstsq takes a 2-d a and a 1-d or "
                                "2-d b")
    x, rhs = B.convert(ta.instr, dt), B.convert(tb.instr, dt)
    m, n = x.shape
    if rhs.shape[0] != m:
        raise errors.ShapeError("Incompatible dimensions", hint=f"b needs {m} rows")
    vector = tb.ndim == 1
    if vector:
        rhs = B.reshape(rhs, (m, 1))
    rcond = np.finfo(dt).eps * max(m, n) if rcond is None else rcond
    u, s, vh = B.svd(x, "u"), B.svd(x, "s"), B.svd(x, "vh")
    k = rhs.shape[1]
    if s.shape[0]:
        cutoff = B.binary(Op.MUL, _largest(s), B.full(rcond, (), dt))
        inv_s, keep = _reciprocal_above(s, cutoff)
        coef = B.binary(Op.MUL, M.mm(M.mT(u), rhs),
                        B.broadcast_in_dim(inv_s, (s.shape[0], k), (0,)))
        sol = M.mm(M.mT(vh), coef)
    else:
        keep, sol = B.full(False, (0,), dtypes.BOOL), B.full(0, (n, k), dt)
    # LAPACK's rank is a 32-bit int, as NumPy returns it
    rank = B.reduce(Op.REDUCE_SUM, B.convert(keep, np.dtype(np.int32)), (0,))
    if m > n:
        res = B.binary(Op.SUB, rhs, M.mm(x, sol))
        resid = B.reduce(Op.REDUCE_SUM, B.binary(Op.MUL, res, res), (0,))
    else:
        resid = B.full(0, (0,), dt)
    if vector:
        sol = B.reshape(sol, (n,))
    return _wrap(sol, resid, rank, s)


# -- beyond NumPy: scipy.linalg's triangular solve, as jax.scipy.linalg has it

def solve_triangular(a, b, trans=0, lower=False, unit_diagonal=False):
    """x with op(a) @ x == b reading one triangle of a: the triangular_solve op; trans
    0/'N', 1/'T' or 2/'C' (the same on real matrices); b a vector or matrices."""
    ta, tb = tracer(a), tracer(b)
    dt = _dtype(ta, tb)
    x = B.convert(_matrices(ta), dt)
    if trans not in (0, 1, 2, "N", "T", "C"):
        raise errors.JitlibValueError(f"trans={trans!r} is not one of 0, 1, 2, 'N', 'T', 'C'",
                                      hint="trans=1 solves with a.T")
    rhs = B.convert(tb.instr, dt)
    vector = tb.ndim == 1
    if vector:
        rhs = B.reshape(rhs, rhs.shape + (1,))
    if rhs.ndim < 2 or rhs.shape[-2] != x.shape[-1]:
        raise errors.ShapeError(f"shapes of a {ta.shape} and b {tb.shape} are incompatible",
                                hint="b needs as many rows as a")
    batch = T.broadcast_shapes(x.shape[:-2], rhs.shape[:-2])
    out = B.triangular_solve(T.broadcast(x, batch + x.shape[-2:]),
                             T.broadcast(rhs, batch + rhs.shape[-2:]), left_side=True,
                             lower=lower, transpose_a=trans not in (0, "N"),
                             unit_diagonal=unit_diagonal)
    return _wrap(B.reshape(out, out.shape[:-1]) if vector else out)


def solve_triangular_eager(a, b, trans=0, lower=False, unit_diagonal=False):
    """scipy.linalg.solve_triangular (outside jit)."""
    import scipy.linalg
    return scipy.linalg.solve_triangular(a, b, trans=trans, lower=lower,
                                         unit_diagonal=unit_diagonal)
