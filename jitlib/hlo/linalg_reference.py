"""The interpreter's linear-algebra rules: LAPACK through NumPy and SciPy.

cholesky, qr, eigh and svd call numpy.linalg, so they give eager NumPy's own results
(LAPACK potrf, geqrf/orgqr, syevd, gesdd from the OpenBLAS bundled in NumPy's wheels).
NumPy exposes no LU factors and no triangular solve, so lu is SciPy's getrf
(`scipy.linalg.lu_factor`) and triangular_solve BLAS trsm (`scipy.linalg.blas`), from
the OpenBLAS bundled in SciPy's wheels; trsm is also what LAPACK's getrs and JAX's CPU
triangular_solve run. The cpu backend runs these ops through this module, but for
small LU factors and triangular solves, which it compiles as calls of the same
routines on the same copies (backends/llvm/lapack.py).

Inside jit a value cannot raise: where LAPACK fails (a matrix that is not positive
definite, an iteration that does not converge) that matrix's results are NaN, as in
JAX; a singular matrix's LU has a zero pivot and the solves through it give inf/NaN.
"""
import contextlib
import ctypes
import glob
import os
import threading
import warnings

import numpy as np

from jitlib.hlo.ops import Op


def _matrices(x):
    """x's matrices one by one (the batch dims flattened) and a function stacking
    per-matrix results back under x's batch dims."""
    batch = x.shape[:-2]
    flat = x.reshape((-1,) + x.shape[-2:])

    def restore(outs):
        return np.stack(outs).reshape(batch + outs[0].shape)
    return flat, restore


def _batched(fn, x, nan_shape, failed=None):
    """fn over x's batch (NumPy's gufuncs take it whole); a matrix where LAPACK fails
    gives `failed` (default: NaN of `nan_shape`) instead of raising."""
    try:
        return fn(x)
    except np.linalg.LinAlgError:
        pass
    if failed is None:
        failed = np.full(nan_shape, np.nan, x.dtype)
    flat, restore = _matrices(x)
    outs = []
    for m in flat:
        try:
            outs.append(np.asarray(fn(m), x.dtype))
        except np.linalg.LinAlgError:
            outs.append(failed)
    return restore(outs)


def _in_threads(fn, items, threads):
    """[fn(item) for item in items], the items shared out in contiguous groups between
    `threads` threads, each group's LAPACK and BLAS calls on one thread of their library:
    their wrappers release the GIL. A batch of 64 256x256 float32 matrices on the Zen 3
    VM (2 vCPUs): lu factors 29 -> 16 ms; NumPy's own batched cholesky took 55 ms on one
    OpenBLAS thread and 94 on two."""
    from jitlib import host_threads
    with _one_blas_thread():
        return host_threads.map_in_threads(fn, items, threads)


# below this many multiply-adds a batch stays on the calling thread (a thread's start
# and join cost ~0.1 ms)
_SHARED_WORK = 1 << 22


def _threads_for(work):
    """How many threads a batch of `work` multiply-adds is shared between."""
    from jitlib import config
    return config.num_threads() if work >= _SHARED_WORK else 1


def _work(x, extra=1):
    """Multiply-adds of an O(n^3) factorization of each of x's matrices, roughly."""
    n = x.shape[-1] if x.ndim else 0
    return int(np.prod(x.shape[:-2], dtype=np.int64)) * n ** 2 * max(n, extra)


def _cholesky(instr, x):
    # NumPy reads the lower triangle, as potrf('L') does, and zeroes the upper; a failed
    # factor is NaN on and below the diagonal and 0 above, as JAX's
    above = np.triu(np.ones(x.shape[-2:], bool), 1)
    failed = np.where(above, np.zeros((), x.dtype), np.array(np.nan, x.dtype))
    flat, _ = _matrices(x)
    threads = _threads_for(_work(x))
    parts = np.array_split(flat, max(1, min(threads, len(flat))))   # one gufunc call each
    factor = _in_threads(lambda part: _batched(np.linalg.cholesky, part, None, failed),
                         [p for p in parts if len(p)], threads)
    lower = (np.concatenate(factor) if factor else flat).reshape(x.shape)
    return lower.astype(x.dtype, copy=False)


def _trsm(a, b, attrs):
    from scipy.linalg.blas import get_blas_funcs
    trsm = get_blas_funcs("trsm", dtype=a.dtype)
    return trsm(1.0, a, b, side=0 if attrs["left_side"] else 1, lower=attrs["lower"],
                trans_a=attrs["transpose_a"], diag=attrs["unit_diagonal"])


def _triangular_solve(instr, a, b):
    if 0 in b.shape:
        return np.zeros(b.shape, b.dtype)
    flat_a, _ = _matrices(a)
    flat_b, restore = _matrices(b)
    threads = _threads_for(_work(a, b.shape[-1]))
    return restore(_in_threads(lambda pair: _trsm(*pair, instr.attrs),
                               list(zip(flat_a, flat_b)), threads))


def _permutation(pivots):
    """The row order LAPACK's swaps (row i with row pivots[i], in turn) produce."""
    perm = np.arange(len(pivots))
    for i, p in enumerate(pivots):
        perm[i], perm[p] = perm[p], perm[i]
    return perm


_blas = None      # SciPy's OpenBLAS (ctypes), once looked for; False where not found


def _scipy_openblas():
    """SciPy's bundled OpenBLAS, where its wheel ships one that can set a per-thread
    thread count (OpenBLAS 0.3.27+), else None."""
    global _blas
    if _blas is None:
        _blas = False
        try:
            import scipy
            libs = os.path.join(os.path.dirname(os.path.dirname(scipy.__file__)), "scipy.libs")
            for path in glob.glob(os.path.join(libs, "libscipy_openblas*.so*")):
                lib = ctypes.CDLL(path)
                if hasattr(lib, "openblas_set_num_threads_local"):
                    _blas = lib
                    break
        except Exception:   # noqa: BLE001 - another build of SciPy: leave its threads be
            pass
    return _blas or None


@contextlib.contextmanager
def _one_blas_thread():
    """SciPy's and NumPy's OpenBLAS on one thread while a rule calls them. Their calls
    here are per matrix and small (the rule shares matrices between threads itself), and
    the two copies' threads spin after a call on the cores the other's next call needs:
    the 64 x 256x256 float32 cholesky + two solves ran 312 ms with both on 2 threads,
    209 with both on one (NumPy's own: 155, 166). The setting is the process's in these
    builds (jitlib/blas_threads.py), so it is made once around a rule's threads."""
    from jitlib import blas_threads
    lib = _scipy_openblas()
    with blas_threads.single_threaded():
        if lib is None:
            yield
            return
        before = lib.openblas_set_num_threads_local(1)
        try:
            yield
        finally:
            lib.openblas_set_num_threads_local(before)


_last_lu = threading.local()   # .operand (a copy), .factors: the last factorization


def _lu_factors(x):
    """[(packed, pivots)] per matrix of x. np.linalg.solve traces as two lu ops on one
    operand (its factors, its permutation), which run as two kernels: the last
    factorization is kept beside a copy of its operand, so the second kernel finds it
    (an equality test of the operand, against an O(n^3) factorization)."""
    from scipy.linalg import lu_factor
    last = getattr(_last_lu, "operand", None)
    if last is not None and last.shape == x.shape and last.dtype == x.dtype \
            and np.array_equal(last, x):
        return _last_lu.factors
    factors = _in_threads(lambda m: _lu_factor(m, lu_factor), list(_matrices(x)[0]),
                          _threads_for(_work(x)))
    _last_lu.operand, _last_lu.factors = np.array(x), factors
    return factors


def _lu_factor(m, lu_factor):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # a singular matrix: a zero pivot, no error
        packed, pivots = lu_factor(m, check_finite=False)
    return packed, pivots.astype(np.int64)


def _lu(instr, x):
    output = instr.attrs["output"]
    if x.size == 0:
        return np.zeros(instr.shape, x.dtype if output == "lu" else np.int64)

    def part(packed, pivots):
        if output == "lu":
            return packed.astype(x.dtype, copy=False)
        return pivots if output == "pivots" else _permutation(pivots)
    return _matrices(x)[1]([part(*factors) for factors in _lu_factors(x)])


def _qr(instr, x):
    mode = "complete" if instr.attrs["full_matrices"] else "reduced"
    q, r = np.linalg.qr(x, mode=mode)
    return (q if instr.attrs["output"] == "q" else r).astype(x.dtype, copy=False)


def _eigh(instr, x):
    values = instr.attrs["output"] == "values"
    n = x.shape[-1]
    part = _batched(lambda m: np.linalg.eigh(m, UPLO="L")[0 if values else 1], x,
                    (n,) if values else (n, n))
    return part.astype(x.dtype, copy=False)


def _svd(instr, x):
    full, output = instr.attrs["full_matrices"], instr.attrs["output"]
    m, n = x.shape[-2:]
    index = ("u", "s", "vh").index(output)
    if 0 in x.shape:
        return np.zeros(instr.shape, x.dtype) if output == "s" or 0 in instr.shape else (
            np.broadcast_to(np.eye(*instr.shape[-2:], dtype=x.dtype), instr.shape).copy())
    shape = instr.shape[-2:] if output != "s" else instr.shape[-1:]
    return _batched(lambda a: np.linalg.svd(a, full_matrices=full)[index], x,
                    shape).astype(x.dtype, copy=False)


def _c_ordered(rule):
    # LAPACK and BLAS hand back Fortran-ordered arrays; NumPy's sums run in an order that
    # follows the layout, so a result's layout would decide the bits of a later reduction
    # (and would change when the optimizer rewrites its consumers): always C order
    return lambda instr, *operands: np.ascontiguousarray(rule(instr, *operands))


RULES = {op: _c_ordered(rule) for op, rule in {
    Op.CHOLESKY: _cholesky, Op.TRIANGULAR_SOLVE: _triangular_solve, Op.LU: _lu, Op.QR: _qr,
    Op.EIGH: _eigh, Op.SVD: _svd}.items()}
