"""Derivatives of the linear-algebra ops, JAX's formulas, each in both modes.

Every formula is a product of the op's own results, triangular solves and masks, so
the derivatives are differentiable again. The reverse rules are the transposes of the
forward ones (derivations in the comments). eigh's assumes distinct eigenvalues, as
JAX's does; svd differentiates its singular values only.
"""
from jitlib import errors
from jitlib.hlo import build
from jitlib.hlo.matrix import (diag_embed, diag_part, eye_like, mm, mT, rows_at, tril,
                               triu)
from jitlib.hlo.ops import Op
from jitlib.transforms import ad_util as U


def _sub(a, b):
    return build.binary(Op.SUB, a, b)


def _solve(a, b, **attrs):
    return build.triangular_solve(a, b, **attrs)


# -- cholesky: L' = L phi(L^-1 A' L^-T), phi = lower triangle with the diagonal halved

def _phi(x):
    return _sub(tril(x), U.mul(diag_embed(diag_part(x)), U.full_like(x, 0.5)))


def cholesky_jvp(instr, tangents):
    (t,) = tangents
    L = instr
    right = _solve(L, t, left_side=False, lower=True, transpose_a=True)     # A' L^-T
    return mm(L, _phi(_solve(L, right, left_side=True, lower=True)))


def cholesky_vjp(instr, ct):
    # <C, L phi(M)> = <phi(L^T C), L^-1 A' L^-T> = <L^-T phi(L^T C) L^-1, A'>
    L = instr
    inner = _solve(L, _phi(mm(mT(L), ct)), left_side=True, lower=True, transpose_a=True)
    return [lambda: _solve(L, inner, left_side=False, lower=True)]


# -- triangular_solve: op(A) X = B, so X' = op(A)^-1 (B' - op(A') X) (or from the right)

def _read_triangle(instr, x):
    """The part of `x` the op reads of a: its triangle, less the diagonal if unit."""
    a = instr.attrs
    k = 1 if a["unit_diagonal"] else 0
    return tril(x, -k) if a["lower"] else triu(x, k)


def _op(instr, x):
    return mT(x) if instr.attrs["transpose_a"] else x


def triangular_solve_jvp(instr, tangents):
    a, _ = instr.operands
    t_a, t_b = tangents
    rhs = t_b
    if t_a is not None:
        da = _op(instr, _read_triangle(instr, t_a))
        moved = mm(da, instr) if instr.attrs["left_side"] else mm(instr, da)
        rhs = U.neg(moved) if rhs is None else _sub(rhs, moved)
    return build.make(Op.TRIANGULAR_SOLVE, (a, rhs), instr.attrs)


def triangular_solve_vjp(instr, ct):
    a, _ = instr.operands
    attrs = dict(instr.attrs, transpose_a=not instr.attrs["transpose_a"])
    ct_b = build.make(Op.TRIANGULAR_SOLVE, (a, ct), attrs)

    def ct_a():
        # left: <C, -op(A)^-1 op(A') X> = <-ct_b X^T, op(A')>; right: <-X^T ct_b, op(A')>
        g = mm(ct_b, mT(instr)) if instr.attrs["left_side"] else mm(mT(instr), ct_b)
        return U.neg(_read_triangle(instr, _op(instr, g)))
    return [ct_a, ct_b]


# -- lu: with P A = L U and Phi = L^-1 P A' U^-1, LU' = L tril(Phi, -1) + triu(Phi) U

def _factors(instr):
    (x,) = instr.operands
    packed = build.lu(x, "lu")
    lower = U.add_any(tril(packed, -1), eye_like(packed))
    return packed, lower, triu(packed), build.lu(x, "permutation")


def lu_jvp(instr, tangents):
    (t,) = tangents
    packed, lower, upper, perm = _factors(instr)
    left = _solve(packed, rows_at(t, perm), lower=True, unit_diagonal=True)
    phi = _solve(packed, left, left_side=False, lower=False)
    return U.add_any(mm(lower, tril(phi, -1)), mm(triu(phi), upper))


def lu_vjp(instr, ct):
    # <C, L tril(Phi,-1) + triu(Phi) U> = <tril(L^T C,-1) + triu(C U^T), Phi>, and
    # Phi = L^-1 P A' U^-1 transposes to P^T L^-T (.) U^-T
    packed, lower, upper, perm = _factors(instr)
    ct_phi = U.add_any(tril(mm(mT(lower), ct), -1), triu(mm(ct, mT(upper))))
    left = _solve(packed, ct_phi, lower=True, transpose_a=True, unit_diagonal=True)
    ct_rows = _solve(packed, left, left_side=False, lower=False, transpose_a=True)
    inverse = build.sort([perm], perm.ndim - 1, indices=True)
    return [lambda: rows_at(ct_rows, inverse)]


# -- eigh (distinct eigenvalues): w' = diag(V^T A' V), V' = V (F o V^T A' V),
#    F[i, j] = 1 / (w[j] - w[i]) off the diagonal, 0 on it

def _eig_parts(instr):
    (x,) = instr.operands
    return build.eigh(x, "values"), build.eigh(x, "vectors")


def _gaps(w, like):
    eye = eye_like(like)
    nb = w.ndim - 1
    cols = build.broadcast_in_dim(w, like.shape, tuple(range(nb)) + (nb + 1,))
    rows = build.broadcast_in_dim(w, like.shape, tuple(range(nb)) + (nb,))
    return _sub(U.div(U.full_like(like, 1), _sub(U.add_any(eye, cols), rows)), eye)


def eigh_jvp(instr, tangents):
    (t,) = tangents
    w, v = _eig_parts(instr)
    rotated = mm(mT(v), mm(t, v))
    if instr.attrs["output"] == "values":
        return diag_part(rotated)
    return mm(v, U.mul(_gaps(w, v), rotated))


def eigh_vjp(instr, ct):
    w, v = _eig_parts(instr)
    if instr.attrs["output"] == "values":
        inner = diag_embed(ct)
    else:
        inner = U.mul(_gaps(w, v), mm(mT(v), ct))
    return [lambda: mm(v, mm(inner, mT(v)))]


# -- qr (m >= n, reduced): with Y = A' R^-1, S = Q^T Y, O = tril(S,-1) - tril(S,-1)^T,
#    Q' = Q (O - S) + Y and R' = (S - O) R

def _check_qr(instr):
    (x,) = instr.operands
    m, n = x.shape[-2:]
    if m < n or (instr.attrs["full_matrices"] and m != n):
        raise errors.UnsupportedError(
            f"the derivative of qr is defined for reduced factors of matrices with at "
            f"least as many rows as columns, not {m}x{n}"
            + (" with full_matrices" if m >= n else ""), location=instr.loc,
            hint="differentiate the qr of the transpose, or use mode='reduced'")
    return build.qr(x, "q"), build.qr(x, "r")


def qr_jvp(instr, tangents):
    (t,) = tangents
    q, r = _check_qr(instr)
    y = _solve(r, t, left_side=False, lower=False)
    s = mm(mT(q), y)
    low = tril(s, -1)
    omega = _sub(low, mT(low))
    if instr.attrs["output"] == "q":
        return U.add_any(mm(q, _sub(omega, s)), y)
    return mm(_sub(s, omega), r)


def qr_vjp(instr, ct):
    # With M = Q^T Cq - Cr R^T: ct_S = tril(M - M^T, -1) - M, ct_Y = Cq + Q ct_S,
    # ct_A = ct_Y R^-T
    q, r = _check_qr(instr)
    if instr.attrs["output"] == "q":
        m = mm(mT(q), ct)
    else:
        m = U.neg(mm(ct, mT(r)))
    ct_s = _sub(tril(_sub(m, mT(m)), -1), m)
    ct_y = mm(q, ct_s)
    if instr.attrs["output"] == "q":
        ct_y = U.add_any(ct_y, ct)
    return [lambda: _solve(r, ct_y, left_side=False, lower=False, transpose_a=True)]


# -- svd: s' = diag(U^T A' V) (reduced factors); the vectors are not differentiated

def _svd_factors(instr):
    (x,) = instr.operands
    if instr.attrs["output"] != "s":
        raise errors.UnsupportedError(
            "the derivative of svd's singular vectors is not implemented (only of the "
            "singular values)", location=instr.loc,
            hint="differentiate np.linalg.svd(x, compute_uv=False) or an eigh instead")
    return build.svd(x, "u"), build.svd(x, "vh")


def svd_jvp(instr, tangents):
    (t,) = tangents
    u, vh = _svd_factors(instr)
    return diag_part(mm(mT(u), mm(t, mT(vh))))


def svd_vjp(instr, ct):
    u, vh = _svd_factors(instr)
    return [lambda: mm(u, mm(diag_embed(ct), vh))]


JVP = {Op.CHOLESKY: cholesky_jvp, Op.TRIANGULAR_SOLVE: triangular_solve_jvp, Op.LU: lu_jvp,
       Op.EIGH: eigh_jvp, Op.QR: qr_jvp, Op.SVD: svd_jvp}
VJP = {Op.CHOLESKY: cholesky_vjp, Op.TRIANGULAR_SOLVE: triangular_solve_vjp, Op.LU: lu_vjp,
       Op.EIGH: eigh_vjp, Op.QR: qr_vjp, Op.SVD: svd_vjp}
