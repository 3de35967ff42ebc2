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


# -- outer loops stay rolled

def _bias_relu(x, b):
    return np.maximum(x + b, 0.0)


def _kernel_ir2(fn, *args):
    module = optimize(jitlib.make_ir(fn)(*args))
    (fusion,) = [i for i in module.instructions if i.op is Op.FUSION]
    return kernels.render(fusion).ir


def _latch_properties(ir):
    """Per loop latch of `ir`, the property texts of its `!llvm.loop` node ('' if none)."""
    nodes = dict(re.findall(r"^(!\d+) = (.*)$", ir, re.M))
    found = {}
    for line in re.findall(r"br i1 \S+, label %\w+, label %\w+.*", ir):
        m = re.search(r"label %(\w+), label %\w+(?:, !llvm.loop (!\d+))?", line)
        latch, node = m.group(1), m.group(2)
        props = set(re.findall(r"!\d+", nodes[node])) - {node} if node else set()
        found[latch] = " ".join(nodes[p] for p in sorted(props))
    return found


def test_an_outer_loop_of_few_rows_asks_not_to_be_unrolled_and_the_row_still_vectorizes():
    x, b = np.ones((16, 256), np.float32), np.ones(256, np.float32)
    ir = _kernel_ir2(_bias_relu, x, b)
    latches = _latch_properties(ir)
    assert len(latches) == 2, ir
    rolled = [p for p in latches.values() if "llvm.loop.unroll.disable" in p]
    assert len(rolled) == 1, ir   # the row loop; the inner one is LLVM's to vectorize
    asm = get_compiler().assembly(ir)
    # unrolled, the 16 rows were 16 copies of the vectorized row: 1,293 lines
    assert asm.count("\n") < 400, asm[:3000]
    assert re.search(r"\bvaddps\s+[^\n]*%[yz]mm|\baddps\s", asm), asm[:3000]


def test_a_single_loop_gets_no_rolled_hint():
    x = np.ones(4096, np.float32)
    ir = _kernel_ir2(lambda x: np.maximum(x + 1.0, 0.0), x)
    assert not any("llvm.loop.unroll.disable" in p for p in _latch_properties(ir).values())


def test_rolled_kernels_agree_with_the_interpreter():
    rng = np.random.default_rng(3)
    for rows in (2, 3, 16, 17):
        x = rng.standard_normal((rows, 256)).astype(np.float32)
        b = rng.standard_normal(256).astype(np.float32)
        x[0, 5] = np.nan
        got = jitlib.jit(_bias_relu, backend="cpu")(x, b)
        want = jitlib.jit(_bias_relu, backend="interpreter")(x, b)
        np.testing.assert_array_equal(got, want)
