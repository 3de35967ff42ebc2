"""LLVM vectorizes the kernels the CPU backend emits: checked in the host assembly.

A loop that LLVM leaves scalar uses the `ss`/`sd` forms (one lane); a vectorized one
uses the packed `ps`/`pd` forms on xmm/ymm/zmm registers. Each test renders one kernel
the way the backend does, optimises it for this CPU, and looks for the packed form of
the instruction that does the kernel's work, and for calls (libm) that would stop the
vectorizer; where the assembly is ambiguous, for vector types in LLVM's optimised IR.
"""
import re

import numpy as np
import pytest

import jitlib
import anchors
from jitlib.backends.llvm import kernels
from jitlib.backends.llvm.compiler import get_compiler
from jitlib.fusion import optimize
from jitlib.hlo import Module, Op, build as B

F32 = np.dtype(np.float32)


def _assembly(module):
    (fusion,) = [i for i in optimize(module).instructions if i.op is Op.FUSION]
    kernel = kernels.render(fusion)
    return kernel.ir, get_compiler().assembly(kernel.ir)


def _traced(fn, *shapes):
    return jitlib.make_ir(fn)(*[np.ones(s, F32) for s in shapes])


def _packed(asm, *mnemonics, suffix="ps"):
    """The mnemonics (without suffix) found in packed form on vector registers."""
    return {m for m in mnemonics
            if re.search(rf"\bv?{m}{suffix}\s+[^\n]*%[xyz]mm", asm)}


def _calls(asm):
    return re.findall(r"^\s*call\w*\s+(\S+)", asm, re.M)


def test_loop_kernel_with_inlined_tanh_is_vectorized():
    ir, asm = _assembly(_traced(anchors.gelu_tanh, (1 << 12,)))
    assert _packed(asm, "mul"), ir
    assert not _calls(asm), _calls(asm)


def test_logistic_is_mathlibs_and_vectorized():
    x = B.parameter(0, (4096,), F32)
    ir, asm = _assembly(Module("sigmoid", [x], [B.unary(Op.LOGISTIC, x)]))
    assert "@jl_logistic_f32" in ir
    assert _packed(asm, "mul", "add", "div", "rcp14"), asm[:3000]
    assert not _calls(asm), _calls(asm)


@pytest.mark.parametrize("op, mnemonic", [(Op.REDUCE_SUM, "add"), (Op.REDUCE_MAX, "max"),
                                          (Op.REDUCE_MIN, "min")])
def test_row_reductions_are_vectorized(op, mnemonic):
    x = B.parameter(0, (64, 4096), F32)
    ir, asm = _assembly(Module("rows", [x], [B.reduce(op, x, (1,))]))
    assert _packed(asm, mnemonic), ir


def test_f64_row_sums_are_vectorized():
    x = B.parameter(0, (64, 4096), np.dtype(np.float64))
    ir, asm = _assembly(Module("rows", [x], [B.reduce(Op.REDUCE_SUM, x, (1,))]))
    assert _packed(asm, "add", suffix="pd"), ir


@pytest.mark.parametrize("fn", [anchors.softmax_rows, anchors.logsumexp_rows])
def test_row_softmax_kernels_are_vectorized(fn):
    # the row max, exp (mathlib, inlined) and the row sum all on vectors. The assembly
    # cannot tell the row max from exp's clamping (both vmaxps), so read LLVM's optimised
    # IR: vector forms of the max intrinsic (maxnum: its NaNs are detected apart), of the
    # reassociable add (a plain vector add in the explicit accumulators of a kernel that
    # prefetches: kernels.grouped_block), and of fma
    ir, asm = _assembly(_traced(fn, (64, 4096)))
    optimised = str(get_compiler().optimize(ir))
    assert re.search(r"@llvm\.maxnum\.v\d+f32", optimised), optimised
    assert re.search(r"fadd (reassoc )?<\d+ x float>", optimised), optimised
    assert re.search(r"@llvm\.fma\.v\d+f32", optimised), optimised
    assert not _calls(asm), _calls(asm)


def test_avx512_hosts_get_512_bit_vectors():
    """LLVM tunes most Intel AVX-512 cores to prefer 256-bit vectors; the compiler asks
    for full width (compiler.full_width), which made transcendental kernels 1.4-2x faster
    on an Intel AVX-512 VM. On a host with AVX-512, a gelu kernel runs on zmm registers."""
    from jitlib.backends.llvm.compiler import full_width
    assert full_width("+sse2,+avx512f,+fma").endswith(",-prefer-256-bit")
    assert full_width("+sse2,+avx2,-avx512f") == "+sse2,+avx2,-avx512f"
    if "+avx512f" not in get_compiler().features.split(","):
        pytest.skip("no AVX-512 on this host")

    def gelu(x):
        return 0.5 * x * (1.0 + np.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))
    _, asm = _assembly(_traced(gelu, (4096,)))
    assert "%zmm" in asm and "%ymm" not in asm, asm[:2000]
