"""Rendered kernels on disk: a module whose optimized form has a disk entry renders its
kernels once per machine; the records rebuild the same kernels (same IR, the body's own
instructions as arguments) and the same answers, and a bad record is rebuilt."""
import numpy as np
import pytest

import jitlib
from jitlib.backends.llvm import LLVMExecutable, kernels, rendered
from jitlib.cache import disk, optimized
from jitlib.hlo.ops import Op
from programs import gelu_tanh, layernorm, softmax


def _stages(x, g):
    for _ in range(3):   # layernorm, gelu, softmax: well over MIN_INSTRUCTIONS
        x = softmax(gelu_tanh(layernorm(x, g, 0.0)))
    return x


def _with_product(x, g, w):
    return np.maximum(_stages(x, g) @ w + 1.0, 0.0)   # a dot kernel with an epilogue


def _module(fn, *args):
    module = jitlib.jit(fn, backend="interpreter").lower(*args).module
    assert len(module.instructions) >= optimized.MIN_INSTRUCTIONS, module
    return module


def _kernels(optimized_module):
    return {i.attrs["name"]: i for i in optimized_module.instructions if i.op is Op.FUSION}


def _same_kernel(a, b):
    if isinstance(a, kernels.DotKernel):
        assert isinstance(b, kernels.DotKernel) and a.dot is b.dot and a.results == b.results
        if a.epilogue is None:
            return b.epilogue is None
        a, b = a.epilogue, b.epilogue
    assert (a.name, a.ir, a.splittable, a.split_extent) == \
        (b.name, b.ir, b.splittable, b.split_extent)
    assert a.inputs == b.inputs and a.outputs == b.outputs   # the very instructions


@pytest.mark.parametrize("fn, shapes", [(_stages, [(5, 24), (24,)]),
                                        (_with_product, [(5, 24), (24,), (24, 7)])])
def test_records_rebuild_the_kernels_and_the_answers(fn, shapes, monkeypatch):
    rng = np.random.default_rng(3)
    args = [rng.standard_normal(s) for s in shapes]
    module = _module(fn, *args)
    first = optimized.optimize(module)
    fresh = {name: kernels.render(f) for name, f in _kernels(first).items()}
    dots = [k for k in fresh.values() if isinstance(k, kernels.DotKernel)]
    assert len(dots) == (fn is _with_product) and all(d.epilogue for d in dots)
    want = LLVMExecutable(module, "cpu", first)(*args)[0]   # renders, stores the records
    store = disk.object_store()
    assert sum(m.get("kind") == "llvm-kernel" for _, m in store.entries()) == len(fresh)

    second = optimized.optimize(module)   # parsed back from the disk
    assert optimized.entry_key(second) == optimized.entry_key(first)
    monkeypatch.setattr(kernels, "render", lambda f: pytest.fail(f"rendered {f}"))
    for name, f in _kernels(second).items():
        _same_kernel(rendered.render(f, second), fresh[name])
    got = LLVMExecutable(module, "cpu", second)(*args)[0]
    np.testing.assert_array_equal(got, want)
    np.testing.assert_allclose(got, fn(*args), rtol=1e-12, atol=1e-300)


def test_unreadable_record_is_discarded_and_rendered_again():
    args = [np.ones((3, 16)), np.ones(16)]
    module = _module(_stages, *args)
    opt = optimized.optimize(module)
    (fusion,) = _kernels(opt).values()
    want = kernels.render(fusion)
    rendered.render(fusion, opt)
    store = disk.object_store()
    (path,) = [p for p, m in store.entries() if m.get("kind") == "llvm-kernel"]
    key = path.rsplit("/", 1)[1][:-len(".obj")]
    store.store(key, b'{"name": 1}', kind="llvm-kernel")   # checksummed, but no kernel
    _same_kernel(rendered.render(fusion, opt), want)
    assert store.discarded == 1
    _same_kernel(rendered.render(fusion, opt), want)   # the rebuilt record is good


def test_modules_without_an_entry_render_in_memory():
    module = jitlib.jit(lambda x: np.exp(x) + 1.0, backend="interpreter").lower(
        np.ones(3)).module
    opt = optimized.optimize(module)        # small: no disk entry, so no key
    assert optimized.entry_key(opt) is None
    (fusion,) = _kernels(opt).values()
    _same_kernel(rendered.render(fusion, opt), kernels.render(fusion))
    assert disk.object_store().stores == 0
