"""Linear-algebra kernels on the GPU: cuSOLVER and cuBLAS through CuPy, where it is
installed.

A kernel whose body is one linear-algebra op runs here on the device buffers
themselves, on the device's own stream (CuPy wraps it), so nothing crosses to the
host. Where cuSOLVER reports a failure (a matrix that is not positive definite, a
singular LU) the kernel runs on the interpreter instead, which gives NaN or the zero
pivot as the other backends do; so does every kernel where CuPy is missing.
"""
import numpy as np

from jitlib import config
from jitlib.backends.triton.cupy_bridge import cupy_or_none, cupy_view
from jitlib.hlo import ops as O
from jitlib.hlo.ops import Op


def runner(fusion, device, fallback):
    """A CusolverRunner for a kernel of one linear-algebra op on a CUDA device, or None
    (also where config.gpu_linalg() says "host")."""
    if config.gpu_linalg() != "cusolver":
        return None
    body = fusion.attrs["body"]
    ops = [i for i in body.instructions if i.op is not Op.PARAMETER]
    if (len(ops) != 1 or ops[0].op not in O.LINALG or list(body.results) != ops
            or getattr(device, "interpreted", False) or ops[0].size == 0):
        return None
    cp = cupy_or_none("cupyx.scipy.linalg")   # lu_factor, solve_triangular
    return None if cp is None else CusolverRunner(cp, ops[0], device, fallback)


class CusolverRunner:
    """One linear-algebra op through CuPy on the device's stream."""

    def __init__(self, cp, instr, device, fallback):
        self.cp, self.instr, self.device, self.fallback = cp, instr, device, fallback

    def _view(self, array):
        return cupy_view(self.cp, array)

    def __call__(self, buffers):
        import cupyx
        cp = self.cp
        with cp.cuda.ExternalStream(self.device.stream):
            try:
                with cupyx.errstate(linalg="raise"):
                    # the op's operands are the body's parameters, one per distinct
                    # kernel operand: solve(x, x) reads one buffer twice
                    views = [self._view(buffers[p.attrs["index"]]) for p in self.instr.operands]
                    result = _RULES[self.instr.op](cp, self.instr, *views)
            except np.linalg.LinAlgError:
                return self.fallback(buffers)
            out = self.device.empty(self.instr.shape, self.instr.dtype)
            self._view(out)[...] = result
        return [out]


def _per_matrix(cp, fn, *xs):
    """fn over the matrices of xs (same batch dims), stacked back."""
    batch = xs[0].shape[:-2]
    flat = [x.reshape((-1,) + x.shape[-2:]) for x in xs]
    outs = [fn(*ms) for ms in zip(*flat)]
    return cp.stack(outs).reshape(batch + outs[0].shape)


def _cholesky(cp, instr, x):
    return cp.linalg.cholesky(x)


def _triangular_solve(cp, instr, a, b):
    from cupyx.scipy.linalg import solve_triangular
    at = instr.attrs

    def solve(m, r):
        if at["left_side"]:
            return solve_triangular(m, r, int(at["transpose_a"]), at["lower"],
                                    at["unit_diagonal"])
        # x @ op(a) = b  <=>  op(a).T @ x.T = b.T
        return solve_triangular(m, r.T, int(not at["transpose_a"]), at["lower"],
                                at["unit_diagonal"]).T
    return _per_matrix(cp, solve, a, b)


def _lu(cp, instr, x):
    from cupyx.scipy.linalg import lu_factor
    output = instr.attrs["output"]

    def factor(m):
        packed, pivots = lu_factor(m, check_finite=False)
        if output == "lu":
            return packed
        pivots = cp.asnumpy(pivots).astype(np.int64)    # n small integers
        if output == "pivots":
            return cp.asarray(pivots)
        perm = np.arange(len(pivots))
        for i, p in enumerate(pivots):
            perm[i], perm[p] = perm[p], perm[i]
        return cp.asarray(perm)
    flat = x.reshape((-1,) + x.shape[-2:])
    outs = [factor(m) for m in flat]
    return cp.stack(outs).reshape(instr.shape)


def _qr(cp, instr, x):
    mode = "complete" if instr.attrs["full_matrices"] else "reduced"
    q, r = _per_matrix_pair(cp, lambda m: cp.linalg.qr(m, mode), x)
    return q if instr.attrs["output"] == "q" else r


def _per_matrix_pair(cp, fn, x):
    flat = x.reshape((-1,) + x.shape[-2:])
    pairs = [fn(m) for m in flat]
    return [cp.stack(p).reshape(x.shape[:-2] + p[0].shape) for p in zip(*pairs)]


def _eigh(cp, instr, x):
    values, vectors = cp.linalg.eigh(x, UPLO="L")
    return values if instr.attrs["output"] == "values" else vectors


def _svd(cp, instr, x):
    u, s, vh = cp.linalg.svd(x, full_matrices=instr.attrs["full_matrices"])
    return {"u": u, "s": s, "vh": vh}[instr.attrs["output"]]


_RULES = {Op.CHOLESKY: _cholesky, Op.TRIANGULAR_SOLVE: _triangular_solve, Op.LU: _lu,
          Op.QR: _qr, Op.EIGH: _eigh, Op.SVD: _svd}
