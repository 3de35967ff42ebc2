"""Large programs run step by step with their intermediates in an arena kept between calls.

The arena (buffers.py plans it, executable.py keeps it) must never leak into results: a
result from one call stays intact through the next calls, and calls from several
threads at once (one of them then works in fresh memory) all get the right answer.
"""
import ctypes
import threading

import numpy as np
import pytest

import jitlib
import anchors
from jitlib.backends.llvm import LLVMBackend, buffers, parallel
from jitlib.backends.llvm.executable import matmul
from jitlib.hlo import Module, Op, build as B
from jitlib.hlo.interpreter import evaluate
from jitlib.testing import assert_allclose_tree

LLVM = LLVMBackend()
F32 = np.dtype(np.float32)
RNG = np.random.default_rng(17)


@pytest.fixture(autouse=True)
def two_threads(monkeypatch):
    # the step path is taken by programs with a kernel worth splitting
    monkeypatch.setattr(parallel, "_pool", parallel.Pool(2))


def _chain(x, w):
    a = np.tanh(x @ w + 1.0)                    # dot + epilogue
    s = a - a.max(axis=1, keepdims=True)        # reduction
    e = np.exp(s)
    return (e / e.sum(axis=1, keepdims=True)) @ w.T, a.sum()


def _attention(q, k, v):
    return anchors.attention(q, k, v)


CASES = {
    "chain": (_chain, [(512, 256), (256, 256)]),
    "attention": (_attention, [(4, 256, 64)] * 3),
    "softmax": (anchors.softmax_rows, [(512, 600)]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_results_survive_later_calls(name):
    fn, shapes = CASES[name]
    args = [RNG.standard_normal(s).astype(F32) for s in shapes]
    module = jitlib.make_ir(fn)(*args)
    exe = LLVM.compile(module)
    assert exe.program is None and not exe.fallbacks, exe.optimized
    first = exe(*args)
    kept = [np.copy(r) for r in first]
    others = [a[::-1].copy() for a in args]
    exe(*others)
    second = exe(*args)
    for a, b, c in zip(first, kept, second):
        assert a.tobytes() == b.tobytes() == c.tobytes(), name
    assert_allclose_tree(first, evaluate(module, args), rtol=2e-5, atol=2e-6,
                         err_msg=str(exe.optimized))


def test_liveness_lets_intermediates_share_memory(no_loop_rolling):
    def layers(x, w):
        for _ in range(5):       # a dot kernel each (tanh is its epilogue): 4 temporaries
            x = np.tanh(x @ w)
        return x
    args = [RNG.standard_normal((512, 512)).astype(F32) * 0.05 for _ in range(2)]
    module = jitlib.make_ir(layers)(*args)
    exe = LLVM.compile(module)
    kernels = [i for i in exe.optimized.instructions if i.op is Op.FUSION]
    assert len(kernels) == 5, exe.optimized
    one = 512 * 512 * 4
    # each temporary is read only by the next kernel: two places are enough for four
    assert exe.arena_bytes == 2 * one, (exe.arena_bytes, exe.optimized)
    assert_allclose_tree(exe(*args), evaluate(module, args), rtol=1e-5, atol=1e-6)


def test_concurrent_calls_on_one_executable():
    fn, shapes = CASES["chain"]
    inputs = [[RNG.standard_normal(s).astype(F32) for s in shapes] for _ in range(3)]
    exe = LLVM.compile(jitlib.make_ir(fn)(*inputs[0]))
    want = [exe(*args) for args in inputs]
    got = [[] for _ in inputs]

    def calls(i):
        for _ in range(6):
            got[i].append(exe(*inputs[i]))
    threads = [threading.Thread(target=calls, args=(i,)) for i in range(len(inputs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for results, w in zip(got, want):
        for r in results:
            for a, b in zip(r, w):
                assert a.tobytes() == b.tobytes()


@pytest.mark.parametrize("into", [True, False])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_matmul_into_memory_equals_the_interpreters_dot(dtype, into):
    lhs = B.parameter(0, (3, 5, 7), np.dtype(dtype))
    rhs = B.parameter(1, (3, 4, 7), np.dtype(dtype))
    dot = B.dot_general(lhs, rhs, (2,), (2,), (0,), (0,))        # q @ k^T, batched
    a, b = (RNG.integers(-5, 5, p.shape).astype(dtype) for p in (lhs, rhs))
    out = np.full(dot.shape, 7, dtype) if into else None
    got = matmul(dot, a, b, out)
    assert got is out or not into
    (want,) = evaluate(Module("dot", [lhs, rhs], [dot]), [a, b])
    assert got.dtype == want.dtype and got.tobytes() == want.tobytes()


# -- large results reused once the caller lets go of them (buffers.ResultPool)

@pytest.fixture
def pooled_from_1_mib(monkeypatch):
    # the pool serves results from 32 MiB: these tests lower that to keep arrays small
    from jitlib.backends.llvm import executable
    monkeypatch.setattr(executable, "RECYCLE_MIN_BYTES", 1 << 20)


def _big_exe():
    x = B.parameter(0, (512, 1024), F32)               # 2 MiB: pooled from 1 MiB
    module = Module("big", [x], [B.unary(Op.EXP, x), B.reduce(Op.REDUCE_SUM, x, (1,))])
    exe = LLVM.compile(module)
    assert exe.program is None
    return exe, module


def _address(a):
    return a.__array_interface__["data"][0]


def test_a_dropped_result_is_reused(pooled_from_1_mib):
    exe, module = _big_exe()
    x = RNG.standard_normal((512, 1024)).astype(F32)
    first = exe(x)[0]
    at = _address(first)
    del first
    second = exe(x)[0]
    assert _address(second) == at
    assert_allclose_tree([second], evaluate(module, [x])[:1], rtol=1e-6, atol=0)


def test_results_the_caller_keeps_a_while_reuse_memory_once_dropped(pooled_from_1_mib):
    # a solver keeping its last two states: the third call's memory is the first's
    exe, module = _big_exe()
    x = RNG.standard_normal((512, 1024)).astype(F32)
    kept = [exe(x)[0], exe(x)[0]]
    addresses = {_address(a) for a in kept}
    for _ in range(6):
        kept = kept[1:] + [exe(x)[0]]
        addresses.add(_address(kept[-1]))
    assert len(addresses) <= 3
    assert_allclose_tree(kept[-1:], evaluate(module, [x])[:1], rtol=1e-6, atol=0)


def test_the_pool_keeps_at_most_its_capacity():
    pool = buffers.ResultPool(capacity=3 << 20)
    for _ in range(5):
        a = pool.array((1 << 18,), np.float32)   # 1 MiB each, all dropped
        b = pool.array((1 << 18,), np.float32)
        c = pool.array((1 << 18,), np.float32)
        d = pool.array((1 << 18,), np.float32)
        del a, b, c, d
    assert pool._held <= 3 << 20


def _first_floats(kept):
    """The first 8 floats a kept reference sees."""
    if isinstance(kept, np.ndarray):
        return kept.reshape(-1)[:8]
    if isinstance(kept, memoryview):
        return np.frombuffer(kept, F32)[:8]
    return np.ctypeslib.as_array(kept.data_as(ctypes.POINTER(ctypes.c_float)), (8,))


@pytest.mark.parametrize("hold", ["array", "view", "memoryview", "ctypes"])
def test_a_result_still_reachable_is_never_reused(hold, pooled_from_1_mib):
    exe, _ = _big_exe()
    x = RNG.standard_normal((512, 1024)).astype(F32)
    first = exe(x)[0]
    kept = {"array": lambda a: a, "view": lambda a: a[:, :512],
            "memoryview": memoryview, "ctypes": lambda a: a.ctypes}[hold](first)
    want = np.copy(first.reshape(-1)[:8])
    at = _address(first)
    del first
    second = exe(-x)[0]
    assert _address(second) != at
    np.testing.assert_array_equal(_first_floats(kept), want)
    np.testing.assert_allclose(second, np.exp(-x), rtol=1e-6)


def test_a_result_reshaped_in_place_is_not_reused_as_is(pooled_from_1_mib):
    exe, _ = _big_exe()
    x = RNG.standard_normal((512, 1024)).astype(F32)
    first = exe(x)[0]
    first.shape = (1024, 512)
    del first
    second = exe(x)[0]
    assert second.shape == (512, 1024)
    np.testing.assert_allclose(second, np.exp(x), rtol=1e-6)


def test_threads_never_share_a_recycled_result(pooled_from_1_mib):
    exe, _ = _big_exe()
    inputs = [RNG.standard_normal((512, 1024)).astype(F32) for _ in range(3)]
    want = [exe(x)[0] for x in inputs]
    errors = []

    def calls(i):
        kept = []
        for k in range(8):
            r = exe(inputs[i])[0]
            if k % 2:
                kept.append(r)                          # some kept, some dropped at once
            if r.tobytes() != want[i].tobytes():
                errors.append(i)
        for r in kept:
            if r.tobytes() != want[i].tobytes():
                errors.append(i)
    threads = [threading.Thread(target=calls, args=(i,)) for i in range(len(inputs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


# -- a reshape at the program's boundary is a view of its operand's buffer (issue 25)

def _views_exe(fn, shape=(512, 512)):
    from jitlib.backends.llvm.executable import ViewRunner
    args = [RNG.standard_normal(shape).astype(F32) for _ in range(2)]
    module = jitlib.make_ir(fn)(*args)
    exe = LLVM.compile(module)
    views = [i for i, r in exe._run_steps if type(r) is ViewRunner]
    return exe, module, args, views


def test_a_reshaped_result_is_a_view_not_a_copy_kernel():
    def f(x, w):
        y = np.tanh(x @ w)
        return y.reshape(-1), y.sum()
    exe, module, args, views = _views_exe(f)
    assert len(views) == 1, exe.optimized
    first = exe(*args)
    assert first[0].base is not None            # a view of the kernel's fresh output
    kept = np.copy(first[0])
    exe(*[a[::-1].copy() for a in args])        # the arena is reused: the view is not in it
    assert first[0].tobytes() == kept.tobytes()
    assert_allclose_tree(first, evaluate(module, args), rtol=2e-5, atol=2e-5)


def test_two_results_over_one_buffer_do_not_see_each_others_writes():
    def f(x, w):
        y = x @ w
        return y, y.reshape(256, 1024)
    exe, module, args, views = _views_exe(f)
    assert len(views) == 1, exe.optimized
    y, r = exe(*args)
    assert not np.shares_memory(y, r)
    y[...] = 0
    assert_allclose_tree([r], evaluate(module, args)[1:], rtol=2e-5, atol=2e-5)


def test_a_view_result_keeps_its_pooled_memory_until_dropped(pooled_from_1_mib):
    def f(x, w):
        return np.tanh(x @ w).reshape(-1)
    exe, module, args, views = _views_exe(f, (1024, 1024))   # 4 MiB: pooled
    first = exe(*args)[0]
    want = np.copy(first)
    second = exe(*[-a for a in args])[0]
    assert not np.shares_memory(first, second)
    assert first.tobytes() == want.tobytes()
    at = _address(second)
    del second
    assert _address(exe(*args)[0]) == at                     # dropped: reused


def _kernel(operands, name, make):
    params = [B.parameter(k, o.shape, o.dtype) for k, o in enumerate(operands)]
    return B.fusion(operands, Module(name, params, [make(*params)]), "loop", name)


def test_a_views_operand_lives_as_long_as_the_view_is_read():
    # k1 is a view of k0 read by k3: k2, made in between, must not take k0's memory
    from jitlib.backends.llvm.executable import LLVMExecutable, ViewRunner
    x = B.parameter(0, (1024, 1024), F32)
    k0 = _kernel([x], "k0", lambda p: B.unary(Op.EXP, p))
    k1 = _kernel([k0], "k1", lambda p: B.reshape(p, (1 << 20,)))
    k2 = _kernel([x], "k2", lambda p: B.reshape(B.unary(Op.NEG, p), (1 << 20,)))
    k3 = _kernel([k1, k2], "k3", lambda a, b: B.binary(Op.ADD, a, b))
    module = Module("views", [x], [k3])
    outputs = {k: [(k.shape, k.dtype)] for k in (k0, k1, k2, k3)}
    plain = buffers.BufferPlan(module, outputs)
    assert plain.slots[(k2, 0)].at == plain.slots[(k0, 0)].at    # k0 dead after k1
    aliased = buffers.BufferPlan(module, outputs, aliases={(k1, 0): (k0, 0)})
    assert (k1, 0) not in aliased.slots and aliased.root((k1, 0)) == (k0, 0)
    assert aliased.slots[(k2, 0)].at != aliased.slots[(k0, 0)].at
    exe = LLVMExecutable(module, "cpu", module)
    assert exe.program is None and [r for _, r in exe._run_steps if type(r) is ViewRunner]
    a = RNG.standard_normal((1024, 1024)).astype(F32)
    np.testing.assert_allclose(exe(a)[0], np.exp(a).reshape(-1) - a.reshape(-1), rtol=1e-6)
