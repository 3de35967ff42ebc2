"""LU factors and triangular solves of one small matrix as compiled kernels: LAPACK's
getrf and BLAS's trsm called from the kernel, so a loop that solves a system each trip
(Newton's method, implicit time steps) runs as one native call.

The interpreter defines these ops through SciPy (linalg_reference.py): its f2py
wrappers copy each operand into Fortran order and call getrf / trsm of the OpenBLAS in
SciPy's wheel. The kernels do the same: the same copies, the same library's routines,
with SciPy's OpenBLAS on one thread around the call as the interpreter sets it, so the
bits are the interpreter's. The Fortran copies live on the stack, so only matrices up to
STACK_BYTES are compiled; larger ones, batches, and the other factorizations stay on
the interpreter, whose per-call cost is small beside theirs.

The routines are looked up by name when an object is loaded (`loader.provide`), never
baked in as addresses: saved object code stays valid in the next process.
"""
import ctypes

import numpy as np

from jitlib.backends.llvm import loader
from jitlib.backends.llvm.emitter import Unsupported, iadd, imul, load, store
from jitlib.hlo.ops import Op

STACK_BYTES = 512 << 10   # the largest Fortran copy a kernel keeps on its stack

_TYPES = {np.dtype(np.float32): ("s", "float"), np.dtype(np.float64): ("d", "double")}
_THREADS = "openblas_set_num_threads_local"


def _symbols(prefix):
    return {"getrf": f"scipy_{prefix}getrf_", "trsm": f"scipy_{prefix}trsm_"}


def _lookup(name):
    """The address of one of SciPy's OpenBLAS routines, or None."""
    if not (name.startswith("scipy_") or name == _THREADS):
        return None
    from jitlib.hlo.linalg_reference import _scipy_openblas
    lib = _scipy_openblas()
    if lib is None:
        return None
    try:
        return ctypes.cast(getattr(lib, name), ctypes.c_void_p).value
    except AttributeError:
        return None


loader.provide(_lookup)


def check(instr):
    """Raise Unsupported unless `instr` (an LU or triangular solve) compiles here."""
    if instr.op not in (Op.LU, Op.TRIANGULAR_SOLVE):
        raise Unsupported(f"linear algebra ({instr.op}) runs on the interpreter (LAPACK "
                          "through NumPy and SciPy)")
    a = instr.operands[0]
    dt = np.dtype(a.dtype)
    if dt not in _TYPES or any(o.ndim != 2 for o in instr.operands) \
            or a.shape[0] != a.shape[1] or a.size == 0 or instr.size == 0:
        raise Unsupported("linear algebra on batches, non-float or empty matrices runs on "
                          "the interpreter")
    if a.size * dt.itemsize > STACK_BYTES or instr.operands[-1].size * dt.itemsize \
            > STACK_BYTES:
        raise Unsupported("linear algebra on large matrices runs on the interpreter")
    prefix = _TYPES[dt][0]
    found = {s: _lookup(s) for s in (*_symbols(prefix).values(), _THREADS)}
    if None in found.values():
        raise Unsupported("linear algebra runs on the interpreter: SciPy's OpenBLAS "
                          "routines were not found")
    from llvmlite import binding
    for name, address in found.items():   # MCJIT, where jitlib's loader declines an object
        binding.add_symbol(name, address)


def emit(fn, instr, operands):
    """The kernel's body (`check(instr)` passed): `operands` are its input pointers, the
    output is %out0."""
    dt = np.dtype(instr.operands[0].dtype)
    prefix, t = _TYPES[dt]
    names = _symbols(prefix)
    fn.declare(_THREADS, f"declare i32 @{_THREADS}(i32)")
    before = fn.op(f"call i32 @{_THREADS}(i32 1)", "threads")
    if instr.op is Op.LU:
        _lu(fn, instr, operands[0], dt, t, names["getrf"])
    else:
        _triangular_solve(fn, instr, operands, dt, t, names["trsm"])
    fn.op(f"call i32 @{_THREADS}(i32 {before})", "threads")


def _int(fn, value):
    """A pointer to an i32 holding `value` (Fortran passes every argument by reference)."""
    p = fn.alloca("i32")
    fn.emit(f"store i32 {value}, ptr {p}")
    return p


def _char(fn, letter):
    p = fn.alloca("i8")
    fn.emit(f"store i8 {ord(letter)}, ptr {p}")
    return p


def _buffer(fn, t, count):
    return fn.op(f"alloca {t}, i64 {count}, align 64", "buf")


def _transpose_copy(fn, src, dst, rows, cols, dt):
    """dst[i + j * rows] = src[i * cols + j]: a C-ordered rows x cols matrix in Fortran
    order (and back, with rows and cols swapped)."""
    from jitlib.backends.llvm.kernels import loop

    def row(i):
        def element(j):
            store(fn, load(fn, src, iadd(fn, imul(fn, i, cols), j), dt), dst,
                  iadd(fn, i, imul(fn, j, rows)), dt)
        loop(fn, cols, element, scalar=True)
    loop(fn, rows, row, scalar=True)


def _lu(fn, instr, a, dt, t, getrf):
    from jitlib.backends.llvm.kernels import loop
    n = instr.operands[0].shape[0]
    output = instr.attrs["output"]
    fn.declare(getrf, f"declare void @{getrf}(ptr, ptr, ptr, ptr, ptr, ptr)")
    work = "%out0" if output == "lu" else _buffer(fn, t, n * n)
    pivots, info, size = _buffer(fn, "i32", n), _int(fn, 0), _int(fn, n)
    _transpose_copy(fn, a, work, n, n, dt)
    fn.emit(f"call void @{getrf}(ptr {size}, ptr {size}, ptr {work}, ptr {size}, "
            f"ptr {pivots}, ptr {info})")
    if output == "lu":   # Fortran order back to C order, in place
        def row(i):
            def element(j):
                upper = iadd(fn, i, fn.op(f"add i64 {j}, 1", "j"))
                below = fn.op(f"icmp ult i64 {upper}, {n}", "c")
                swap, done = fn.label("swap"), fn.label("swapped")
                fn.emit(f"br i1 {below}, label %{swap}, label %{done}")
                fn.start_block(swap)
                x, y = iadd(fn, imul(fn, i, n), upper), iadd(fn, imul(fn, upper, n), i)
                vx, vy = load(fn, "%out0", x, dt), load(fn, "%out0", y, dt)
                store(fn, vy, "%out0", x, dt)
                store(fn, vx, "%out0", y, dt)
                fn.emit(f"br label %{done}")
                fn.start_block(done)
            loop(fn, n, element, scalar=True)
        loop(fn, n, row, scalar=True)
        return

    def pivot(i):   # LAPACK's pivots count from 1
        p = fn.op(f"getelementptr inbounds i32, ptr {pivots}, i64 {i}", "p")
        one_based = fn.op(f"load i32, ptr {p}", "v")
        return fn.op(f"sext i32 {fn.op(f'add i32 {one_based}, -1', 'v')} to i64", "v")
    out = np.dtype(np.int64)
    if output == "pivots":
        loop(fn, n, lambda i: store(fn, pivot(i), "%out0", i, out), scalar=True)
        return
    # the permutation: row i swapped with row pivots[i], in turn, from the identity
    loop(fn, n, lambda i: store(fn, i, "%out0", i, out), scalar=True)

    def swap(i):
        p = pivot(i)
        vi, vp = load(fn, "%out0", i, out), load(fn, "%out0", p, out)
        store(fn, vp, "%out0", i, out)
        store(fn, vi, "%out0", p, out)
    loop(fn, n, swap, scalar=True)


def _triangular_solve(fn, instr, operands, dt, t, trsm):
    a_instr, b_instr = instr.operands
    n, (m, k) = a_instr.shape[0], b_instr.shape
    attrs = instr.attrs
    fn.declare(trsm, f"declare void @{trsm}(ptr, ptr, ptr, ptr, ptr, ptr, ptr, ptr, ptr, "
                     "ptr, ptr)")
    a = _buffer(fn, t, n * n)
    # a column (k == 1) is the same memory in both orders: solved where it lands
    b = "%out0" if k == 1 else _buffer(fn, t, m * k)
    alpha = fn.alloca(t)
    fn.emit(f"store {t} 1.0, ptr {alpha}")
    letters = ("L" if attrs["left_side"] else "R", "L" if attrs["lower"] else "U",
               "T" if attrs["transpose_a"] else "N", "U" if attrs["unit_diagonal"] else "N")
    chars = [_char(fn, c) for c in letters]
    args = chars + [_int(fn, m), _int(fn, k), alpha, a, _int(fn, n), b, _int(fn, m)]
    _transpose_copy(fn, operands[0], a, n, n, dt)
    _transpose_copy(fn, operands[1], b, m, k, dt)
    fn.emit(f"call void @{trsm}({', '.join(f'ptr {p}' for p in args)})")
    if k != 1:
        _transpose_copy(fn, b, "%out0", k, m, dt)
