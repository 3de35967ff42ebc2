"""The one-call driver of small programs (program.py) and its arena plan.

Each module is run three ways and must agree: through the driver, through the executable's
step-by-step path (the driver turned off) and on the reference interpreter.
"""
import numpy as np
import pytest

import jitlib
import anchors
from jitlib.backends.llvm import LLVMBackend, buffers
from jitlib.errors import JitlibTypeError
from jitlib.hlo import Module, Op, build as B
from jitlib.hlo.interpreter import evaluate
from jitlib.testing import assert_allclose_tree

LLVM = LLVMBackend()
F32 = np.dtype(np.float32)
RNG = np.random.default_rng(5)


def _three_ways(module, *args):
    exe = LLVM.compile(module)
    assert exe.program is not None, exe.optimized
    by_driver = exe(*args)
    driver, exe.program = exe.program, None
    by_steps = exe(*args)
    exe.program = driver
    want = evaluate(module, list(args))
    for d, s in zip(by_driver, by_steps):
        assert d.dtype == s.dtype and d.shape == s.shape and d.tobytes() == s.tobytes(), \
            exe.optimized
    assert_allclose_tree(by_driver, want, rtol=1e-6, atol=1e-6, err_msg=str(exe.optimized))
    return exe, by_driver


def test_plan_reuses_memory_only_after_the_last_reader():
    # buffers 0 and 1 live together; 2 starts after 0's last reader: it may take 0's place
    offsets, total = buffers.plan_arena([100, 64, 100], [(0, 1), (0, 2), (2, 3)])
    assert offsets[0] != offsets[1] and offsets[2] == offsets[0]
    assert total == 128 + 64
    # a buffer read by the step that defines the next one is still busy then
    offsets, _ = buffers.plan_arena([8, 8], [(0, 1), (1, 2)])
    assert offsets[0] != offsets[1]
    assert all(o % buffers.ALIGN == 0 for o in offsets)


def test_a_chain_of_kernels_is_one_call_with_a_shared_arena():
    x, y = (RNG.standard_normal((16, 16)).astype(F32) for _ in range(2))

    def no_dot(x, y):
        a = np.exp(x) + y
        b = a / a.sum(axis=1, keepdims=True)
        c = np.tanh(b) * 3.0
        d = c - c.max(axis=0)
        return d.sum(axis=1), d * d
    exe, _ = _three_ways(jitlib.make_ir(no_dot)(x, y), x, y)
    kernels = [i for i in exe.optimized.instructions if i.op is Op.FUSION]
    assert len(kernels) >= 3, exe.optimized
    assert exe.program.ir.count("call void") == len(kernels)
    temps = sum(k.shape[0] * k.shape[-1] * 4 for k in kernels[:-1])
    assert 0 < exe.program.arena_bytes <= temps, (exe.program.arena_bytes, exe.optimized)


def test_results_that_repeat_or_are_arguments_or_constants():
    x = B.parameter(0, (3,), F32)
    neg = B.unary(Op.NEG, x)
    c = B.constant(np.float32(2.5))
    module = Module("mixed", [x], [neg, x, neg, c, B.binary(Op.MUL, neg, neg)])
    arg = np.arange(3, dtype=F32)
    exe, got = _three_ways(module, arg)
    assert got[0] is got[2]                                # one value, one array
    assert not np.shares_memory(got[1], arg) and got[1].flags.writeable
    assert got[3].shape == () and got[3] == np.float32(2.5)


def test_multi_output_kernels_write_results_and_temporaries():
    def stats(x):
        m = x.max(axis=1, keepdims=True)
        e = np.exp(x - m)
        return e.sum(axis=1), e / e.sum(axis=1, keepdims=True)
    x = RNG.standard_normal((5, 9)).astype(F32)
    _three_ways(jitlib.make_ir(stats)(x), x)


@pytest.mark.parametrize("fn", [anchors.ew_chain, anchors.gelu_tanh, anchors.softmax_rows,
                                anchors.layernorm, anchors.logsumexp_rows])
def test_small_anchor_workloads_run_as_one_call(fn):
    shapes = {anchors.ew_chain: [(64,)] * 3, anchors.layernorm: [(8, 32), (32,), (32,)]}
    args = [RNG.standard_normal(s).astype(F32) for s in shapes.get(fn, [(8, 32)])]
    _three_ways(jitlib.make_ir(fn)(*args), *args)


def test_empty_intermediates():
    # a zero-size temporary has a place in an empty arena (found by the fuzzer)
    x, y = (B.parameter(i, (2, 2, 0), np.dtype(np.int8)) for i in range(2))
    d = B.binary(Op.SUB, x, y)
    module = Module("f", [x, y], [B.unary(Op.NEG, d), B.reverse(d, (0, 1, 2))])
    args = [np.zeros((2, 2, 0), np.int8)] * 2
    exe = LLVM.compile(module)
    for got, want in zip(exe(*args), evaluate(module, args)):
        assert got.shape == want.shape and got.dtype == want.dtype


def test_other_arguments_take_the_checked_path():
    x = B.parameter(0, (2, 3), F32)
    exe = LLVM.compile(Module("neg", [x], [B.unary(Op.NEG, x)]))
    strided = np.arange(6, dtype=F32).reshape(3, 2).T
    assert not exe.program.accepts((strided,))
    np.testing.assert_array_equal(exe(strided)[0], -strided)
    with pytest.raises(JitlibTypeError, match="must be f32"):
        exe(np.zeros((2, 3), np.float64))
    with pytest.raises(JitlibTypeError, match="takes 1 arguments"):
        exe(strided, strided)


def test_large_programs_run_step_by_step(monkeypatch):
    # a large kernel keeps the step path: the pool can share it, the GIL is released
    from jitlib.backends.llvm import parallel
    monkeypatch.setattr(parallel, "_pool", parallel.Pool(2))
    x = B.parameter(0, (1 << 20,), F32)
    exe = LLVM.compile(Module("big", [x], [B.unary(Op.NEG, x)]))
    assert exe.program is None


def test_programs_with_as_many_arguments_share_one_call_type():
    # a new ctypes class per program would grow a process that compiles for ever
    x = B.parameter(0, (5,), F32, "x")
    one = LLVM.compile(Module("one", [x], [B.unary(Op.EXP, x)]))
    two = LLVM.compile(Module("two", [x], [B.unary(Op.TANH, x)]))
    assert one.program is not None and two.program is not None
    assert type(one.program._fn) is type(two.program._fn)
    a = RNG.standard_normal(5).astype(F32)
    np.testing.assert_allclose(two(a)[0], np.tanh(a), rtol=2e-7)
