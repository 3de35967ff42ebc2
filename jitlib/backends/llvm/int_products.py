"""Integer and bool matrix products, compiled: NumPy has no BLAS for them.

NumPy multiplies integer matrices with a plain loop (under a billion multiply-adds a
second). Integer sums wrap, so every order gives the
same bits, and the loop order that vectorizes is free to take: per output row, the row
is cleared, then for each k the row of `b` scaled by a[i, k] is added to it, a
contiguous loop over the output's columns. A bool product is an or of ands, the same
loop with `and` and `or`.

One function per element type, compiled once per process with runtime sizes (its code
does not depend on the shape): `gemm(a, b, c, m, n, k, part, parts)` computes rows
[rows*part/parts, rows*(part+1)/parts) of the stacked product, so jitlib's threads
share a large one out by rows.
"""
import ctypes

import numpy as np

from jitlib import forksafe
from jitlib.backends.llvm import parallel
from jitlib.backends.llvm.compiler import get_compiler
from jitlib.backends.llvm.emitter import memory_type
from jitlib.hlo import dtypes

# a product at least this large is shared between jitlib's threads
PARALLEL_MIN_MULTIPLY_ADDS = 1 << 20

_TEMPLATE = """\
define void @"{name}"(ptr noalias readonly %a, ptr noalias readonly %b, ptr noalias %c,
                      i64 %m, i64 %n, i64 %k, i64 %rows, i64 %part, i64 %parts) nounwind {{
entry:
  %lo.0 = mul i64 %rows, %part
  %lo = udiv i64 %lo.0, %parts
  %hi.0 = add i64 %part, 1
  %hi.1 = mul i64 %rows, %hi.0
  %hi = udiv i64 %hi.1, %parts
  %any = icmp ult i64 %lo, %hi
  br i1 %any, label %row, label %done
row:
  %r = phi i64 [%lo, %entry], [%r.next, %row.end]
  %batch = udiv i64 %r, %m
  %c.at = mul i64 %r, %n
  %c.row = getelementptr inbounds {t}, ptr %c, i64 %c.at
  %a.at = mul i64 %r, %k
  %a.row = getelementptr inbounds {t}, ptr %a, i64 %a.at
  %b.at.0 = mul i64 %batch, %k
  %b.at = mul i64 %b.at.0, %n
  %b.mat = getelementptr inbounds {t}, ptr %b, i64 %b.at
  %wide = icmp ugt i64 %n, 0
  br i1 %wide, label %clear, label %row.end
clear:
  %j0 = phi i64 [0, %row], [%j0.next, %clear]
  %c.p0 = getelementptr inbounds {t}, ptr %c.row, i64 %j0
  store {t} 0, ptr %c.p0
  %j0.next = add nuw i64 %j0, 1
  %j0.more = icmp ult i64 %j0.next, %n
  br i1 %j0.more, label %clear, label %terms
terms:
  %deep = icmp ugt i64 %k, 0
  br i1 %deep, label %term, label %row.end
term:
  %kk = phi i64 [0, %terms], [%kk.next, %term.end]
  %a.p = getelementptr inbounds {t}, ptr %a.row, i64 %kk
  %a.v = load {t}, ptr %a.p
  %b.row.at = mul i64 %kk, %n
  %b.row = getelementptr inbounds {t}, ptr %b.mat, i64 %b.row.at
  br label %column
column:
  %j = phi i64 [0, %term], [%j.next, %column]
  %b.p = getelementptr inbounds {t}, ptr %b.row, i64 %j
  %b.v = load {t}, ptr %b.p
  %c.p = getelementptr inbounds {t}, ptr %c.row, i64 %j
  %c.v = load {t}, ptr %c.p
  %prod = {mul} {t} %a.v, %b.v
  %sum = {add} {t} %c.v, %prod
  store {t} %sum, ptr %c.p
  %j.next = add nuw i64 %j, 1
  %j.more = icmp ult i64 %j.next, %n
  br i1 %j.more, label %column, label %term.end
term.end:
  %kk.next = add nuw i64 %kk, 1
  %kk.more = icmp ult i64 %kk.next, %k
  br i1 %kk.more, label %term, label %row.end
row.end:
  %r.next = add nuw i64 %r, 1
  %r.more = icmp ult i64 %r.next, %hi
  br i1 %r.more, label %row, label %done
done:
  ret void
}}
"""

_lock = forksafe.lock()
_compiled = {}   # dtype -> ctypes function


def supports(dtype):
    dtype = np.dtype(dtype)
    return dtype == dtypes.BOOL or dtypes.is_integer(dtype)


def _gemm(dtype):
    with _lock:
        entry = _compiled.get(dtype)
        if entry is None:
            name = f"jitlib_int_gemm_{dtypes.name(dtype)}"
            bool_ = dtype == dtypes.BOOL   # bytes of 0/1: an or of ands stays 0/1
            ir = _TEMPLATE.format(name=name, t=memory_type(dtype),
                                  mul="and" if bool_ else "mul", add="or" if bool_ else "add")
            # kept for the process's life, apart from the kernels a jit cache evicts
            address = get_compiler().compile(ir, name, quick=False)
            entry = _compiled[dtype] = ctypes.CFUNCTYPE(
                None, *[ctypes.c_void_p] * 3, *[ctypes.c_int64] * 6)(address)
        return entry


def matmul(left, right, out):
    """out[...] = left @ right for C-contiguous stacks [..., m, k] @ [..., k, n] of one
    integer or bool type, with NumPy's wrap-around (and bool's or-of-ands) results."""
    m, k = left.shape[-2:]
    n = right.shape[-1]
    rows = out.size // n if n else 0
    if rows == 0:
        return out
    gemm = _gemm(out.dtype)
    args = (left.ctypes.data, right.ctypes.data, out.ctypes.data, m, n, k, rows)
    if rows > 1 and rows * n * k >= PARALLEL_MIN_MULTIPLY_ADDS:
        parallel.get_pool().run(gemm, args)
    else:
        gemm(*args, 0, 1)
    return out
