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


def compile_sm90(kernel, config=None):
    compiled = compiler.compile_for(kernel, config=config)
    assert compiled.asm["cubin"], f"no cubin for\n{kernel.source}"
    assert ".target sm_90" in compiled.asm["ptx"], compiled.asm["ptx"][:400]
    return compiled.asm["ptx"]


@pytest.mark.parametrize("fn", list(anchors.ARGS), ids=lambda f: f.__name__)
def test_anchor_kernels_compile_for_sm90(fn):
    module = traced(fn, anchors.ARGS[fn](np.random.default_rng(0)))
    for fusion, kernel in rendered(module):
        assert not isinstance(kernel, str), f"{fusion.attrs['name']}: {kernel}"
        ptx = compile_sm90(kernel)
        if kernel.kind == "loop":   # one load per input and thread: 4 f32, 2 for light ones
            c = kernel.config
            per_thread = c.constexprs["BLOCK"] // (32 * c.num_warps)
            assert f"ld.global.v{per_thread}" in ptx, kernel.source


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
        assert any(w in reason for w in ("opaque", "tl.dot of i", "linear algebra")), (name, reason)


@pytest.mark.parametrize("mode,name,atom", [("add", "i64", "add.u64"), ("max", "i32", "max.s32"),
                                            ("min", "u64", "min.u64")])
def test_integer_scatter_compiles_to_a_barrier_and_atomics(mode, name, atom):
    dt = dtypes.from_name(name)
    x, upd = B.parameter(0, (5,), dt, "x"), B.parameter(2, (7,), dt, "upd")
    idx = B.parameter(1, (7,), dtypes.INDEX, "idx")
    module = Module("s", [x, idx, upd], [B.scatter(x, idx, upd, 0, mode)])
    ((_, kernel),) = rendered(module)
    ptx = compile_sm90(kernel)
    assert kernel.kind == "scatter" and "bar.sync" in ptx, ptx
    assert f"atom.global.gpu.acq_rel.{atom}" in ptx, ptx


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


@pytest.mark.parametrize("knob", ["tf32x3", "auto"])
def test_f32_dots_ask_for_tf32x3_with_a_recheck_never_plain_tf32(monkeypatch, knob):
    # plain TF32 rounds inputs to 10 mantissa bits, which would not match NumPy; a tile
    # whose tf32x3 sums are not all finite runs again with IEEE products
    monkeypatch.setenv("JITLIB_GPU_F32_DOT", knob)
    args = anchors.ARGS[anchors.mlp](np.random.default_rng(0))
    dots = [k for _, k in rendered(traced(anchors.mlp, args)) if k.kind == "dot"]
    recheck = "if tl.sum(tl.where(tl.abs(acc) < "
    assert dots and all('input_precision="tf32x3"' in k.source and recheck in k.source
                        and 'input_precision="ieee"' in k.source for k in dots)
    assert not any('input_precision="tf32"' in k.source for k in dots)


def test_long_rows_fall_back_with_a_reason():
    x = B.parameter(0, (2, kernels.MAX_ROW + 1), np.float32, "x")
    (fusion,) = fusions(Module("s", [x], [B.reduce(Op.REDUCE_SUM, x, dims=(1,))]))
    with pytest.raises(kernels.Unsupported, match="in-register limit"):
        kernels.render(fusion)


def test_exact_row_blocks_load_unmasked_and_max_keeps_nan_in_one_reduction():
    # rows of 256 in blocks of ROWS rows that divide them: the row mask folds away, so
    # the loads carry no predicate; the row max is one NaN-propagating reduction
    x = B.parameter(0, (64, 256), np.float32, "x")
    (fusion,) = fusions(Module("m", [x], [B.reduce(Op.REDUCE_MAX, x, dims=(1,))]))
    kernel = kernels.render(fusion)
    compiled = compiler.compile_for(kernel)
    loads = [ln for ln in compiled.asm["ttgir"].splitlines() if "tt.load" in ln]
    assert loads and all(", %" not in ln.split("tt.load")[1].split(":")[0] for ln in loads), \
        f"{loads}\n{kernel.source}"
    assert "max.NaN.f32" in compiled.asm["ptx"], kernel.source
    assert kernel.source.count("tl.reduce(") + kernel.source.count("tl.max(") == 1


def _widened_dot(dt, lhs_widened=True):
    """f32 x @ w + 1 where w (and x, if `lhs_widened`) are `dt` values converted to f32."""
    narrow, f32 = dtypes.from_name(dt), np.dtype(np.float32)
    x = B.parameter(0, (64, 128), narrow if lhs_widened else f32, "x")
    w = B.parameter(1, (128, 64), narrow, "w")
    xf = B.convert(x, f32) if lhs_widened else x
    dot = B.dot_general(xf, B.convert(w, f32), lhs_contract=(1,), rhs_contract=(0,))
    out = B.binary(Op.ADD, dot, B.broadcast_to(B.constant(1.0, f32), dot.shape))
    return Module("mm", [x, w], [out])


@pytest.mark.parametrize("dt", ["f16", "bf16"])
def test_dots_of_widened_16_bit_operands_run_on_tensor_cores(dt):
    # the tracer widens 16-bit matmul operands to f32; the dot kernel reads the 16-bit
    # sources (one kernel, no widened copies) and multiplies 16-bit tiles with wgmma
    (fusion,) = fusions(_widened_dot(dt))
    kernel = kernels.render(fusion)
    assert "ieee" not in kernel.source and ".to(tl.float32)" not in kernel.source.split(
        "tl.dot")[0], kernel.source
    ptx = compile_sm90(kernel)
    assert "wgmma" in ptx and f".{dt}" in ptx, kernel.source


def test_a_bf16_operand_beside_an_f32_one_stays_bf16_and_the_f32_one_splits():
    (fusion,) = fusions(_widened_dot("bf16", lhs_widened=False))
    kernel = kernels.render(fusion)
    assert "acc_lo" in kernel.source and "ieee" not in kernel.source, kernel.source
    assert "wgmma" in compile_sm90(kernel)


def test_a_widened_operand_beside_an_f32_one_is_widened_under_the_ieee_knob(monkeypatch):
    monkeypatch.setenv("JITLIB_GPU_F32_DOT", "ieee")
    (fusion,) = fusions(_widened_dot("bf16", lhs_widened=False))
    kernel = kernels.render(fusion)
    assert ".to(tl.float32)" in kernel.source and 'input_precision="ieee"' in kernel.source
    compile_sm90(kernel)


@pytest.mark.parametrize("shape", [(64, 32), (1, 1)])
def test_a_broadcast_scalar_dot_operand_compiles(shape):
    # d/dw sum(x @ w) multiplies a broadcast 1.0 by x: the operand is a literal, which
    # tl.dot refused as a rank-0 value when compiled for the H200 (found there, 2026-12-02)
    m, k = shape
    x = B.parameter(0, (k, 48), np.dtype(np.float64), "x")
    ones = B.broadcast_to(B.constant(np.float64(1.0)), (m, k))
    module = Module("grad_of_sum", [x], [B.dot_general(ones, x, [1], [0])])
    (fusion,) = fusions(module)
    assert compile_sm90(kernels.render(fusion))


def test_a_float_multiply_add_is_not_contracted_into_an_fma():
    # each op rounds, as on the interpreter and the LLVM backend: an fma would round
    # a*b+c once, and jitlib.random's normal would differ from the interpreter's bits
    x, y = B.parameter(0, (1024,), np.float32, "x"), B.parameter(1, (1024,), np.float32, "y")
    module = Module("muladd", [x, y], [B.binary(Op.ADD, B.binary(Op.MUL, x, y), x)])
    ((_, kernel),) = rendered(module)
    ptx = compile_sm90(kernel)
    assert "mul.rn.f32" in ptx and "fma.rn.f32" not in ptx, ptx


def test_a_programs_kernels_compile_side_by_side_before_the_first_launch(monkeypatch):
    """compiler.compile_all builds every launch of a program on the compile threads, so
    the first launch finds its kernel compiled; a kernel that fails to compile there is
    left to its first launch (which raises it in context), not raised by compile_all."""
    from triton.backends.compiler import GPUTarget

    from jitlib.backends.triton.launch import CompiledLaunch
    gpt_block = next(p for p in programs.PROGRAMS if p.name == "gpt_block")
    module = traced(gpt_block.fn, gpt_block.make_args(np.random.default_rng(0)))
    launches = [CompiledLaunch(kernel, kernel.config, stream=0)
                for _, kernel in rendered(module) if not isinstance(kernel, str)]
    assert len(launches) >= 3
    real = compiler.compile_for
    broken = launches[1].kernel

    def compile_for(kernel, target, config):
        if kernel is broken:
            raise RuntimeError("ptxas died")
        return real(kernel, target, config)
    monkeypatch.setattr(compiler, "compile_for", compile_for)
    compiler.compile_all(launches, GPUTarget(*compiler.SM90))   # as a device reports it
    for launch in launches:
        compiled = launch._compiled.get((True,) * launch.n_ptr)
        if launch.kernel is broken:
            assert compiled is None
        else:
            assert ".target sm_90" in compiled.asm["ptx"], launch.kernel.name
