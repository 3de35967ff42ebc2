"""Kernels shared between threads give the same bits as one thread.

Every compiled kernel does its `(part, parts)` share of the outermost loop (kernels.py);
parallel.Pool runs the parts on several threads. These tests compile the same modules
with pools of 1, 2 and 3 threads (3 splits unevenly) and with no size threshold, and ask
for identical bits, and for the interpreter's answer within the backend's tolerances.
"""
import threading

import numpy as np
import pytest

import jitlib
import anchors
from jitlib.backends.llvm import LLVMBackend, kernels, parallel
from jitlib.fusion import optimize
from jitlib.hlo import Module, Op, build as B, dtypes
from jitlib.hlo.interpreter import evaluate
from jitlib.testing import assert_allclose_tree

RNG = np.random.default_rng(11)
F32 = np.dtype(np.float32)


def _compile_with_threads(module, threads, monkeypatch):
    monkeypatch.setattr(parallel, "_pool", parallel.Pool(threads))
    monkeypatch.setattr(parallel, "MIN_PARALLEL_BYTES", 0)
    exe = LLVMBackend().compile(module)
    assert not exe.fallbacks
    return exe


def _same_bits(a, b, what):
    assert a.dtype == b.dtype and a.shape == b.shape, what
    assert a.tobytes() == b.tobytes(), what


def _modules():
    x = B.parameter(0, (37, 129), F32)
    v = B.parameter(1, (129,), F32)
    flat = Module("flat", [x, v], [B.binary(Op.MUL, B.unary(Op.EXP, x),
                                            B.broadcast_in_dim(v, (37, 129), (1,)))])
    nested = Module("nested", [x, v], [B.binary(Op.ADD, B.transpose(
        B.reshape(x, (129, 37)), (1, 0)), B.broadcast_in_dim(v, (37, 129), (1,)))])
    rows = Module("rows", [x, v], [B.reduce(Op.REDUCE_SUM, x, (1,)),
                                   B.reduce(Op.REDUCE_MAX, x, (1,))])
    columns = Module("columns", [x, v], [B.reduce(Op.REDUCE_SUM, x, (0,))])
    whole = Module("whole", [x, v], [B.reduce(Op.REDUCE_SUM, x, (0, 1))])
    return [flat, nested, rows, columns, whole]


@pytest.mark.parametrize("index", range(5), ids=["flat", "nested", "rows", "columns", "whole"])
def test_any_thread_count_gives_the_same_bits(index, monkeypatch):
    module = _modules()[index]
    args = [RNG.standard_normal(p.shape).astype(F32) for p in module.params]
    results = [_compile_with_threads(module, n, monkeypatch)(*args) for n in (1, 2, 3)]
    for n, got in zip((2, 3), results[1:]):
        for g, w in zip(got, results[0]):
            _same_bits(g, w, f"{module.name}: {n} threads vs 1\n{module}")
    assert_allclose_tree(results[0], evaluate(module, args), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("fn", [anchors.softmax_rows, anchors.layernorm, anchors.gelu_tanh])
def test_anchor_rows_are_split_without_changing_bits(fn, monkeypatch):
    args = {anchors.layernorm: [RNG.standard_normal((65, 300)).astype(F32),
                                RNG.standard_normal(300).astype(F32),
                                RNG.standard_normal(300).astype(F32)]}.get(
        fn, [RNG.standard_normal((65, 300)).astype(F32)])
    module = jitlib.make_ir(fn)(*args)
    one, two = (_compile_with_threads(module, n, monkeypatch)(*args) for n in (1, 2))
    for a, b in zip(one, two):
        _same_bits(a, b, fn.__name__)


def test_a_single_row_reduction_is_never_split(monkeypatch):
    monkeypatch.setattr(parallel, "MIN_PARALLEL_BYTES", 0)   # small kernels run whole
    x = B.parameter(0, (4096,), F32)
    whole = B.reduce(Op.REDUCE_SUM, x, (0,))
    (fusion,) = [i for i in optimize(Module("sum", [x], [whole])).instructions
                 if i.op is Op.FUSION]
    assert not kernels.render(fusion).splittable
    rows = B.parameter(0, (8, 512), F32)
    (fusion,) = [i for i in optimize(Module("sums", [rows], [
        B.reduce(Op.REDUCE_SUM, rows, (1,))])).instructions if i.op is Op.FUSION]
    assert kernels.render(fusion).splittable


def test_small_calls_never_reach_the_pool(monkeypatch):
    ran_on = set()   # threads that asked the pool to split a call

    class Spy(parallel.Pool):
        def run(self, fn, args, *claiming):
            ran_on.add(threading.get_ident())
            super().run(fn, args, *claiming)

    monkeypatch.setattr(parallel, "_pool", Spy(2))
    x = B.parameter(0, (4,), F32)
    small = LLVMBackend().compile(Module("small", [x], [B.unary(Op.NEG, x)]))
    small(np.ones(4, F32))
    assert not ran_on                                   # below MIN_PARALLEL_BYTES
    big = B.parameter(0, (1 << 18,), F32)
    LLVMBackend().compile(Module("big", [big], [B.unary(Op.NEG, big)]))(
        np.ones(1 << 18, F32))
    assert ran_on


def test_concurrent_callers_share_the_pool(monkeypatch):
    # a caller that finds the workers busy runs its whole kernel itself
    monkeypatch.setattr(parallel, "_pool", parallel.Pool(2))
    monkeypatch.setattr(parallel, "MIN_PARALLEL_BYTES", 0)
    f = jitlib.jit(anchors.softmax_rows, backend="cpu")
    xs = [RNG.standard_normal((64, 257)).astype(F32) for _ in range(4)]
    want = [f(x) for x in xs]
    got = [None] * len(xs)

    def call(i):
        for _ in range(20):
            got[i] = f(xs[i])
    threads = [threading.Thread(target=call, args=(i,)) for i in range(len(xs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for g, w in zip(got, want):
        _same_bits(g, w, "softmax from 4 threads")


@pytest.mark.parametrize("value, want", [("3", 3), ("0", None), ("x", None), ("", None)])
def test_thread_count_comes_from_the_environment(value, want, monkeypatch):
    monkeypatch.setenv("JITLIB_NUM_THREADS", value)
    import os
    assert parallel.num_threads() == (want or os.cpu_count())


def test_bool_and_narrow_outputs_split_on_element_boundaries(monkeypatch):
    # 1-byte and 2-byte outputs: neighbouring shares must not clobber each other's bytes
    x = B.parameter(0, (1001,), F32)
    module = Module("narrow", [x], [
        B.compare(x, B.broadcast_in_dim(B.constant(np.float32(0.1)), (1001,), ()), "GT"),
        B.convert(x, np.dtype(np.float16)), B.convert(x, dtypes.bfloat16)])
    arg = RNG.standard_normal(1001).astype(F32)
    one, three = (_compile_with_threads(module, n, monkeypatch)(arg) for n in (1, 3))
    for a, b in zip(one, three):
        _same_bits(a, b, "narrow outputs")


@pytest.mark.filterwarnings("ignore:os.fork:RuntimeWarning")   # the child never uses JAX
def test_a_forked_child_starts_its_own_workers(monkeypatch):
    import os
    pool = parallel.Pool(2)
    monkeypatch.setattr(parallel, "_pool", pool)
    monkeypatch.setattr(parallel, "MIN_PARALLEL_BYTES", 0)
    exe = LLVMBackend().compile(_modules()[0])
    args = [RNG.standard_normal(p.shape).astype(F32) for p in exe.module.params]
    want = exe(*args)[0]                      # the parent's worker thread is running now
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:                              # the child: without a fresh worker, hangs
        ok = exe(*args)[0].tobytes() == want.tobytes()
        os.write(write, b"1" if ok else b"0")
        os._exit(0)
    os.close(write)
    import select
    ready, _, _ = select.select([read], [], [], 60)
    answer = os.read(read, 1) if ready else None
    if not ready:
        os.kill(pid, 9)
    os.waitpid(pid, 0)
    os.close(read)
    assert ready, "the forked child hung on the parent's worker"
    assert answer == b"1"


@pytest.mark.parametrize("shape, whole", [((4,), True), ((64, 100), True),
                                          ((1 << 18,), False), ((512, 512), False)])
def test_kernels_under_the_threshold_have_static_loop_bounds(shape, whole):
    # a kernel no runner ever shares out ignores %part/%parts: its loops run over
    # constants, so LLVM needs no remainder code (and compiles it several times faster)
    x = B.parameter(0, shape, F32)
    for module in (Module("ew", [x], [B.unary(Op.EXP, x)]),
                   Module("rows", [x], [B.reduce(Op.REDUCE_SUM, x, (len(shape) - 1,))])):
        (fusion,) = [i for i in optimize(module).instructions if i.op is Op.FUSION]
        kernel = kernels.render(fusion)
        body = kernel.ir[kernel.ir.index("define void"):]
        one_row = module.name == "rows" and len(shape) == 1   # never split anyway
        split = not whole and not one_row
        assert ("%parts" in body[body.index("{"):]) is split, kernel.ir
        assert kernel.splittable is split
        args = [RNG.standard_normal(shape).astype(F32)]
        assert_allclose_tree(LLVMBackend().compile(module)(*args), evaluate(module, args),
                             rtol=1e-5, atol=1e-5, err_msg=str(module))


# -- claimed chunks (claiming.py)

def _counting_kernel_claim(chunks):
    """The claiming entry over a kernel that counts, per chunk, how often it ran."""
    import functools
    from jitlib.backends.llvm import claiming
    from jitlib.backends.llvm.compiler import get_compiler
    ir = ('define void @"count"(ptr %counts, i64 %part, i64 %parts) nounwind {\n'
          "entry:\n"
          "  %at = getelementptr i64, ptr %counts, i64 %part\n"
          "  %old = atomicrmw add ptr %at, i64 1 monotonic\n"
          "  ret void\n}\n")
    code = get_compiler().load(ir, "count")
    return code, functools.partial(claiming.entry(1), code.address)


@pytest.mark.parametrize("threads, chunks", [(1, 5), (2, 7), (3, 64), (4, 3)])
def test_every_chunk_runs_once_whichever_thread_claims_it(threads, chunks):
    from jitlib.backends.llvm import claiming
    code, claim = _counting_kernel_claim(chunks)
    counts = np.zeros(chunks, np.int64)
    work = claiming.work_area(chunks, threads)
    answers = [None] * threads

    def run(t):
        answers[t] = claim(counts.ctypes.data, work.ctypes.data, t)
    pool = [threading.Thread(target=run, args=(t,)) for t in range(1, threads)]
    for thread in pool:
        thread.start()
    run(0)
    for thread in pool:
        thread.join()
    assert counts.tolist() == [1] * chunks
    assert answers[0] == 1 and all(a == 0 for a in answers[1:])   # only the caller waits
    assert work[1] == chunks


def test_a_late_worker_leaves_its_chunks_to_the_caller():
    # the worker joins after the caller has claimed every chunk, its own range's too
    from jitlib.backends.llvm import claiming
    code, claim = _counting_kernel_claim(8)
    counts = np.zeros(8, np.int64)
    work = claiming.work_area(8, 2)
    assert claim(counts.ctypes.data, work.ctypes.data, 0) == 1
    assert claim(counts.ctypes.data, work.ctypes.data, 1) == 0
    assert counts.tolist() == [1] * 8


def _split_runner(module):
    from jitlib.backends.llvm.executable import NativeRunner
    (fusion,) = [i for i in optimize(module).instructions if i.op is Op.FUSION]
    kernel = kernels.render(fusion)
    assert kernel.splittable
    return NativeRunner(kernel)


def _rows_module():
    x = B.parameter(0, (37, 129), F32)
    return Module("rows", [x], [B.reduce(Op.REDUCE_SUM, x, (1,)),
                                B.reduce(Op.REDUCE_MAX, x, (1,))])


@pytest.mark.parametrize("make", [lambda: _modules()[0], _rows_module], ids=["flat", "rows"])
def test_a_slow_worker_changes_no_bit_and_is_not_waited_for(make, monkeypatch):
    import time
    monkeypatch.setattr(parallel, "_pool", parallel.Pool(2))
    monkeypatch.setattr(parallel, "MIN_PARALLEL_BYTES", 0)
    module = make()
    args = [RNG.standard_normal(p.shape).astype(F32) for p in module.params]
    runner = _split_runner(module)
    assert runner._chunks >= 2
    want = [r.copy() for r in runner(args)]
    assert_allclose_tree(want, evaluate(module, args), rtol=1e-5, atol=1e-5)
    parallel._pool._collect()
    claim, late = runner._claim, []

    def slow(*claim_args):    # a plain function: queued to the worker, never posted
        if claim_args[-1] != 0:   # the worker: starts after the caller is done
            time.sleep(0.2)
            late.append(claim_args[-1])
        return claim(*claim_args)
    runner._claim = slow
    start = time.perf_counter()
    for _ in range(3):   # the 2nd and 3rd calls find the worker busy: the caller does all
        got = runner(args)
        for g, w in zip(got, want):
            _same_bits(g, w, f"{module.name} with a slow worker")
    assert time.perf_counter() - start < 0.2 and late == []
    parallel._pool._collect()    # waits out the one job the worker was given
    assert late == [1]


@pytest.fixture
def lingering(monkeypatch):
    """A two-thread pool whose worker has run one job and lingers until kicked; sent
    back to sleep afterwards (a worker left spinning would hold a core)."""
    from jitlib.backends.llvm import claiming
    import time
    monkeypatch.setattr(claiming, "LINGER_SPINS", 1 << 40)
    pool = parallel.Pool(2)
    monkeypatch.setattr(parallel, "_pool", pool)
    monkeypatch.setattr(parallel, "MIN_PARALLEL_BYTES", 0)
    pool._ensure_workers()
    (worker,) = pool._workers

    def idle():
        pool._collect()
        while claiming.state(worker.box) != claiming.IDLE:
            time.sleep(1e-4)
    worker.submit(lambda: None, ())
    idle()
    yield pool, worker
    idle()
    claiming.kick(worker.box)


def test_a_lingering_worker_takes_posted_chunks_and_changes_no_bit(lingering, monkeypatch):
    from jitlib.backends.llvm import claiming
    pool, worker = lingering
    module = _rows_module()
    args = [RNG.standard_normal(p.shape).astype(F32) for p in module.params]
    runner = _split_runner(module)
    posted = []
    post = claiming.Claim.post
    monkeypatch.setattr(claiming.Claim, "post",
                        lambda self, box, a: posted.append(post(self, box, a)) or posted[-1])
    want = evaluate(module, args)
    for _ in range(20):
        assert_allclose_tree(runner(args), want, rtol=1e-5, atol=1e-5)
    pool._collect()
    # through the mailbox, never the queue: the worker never left it. (The first post
    # finds it idle; later ones may find it still on the last job, under load.)
    assert worker.pending == 0 and posted[0] is not None
    assert worker.posted is None     # collected: no kernel is held for it
    assert claiming.state(worker.box) == claiming.IDLE   # still there for the next one


def test_a_static_split_kicks_a_lingering_worker_back_to_its_queue(lingering, monkeypatch):
    # integer products split by parts: the worker must leave its mailbox for its part
    a = RNG.integers(-50, 50, (256, 300)).astype(np.int32)
    b = RNG.integers(-50, 50, (300, 200)).astype(np.int32)
    from jitlib.backends.llvm import int_products
    monkeypatch.setattr(int_products, "PARALLEL_MIN_MULTIPLY_ADDS", 0)
    out = int_products.matmul(a, b, np.empty((256, 200), np.int32))
    np.testing.assert_array_equal(out, a @ b)


@pytest.mark.parametrize("fn, shape, extent", [
    (anchors.gelu_tanh, (1 << 23,), 1 << 23),        # streamed stores: a flat share
    (anchors.gelu_tanh, (1 << 18,), (1 << 18) // kernels.SHARE_BLOCK),   # plain: by blocks
    (anchors.softmax_rows, (2048, 4096), 2048),      # rows, streamed
    (anchors.softmax_rows, (512, 300), 512)])
def test_split_kernels_know_the_trip_count_they_share_out(fn, shape, extent):
    # the chunk count is capped by it: a kernel reporting 0 would run in one chunk,
    # on one thread
    from jitlib.backends.llvm import claiming
    (fusion,) = [i for i in optimize(jitlib.make_ir(fn)(np.ones(shape, F32))).instructions
                 if i.op is Op.FUSION]
    kernel = kernels.render(fusion)
    assert kernel.splittable and kernel.split_extent == extent
    assert claiming.chunk_count(4 * int(np.prod(shape)), kernel.split_extent, 2) >= 2


def test_an_idle_worker_holds_no_kernel(monkeypatch):
    # a job keeps its kernel's code mapped while a worker runs it (the worker may come
    # late), not after: an evicted program's engine must be free to close
    import gc
    import weakref
    monkeypatch.setattr(parallel, "_pool", parallel.Pool(2))
    monkeypatch.setattr(parallel, "MIN_PARALLEL_BYTES", 0)
    # a shape no other test compiles: a live executable elsewhere with the same kernel
    # text would share its code handle (the full suite once failed here under load)
    x = B.parameter(0, (41, 133), F32)
    runner = _split_runner(Module("rows_alone", [x], [B.reduce(Op.REDUCE_SUM, x, (1,))]))
    runner([RNG.standard_normal((41, 133)).astype(F32)])
    parallel._pool._collect()          # the worker has answered: its job is over
    code = weakref.ref(runner._code)
    del runner
    gc.collect()
    assert code() is None


@pytest.mark.parametrize("n", [128, 4773, 262147])
def test_block_shares_write_every_element_once_for_any_split(n, monkeypatch):
    """A flat split loop runs by blocks of SHARE_BLOCK elements, the last share taking
    the rest: calling the kernel part by part, for any number of parts, writes every
    element, with the bits of one whole call."""
    import ctypes
    from jitlib.backends.llvm.compiler import get_compiler
    monkeypatch.setattr(parallel, "MIN_PARALLEL_BYTES", 0)
    x = B.parameter(0, (n,), F32)
    body = Module("k", [x], [B.unary(Op.TANH, x)])
    kernel = kernels.render(B.fusion([x], body, "loop", "blocks"))
    assert kernel.split_extent == n // kernels.SHARE_BLOCK, kernel.ir
    code = get_compiler().load(kernel.ir, kernel.name)
    fn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
                          ctypes.c_int64)(code.address)
    arg = RNG.standard_normal(n).astype(F32)
    whole = np.full(n, np.nan, F32)
    fn(arg.ctypes.data, whole.ctypes.data, 0, 1)
    assert not np.isnan(whole).any()
    for parts in (2, 3, 7):
        out = np.full(n, np.nan, F32)
        for part in reversed(range(parts)):   # any order: the parts are independent
            fn(arg.ctypes.data, out.ctypes.data, part, parts)
        _same_bits(out, whole, f"{parts} parts")
