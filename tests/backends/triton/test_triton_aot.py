"""Every generated kernel of the test workloads compiles for sm_90, without a GPU.

Path: Triton's ahead-of-time compile (`triton.compile` on an ASTSource for
GPUTarget("cuda", 90, 32)) down to PTX and a cubin through the ptxas bundled in the
wheel. The tests assert on what came out: a cubin, and PTX with the instructions the
kernel kind should produce (128-bit vector loads for flat loops, tensor-core mma for
16-bit dots).
"""
import numpy as np
import pytest
from hypothesis import given, settings

import anchors
import programs
from ir_strategies import fused_programs
from triton_cases import fusions, rendered, traced
from jitlib.backends.triton import compiler, kernels
from jitlib.hlo import build as B, dtypes
from jitlib.hlo.ir import Module
from jitlib.hlo.ops import Op

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def compile_sm90(kernel):
    compiled = compiler.compile_for(kernel)
    assert compiled.asm["cubin"], f"no cubin for\n{kernel.source}"
    assert ".target sm_90" in compiled.asm["ptx"], compiled.asm["ptx"][:400]
    return compiled.asm["ptx"]


@pytest.mark.parametrize("fn", list(anchors.ARGS), ids=lambda f: f.__name__)
def test_anchor_kernels_compile_for_sm90(fn):
    module = traced(fn, anchors.ARGS[fn](np.random.default_rng(0)))
    for fusion, kernel in rendered(module):
        assert not isinstance(kernel, str), f"{fusion.attrs['name']}: {kernel}"
        ptx = compile_sm90(kernel)
        if kernel.kind == "loop":
            assert "ld.global.v4" in ptx, kernel.source


def test_every_program_kernel_compiles_for_sm90():
    seen, compiled, not_generated = set(), 0, {}
    for p in programs.PROGRAMS:
        args = p.make_args(np.random.default_rng(0))
        module = traced(p.fn, args, p.static_argnums)
        for fusion, kernel in rendered(module):
            if isinstance(kernel, str):
                not_generated[f"{p.name}/{fusion.attrs['name']}"] = kernel
                continue
            if kernel.digest not in seen:
                seen.add(kernel.digest)
                compile_sm90(kernel)
                compiled += 1
    assert compiled > 150
    # what is not generated is what the backend says it does not generate yet
    for name, reason in not_generated.items():
        assert "opaque" in reason or "tl.dot of i" in reason, (name, reason)


@settings(max_examples=15)
@given(fused_programs())
def test_random_fused_kernels_compile_for_sm90(case):
    module, _ = case
    for fusion, kernel in rendered(module):
        if not isinstance(kernel, str):
            compile_sm90(kernel)


@pytest.mark.parametrize("dt", ["f16", "bf16"])
def test_16_bit_dots_use_tensor_cores(dt):
    x = B.parameter(0, (64, 64), dtypes.from_name(dt), "x")
    y = B.parameter(1, (64, 64), dtypes.from_name(dt), "y")
    dot = B.dot_general(x, y, lhs_contract=(1,), rhs_contract=(0,))
    relu = B.binary(Op.MAX, dot, B.broadcast_to(B.constant(0, dot.dtype), dot.shape))
    (fusion,) = fusions(Module("mm", [x, y], [relu]))
    kernel = kernels.render(fusion)
    ptx = compile_sm90(kernel)
    assert "mma" in ptx, ptx[:2000]


def test_f32_dot_asks_for_ieee_precision_not_tf32():
    args = anchors.ARGS[anchors.mlp](np.random.default_rng(0))
    dots = [k for _, k in rendered(traced(anchors.mlp, args)) if k.kind == "dot"]
    assert dots and all('input_precision="ieee"' in k.source for k in dots)


def test_long_rows_fall_back_with_a_reason():
    x = B.parameter(0, (2, kernels.MAX_ROW + 1), np.float32, "x")
    (fusion,) = fusions(Module("s", [x], [B.reduce(Op.REDUCE_SUM, x, dims=(1,))]))
    with pytest.raises(kernels.Unsupported, match="in-register limit"):
        kernels.render(fusion)
