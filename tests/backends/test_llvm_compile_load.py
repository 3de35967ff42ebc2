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


def test_runtime_helpers_skip_the_optimizer_and_keep_their_own_cache_entries(
        tmp_path, monkeypatch):
    # `compile` (claiming.py's entries) generates code at -O0: no O3 run, and a text
    # compiled both ways is two entries, in memory and on disk, never one for the other
    monkeypatch.setenv("JITLIB_CACHE_DIR", str(tmp_path))
    c = compiler.Compiler()
    text = SCALE.replace('"scale"', '"scale_quick_test"')
    address = c.compile(text, "scale_quick_test")
    assert c.optimized_here == 0
    a = np.arange(4096, dtype=np.float32)
    b = np.empty_like(a)
    ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)(address)(
        a.ctypes.data, b.ctypes.data)
    np.testing.assert_array_equal(b, a * np.float32(3.0))
    optimized = c.load(text, "scale_quick_test")
    assert c.optimized_here == 1 and optimized.address != address
    assert c.compiled == 2
    assert len(list(tmp_path.glob("objects/*/*.obj"))) == 2


def test_scalar_kernels_skip_the_optimizer_with_the_same_bits(tmp_path, monkeypatch):
    # a loop kernel of one element per output (a rolled loop's index math) is compiled at
    # -O0, as is a program's driver (calls through a table); kernels over arrays keep O3
    import jitlib
    monkeypatch.setenv("JITLIB_CACHE_DIR", str(tmp_path))
    c = compiler.get_compiler()
    levels = []
    for name, level in (("quick_object_code", "O0"), ("object_code", "O3")):
        real = getattr(c, name)
        monkeypatch.setattr(c, name, lambda text, real=real, level=level:
                            levels.append(level) or real(text))

    def step(a, b):
        return np.float32(0.8123457) * np.sqrt(a * b + np.float32(1.5)) - a / b

    a, b = np.float32(2.718), np.float32(0.3)
    got = jitlib.jit(step, backend="cpu")(np.asarray(a), np.asarray(b))
    assert levels and "O3" not in levels
    assert np.asarray(got).tobytes() == np.asarray(step(a, b)).tobytes()
    x = np.linspace(0.5, 2.0, 1000, dtype=np.float32)
    got = jitlib.jit(step, backend="cpu")(x, x[::-1].copy())
    assert levels.count("O3") == 1
    np.testing.assert_array_equal(got, step(x, x[::-1].copy()))
