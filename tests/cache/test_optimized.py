"""The optimizer's output on disk: large modules are parsed back, not optimized again,
and the parsed module compiles to the same answers as a fresh optimize."""
import numpy as np
import pytest

import jitlib
from jitlib.cache import disk, optimized
from jitlib.hlo.printer import print_module
from programs import gelu_tanh, layernorm, softmax

# the programs here are long on purpose (Python loops of stages): keep them straight line
pytestmark = pytest.mark.usefixtures("no_loop_rolling")


def _chain(x, g):
    for _ in range(3):   # layernorm, gelu, softmax: well over MIN_INSTRUCTIONS
        x = softmax(gelu_tanh(layernorm(x, g, 0.0)))
    return x


def _traced(x, g):
    module = jitlib.jit(_chain, backend="interpreter").lower(x, g).module
    assert len(module.instructions) >= optimized.MIN_INSTRUCTIONS, module
    return module


def test_large_module_is_parsed_back_exactly_and_compiles_the_same(monkeypatch):
    from jitlib.fusion import optimize as run_optimizer
    x = np.random.default_rng(0).standard_normal((6, 16))
    g = np.linspace(0.5, 1.5, 16)
    module = _traced(x, g)
    first = optimized.optimize(module)            # optimized, then stored
    calls = []
    monkeypatch.setattr("jitlib.fusion.optimize",
                        lambda m: calls.append(m) or run_optimizer(m))
    second = optimized.optimize(module)           # read back: the optimizer does not run
    assert calls == [] and disk.object_store().hits == 1
    assert print_module(second) == print_module(first)
    from jitlib.backends.llvm import LLVMExecutable
    got = LLVMExecutable(module, "cpu", second)(x, g)[0]
    np.testing.assert_array_equal(got, LLVMExecutable(module, "cpu", first)(x, g)[0])
    np.testing.assert_allclose(got, _chain(x, g), rtol=1e-12)


def test_unreadable_entry_is_discarded_and_rebuilt():
    x, g = np.ones((3, 8)), np.ones(8)
    module = _traced(x, g)
    want = print_module(optimized.optimize(module))
    store = disk.object_store()
    key = store.key(optimized._KIND, print_module(module), optimized._source_fingerprint())
    store.store(key, b"module broken(", kind=optimized._KIND)   # checksummed, but not IR
    assert print_module(optimized.optimize(module)) == want
    assert store.discarded == 1
    assert print_module(optimized.optimize(module)) == want and store.hits >= 1


def test_small_modules_skip_the_disk():
    module = jitlib.jit(lambda x: x + 1.0, backend="interpreter").lower(np.ones(3)).module
    optimized.optimize(module)
    optimized.optimize(module)
    store = disk.object_store()
    assert (store.hits, store.misses, store.stores) == (0, 0, 0)
