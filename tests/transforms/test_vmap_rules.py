"""Every op's batching rule, checked two ways (JAX's `_CheckBatching` idea):

- against a Python loop: the per-example Module run on each example's slices, stacked;
- against `jax.vmap` of the JAX backend's lowering of the *same* per-example Module;

and the batched Module compiled by the cpu backend must agree with the interpreter.

Each case is a small per-example Module built with `jitlib.hlo.build`. It is batched with
in_axes varied on every operand position (0, 1, -1 and None where the rank allows), and
the batched Module is verified and run on the reference interpreter. A failure prints
the batched Module's IR.
"""
import jax
import numpy as np
import pytest

from jitlib.backends import get_backend
from jitlib.backends.jax import _lower
from jitlib.errors import SourceLocation, UnsupportedError
from jitlib.hlo import Module, Op, build as B, ops
from jitlib.hlo.interpreter import evaluate
from jitlib.hlo.verifier import verify
from jitlib.transforms import batching

SIZE = 3
F64, I32, I64, U8, BOOL = (np.dtype(t) for t in (np.float64, np.int32, np.int64, np.uint8,
                                                 np.bool_))
COVERED = set()


class Case:
    """A per-example module over parameters of `types` ((shape, dtype, values) each)."""

    def __init__(self, name, types, body, ops_covered):
        self.name, self.types, self.body = name, types, body
        COVERED.update(ops_covered)

    def module(self):
        params = [B.parameter(i, shape, dtype, f"p{i}")
                  for i, (shape, dtype, _) in enumerate(self.types)]
        out = self.body(*params)
        return Module(self.name, params, out if isinstance(out, (list, tuple)) else [out])


def floats(low=-2.0, high=2.0):
    return lambda rng, shape: rng.uniform(low, high, shape)


def ints(low, high, dtype=I32):
    return lambda rng, shape: rng.integers(low, high, shape).astype(dtype)


def bools(rng, shape):
    return rng.random(shape) < 0.5


def f(*shape, values=floats()):
    return (tuple(shape), F64, values)


CASES = []


def case(name, types, *ops_covered):
    def register(body):
        CASES.append(Case(name, types, body, ops_covered))
        return body
    return register


# -- elementwise

POSITIVE = {Op.LOG, Op.LOG1P, Op.SQRT, Op.RSQRT}
for _op in sorted(ops.UNARY - {Op.NOT, Op.CONVERT, Op.IS_FINITE, Op.REAL, Op.IMAG, Op.CONJ}
                  - ops.COMPLEX_ONLY, key=str):
    CASES.append(Case(f"unary_{_op}", [f(2, 3, values=floats(0.1, 2) if _op in POSITIVE
                                        else floats())],
                      lambda x, op=_op: B.unary(op, x), [_op]))
for _op in sorted(ops.BINARY - ops.BITWISE - {Op.COMPARE}, key=str):
    CASES.append(Case(f"binary_{_op}", [f(2, 3, values=floats(0.5, 2)), f(2, 3)],
                      lambda x, y, op=_op: B.binary(op, x, y), [_op]))
for _op in sorted(ops.BITWISE - {Op.NOT}, key=str):
    CASES.append(Case(f"bitwise_{_op}", [((4,), I32, ints(-9, 9)), ((4,), I32, ints(-9, 9))],
                      lambda x, y, op=_op: B.binary(op, x, y), [_op]))
C128 = np.dtype(np.complex128)


def complexes(rng, shape):
    return rng.uniform(-2, 2, shape) + 1j * rng.uniform(-2, 2, shape)


CASES.append(Case("complex_parts", [((2, 3), C128, complexes)], lambda z: [
    B.unary(Op.REAL, z), B.unary(Op.IMAG, z), B.unary(Op.CONJ, z), B.unary(Op.ABS, z),
    B.unary(Op.EXP, z), *(B.unary(op, z) for op in sorted(ops.COMPLEX_ONLY, key=str))],
    [Op.REAL, Op.IMAG, Op.CONJ, *ops.COMPLEX_ONLY]))
CASES.append(Case("fft_rfft_irfft", [f(2, 8), ((3, 4), C128, complexes)], lambda x, z: [
    B.make(Op.FFT, [x], dict(fft_type="RFFT", fft_length=(8,))),
    B.make(Op.FFT, [z], dict(fft_type="FFT", fft_length=(3, 4))),
    B.make(Op.FFT, [z], dict(fft_type="IRFFT", fft_length=(6,)))], [Op.FFT]))
CASES.append(Case("compare_and_is_finite", [f(4), f(4)],
                  lambda x, y: [B.compare(x, y, "LT"), B.unary(Op.IS_FINITE, B.binary(
                      Op.DIV, x, y))], [Op.COMPARE, Op.IS_FINITE]))
CASES.append(Case("not_convert", [((4,), I32, ints(-9, 9)), ((4,), BOOL, bools)],
                  lambda x, p: [B.unary(Op.NOT, x), B.unary(Op.NOT, p), B.convert(x, F64)],
                  [Op.NOT, Op.CONVERT]))


@case("select", [((2, 3), BOOL, bools), f(2, 3), f(2, 3)], Op.SELECT)
def _(p, a, b):
    return B.select(p, a, b)


@case("clamp_scalar_bounds", [f(), f(2, 3), f(values=floats(1, 2))], Op.CLAMP)
def _(lo, x, hi):
    return B.clamp(lo, x, hi)


@case("clamp_full_bounds", [f(4), f(4), f(4, values=floats(1, 2))], Op.CLAMP)
def _(lo, x, hi):
    return B.clamp(lo, x, hi)


@case("constants_and_iota_stay_unbatched", [f(2, 3)], Op.CONSTANT, Op.IOTA)
def _(x):
    shifted = B.binary(Op.ADD, x, B.convert(B.iota((2, 3), I64, 1), F64))
    return B.binary(Op.MUL, shifted, B.full(2.0, (2, 3), F64))


# -- data movement

@case("broadcast_in_dim", [f(3, 1)], Op.BROADCAST_IN_DIM)
def _(x):
    return B.broadcast_in_dim(x, (2, 3, 4), (1, 2))


@case("reshape_transpose", [f(2, 3, 4)], Op.RESHAPE, Op.TRANSPOSE)
def _(x):
    return [B.reshape(x, (6, 4)), B.transpose(x, (2, 0, 1))]


@case("slice_reverse", [f(4, 5)], Op.SLICE, Op.REVERSE)
def _(x):
    return [B.slice(x, (1, 0), (4, 5), (2, 2)), B.reverse(x, (1,))]


@case("pad", [f(3, 4), f()], Op.PAD)
def _(x, value):
    return B.pad(x, value, (1, -1), (2, 0), (1, 0))


@case("concatenate", [f(2, 3), f(1, 3), f(2, 3)], Op.CONCATENATE)
def _(a, b, c):
    return B.concatenate([a, b, c], 0)


@case("dynamic_slice", [f(5, 4), ((), I32, ints(-2, 6)), ((), I64, ints(-1, 4))],
      Op.DYNAMIC_SLICE)
def _(x, i, j):
    return B.dynamic_slice(x, [i, j], (2, 3))


@case("dynamic_update_slice", [f(5, 4), f(2, 3), ((), I32, ints(-2, 6)),
                               ((), I32, ints(-1, 4))], Op.DYNAMIC_UPDATE_SLICE)
def _(x, update, i, j):
    return B.dynamic_update_slice(x, update, [i, j])


@case("gather", [f(3, 5), ((2, 2), I32, ints(-2, 7))], Op.GATHER)
def _(x, idx):
    return [B.gather(x, idx, 1), B.gather(x, idx, 0)]


@case("gather_unsigned_indices", [f(4), ((3,), U8, ints(0, 255, U8))], Op.GATHER)
def _(x, idx):
    return B.gather(x, idx, 0)


for _mode in ops.SCATTER_MODES:
    # Indices repeat and fall outside [0, 5): duplicates combine, outsiders drop.
    CASES.append(Case(f"scatter_{_mode}", [f(2, 5), ((4,), I32, ints(-2, 7)), f(2, 4)],
                      lambda x, i, u, mode=_mode: B.scatter(x, i, u, 1, mode), [Op.SCATTER]))


@case("sort", [f(3, 4), ((3, 4), I32, ints(-2, 3))], Op.SORT)
def _(x, k):
    # an unbatched key beside a batched one is broadcast to the examples
    return [B.sort([x], 1), B.sort([k, x], 0, indices=True)]


def _dominant(x):
    # diagonally dominant: positive definite for cholesky, well conditioned for the solves
    return B.binary(Op.ADD, x, B.constant(8 * np.eye(x.shape[-1])))


@case("linalg", [f(3, 3), f(3, 2)], *ops.LINALG)
def _(x, b):
    a = _dominant(x)
    return [B.cholesky(a), B.triangular_solve(a, b, lower=False, transpose_a=True),
            B.lu(a, "lu"), B.lu(a, "permutation"), B.eigh(a, "values"), B.svd(x, "s"),
            B.qr(a, "r")]


# -- reductions, scans, contraction

@case("reductions", [f(2, 3, 4)], *ops.REDUCE - {Op.REDUCE_AND, Op.REDUCE_OR})
def _(x):
    return [B.reduce(op, x, (0, 2)) for op in sorted(ops.REDUCE - {Op.REDUCE_AND,
                                                                   Op.REDUCE_OR}, key=str)]


@case("logical_reductions", [((3, 4), BOOL, bools), ((3, 4), I32, ints(0, 16))],
      Op.REDUCE_AND, Op.REDUCE_OR)
def _(p, x):
    return [B.reduce(Op.REDUCE_AND, p, (1,)), B.reduce(Op.REDUCE_OR, x, (0,))]


@case("arg_reductions", [f(3, 4)], *ops.ARG_REDUCE)
def _(x):
    return [B.arg_reduce(Op.ARGMAX, x, 1), B.arg_reduce(Op.ARGMIN, x, 0)]


@case("scans", [f(3, 4)], *ops.CUMULATIVE)
def _(x):
    return [B.cumulative(op, x, axis, reverse=axis == 0)
            for op in sorted(ops.CUMULATIVE, key=str) for axis in (0, 1)]


@case("matmul", [f(2, 3), f(3, 4)], Op.DOT_GENERAL)
def _(a, b):
    return B.dot_general(a, b, (1,), (0,))


@case("dot_with_batch_dims", [f(2, 3, 4), f(4, 2, 5)], Op.DOT_GENERAL)
def _(a, b):
    return B.dot_general(a, b, (2,), (0,), (0,), (1,))


@case("dot_vectors", [f(3), f(3)], Op.DOT_GENERAL)
def _(a, b):
    return B.dot_general(a, b, (0,), (0,))


# -- kernels

def _body():
    x, y = B.parameter(0, (2, 3), F64, "bx"), B.parameter(1, (3,), F64, "by")
    z = B.binary(Op.MUL, B.unary(Op.EXP, x), B.broadcast_in_dim(y, (2, 3), (1,)))
    return Module("kernel", [x, y], [z, B.reduce(Op.REDUCE_SUM, z, (1,))])


@case("fusion_multi_output", [f(2, 3), f(3)], Op.FUSION, Op.GET_OUTPUT)
def _(x, y):
    kernel = B.fusion([x, y], _body(), "loop", "k0")
    return B.outputs(kernel)


@case("fusion_single_output", [f(2, 3), f(3)], Op.FUSION)
def _(x, y):
    body = _body()
    return B.fusion([x, y], Module("k1", body.params, body.results[:1]), "loop", "k1")


# -- loops and conditionals

def _regions():
    from jitlib.transforms import regions
    return regions


@case("while_counted", [f(3), f(3)], Op.WHILE, Op.GET_OUTPUT)
def _(x, w):
    R = _regions()
    types = [((), I64), ((3,), F64), ((3,), F64)]

    def body(ps):
        k, v, u = ps
        return [B.binary(Op.ADD, k, B.constant(np.int64(1))),
                B.binary(Op.ADD, B.unary(Op.SIN, v), u), u]
    outs = R.loop([B.constant(np.int64(0)), x, w], R.counted_cond(types, 4),
                  R.region("body", types, body), trip_count=4)
    return outs[1:]


@case("while_until_converged", [f(3, values=floats(0.5, 2.0))], Op.WHILE)
def _(x):
    # the number of trips depends on the data: per-example conditions differ
    R = _regions()
    types = [((3,), F64)]
    cond = R.region("cond", types, lambda ps: [B.compare(
        B.reduce(Op.REDUCE_SUM, ps[0], (0,)), B.constant(np.float64(20.0)), "LT")])
    body = R.region("body", types, lambda ps: [B.binary(
        Op.MUL, ps[0], B.full(1.5, (3,), F64))])
    return R.loop([x], cond, body)


def _branches(*fns):
    R = _regions()
    types = [((3,), F64), ((3,), F64)]
    return tuple(R.region(f"b{k}", types, fn) for k, fn in enumerate(fns))


@case("conditional_bool", [f(3), f(3)], Op.CONDITIONAL, Op.GET_OUTPUT)
def _(x, y):
    pred = B.compare(B.reduce(Op.REDUCE_SUM, x, (0,)), B.constant(np.float64(0.0)), "GT")
    branches = _branches(lambda ps: [B.binary(Op.MUL, *ps), ps[0]],
                         lambda ps: [B.unary(Op.SIN, ps[1]), B.full(2.0, (3,), F64)])
    return _regions().values(B.make(Op.CONDITIONAL, [pred, x, y],
                                    dict(branches=branches)), 2)


@case("conditional_index", [((), I64, ints(-1, 4, I64)), f(3), f(3)], Op.CONDITIONAL)
def _(k, x, y):
    branches = _branches(lambda ps: [B.binary(Op.MUL, *ps)],
                         lambda ps: [B.unary(Op.COS, ps[1])],
                         lambda ps: [B.binary(Op.SUB, ps[0], ps[1])])
    return B.make(Op.CONDITIONAL, [k, x, y], dict(branches=branches))


# -- the checker

def axis_choices(ndim):
    """in_axes worth trying for an operand of per-example rank `ndim`."""
    return [a for a in (0, 1, -1) if -(ndim + 1) <= a <= ndim] + [None]


def in_axes_variants(types):
    """Each operand through each of its choices with the others mapped at 0; plus every
    operand but one unmapped."""
    n = len(types)
    seen = []
    for i, (shape, _, _) in enumerate(types):
        for a in axis_choices(len(shape)):
            seen.append(tuple(a if j == i else 0 for j in range(n)))
        if n > 1:
            seen.append(tuple(0 if j == i else None for j in range(n)))
    return [v for v in dict.fromkeys(seen) if any(a is not None for a in v)]


def batched_inputs(types, axes, rng):
    out = []
    for (shape, dtype, values), axis in zip(types, axes):
        if axis is None:
            out.append(np.asarray(values(rng, shape), dtype))
        else:
            stacked = np.asarray(values(rng, (SIZE,) + shape), dtype)
            out.append(np.moveaxis(stacked, 0, axis))
    return out


def loop_reference(module, inputs, axes):
    """The per-example module on each example's slices, results stacked on axis 0."""
    per_example = []
    for b in range(SIZE):
        args = [x if a is None else np.take(x, b, axis=a) for x, a in zip(inputs, axes)]
        per_example.append(evaluate(module, args))
    return [np.stack(rs) for rs in zip(*per_example)]


def assert_same(got, want, module, what, rtol=1e-12):
    for i, (g, w) in enumerate(zip(got, want)):
        np.testing.assert_allclose(np.asarray(g), w, rtol=rtol, atol=rtol, equal_nan=True,
                                   err_msg=f"result {i}, {what}, of\n{module}")
        assert np.asarray(g).dtype == w.dtype, f"result {i}, {what}, of\n{module}"


@pytest.mark.parametrize("c", CASES, ids=lambda c: c.name)
def test_rule_matches_loop_over_examples(c):
    module = c.module()
    rng = np.random.default_rng(0)
    for axes in in_axes_variants(c.types):
        batched = batching.batch_module(module, axes, SIZE, [0] * len(module.results))
        verify(batched)
        inputs = batched_inputs(c.types, axes, rng)
        assert_same(evaluate(batched, inputs), loop_reference(module, inputs, axes),
                    batched, f"in_axes={axes}")


@pytest.mark.parametrize("c", CASES, ids=lambda c: c.name)
def test_rule_matches_jax_vmap_of_the_same_module(c):
    module = c.module()
    rng = np.random.default_rng(1)
    lowered = _lower(module)
    # Two layouts per case keep JAX's dispatch time down: every operand mapped at its
    # last axis, and each operand alone mapped.
    variants = [tuple(-1 for _ in c.types)] + [
        tuple(0 if j == i else None for j in range(len(c.types))) for i in range(len(c.types))]
    for axes in dict.fromkeys(variants):
        batched = batching.batch_module(module, axes, SIZE, [0] * len(module.results))
        inputs = batched_inputs(c.types, axes, rng)
        want = jax.vmap(lowered, in_axes=axes)(*map(jax.numpy.asarray, inputs))
        assert_same(evaluate(batched, inputs), [np.asarray(w) for w in want], batched,
                    f"in_axes={axes} vs jax.vmap", rtol=1e-10)


@pytest.mark.parametrize("c", CASES, ids=lambda c: c.name)
def test_batched_module_runs_alike_on_the_cpu_backend(c):
    # Operands mapped at 0 and -1 in turn: the batched module goes through the
    # optimizer and LLVM like any traced one.
    module = c.module()
    axes = tuple(0 if i % 2 == 0 else -1 for i in range(len(c.types)))
    batched = batching.batch_module(module, axes, SIZE, [0] * len(module.results))
    inputs = batched_inputs(c.types, axes, np.random.default_rng(2))
    assert_same(get_backend("cpu").compile(batched)(*inputs), evaluate(batched, inputs),
                batched, f"cpu backend, in_axes={axes}")


def test_every_op_has_a_rule_or_is_a_leaf():
    assert set(batching.batch_rules) | batching.NEVER_BATCHED == set(Op)
    assert not set(batching.batch_rules) & batching.NEVER_BATCHED


def test_every_op_with_a_rule_is_tested():
    assert COVERED >= set(batching.batch_rules) | {Op.CONSTANT, Op.IOTA}, \
        sorted(set(batching.batch_rules) - COVERED)


COVERED.update(ops.COLLECTIVE - ops.LEAF)   # by the refusal below


@pytest.mark.parametrize("op", sorted(ops.COLLECTIVE - ops.LEAF))
def test_a_batched_collective_is_refused_by_name(op):
    x = B.parameter(0, (2,), F64, "x")
    make = {Op.ALL_REDUCE: lambda: B.all_reduce(x, "sum", "i", 2),
            Op.ALL_GATHER: lambda: B.all_gather(x, 0, "i", 2),
            Op.REDUCE_SCATTER: lambda: B.reduce_scatter(x, 0, "i", 2),
            Op.COLLECTIVE_PERMUTE: lambda: B.collective_permute(x, [(0, 1)], "i", 2)}[op]
    with pytest.raises(UnsupportedError, match=f"vmap of {op} over axis 'i'"):
        batching.batch_module(Module("m", [x], [make()]), [0], SIZE, [0])


def test_out_axes_place_the_batch_dimension():
    x = B.parameter(0, (2, 3), F64, "x")
    module = Module("m", [x], [B.unary(Op.NEG, x), B.full(1.0, (2,), F64)])
    batched = batching.batch_module(module, [0], SIZE, [-1, 1])
    assert [r.shape for r in batched.results] == [(2, 3, SIZE), (2, SIZE)]
    xs = np.arange(SIZE * 6.0).reshape(SIZE, 2, 3)
    neg, ones = evaluate(batched, [xs])
    np.testing.assert_array_equal(neg, -np.moveaxis(xs, 0, -1))
    np.testing.assert_array_equal(ones, np.ones((2, SIZE)))


def test_a_missing_rule_names_the_op_and_the_users_line(monkeypatch):
    x = B.parameter(0, (3,), F64, "x")
    where = SourceLocation("/src/model.py", 12, "f")
    module = Module("m", [x], [B.make(Op.CUMSUM, [x], dict(axis=0, reverse=True), where)])
    monkeypatch.delitem(batching.batch_rules, Op.CUMSUM)
    with pytest.raises(UnsupportedError, match="vmap rule for 'cumsum' not implemented") as e:
        batching.batch_module(module, [0], SIZE, [0])
    assert e.value.location == where
    assert str(e.value).startswith("/src/model.py:12 in f: ")


def test_unbatched_values_keep_their_instructions():
    # A parameter with in_axes None, and everything computed from it alone, is not
    # broadcast: only the mapped operand carries the batch dimension.
    x, w = B.parameter(0, (3,), F64, "x"), B.parameter(1, (3,), F64, "w")
    module = Module("m", [x, w], [B.binary(Op.MUL, x, B.unary(Op.EXP, w))])
    text = str(batching.batch_module(module, [0, None], SIZE, [0]))
    assert "f64[3] exp(" in text and f"f64[{SIZE},3] exp(" not in text, text

