"""Claimed chunks: the threads of a large kernel call take its work a chunk at a time.

A static split (thread t does part t of parts) makes every thread wait for the slowest
share, usually the worker's: the core it sleeps on has to be woken, and then the caller,
blocked until the worker reports, has to be woken in turn (docs/performance.md).

So the threads of a split call each run a claiming entry, one per number of pointer
arguments, compiled once per process (`entry`), at -O0 (`Compiler.compile`: a tenth of
O3's time, paid in the first call of every new number of arguments):

    i64 @jl_claim_N(ptr %kernel, ptr %p0, ..., ptr %work, i64 %thread)

which calls the kernel, `kernel(p0, ..., chunk, chunks)`, on chunk after chunk until
none is left. (Defined in each kernel's own module instead, it added LLVM work to
every kernel.) `work` (`work_area`) holds the number
of chunks, a count of finished ones, the number of threads, and per thread a range of
chunks packed as lo | hi << 32, each on its own cache line. Thread t takes chunks from
the front of its own range, so its rows stay contiguous (a row kernel's prefetch of the
next row reaches its next chunk), then from the back of the other threads' ranges: a
thread that starts late just does fewer chunks. Which elements a chunk covers depends
on the chunk only, and each is computed whole by one thread: the bits are those of any
other split.

Thread 0, the caller, then waits for every chunk to be finished, spinning on `pause`
(at most SPIN_LIMIT times, then it returns 0 and the pool waits its usual way), and
returns 1 once they all are: the caller goes on without waiting for the workers to
report, which they do later (parallel.Pool collects it before their next job).
"""
import ctypes
import functools
import platform

import numpy as np

# Chunks of about this many bytes moved (inputs and outputs): small enough that the
# threads finish within microseconds of each other, large enough that claiming one (an
# atomic compare-exchange on the thread's own line) costs nothing measurable.
CHUNK_BYTES = 256 << 10
# The caller spins this many times (`pause`, some 30-60 ns each) for the other threads'
# last chunks before it gives up and blocks: past that, a worker was descheduled.
SPIN_LIMIT = 1 << 14

LINE_WORDS = 8            # i64 words per cache line: each range on a line of its own
_CHUNKS, _FINISHED, _THREADS = 0, 1, 2
_X86 = platform.machine().lower() in ("x86_64", "amd64", "i386", "i686")


def chunk_count(moved_bytes, extent, threads):
    """How many chunks a call moving `moved_bytes` splits into: about CHUNK_BYTES each,
    at least one per thread, at most `extent` (the split loop's trip count)."""
    return max(1, min(extent, max(threads, moved_bytes // CHUNK_BYTES)))


def work_area(chunks, threads):
    """The i64 array a call's threads claim chunks from: thread t first owns chunks
    [chunks*t/threads, chunks*(t+1)/threads)."""
    work = np.zeros(LINE_WORDS * (threads + 1), np.int64)
    work[_CHUNKS], work[_THREADS] = chunks, threads
    for t in range(threads):
        lo, hi = chunks * t // threads, chunks * (t + 1) // threads
        work[LINE_WORDS * (t + 1)] = lo | hi << 32
    return work


@functools.lru_cache(maxsize=None)
def entry(n_pointers):
    """The claiming entry for kernels of `n_pointers` pointer arguments, callable as
    entry(kernel address, *pointers, work address, thread); compiled on first use and
    kept for the process's life."""
    from jitlib.backends.llvm.compiler import get_compiler
    name = f"jl_claim_{n_pointers}"
    address = get_compiler().compile(claim_function(name, n_pointers), name)
    return ctypes.CFUNCTYPE(ctypes.c_int64, *[ctypes.c_void_p] * (n_pointers + 2),
                            ctypes.c_int64)(address)


def claim_function(name, n_pointers):
    """IR text of `@<name>`, the entry that runs chunks of the kernel it is given (one
    that takes `n_pointers` pointers, then part and parts)."""
    ptrs = ", ".join(f"ptr %p{i}" for i in range(n_pointers))
    pause = "call void @llvm.x86.sse2.pause()" if _X86 else ""
    declare = "declare void @llvm.x86.sse2.pause()\n" if _X86 else ""
    return f"""
define i64 @"{name}"(ptr %kernel, {ptrs}, ptr %work, i64 %thread) nounwind {{
entry:
  %chunks = load i64, ptr %work
  %finished.at = getelementptr i64, ptr %work, i64 {_FINISHED}
  %threads.at = getelementptr i64, ptr %work, i64 {_THREADS}
  %threads = load i64, ptr %threads.at
  br label %range

range:                                  ; the j-th range: thread (t + j) mod threads
  %j = phi i64 [0, %entry], [%j.next, %next]
  %done = phi i64 [0, %entry], [%count, %next]
  %t.j = add i64 %thread, %j
  %u = urem i64 %t.j, %threads
  %line = add i64 %u, 1
  %word = mul i64 %line, {LINE_WORDS}
  %slot = getelementptr i64, ptr %work, i64 %word
  %own = icmp eq i64 %j, 0
  br label %claim

claim:                                  ; take one chunk of the range, if it has one
  %count = phi i64 [%done, %range], [%count, %take], [%count.next, %run]
  %w = load atomic i64, ptr %slot monotonic, align 8
  %lo = and i64 %w, 4294967295
  %hi = lshr i64 %w, 32
  %has = icmp ult i64 %lo, %hi
  br i1 %has, label %take, label %next

take:                                   ; own range from the front, others' from the back
  %w.front = add i64 %w, 1
  %w.back = sub i64 %w, 4294967296
  %w.new = select i1 %own, i64 %w.front, i64 %w.back
  %hi.last = sub i64 %hi, 1
  %chunk = select i1 %own, i64 %lo, i64 %hi.last
  %pair = cmpxchg ptr %slot, i64 %w, i64 %w.new monotonic monotonic
  %ok = extractvalue {{ i64, i1 }} %pair, 1
  br i1 %ok, label %run, label %claim

run:
  call void %kernel({ptrs}, i64 %chunk, i64 %chunks)
  %count.next = add i64 %count, 1
  br label %claim

next:
  %j.next = add i64 %j, 1
  %more = icmp ult i64 %j.next, %threads
  br i1 %more, label %range, label %report

report:                                 ; release: this thread's stores before the count
  %old = atomicrmw add ptr %finished.at, i64 %count release
  %caller = icmp eq i64 %thread, 0
  br i1 %caller, label %wait, label %leave

wait:
  %spins = phi i64 [0, %report], [%spins.next, %pause]
  %finished = load atomic i64, ptr %finished.at acquire, align 8
  %all = icmp eq i64 %finished, %chunks
  br i1 %all, label %complete, label %pause

pause:
  {pause}
  %spins.next = add i64 %spins, 1
  %again = icmp ult i64 %spins.next, {SPIN_LIMIT}
  br i1 %again, label %wait, label %leave

complete:
  ret i64 1

leave:
  ret i64 0
}}
{declare}"""
