"""Loading compiled kernels: the engines that map object code use the generic machine of
the host triple (cheap to make), while the object code itself is compiled for the host
CPU, so a kernel keeps its vector instructions and its results."""
import ctypes

import llvmlite.binding as llvm
import numpy as np

from jitlib.backends.llvm import compiler, optimizer_process

SCALE = """define void @"scale"(ptr noalias readonly %a, ptr noalias %b) nounwind {
entry:
  br label %loop
loop:
  %i = phi i64 [0, %entry], [%next, %loop]
  %pa = getelementptr inbounds float, ptr %a, i64 %i
  %x = load float, ptr %pa
  %y = fmul float %x, 3.0
  %pb = getelementptr inbounds float, ptr %b, i64 %i
  store float %y, ptr %pb
  %next = add nuw nsw i64 %i, 1
  %more = icmp ult i64 %next, 4096
  br i1 %more, label %loop, label %exit
exit:
  ret void
}
"""


def _vector_registers(assembly):
    return sum(assembly.count(r) for r in ("%xmm", "%ymm", "%zmm"))


def test_host_vector_code_runs_in_an_engine_made_with_the_generic_machine():
    c = compiler.get_compiler()
    host = c.assembly(SCALE)
    loader = c._loader_machine()
    # what the loader would generate itself is not what runs: the host's vector code is
    # (here at least as wide: a generic x86-64 machine stops at SSE2)
    generic_asm = loader.emit_assembly(optimizer_process.optimize(llvm, loader, SCALE))
    assert _vector_registers(host) > 0, host
    if "%ymm" in host or "%zmm" in host:
        assert "%ymm" not in generic_asm and "%zmm" not in generic_asm, generic_asm

    a = np.arange(4096, dtype=np.float32) - 2048.5
    b = np.empty_like(a)
    code = c.load(SCALE, "scale")
    ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)(code.address)(
        a.ctypes.data, b.ctypes.data)
    np.testing.assert_array_equal(b, a * np.float32(3.0))
