"""A freshly compiled program's large buffers are made while it compiles (buffers.Prefault).

The arena, a product's scratch and the large results the recycler may hand out are
allocated at compile time and their pages mapped by another thread (MADV_POPULATE_WRITE,
which changes no byte) while LLVM runs: the first call writes into them instead of
fresh memory, with the same answers.
"""
import numpy as np
import pytest

from jitlib.backends.llvm import LLVMBackend, buffers, parallel
from jitlib.backends.llvm.executable import DotRunner
from jitlib.hlo import Module, Op, build as B
from jitlib.hlo.interpreter import evaluate
from jitlib.testing import assert_allclose_tree

F32 = np.dtype(np.float32)
RNG = np.random.default_rng(5)
MIB = 1 << 20


@pytest.fixture(autouse=True)
def fresh_compiles(monkeypatch):
    # a saved program loads without compiling, so without prefaulting: none here
    monkeypatch.setenv("JITLIB_CACHE_DIR", "")
    monkeypatch.setattr(parallel, "_pool", parallel.Pool(2))


def _mlp_module():
    """relu(x @ w1 + b) @ w2 * 2: a 4 MiB product only its epilogue reads (scratch), the
    relu's output an intermediate (arena, 4 MiB), then a 2 MiB result (recycler): over
    PREFAULT_MIN_BYTES in all."""
    x = B.parameter(0, (256, 512), F32)
    w1 = B.parameter(1, (512, 4096), F32)
    b = B.parameter(2, (4096,), F32)
    w2 = B.parameter(3, (4096, 2048), F32)
    h = B.dot_general(x, w1, (1,), (0,), (), ())
    h = B.binary(Op.MAX, B.binary(Op.ADD, h, B.broadcast_in_dim(b, h.shape, (1,))),
                 B.broadcast_in_dim(B.constant(np.float32(0)), h.shape, ()))
    y = B.binary(Op.MUL, B.dot_general(h, w2, (1,), (0,), (), ()),
                 B.broadcast_in_dim(B.constant(np.float32(2)), (256, 2048), ()))
    return Module("mlp", [x, w1, b, w2], [y])


def _inputs(module):
    return [RNG.standard_normal(p.shape).astype(F32) * 0.1 for p in module.params]


def _address(a):
    return a.__array_interface__["data"][0]


def test_prefault_makes_owned_arrays_of_the_types_asked_for():
    wanted = [((3, 5000), np.dtype(np.float64)), ((MIB,), np.dtype(np.uint8))]
    made = buffers.Prefault(wanted).take()
    for a, (shape, dtype) in zip(made, wanted):
        assert a.shape == shape and a.dtype == dtype
        assert a.flags.c_contiguous and a.flags.owndata and a.flags.writeable


def test_populating_changes_no_byte():
    a = RNG.integers(0, 255, 3 * MIB + 123, dtype=np.uint8)
    want = a.copy()
    if not buffers.populate(a.ctypes.data + 7, a.nbytes - 7):
        pytest.skip("this kernel cannot populate memory (MADV_POPULATE_WRITE)")
    assert a.tobytes() == want.tobytes()


def test_without_populate_nothing_is_made_ahead(monkeypatch):
    monkeypatch.setattr(buffers, "_populate_fn", None)
    module = _mlp_module()
    exe = LLVMBackend().compile(module)
    assert exe._arena.buffer.size == 0 and exe._recycler._kept == [None]
    args = _inputs(module)
    assert_allclose_tree(exe(*args), evaluate(module, args), rtol=2e-5, atol=1e-5)


def test_a_compiled_programs_buffers_are_ready_before_its_first_call():
    if not buffers.Prefault.available():
        pytest.skip("this kernel cannot populate memory (MADV_POPULATE_WRITE)")
    module = _mlp_module()
    exe = LLVMBackend().compile(module)
    assert exe.program is None and exe.arena_bytes >= 4 * MIB
    assert exe._arena.buffer.size >= exe.arena_bytes
    dots = [r for _, r in exe._steps if isinstance(r, DotRunner)]
    assert any(d.scratch.buffer.size >= MIB for d in dots)
    kept = exe._recycler._kept
    assert buffers.Recycler.enabled and kept[0] is not None and kept[0].shape == (256, 2048)
    arena, at = exe._arena.buffer, _address(kept[0])

    args = _inputs(module)
    (got,) = exe(*args)
    assert _address(got) == at                    # the first call wrote the prefaulted result
    assert exe._arena.buffer is arena             # and worked in the prefaulted arena
    assert_allclose_tree([got], evaluate(module, args), rtol=2e-5, atol=1e-5)
    again = exe(*args)[0]                        # `got` is still held: a fresh result
    assert _address(again) != at and got.tobytes() == again.tobytes()


def test_no_prefault_memory_is_the_old_path(monkeypatch):
    def fails(shape, dtype):
        raise MemoryError
    monkeypatch.setattr(buffers, "_allocate", fails)
    module = _mlp_module()
    exe = LLVMBackend().compile(module)
    assert exe._arena.buffer.size == 0 and exe._recycler._kept == [None]
    args = _inputs(module)
    assert_allclose_tree(exe(*args), evaluate(module, args), rtol=2e-5, atol=1e-5)


def test_small_programs_prefault_nothing(monkeypatch):
    made = []
    monkeypatch.setattr(buffers.Prefault, "__init__",
                        lambda self, wanted: made.append(wanted))
    x = B.parameter(0, (64,), F32)
    module = Module("small", [x], [B.unary(Op.EXP, B.unary(Op.NEG, x))])
    exe = LLVMBackend().compile(module)
    assert made == [] and exe.program is not None
    a = RNG.standard_normal(64).astype(F32)
    np.testing.assert_allclose(exe(a)[0], np.exp(-a), rtol=1e-6)
