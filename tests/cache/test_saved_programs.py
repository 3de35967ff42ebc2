"""Saved programs (backends/llvm/saved.py): a module compiled once per machine; a later
compile, in this process or another, rebuilds the same kernels (same IR, the body's own
instructions as arguments) and the same answers without optimizing or rendering, and a
bad entry is discarded and saved again."""
import json

import numpy as np
import pytest

import jitlib
from jitlib import fusion
from jitlib.backends.llvm import LLVMBackend, executable, kernels, saved
from jitlib.backends.llvm.emitter import Unsupported
from jitlib.cache import disk
from jitlib.hlo.ops import Op
from programs import gelu_tanh, layernorm, softmax

# the programs here are long on purpose (Python loops of stages): keep them straight line
pytestmark = pytest.mark.usefixtures("no_loop_rolling")


def _stages(x, g):
    for _ in range(3):
        x = softmax(gelu_tanh(layernorm(x, g, 0.0)))
    return x


def _with_product(x, g, w):
    return np.maximum(_stages(x, g) @ w + 1.0, 0.0)   # a dot kernel with an epilogue


def _module(fn, *args):
    return jitlib.jit(fn, backend="interpreter").lower(*args).module


def _same_kernel(a, b):
    if isinstance(a, kernels.DotKernel):
        assert isinstance(b, kernels.DotKernel) and a.dot is b.dot and a.results == b.results
        if a.epilogue is None:
            return b.epilogue is None
        a, b = a.epilogue, b.epilogue
    assert (a.name, a.ir, a.splittable, a.split_extent) == \
        (b.name, b.ir, b.splittable, b.split_extent)
    assert a.inputs == b.inputs and a.outputs == b.outputs   # the very instructions


def _no_derivation(monkeypatch):
    """From here on, optimizing or rendering fails the test."""
    monkeypatch.setattr(fusion, "optimize", lambda m: pytest.fail(f"optimized {m.name}"))
    monkeypatch.setattr(kernels, "render", lambda f: pytest.fail(f"rendered {f}"))


@pytest.mark.parametrize("fn, shapes", [(_stages, [(5, 24), (24,)]),
                                        (_with_product, [(5, 24), (24,), (24, 7)]),
                                        (lambda x: np.exp(x) + 1.0, [(3,)]),
                                        # LAPACK's routines, found again by name
                                        (lambda a, b: np.linalg.solve(a, b) * 2.0,
                                         [(6, 6), (6,)])])
def test_a_saved_program_rebuilds_the_kernels_and_the_answers(fn, shapes, monkeypatch):
    rng = np.random.default_rng(3)
    args = [rng.standard_normal(s) for s in shapes]
    module = _module(fn, *args)
    first = LLVMBackend().compile(module)
    want = first(*args)[0]
    store = disk.object_store()
    assert [m["kind"] for _, m in store.entries()].count(saved.KIND) == 1
    fresh = executable.render_all(first.optimized)

    _no_derivation(monkeypatch)
    second = LLVMBackend().compile(module)
    assert second.saved_key == first.saved_key and second.optimized == first.optimized
    loaded = saved.load(store, second.saved_key)[1]
    for f, (kernel, reason) in loaded.items():
        assert reason is None
        _same_kernel(kernel, fresh[f][0])
    np.testing.assert_array_equal(second(*args)[0], want)
    np.testing.assert_array_equal(LLVMBackend().load_saved(first.saved_key)(*args)[0], want)
    np.testing.assert_allclose(want, fn(*args), rtol=1e-12, atol=1e-300)


def test_an_unreadable_entry_is_discarded_and_saved_again(monkeypatch):
    args = [np.ones((3, 16)), np.ones(16)]
    module = _module(_stages, *args)
    key = LLVMBackend().compile(module).saved_key
    store = disk.object_store()
    store.store(key, b'{"optimized": 1}', kind=saved.KIND)   # checksummed, but no program
    again = LLVMBackend().compile(module)
    assert store.discarded == 1 and again.saved_key == key
    np.testing.assert_allclose(again(*args)[0], _stages(*args), rtol=1e-12)
    _no_derivation(monkeypatch)   # the entry saved again is good
    np.testing.assert_allclose(LLVMBackend().compile(module)(*args)[0], _stages(*args),
                               rtol=1e-12)


def test_a_kernel_on_the_interpreter_is_saved_with_its_reason(monkeypatch):
    args = [np.linspace(-2, 2, 12).reshape(3, 4)]
    module = _module(lambda x: np.tanh(x) * 2.0, *args)

    def refuse(fusion_instr):
        raise Unsupported("refused by the test")
    with monkeypatch.context() as m:
        m.setattr(kernels, "render", refuse)
        first = LLVMBackend().compile(module)
    assert list(first.fallbacks.values()) == ["refused by the test"]
    _no_derivation(monkeypatch)
    second = LLVMBackend().compile(module)
    assert second.fallbacks == first.fallbacks and not second.native
    np.testing.assert_allclose(second(*args)[0], np.tanh(args[0]) * 2.0, rtol=1e-15)


def test_without_the_disk_cache_nothing_is_saved(monkeypatch):
    monkeypatch.setenv("JITLIB_CACHE_DIR", "")
    executable_ = LLVMBackend().compile(_module(lambda x: x * 3.0, np.ones(4)))
    assert executable_.saved_key is None and LLVMBackend().load_saved("0" * 64) is None


def test_another_target_is_another_entry(monkeypatch):
    from jitlib.backends.llvm.compiler import get_compiler
    module = _module(lambda x: x * 3.0, np.ones(4))
    key = LLVMBackend().compile(module).saved_key
    compiler = get_compiler()
    target = compiler.target()
    monkeypatch.setattr(type(compiler), "target", lambda self: target[:2] + ("+other",)
                        + target[3:])
    assert saved.program_key(disk.object_store(), module) != key


def test_kernels_with_one_name_keep_their_own_code(monkeypatch):
    """Kernel names need not be unique (a module handed to the backend may repeat one):
    a saved program gives each kernel its own record. Found by the fuzzer (regression
    fused_27e409c4ea): keyed by name, the second kernel's code ran for the first, a
    wrong answer, and a crash where their arguments differed."""
    from jitlib.hlo.interpreter import evaluate
    from jitlib.hlo.parser import parse_module
    module = parse_module("""
module f(%p0: bool[], %p1: i8[4]) {
  %0 = bool[] fusion(%p0), kind=loop, name=k {
    module k(%p0: bool[]) {
      %0 = bool[] not(%p0)
      return (%0)
    }
  }
  %1 = i8[4] fusion(%p1, %p1), kind=loop, name=k {
    module k(%p0: i8[4], %p1: i8[4]) {
      %0 = i8[4] mul(%p0, %p1)
      %1 = i8[4] neg(%0)
      return (%1)
    }
  }
  return (%0, %1)
}""")
    args = [np.array(False), np.array([1, -2, 3, 12], np.int8)]
    want = evaluate(module, args)
    first = LLVMBackend().compile(module)
    _no_derivation(monkeypatch)
    second = LLVMBackend().compile(module)
    assert second.saved_key == first.saved_key
    for executable in (first, second):
        for got, expected in zip(executable(*args), want):
            np.testing.assert_array_equal(got, expected)


def test_a_saved_program_brings_its_object_code(monkeypatch):
    # as in a new process (nothing mapped yet): one read, the program's entry, and no
    # LLVM run; the kernels' own object entries are not read
    from jitlib.backends.llvm import compiler
    rng = np.random.default_rng(5)
    args = [rng.standard_normal(s) for s in [(5, 24), (24,), (24, 7)]]
    module = _module(_with_product, *args)
    first = LLVMBackend().compile(module)
    want = first(*args)[0]
    # the BLAS a load prepares is recorded, not found again in the module
    from jitlib.backends.llvm import largest_product
    record = saved.read(disk.object_store(), first.saved_key)
    assert record["largest_product"] == largest_product(module) == 5 * 24 * 7
    fresh = compiler.Compiler()
    monkeypatch.setattr(compiler, "_compiler", fresh)
    monkeypatch.setattr(fresh, "object_code", lambda text: pytest.fail("compiled"))
    store = disk.object_store()
    hits = store.hits
    again = LLVMBackend().compile(module)
    assert store.hits == hits + 1 and fresh.compiled == len(again.native) > 0
    np.testing.assert_array_equal(again(*args)[0], want)


def test_object_code_that_does_not_decode_discards_the_entry():
    args = [np.ones((3, 16)), np.ones(16)]
    module = _module(_stages, *args)
    key = LLVMBackend().compile(module).saved_key
    store = disk.object_store()
    record = json.loads(store.load(key))
    coded = [k for k in record["kernels"] if k.get("code")]
    assert coded
    coded[0]["code"][1] = "not base64!"
    store.store(key, json.dumps(record).encode(), kind=saved.KIND)
    assert saved.load(store, key) is None and store.discarded == 1
