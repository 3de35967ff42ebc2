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
import dataclasses
import functools
import platform

import numpy as np

from jitlib.backends.llvm.pointers import data_pointer

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


# -- lingering workers: the next call's share without a wake-up

# A worker that finished a job spins this many times (`pause`) on its mailbox before it
# goes back to sleep on its queue, so a program's next kernel reaches it through memory
# instead of a futex wake: on the Zen 3 VM a wake took 30-100 us (an idle vCPU), and a
# 1 MiB kernel ran 4x slower on two threads than on one.
LINGER_SPINS = 1 << 12
# mailbox states (word 0); words 1 and 2 hold a posted job's function and arguments
ASLEEP, IDLE, POSTED = 0, 1, 2


def mailbox():
    """A worker's mailbox: three i64 words on a cache line of their own."""
    raw = np.zeros(2 * LINE_WORDS, np.int64)
    skip = (-raw.ctypes.data % 64) // 8
    return raw[skip:skip + LINE_WORDS]


class Claim:
    """The claiming entry bound to one kernel: called on the caller's thread as
    claim(*pointers, work, thread), or handed to a lingering worker as a job (`post`)."""

    def __init__(self, n_pointers, kernel_address):
        self._entry = entry(n_pointers)
        self._entry_address = ctypes.cast(self._entry, ctypes.c_void_p).value
        self._job_entry = job_entry(n_pointers)
        self.kernel = kernel_address

    def __call__(self, *args):
        return self._entry(self.kernel, *args)

    def post(self, box, args):
        """Hand claim(*args) to the worker lingering on `box`: the job's array (to keep
        alive until the worker has left it), or None where the worker is not idle."""
        job = np.array([self._entry_address, self.kernel, *args], np.int64)
        if _helpers().post(data_pointer(box), self._job_entry, data_pointer(job)) != 1:
            return None
        return job


def linger(box):
    """Run the jobs posted to `box` until LINGER_SPINS pass with none, or until `kick`;
    returns how many ran. Called by a worker without the GIL (ctypes releases it)."""
    return _helpers().linger(data_pointer(box), LINGER_SPINS)


def kick(box):
    """Send the worker lingering on `box` back to its queue (waiting out a posted job
    first): a job queued for it is then taken at once."""
    _helpers().kick(data_pointer(box))


def state(box):
    """ASLEEP, IDLE or POSTED: where the worker on `box` is (a plain read: a hint)."""
    return int(box[0])


@functools.lru_cache(maxsize=None)
def job_entry(n_pointers):
    """The address of `i64 @jl_claim_job_N(ptr %job)`: the claiming entry for
    `n_pointers` pointers called with job = [entry, kernel, p0, ..., work, thread]."""
    from jitlib.backends.llvm.compiler import get_compiler
    name = f"jl_claim_job_{n_pointers}"
    words = n_pointers + 4
    loads = []
    for w in range(words):
        ty = "i64" if w == words - 1 else "ptr"
        loads.append(f"  %a{w}.at = getelementptr i64, ptr %job, i64 {w}\n"
                     f"  %a{w} = load {ty}, ptr %a{w}.at")
    call_args = ", ".join([f"ptr %a{w}" for w in range(1, words - 1)] + [f"i64 %a{words - 1}"])
    text = (f'define i64 @"{name}"(ptr %job) nounwind {{\nentry:\n' + "\n".join(loads) +
            f"\n  %r = call i64 %a0({call_args})\n  ret i64 %r\n}}\n")
    return get_compiler().compile(text, name)


@functools.lru_cache(maxsize=None)
def _helpers():
    from jitlib.backends.llvm.compiler import get_compiler
    compiler, texts = get_compiler(), mailbox_functions()

    def load(name, *argtypes):
        address = compiler.compile(texts[name], name)
        return ctypes.CFUNCTYPE(ctypes.c_int64, *argtypes)(address)
    p, i = ctypes.c_void_p, ctypes.c_int64
    return _Helpers(load("jl_linger", p, i), load("jl_post", p, p, p), load("jl_kick", p))


@dataclasses.dataclass(frozen=True)
class _Helpers:
    linger: object
    post: object
    kick: object


def mailbox_functions():
    """name -> IR text, for the mailbox's three functions (states ASLEEP, IDLE, POSTED in word 0):

    jl_linger(box, spins): IDLE, then run each POSTED job and go back to IDLE; after
        `spins` polls with none, or once kicked to ASLEEP, leave ASLEEP; returns the jobs
        run.
    jl_post(box, fn, job): if IDLE, write fn and job, then IDLE -> POSTED; 1 if posted.
    jl_kick(box): IDLE -> ASLEEP, first waiting out a POSTED job."""
    pause = "call void @llvm.x86.sse2.pause()" if _X86 else ""
    declare = "declare void @llvm.x86.sse2.pause()\n" if _X86 else ""
    linger = f"""
define i64 @"jl_linger"(ptr %box, i64 %spins) nounwind {{
entry:
  %fn.at = getelementptr i64, ptr %box, i64 1
  %job.at = getelementptr i64, ptr %box, i64 2
  store atomic i64 {IDLE}, ptr %box release, align 8
  br label %poll

poll:
  %n = phi i64 [0, %entry], [%n.next, %wait], [0, %run], [0, %quit]
  %ran = phi i64 [0, %entry], [%ran, %wait], [%ran.next, %run], [%ran, %quit]
  %s = load atomic i64, ptr %box acquire, align 8
  %posted = icmp eq i64 %s, {POSTED}
  br i1 %posted, label %run, label %check

check:
  %kicked = icmp eq i64 %s, {ASLEEP}
  br i1 %kicked, label %leave, label %wait

wait:
  {pause}
  %n.next = add i64 %n, 1
  %more = icmp ult i64 %n.next, %spins
  br i1 %more, label %poll, label %quit

run:
  %fn = load ptr, ptr %fn.at
  %job = load ptr, ptr %job.at
  %r = call i64 %fn(ptr %job)
  %ran.next = add i64 %ran, 1
  store atomic i64 {IDLE}, ptr %box release, align 8
  br label %poll

quit:                                   ; a post can win the race: then run it
  %pair = cmpxchg ptr %box, i64 {IDLE}, i64 {ASLEEP} acq_rel acquire
  %ok = extractvalue {{ i64, i1 }} %pair, 1
  br i1 %ok, label %leave, label %poll

leave:
  ret i64 %ran
}}
{declare}"""
    post = f"""
define i64 @"jl_post"(ptr %box, ptr %fn, ptr %job) nounwind {{
entry:
  %s = load atomic i64, ptr %box acquire, align 8
  %idle = icmp eq i64 %s, {IDLE}
  br i1 %idle, label %write, label %no

write:
  %fn.at = getelementptr i64, ptr %box, i64 1
  %job.at = getelementptr i64, ptr %box, i64 2
  store ptr %fn, ptr %fn.at
  store ptr %job, ptr %job.at
  %pair = cmpxchg ptr %box, i64 {IDLE}, i64 {POSTED} release monotonic
  %ok = extractvalue {{ i64, i1 }} %pair, 1
  %r = zext i1 %ok to i64
  ret i64 %r

no:
  ret i64 0
}}
"""
    kick = f"""
define i64 @"jl_kick"(ptr %box) nounwind {{
entry:
  br label %try

try:
  %pair = cmpxchg ptr %box, i64 {IDLE}, i64 {ASLEEP} acq_rel acquire
  %old = extractvalue {{ i64, i1 }} %pair, 0
  %busy = icmp eq i64 %old, {POSTED}
  br i1 %busy, label %wait, label %done

wait:
  {pause}
  br label %try

done:
  ret i64 0
}}
{declare}"""
    return {"jl_linger": linger, "jl_post": post, "jl_kick": kick}
