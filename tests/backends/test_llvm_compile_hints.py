"""Loops that call inlined mathlib functions carry a loop hint: four interleaved vectors,
no unrolling (unrolled copies of exp's polynomial cost compile time and no run time).
The hint is in the kernel's IR text, the loop still vectorizes, and the results are
still the interpreter's."""
import re

import numpy as np

import jitlib
from jitlib.backends.llvm import kernels
from jitlib.backends.llvm.compiler import get_compiler
from jitlib.fusion import optimize
from jitlib.hlo import Op


def _softmax(x):
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)


def _row_max(x):
    return np.max(x, axis=-1)


def _kernel_ir(fn, x):
    module = optimize(jitlib.make_ir(fn)(x))
    (fusion,) = [i for i in module.instructions if i.op is Op.FUSION]
    return kernels.render(fusion).ir


def _hinted_loops(ir):
    """The loop latches whose `!llvm.loop` node asks for 4 interleaved vectors and no
    unrolling."""
    nodes = dict(re.findall(r"^(!\d+) = (.*)$", ir, re.M))
    math_hint = {n for n, text in nodes.items()
                 if '"llvm.loop.interleave.count", i32 4' in text}
    no_unroll = {n for n, text in nodes.items() if '"llvm.loop.unroll.disable"' in text}
    hinted = []
    for latch, node in re.findall(r"br i1 \S+, label %(\w+), label %\w+, !llvm.loop (!\d+)",
                                  ir):
        props = set(re.findall(r"!\d+", nodes[node])) - {node}
        if props & math_hint and props & no_unroll:
            hinted.append(latch)
    return hinted


def test_the_loop_computing_exp_carries_the_math_hint_and_a_plain_row_max_does_not():
    x = np.ones((64, 512), np.float32)
    softmax_ir = _kernel_ir(_softmax, x)
    assert "@jl_exp_f32" in softmax_ir
    assert _hinted_loops(softmax_ir), softmax_ir
    assert not _hinted_loops(_kernel_ir(_row_max, x))


def test_a_hinted_exp_loop_still_vectorizes_and_calls_nothing():
    x = np.ones((64, 512), np.float32)
    asm = get_compiler().assembly(_kernel_ir(_softmax, x))
    assert re.search(r"\bv(mul|fmadd\d+|add)ps\s+[^\n]*%[yz]mm", asm) or \
        re.search(r"\b(mul|add)ps\s+[^\n]*%xmm", asm), asm[:3000]
    assert not re.findall(r"^\s*call\w*\s+(\S+)", asm, re.M)


def test_hinted_kernels_agree_with_the_interpreter():
    rng = np.random.default_rng(7)
    x = (rng.standard_normal((96, 512)) * 20).astype(np.float32)
    x[3, 7], x[5, :] = np.inf, -np.inf
    got = jitlib.jit(_softmax, backend="cpu")(x)
    want = jitlib.jit(_softmax, backend="interpreter")(x)
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-30)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
