"""Fusion: kernel counts on the anchor workloads, decisions with reasons, meaning preserved."""

import numpy as np
import pytest
from hypothesis import given

import jitlib
import programs
import golden
from anchors import (ARGS, attention, ew_chain, gelu_tanh, layernorm, logsumexp_rows, mlp,
                     softmax_rows)
from ir_strategies import programs as random_programs
from jitlib.fusion import optimize
from jitlib.fusion.fuse import fuse, kernel_summary
from jitlib.hlo.interpreter import evaluate
from jitlib.hlo.ops import Op
from jitlib.hlo.verifier import verify
from jitlib.testing import module_inputs


def _anchor_args(rng):
    return {fn: make(rng) for fn, make in ARGS.items()}


def _kernels(module):
    return [i for i in module.instructions if i.op is Op.FUSION]


def _assert_same_bits(before, after, args):
    want, got = evaluate(before, args), evaluate(after, args)
    if golden.has_product(before) and golden.products_round_by_layout():
        return golden.assert_same_bits_but_blas(before, want, got)
    for w, g in zip(want, got):
        assert w.dtype == g.dtype and w.shape == g.shape
        # bit-identical, NaN payloads aside
        np.testing.assert_array_equal(np.isnan(w) if w.dtype.kind == "f" else w,
                                      np.isnan(g) if g.dtype.kind == "f" else g)
        if w.dtype.kind == "f":
            same = (w.view(f"u{w.itemsize}") == g.view(f"u{g.itemsize}")) | np.isnan(w)
            assert same.all(), (w, g)


EXPECTED_KERNELS = {ew_chain: 1, gelu_tanh: 1, softmax_rows: 1, layernorm: 1,
                    logsumexp_rows: 1, mlp: 2}


@pytest.mark.parametrize("fn", list(EXPECTED_KERNELS) + [attention], ids=lambda f: f.__name__)
def test_anchor_workloads_fuse_as_the_issue_asks(fn):
    args = _anchor_args(np.random.default_rng(0))[fn]
    module = jitlib.make_ir(fn)(*args)
    fused = optimize(module)
    verify(fused)
    kernels = _kernels(fused)
    if fn is attention:
        assert len(kernels) <= 3, [k.attrs["name"] for k in kernels]
    else:
        assert len(kernels) == EXPECTED_KERNELS[fn], [k.attrs["name"] for k in kernels]
    _assert_same_bits(module, fused, args)


def test_row_reductions_are_reduction_kernels_and_mlp_dots_carry_epilogues():
    args = _anchor_args(np.random.default_rng(1))
    for fn in (softmax_rows, layernorm, logsumexp_rows):
        (kernel,) = _kernels(optimize(jitlib.make_ir(fn)(*args[fn])))
        assert kernel.attrs["kind"] == "reduction"
    dots = _kernels(optimize(jitlib.make_ir(mlp)(*args[mlp])))
    assert [k.attrs["kind"] for k in dots] == ["dot", "dot"]
    first_body_ops = {i.op for i in dots[0].attrs["body"].instructions}
    assert {Op.DOT_GENERAL, Op.ADD, Op.MAX} <= first_body_ops   # bias and relu inside


def test_sibling_reductions_share_one_multi_output_kernel():
    def stats(x):
        return x.sum(axis=1), (x * x).sum(axis=1)
    x = np.random.default_rng(2).standard_normal((8, 16))
    module = jitlib.make_ir(stats)(x)
    fused = optimize(module)
    (kernel,) = _kernels(fused)
    assert len(kernel.attrs["body"].results) == 2
    assert all(r.op is Op.GET_OUTPUT for r in fused.results)
    _assert_same_bits(module, fused, [x])


def test_do_not_fuse_reductions_over_different_dims():
    def two_ways(x):
        return x.sum(axis=0)[None, :] + x.sum(axis=1)[:, None]
    x = np.ones((4, 4))
    explain = []
    fused = fuse(jitlib.make_ir(two_ways)(x), explain=explain)
    assert len(_kernels(fused)) >= 2
    assert any("reduces" in d.reason for _, _, d in explain if not d)


def test_do_not_fuse_a_dot_into_a_reduction_kernel():
    def dot_then_sum(a, b):
        return (a @ b).sum(axis=1)
    a, b = np.ones((4, 3)), np.ones((3, 5))
    explain = []
    fused = fuse(jitlib.make_ir(dot_then_sum)(a, b), explain=explain)
    assert [k.attrs["kind"] for k in _kernels(fused)] == ["dot", "reduction"]
    assert any("cannot hold a dot" in d.reason for _, _, d in explain if not d)


def test_do_not_duplicate_a_transcendental_producer():
    def shared_exp(x):
        e = np.exp(x)
        return e.sum(axis=1), e.max(axis=0)
    x = np.ones((4, 6))
    explain = []
    fused = fuse(jitlib.make_ir(shared_exp)(x), explain=explain)
    bodies = [k.attrs["body"] for k in _kernels(fused)]
    assert sum(any(i.op is Op.EXP for i in b.instructions) for b in bodies) == 1


def test_cheap_broadcast_is_duplicated_not_materialised():
    def two_uses(x, b):
        bb = np.broadcast_to(b, x.shape)
        return (x + bb).sum(axis=1), (x * bb).max(axis=0)
    x, b = np.ones((4, 6)), np.arange(6.0)
    fused = fuse(jitlib.make_ir(two_uses)(x, b))
    for k in _kernels(fused):
        assert all(o.shape != (4, 6) or o.op is Op.PARAMETER for o in k.operands)


def test_scatter_runs_as_an_opaque_kernel():
    def add_at(x, i):
        y = np.zeros_like(x)
        np.add.at(y, i, x)
        return y * 2
    x, i = np.ones(5), np.array([0, 0, 3, 4, 1])
    fused = fuse(jitlib.make_ir(add_at)(x, i))
    assert "opaque" in [k.attrs["kind"] for k in _kernels(fused)]


def test_kernel_summary_names_user_lines():
    x = np.ones((4, 8), np.float32)
    (kernel,) = _kernels(optimize(jitlib.make_ir(softmax_rows)(x)))
    first = softmax_rows.__code__.co_firstlineno
    summary = kernel_summary(kernel)
    assert summary.startswith(f"kernel {kernel.attrs['name']} = anchors.py:{first + 1}-"
                              f"{first + 3}: ")
    assert "reduce_max" in summary and "exp" in summary and "reduce_sum" in summary


def test_lowered_optimized_text_counts_kernels():
    x = np.ones((4, 8), np.float32)
    text = jitlib.jit(softmax_rows).lower(x).as_text("optimized")
    assert text.count(" fusion(") == 1 and text.startswith("# kernel fused_")


def _regions(instr):
    if instr.op is Op.WHILE:
        return [instr.attrs["cond"], instr.attrs["body"]]
    return list(instr.attrs["branches"]) if instr.op is Op.CONDITIONAL else []


def _assert_only_kernels(module):
    """Every op computes inside a kernel: at the top level and in loops' and conditionals'
    regions, which stay as while / conditional ops around their own kernels."""
    allowed = (Op.PARAMETER, Op.CONSTANT, Op.FUSION, Op.GET_OUTPUT, Op.WHILE, Op.CONDITIONAL)
    assert all(i.op in allowed for i in module.instructions), module
    for instr in module.instructions:
        for region in _regions(instr):
            _assert_only_kernels(region)


@pytest.mark.parametrize("program", programs.PROGRAMS + programs.CONTROL_FLOW,
                         ids=lambda p: p.name)
def test_optimizer_preserves_every_program(program):
    args = program.make_args(np.random.default_rng(0))
    module = jitlib.make_ir(program.fn, static_argnums=program.static_argnums)(*args)
    fused = optimize(module)
    verify(fused)
    _assert_only_kernels(fused)
    for kernel in _kernels(fused):   # a loop kernel has one iteration space
        if kernel.attrs["kind"] == "loop":
            assert len({r.shape for r in kernel.attrs["body"].results}) == 1, kernel.attrs
    _assert_same_bits(module, fused, module_inputs(module, args, program.static_argnums))


@given(random_programs())
def test_optimizer_preserves_random_programs(case):
    module, inputs = case
    fused = optimize(module)
    verify(fused)
    _assert_same_bits(module, fused, inputs)


def test_dot_reads_transposed_and_split_heads_as_operand_views():
    def heads_matmul(x, w):
        b, t, c = x.shape
        q = (x @ w).reshape(b, t, 2, c // 2).transpose(0, 2, 1, 3)
        return q @ q.swapaxes(-1, -2)
    x, w = np.ones((2, 3, 4), np.float32), np.ones((4, 4), np.float32)
    module = jitlib.make_ir(heads_matmul)(x, w)
    fused = optimize(module)
    kinds = [k.attrs["kind"] for k in _kernels(fused)]
    assert kinds == ["dot", "dot"], kinds
    _assert_same_bits(module, fused, [x, w])


def test_do_not_fuse_arithmetic_into_dot_operands():
    def scaled_matmul(a, b):
        return np.exp(a) @ b
    a, b = np.ones((3, 4)), np.ones((4, 2))
    explain = []
    fused = fuse(jitlib.make_ir(scaled_matmul)(a, b), explain=explain)
    assert [k.attrs["kind"] for k in _kernels(fused)] == ["loop", "dot"]
    assert any("reads its operands from memory" in d.reason for _, _, d in explain if not d)


def test_a_reduction_read_by_two_kernels_is_an_extra_output_of_one():
    # the row max feeds the softmax sums and, through the picked log-probabilities, the
    # loss: it is computed once, in the reduction kernel, and read by the loss kernel
    def cross_entropy(logits, labels):
        logp = logits - logits.max(axis=1, keepdims=True)
        logp = logp - np.log(np.exp(logp).sum(axis=1, keepdims=True))
        return -logp[np.arange(logits.shape[0]), labels].mean()
    logits = np.random.default_rng(3).standard_normal((8, 5)).astype(np.float32)
    labels = np.array([0, 4, 2, 1, 3, 3, 0, 1])
    module = jitlib.make_ir(cross_entropy)(logits, labels)
    fused = optimize(module)
    kernels = _kernels(fused)
    assert len(kernels) == 2
    assert sum(any(i.op is Op.REDUCE_MAX for i in k.attrs["body"].instructions)
               for k in kernels) == 1
    _assert_same_bits(module, fused, [logits, labels])


@pytest.mark.usefixtures("no_loop_rolling")
def test_stencil_chains_fuse_in_linear_work():
    """A value read at several offsets is computed once, not once per offset and again for
    each of its producers: the fused work of a stencil chain grows with its length, not
    exponentially (3 steps used to make one kernel of 71 ops computing 5**6 evaluations)."""
    A, B = np.random.default_rng(0).random((16, 16)), np.zeros((16, 16))

    def fused_work(steps):
        module = jitlib.make_ir(programs.jacobi_2d_in_place, static_argnums=(2,))(A, B, steps)
        kernels = [k for k in optimize(module).instructions if k.op is Op.FUSION]
        return len(kernels), max(len(k.attrs["body"].instructions) for k in kernels)
    one, eight = fused_work(1), fused_work(8)
    assert eight[0] == 8 * one[0]        # two kernels a step
    assert eight[1] == one[1] <= 20      # and none grows with the chain


@pytest.mark.usefixtures("no_loop_rolling")
def test_a_long_elementwise_chain_is_split_and_compiles_without_deep_recursion():
    """3,000 steps of x = x * a + b: kernels of at most MAX_KERNEL_OPS ops, and code
    generation that does not recurse once per op (it raised RecursionError at ~250)."""
    from jitlib.fusion.fuse import MAX_KERNEL_OPS

    def chain(x):
        for _ in range(3000):
            x = x * 0.999 + 0.001
        return x
    x = np.linspace(0.0, 1.0, 64)
    f = jitlib.jit(chain, backend="cpu")
    kernels = [k for k in f.lower(x).optimized().instructions if k.op is Op.FUSION]
    assert len(kernels) >= 6000 // MAX_KERNEL_OPS
    assert max(len(k.attrs["body"].instructions) for k in kernels) <= MAX_KERNEL_OPS + 8
    np.testing.assert_allclose(f(x), chain(x), rtol=1e-12)


def test_do_not_fuse_across_a_loop_into_a_kernel_reading_its_result():
    # x + y feeds both a reduction and a loop; the kernel that reduces it also reads
    # the loop's result (directly, and through a sibling): one kernel would wait on itself
    import jitlib.numpy as jnp

    def f(x, y):
        a = x + y
        q = jnp.fori_loop(0, 3, lambda i, v: v * 1.5, a)
        return a.sum() + (q + (x - y)).sum()
    x, y = np.arange(3.0), np.ones(3)
    verify(optimize(jitlib.jit(f).lower(x, y).module))
    np.testing.assert_allclose(jitlib.jit(f, backend="cpu")(x, y), f(x, y))
