"""Streaming (non-temporal) stores for kernel outputs far past the caches.

An ordinary store to a line that is not in cache first reads the line from memory (write
allocate), so writing N bytes of output moves 2N; a non-temporal store writes whole
lines straight to memory. It only pays where the output would not stay in cache anyway,
so a kernel uses it when it moves at least STREAM_MIN_BYTES.

The vectorizer will not emit non-temporal stores itself (it needs them aligned to the
vector, which it cannot prove), so the kernel (kernels.py, `_streamed_range`) splits
the range it writes (its share of a loop kernel, or one row) into an unaligned head,
blocks of BLOCK_BYTES that start on a 64-byte boundary of the output, and a tail. Each
block first prefetches the inputs it will read INPUT_PREFETCH_BYTES on
(`prefetch_block`), computes its elements into a small stack buffer in a loop of
constant trip count, which LLVM vectorizes whole (four interleaved vectors: one trip),
and `store_block` moves the buffer out with aligned vector stores marked `!nontemporal`
(vmovntps); LLVM forwards the buffer's values in registers, so the buffer never exists.
The head and the tail use plain stores in one scalar loop, so no line is written partly
by a streaming store. The stores stay inside the compute loop: moved out (a larger
buffer, then a copy loop) reads and writes take turns instead of overlapping, slower
than plain stores (docs/performance.md). Non-temporal stores
are weakly ordered: `fence` makes them visible before the kernel returns (so before a
worker thread reports its part done).
"""
import functools
import platform

from jitlib.backends.llvm.emitter import iadd, imul, memory_type

# A kernel moving this many bytes (inputs and outputs) has outputs that leave the caches
# before anyone reads them: 32 MiB, a typical L3.
STREAM_MIN_BYTES = 32 << 20
# Bytes per block: four lines, four independent zmm chains per trip for the out-of-order
# core (faster than two lines, no slower than eight); f64 blocks (32 elements) keep a
# trip count LLVM vectorizes.
BLOCK_BYTES = 256
LINE = 64
# A row kernel that streams its output keeps the row's summed values (softmax's exp) in
# a stack buffer of the row instead of in the output: rows up to this size.
ROW_BUFFER_BYTES = 64 << 10
# Rows shorter than this are written with plain stores: each streamed row pays an
# unaligned head and tail in a scalar loop (NumPy's data starts 16 bytes into a line),
# and the streamed form costs more LLVM work at first call; short rows (attention's
# 2 KiB softmax rows) ran no faster streamed.
ROW_STREAM_MIN_BYTES = 4 << 10

# A streamed flat loop kernel prefetches each full-size input this many bytes ahead of
# the block it computes: the hardware prefetchers alone leave memory idle while a block
# with transcendental work computes. Further ahead was worse, 1-4 KiB about the same
# (docs/performance.md).
INPUT_PREFETCH_BYTES = 2 << 10

_X86 = platform.machine().lower() in ("x86_64", "amd64", "i386", "i686")


def streams(moved_bytes):
    """Whether a kernel that reads and writes `moved_bytes` in all streams its outputs."""
    return moved_bytes >= STREAM_MIN_BYTES


def block_buffer(fn, dt):
    """A line-aligned stack buffer for one block of `dt` elements, and its length."""
    n = BLOCK_BYTES // dt.itemsize
    return fn.alloca(f"[{n} x {memory_type(dt)}], align {LINE}"), n


def aligned_start(fn, ptr, dt, lo, hi):
    """The first index in [lo, hi] whose element of `ptr` starts a 64-byte line (hi if
    none does: an array not aligned to its item size never streams)."""
    item = dt.itemsize
    at = fn.op(f"add i64 {fn.op(f'ptrtoint ptr {ptr} to i64', 's')}, "
               f"{fn.op(f'mul i64 {lo}, {item}', 's')}", "s")
    gap = fn.op(f"and i64 {fn.op(f'sub i64 0, {at}', 's')}, {LINE - 1}", "s")
    odd = fn.op(f"icmp ne i64 {fn.op(f'and i64 {at}, {item - 1}', 's')}, 0", "c")
    start = fn.op(f"add i64 {lo}, {fn.op(f'udiv i64 {gap}, {item}', 's')}", "s")
    start = fn.op(f"select i1 {odd}, i64 {hi}, i64 {start}", "s")
    fn.declare("llvm.umin.i64", "declare i64 @llvm.umin.i64(i64, i64)")
    return fn.op(f"call i64 @llvm.umin.i64(i64 {start}, i64 {hi})", "s")


@functools.lru_cache(maxsize=None)
def l1_prefetch_host():
    """Whether data a kernel reads next is best prefetched into L1 (prefetcht0), not L2
    (prefetcht1): on AMD Zen, where the row kernels measured faster so. On Intel the
    L1 prefetches of a whole row held the row kernels back (docs/performance.md)."""
    import llvmlite.binding as llvm   # here only: kernels render without a compiler
    return llvm.get_host_cpu_name().startswith("znver")


def prefetch_locality():
    """llvm.prefetch's locality argument for data the kernel reads soon."""
    return 3 if l1_prefetch_host() else 2


def prefetch_lines(fn, ptr, start, nbytes, locality, ahead=0):
    """Prefetch the lines that hold bytes [start, start + nbytes) of `ptr`, `ahead`
    bytes further on. A plain getelementptr: past the end of an array it points
    nowhere, and a prefetch of such an address is a no-op, never a fault."""
    fn.declare("llvm.prefetch", "declare void @llvm.prefetch.p0(ptr, i32, i32, i32)")
    for q in range(0, nbytes, LINE):
        at = fn.op(f"getelementptr i8, ptr {ptr}, i64 {iadd(fn, start, ahead + q)}", "p")
        fn.emit(f"call void @llvm.prefetch.p0(ptr {at}, i32 0, i32 {locality}, i32 1)")


def prefetch_block(fn, inputs, base, per):
    """Prefetch, for each (pointer, itemsize) of `inputs`, the lines that hold elements
    [base, base + per) (a block), INPUT_PREFETCH_BYTES further on."""
    for ptr, item in inputs:
        prefetch_lines(fn, ptr, imul(fn, base, item), per * item, prefetch_locality(),
                       INPUT_PREFETCH_BYTES)


def store_block(fn, dt, ptr, base, buffer):
    """Stream the block buffer to elements [base, base + block) of `ptr` (line-aligned)."""
    mt, item = memory_type(dt), dt.itemsize
    per_line = LINE // item
    vec = f"<{per_line} x {mt}>"
    for k in range(BLOCK_BYTES // LINE):
        src = fn.op(f"getelementptr inbounds {mt}, ptr {buffer}, i64 {k * per_line}", "s")
        v = fn.op(f"load {vec}, ptr {src}, align {LINE}", "s")
        at = fn.op(f"add nsw i64 {base}, {k * per_line}", "s")
        dst = fn.op(f"getelementptr inbounds {mt}, ptr {ptr}, i64 {at}", "s")
        fn.emit(f"store {vec} {v}, ptr {dst}, align {LINE}, !nontemporal !{{i32 1}}")


def fence(fn):
    """Make this kernel's streaming stores visible before it returns."""
    if _X86:
        fn.declare("llvm.x86.sse.sfence", "declare void @llvm.x86.sse.sfence()")
        fn.emit("call void @llvm.x86.sse.sfence()")
    else:
        fn.emit("fence seq_cst")
