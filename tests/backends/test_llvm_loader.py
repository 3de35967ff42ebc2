"""jitlib's own object loader (loader.py) against MCJIT: the same code, the same bits;
relocations of every kind it takes; objects it does not take go to MCJIT instead."""
import ctypes
import math

import llvmlite.binding as llvm
import numpy as np
import pytest

import jitlib
from jitlib.backends.llvm import compiler, loader

pytestmark = pytest.mark.skipif(not loader.SUPPORTED, reason="the loader is x86-64 Linux only")

# a constant table (.rodata), a call into libm (an undefined symbol), a loop
TABLE_AND_LIBM = """
@table = private unnamed_addr constant [4 x double] [double 1.5, double -2.25, double 3.0e10, double 0x7FF0000000000000]

declare double @sin(double)

define double @"{name}"(i64 %i, double %x) nounwind {{
entry:
  %p = getelementptr inbounds [4 x double], ptr @table, i64 0, i64 %i
  %t = load double, ptr %p
  %s = call double @sin(double %x)
  %r = fadd double %t, %s
  ret double %r
}}
"""


def _machine(**kw):
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    target = llvm.Target.from_default_triple()
    return target.create_target_machine(cpu=llvm.get_host_cpu_name(),
                                        features=llvm.get_host_cpu_features().flatten(),
                                        opt=2, **kw)


def _object(text, **kw):
    machine = _machine(**kw)
    module = llvm.parse_assembly(text)
    module.triple, module.data_layout = machine.triple, str(machine.target_data)
    return machine.emit_object(module)


def _relocation_kinds(obj):
    """The relocation types in an object, read with the loader's own parser."""
    parsed = loader._Object(obj)
    kinds = set()
    for _, kind, _, _, offset, size, *_ in parsed.sections:
        if kind == loader._SHT_RELA:
            for at in range(offset, offset + size, loader._RELA.size):
                kinds.add(loader._RELA.unpack_from(obj, at)[1] & 0xffffffff)
    return kinds


def _call(address, i, x):
    fn = ctypes.CFUNCTYPE(ctypes.c_double, ctypes.c_int64, ctypes.c_double)(address)
    return fn(i, x)


def test_absolute_relocations_of_the_jit_code_model():
    # what the compiler's machines emit (jit=True: the large code model): 64-bit addresses
    obj = _object(TABLE_AND_LIBM.format(name="lookup"), jit=True)
    assert _relocation_kinds(obj) == {loader._R_64}
    image, (address,) = loader.load([obj], ["lookup"])
    try:
        for i, t in enumerate([1.5, -2.25, 3.0e10, math.inf]):
            assert _call(address, i, 0.5) == t + math.sin(0.5)
    finally:
        image.close()
    image.close()   # twice is harmless


def test_pc_relative_relocations_of_the_small_code_model():
    # position-independent code of the small model reads its table PC-relative (PC32)
    # and calls libm by a 32-bit relative call (PLT32): mapped where it reaches, else
    # refused (the loader builds no PLT)
    obj = _object(TABLE_AND_LIBM.format(name="lookup_pic"), reloc="pic", codemodel="small")
    assert {loader._R_PC32, loader._R_PLT32} <= _relocation_kinds(obj)
    try:
        image, (address,) = loader.load([obj], ["lookup_pic"])
    except loader.Unloadable as e:
        assert "out of range" in str(e)
    else:
        try:
            assert _call(address, 1, 0.5) == -2.25 + math.sin(0.5)
        finally:
            image.close()
    no_call = TABLE_AND_LIBM.format(name="table_only").replace(
        "%s = call double @sin(double %x)", "%s = fmul double %x, 2.0")
    obj = _object(no_call, reloc="pic", codemodel="small")
    assert _relocation_kinds(obj) == {loader._R_PC32}
    image, (address,) = loader.load([obj], ["table_only"])
    try:
        assert [_call(address, i, 0.25) for i in range(3)] == [2.0, -1.75, 3.0e10 + 0.5]
    finally:
        image.close()


def test_what_the_loader_refuses():
    with pytest.raises(loader.Unloadable, match="ELF64"):
        loader.load([b"not an object"], ["f"])
    writable = '@counter = global i64 0\ndefine i64 @"bump"() {\n' \
               '  %v = load i64, ptr @counter\n  %w = add i64 %v, 1\n' \
               '  store i64 %w, ptr @counter\n  ret i64 %w\n}\n'
    with pytest.raises(loader.Unloadable, match="writable"):
        loader.load([_object(writable, jit=True)], ["bump"])
    missing = TABLE_AND_LIBM.format(name="calls_nothing").replace("@sin", "@no_such_fn_x")
    with pytest.raises(loader.Unloadable, match="no_such_fn_x"):
        loader.load([_object(missing, jit=True)], ["calls_nothing"])
    with pytest.raises(loader.Unloadable, match="do not define"):
        loader.load([_object(TABLE_AND_LIBM.format(name="a"), jit=True)], ["b"])


def test_the_compiler_falls_back_to_mcjit_for_what_the_loader_refuses():
    c = compiler.Compiler()
    counter = 'define i64 @"bump_fallback"() {\n  %v = load i64, ptr @counter\n' \
              '  %w = add i64 %v, 1\n  store i64 %w, ptr @counter\n  ret i64 %w\n}\n'
    code = c.load("@counter = global i64 0\n" + counter, "bump_fallback")
    bump = ctypes.CFUNCTYPE(ctypes.c_int64)(code.address)
    assert [bump(), bump()] == [1, 2]
    assert c.loaded_by == {"jitlib": 0, "mcjit": 1}
    code = c.load(TABLE_AND_LIBM.format(name="lookup_c"), "lookup_c")
    assert _call(code.address, 1, 0.0) == -2.25
    assert c.loaded_by == {"jitlib": 1, "mcjit": 1}


def _kernels(x, y):
    # loops, reductions, a dot with its epilogue, libm beyond mathlib's range
    h = np.maximum(x @ y + 1.0, 0.0)
    return np.sin(x * 1e6).sum(axis=1), np.exp(h).max(axis=0), np.tanh(h) / (1 + h * h)


def test_programs_give_the_bits_they_give_under_mcjit(monkeypatch):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((64, 48)).astype(np.float32)
    y = rng.standard_normal((48, 40)).astype(np.float32)
    monkeypatch.setenv("JITLIB_CACHE_DIR", "")
    results = {}
    for how in ("auto", "mcjit"):
        monkeypatch.setenv("JITLIB_CPU_LOADER", how)
        fresh = compiler.Compiler()   # nothing mapped yet: every kernel loads anew
        monkeypatch.setattr(compiler, "_compiler", fresh)
        results[how] = jitlib.jit(_kernels, backend="cpu")(x, y)
        used = {k for k, n in fresh.loaded_by.items() if n}
        assert used == {"jitlib" if how == "auto" else "mcjit"}, fresh.loaded_by
    for ours, theirs in zip(results["auto"], results["mcjit"]):
        np.testing.assert_array_equal(ours, theirs)
    want = _kernels(x, y)   # eager NumPy
    for ours, w in zip(results["auto"], want):
        np.testing.assert_allclose(ours, w, rtol=2e-4, atol=2e-4)
