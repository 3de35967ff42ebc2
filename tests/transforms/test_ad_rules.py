"""Every op's JVP and VJP rule, on small Modules built op by op.

Each case is checked three ways in float64:
- jvp_module on the interpreter against jax.jvp of the JAX backend's lowering of the
  same Module;
- vjp_module on the interpreter against jax.vjp of that lowering;
- the VJP against central finite differences along a random direction.
Inputs avoid ties and kinks (tie conventions are tested in test_ad_conventions.py).
"""
import itertools

import jax
import numpy as np
import pytest

from jitlib import errors
from jitlib.backends.jax import _lower
from jitlib.hlo import build, ops
from jitlib.hlo.interpreter import evaluate
from jitlib.hlo.ir import Module
from jitlib.hlo.ops import Op
from jitlib.transforms import ad_util, jvp, vjp

F64 = np.float64
_ids = itertools.count()


class Case:
    """A Module made by `fn` from parameters like `inputs` (floats are differentiated)."""

    def __init__(self, name, fn, *inputs, jax_differentiates=True, exact_in_f64=True):
        self.name, self.inputs = name, [np.asarray(x) for x in inputs]
        # False where jax cannot differentiate the lowering (argmax's variadic reduce)
        self.jax_differentiates = jax_differentiates
        # False where finite differences in float64 would see float32 rounding
        self.exact_in_f64 = exact_in_f64
        k = next(_ids)
        params = [build.parameter(i, x.shape, x.dtype, f"in{i}_{k}")
                  for i, x in enumerate(self.inputs)]
        out = fn(*params)
        self.module = Module(name, params, out if isinstance(out, list) else [out])

    def __repr__(self):
        return self.name


def rng(seed=0):
    return np.random.default_rng(seed)


def normal(*shape, seed=0):
    return rng(seed).normal(size=shape)


def like(x, seed=0):
    """Random values of `x`'s shape and dtype (complex: both parts random)."""
    values = normal(*x.shape, seed=seed)
    if np.issubdtype(x.dtype, np.complexfloating):
        values = values + 1j * normal(*x.shape, seed=seed + 100)
    return values.astype(x.dtype)


def cnormal(*shape, seed=0):
    return normal(*shape, seed=seed) + 1j * normal(*shape, seed=seed + 50)


def positive(*shape, seed=0):
    return rng(seed).uniform(0.5, 2.0, size=shape)


def const(value, dtype=F64):
    return build.constant(np.asarray(value, dtype))


def unary(op, domain=normal):
    return Case(op.value, lambda x: build.unary(op, x), domain(3, 4, seed=1))


def binary(op, x, y):
    return Case(op.value, lambda a, b: build.binary(op, a, b), x, y)


IDX = np.array([[3, 0], [1, 3], [-2, 9]])   # duplicates, negative and past-the-end indices

CASES = [
    *(unary(op) for op in (Op.NEG, Op.ABS, Op.SIGN, Op.EXP, Op.EXPM1, Op.TANH, Op.LOGISTIC,
                           Op.SIN, Op.COS, Op.FLOOR, Op.CEIL, Op.ROUND)),
    *(unary(op, positive) for op in (Op.LOG, Op.LOG1P, Op.SQRT, Op.RSQRT)),
    Case("tan", lambda x: build.unary(Op.TAN, x), rng(1).uniform(-1, 1, (5,))),
    Case("convert", lambda x: build.convert(build.convert(x, np.float32), F64), normal(4),
         exact_in_f64=False),
    Case("convert_int_path", lambda x: build.binary(
        Op.MUL, x, build.convert(build.convert(x, np.int32), F64)), normal(4) * 3),
    *(binary(op, normal(2, 3), normal(2, 3, seed=2))
      for op in (Op.ADD, Op.SUB, Op.MUL, Op.MAX, Op.MIN, Op.ATAN2)),
    binary(Op.DIV, normal(2, 3), positive(2, 3, seed=2)),
    binary(Op.REM, normal(2, 3) * 4, positive(2, 3, seed=2)),
    # random exponents: the lowering's exact-exponent selects (2, 1, 0.5, -1) have no y-slope
    binary(Op.POW, positive(2, 3), normal(2, 3, seed=2)),
    # positive x: the lowering's sqrt branch would turn a negative x's slope into NaN
    Case("pow_const_exponent", lambda x: build.binary(Op.POW, x, build.full(3.0, (4,), F64)),
         positive(4)),
    Case("pow_zero_exponent", lambda x: build.binary(Op.POW, x, build.full(0.0, (4,), F64)),
         positive(4)),
    Case("compare_select", lambda x, y: build.select(build.compare(x, y, "LT"), x, y),
         normal(5), normal(5, seed=2)),
    Case("is_finite_select", lambda x: build.select(
        build.unary(Op.IS_FINITE, x), x, build.full(0.0, (4,), F64)), normal(4)),
    Case("clamp_scalar_bounds", lambda x: build.clamp(const(-0.5), x, const(0.7)), normal(6)),
    Case("clamp_array_bounds", lambda lo, x, hi: build.clamp(lo, x, hi),
         normal(6) - 1, normal(6, seed=2), normal(6, seed=3) + 1),
    Case("broadcast_in_dim", lambda x: build.broadcast_in_dim(x, (2, 3, 4), (0, 2)),
         normal(2, 4)),
    Case("broadcast_size_one", lambda x: build.broadcast_in_dim(x, (3, 4), (0, 1)),
         normal(1, 4)),
    Case("reshape", lambda x: build.reshape(x, (3, 2, 2)), normal(4, 3)),
    Case("transpose", lambda x: build.transpose(x, (2, 0, 1)), normal(2, 3, 4)),
    Case("slice_strided", lambda x: build.slice(x, (1, 0), (6, 4), (2, 3)), normal(7, 5)),
    Case("pad", lambda x, v: build.pad(x, v, (-1, 2), (1, -2), (1, 2)),
         normal(3, 4), np.asarray(0.5)),
    Case("concatenate", lambda x, y: build.concatenate([x, y, x], 1),
         normal(2, 3), normal(2, 1, seed=2)),
    Case("reverse", lambda x: build.reverse(x, (0, 1)), normal(3, 2)),
    Case("dynamic_slice", lambda x: build.dynamic_slice(
        x, [const(1, np.int32), const(7, np.int32)], (2, 2)), normal(4, 5)),
    Case("dynamic_update_slice", lambda x, u: build.dynamic_update_slice(
        x, u, [const(-1, np.int64), const(2, np.int64)]), normal(4, 5), normal(2, 2)),
    Case("gather", lambda x: build.gather(x, const(IDX, np.int32), 1), normal(2, 4)),
    Case("gather_uint8", lambda x: build.gather(
        x, const([0, 255, 2, 2], np.uint8), 0), normal(3, 2)),
    *(Case(f"scatter_{mode}", lambda x, u, mode=mode: build.scatter(
        x, const(IDX, np.int32), u, 1, mode), normal(2, 4), normal(2, 3, 2, seed=2))
      for mode in ("add", "set", "max", "min")),
    Case("scatter_mul_wrt_x", lambda x: build.scatter(
        x, const(IDX, np.int32), const(normal(2, 3, 2, seed=2)), 1, "mul"), normal(2, 4)),
    Case("reduce_sum", lambda x: build.reduce(Op.REDUCE_SUM, x, (0, 2)), normal(2, 3, 4)),
    Case("reduce_prod", lambda x: build.reduce(Op.REDUCE_PROD, x, (1,)), normal(3, 4)),
    Case("reduce_prod_zeros", lambda x: build.reduce(Op.REDUCE_PROD, x, (0, 2)),
         np.array([[[0.0, 2.0], [1.5, 0.0]], [[3.0, 0.0], [0.5, 0.0]], [[2.0, 2.0], [1.0, -1.0]]])),
    Case("reduce_max", lambda x: build.reduce(Op.REDUCE_MAX, x, (1,)), normal(3, 4)),
    Case("reduce_min", lambda x: build.reduce(Op.REDUCE_MIN, x, (0, 1)), normal(3, 4)),
    Case("argmax_gather", lambda x: build.gather(
        x, build.arg_reduce(Op.ARGMAX, x, 0), 0), normal(5), jax_differentiates=False),
    Case("argmin_convert", lambda x: build.binary(Op.MUL, x, build.broadcast_to(build.convert(
        build.arg_reduce(Op.ARGMIN, x, 0), F64), (2, 5))), normal(2, 5),
         jax_differentiates=False),
    Case("bitwise_masks", lambda x: build.select(build.binary(Op.XOR, build.binary(
        Op.OR, build.unary(Op.NOT, build.compare(x, const(np.zeros(6)), "LT")),
        build.compare(x, const(np.ones(6)), "GT")), build.broadcast_to(build.binary(
            Op.AND, build.reduce(Op.REDUCE_AND, build.compare(x, x, "EQ"), (0,)),
            build.reduce(Op.REDUCE_OR, build.compare(x, x, "NE"), (0,))), (6,))),
        build.unary(Op.SIN, x), x), normal(6)),
    Case("cumsum", lambda x: build.cumulative(Op.CUMSUM, x, 1), normal(2, 4)),
    Case("cumsum_reverse", lambda x: build.cumulative(Op.CUMSUM, x, 0, True), normal(3, 2)),
    Case("cumprod", lambda x: build.cumulative(Op.CUMPROD, x, 1), normal(2, 4)),
    Case("cumprod_zeros_reverse", lambda x: build.cumulative(Op.CUMPROD, x, 0, True),
         np.array([[1.5, 0.0], [0.0, 2.0], [-1.0, 0.5], [0.0, 3.0]])),
    Case("sort_values", lambda x: build.sort([x], 1), normal(3, 5)),
    Case("sort_by_indices", lambda x: build.take_along(
        x, build.sort([build.unary(Op.NEG, x)], 0, indices=True), 0), normal(4, 2)),
    Case("cummax", lambda x: build.cumulative(Op.CUMMAX, x, 0), normal(5, 2)),
    Case("cummin_reverse", lambda x: build.cumulative(Op.CUMMIN, x, 1, True), normal(2, 5)),
    Case("dot_matmul", lambda a, b: build.dot_general(a, b, (1,), (0,)),
         normal(3, 4), normal(4, 2, seed=2)),
    Case("dot_batch", lambda a, b: build.dot_general(a, b, (2,), (1,), (0,), (2,)),
         normal(2, 3, 4), normal(5, 4, 2, seed=2)),
    Case("dot_two_contract_dims", lambda a, b: build.dot_general(a, b, (2, 0), (0, 3), (1,), (2,)),
         normal(4, 2, 3, 5), normal(3, 6, 2, 4, seed=2)),
    Case("iota_constant", lambda x: build.binary(
        Op.MUL, x, build.convert(build.iota((3, 2), np.int32, 1), F64)), normal(3, 2)),
]


def _sym(x):
    return build.binary(Op.ADD, x, build.transpose(x, (0, 2, 1) if x.ndim == 3 else (1, 0)))


def _sq(x):
    # sign-invariant: a factor's columns (or rows) are unique only up to sign
    return build.binary(Op.MUL, x, x)


def _well_conditioned(*shape, seed=0):
    return normal(*shape, seed=seed) + 4 * np.eye(shape[-1])


def _spd(*shape, seed=0):
    a = normal(*shape, seed=seed)
    return a @ np.swapaxes(a, -1, -2) / 2 + 2 * np.eye(shape[-1])


def _linalg_cases():
    cases = [
        Case("cholesky", lambda x: build.cholesky(_sym(x)), _spd(2, 4, 4)),
        Case("lu_packed", lambda x: build.lu(x, "lu"), normal(2, 4, 4)),
        Case("eigh_values", lambda x: build.eigh(_sym(x), "values"), normal(2, 4, 4)),
        Case("eigh_vectors", lambda x: _sq(build.eigh(_sym(x), "vectors")), normal(4, 4)),
        Case("qr_q", lambda x: _sq(build.qr(x, "q")), normal(2, 5, 3)),
        Case("qr_r", lambda x: _sq(build.qr(x, "r")), normal(4, 4)),
        Case("svd_values", lambda x: build.svd(x, "s"), normal(2, 4, 3)),
    ]
    for left, lower, trans, unit in itertools.product((True, False), repeat=4):
        name = "triangular_solve_" + "".join(
            flag for flag, on in zip(("left", "lower", "trans", "unit"),
                                     (left, lower, trans, unit)) if on)
        cases.append(Case(name, lambda a, b, f=(left, lower, trans, unit): build.triangular_solve(
            a, b, *f), _well_conditioned(2, 3, 3), normal(2, 3, 3, seed=1)))
    return cases


CASES += _linalg_cases()


def _fusion_cases():
    k = next(_ids)
    p = [build.parameter(i, (4,), F64, f"body{i}_{k}") for i in range(2)]
    one = build.binary(Op.MUL, build.unary(Op.SIN, p[0]), p[1])
    body1 = Module("single", p, [one])
    body2 = Module("multi", p, [one, build.unary(Op.EXP, p[1]),
                                build.compare(p[0], p[1], "LT")])

    def multi(x, y):
        f = build.fusion([x, y], body2, "loop", "fused_multi")
        outs = build.outputs(f)
        return [build.binary(Op.ADD, outs[0], outs[1]), outs[1],
                build.select(outs[2], x, y)]

    return [
        Case("fusion", lambda x, y: build.fusion([x, y], body1, "loop", "fused"),
             normal(4), normal(4, seed=2)),
        Case("fusion_multi_output", multi, normal(4), normal(4, seed=2)),
    ]


CASES += _fusion_cases()

# complex values, differentiated as JAX does (ad_complex.py): holomorphic ops by their
# complex derivative, abs and the parts by the transposes of their R-linear JVPs
CASES += [
    *(Case(f"complex_{op.value}", lambda z, op=op: build.unary(op, z), cnormal(2, 3))
      for op in (Op.NEG, Op.ABS, Op.EXP, Op.EXPM1, Op.LOG, Op.LOG1P, Op.SQRT, Op.RSQRT,
                 Op.TANH, Op.SIN, Op.COS, Op.TAN, Op.REAL, Op.IMAG, Op.CONJ, Op.SINH,
                 Op.COSH, Op.ASIN, Op.ACOS, Op.ATAN, Op.ASINH, Op.ATANH)),
    # JAX's acosh JVP, rsqrt((x - 1)(x + 1)), has the wrong sign where Re x < 0 for complex
    # x; ours, 1/(sqrt(x - 1) sqrt(x + 1)), is checked against finite differences only
    Case("complex_acosh", lambda z: build.unary(Op.ACOSH, z), cnormal(2, 3),
         jax_differentiates=False),
    *(Case(f"complex_{op.value}", lambda a, b, op=op: build.binary(op, a, b),
           cnormal(2, 3), cnormal(2, 3, seed=2)) for op in (Op.ADD, Op.SUB, Op.MUL, Op.DIV)),
    Case("complex_pow", lambda a, b: build.binary(Op.POW, a, b),
         cnormal(2, 3) + 2, 0.3 * cnormal(2, 3, seed=2)),
    Case("complex_of_parts", lambda x, y: build.binary(Op.COMPLEX, x, y),
         normal(4), normal(4, seed=2)),
    Case("complex_to_real_convert", lambda z: build.convert(z, F64), cnormal(4)),
    Case("real_to_complex_convert", lambda x: build.convert(x, np.complex128), normal(4)),
    Case("complex_sum_and_dot", lambda a, b: [
        build.reduce(Op.REDUCE_SUM, a, (1,)), build.dot_general(a, b, (1,), (0,))],
        cnormal(2, 3), cnormal(3, 2, seed=2)),
    *(Case(f"fft_{kind.lower()}", lambda x, kind=kind, n=n: build.make(
        Op.FFT, [x], dict(fft_type=kind, fft_length=n)), x)
      for kind, n, x in (("FFT", (4,), cnormal(3, 4)), ("IFFT", (2, 4), cnormal(3, 2, 4)),
                         ("RFFT", (6,), normal(3, 6)), ("RFFT", (5,), normal(2, 5)),
                         ("IRFFT", (6,), cnormal(3, 4)), ("IRFFT", (3, 5), cnormal(3, 3)))),
    Case("abs_squared_of_complex", lambda z: build.reduce(Op.REDUCE_SUM, build.binary(
        Op.MUL, build.unary(Op.ABS, z), build.unary(Op.ABS, z)), (0, 1)), cnormal(2, 3)),
]


def _control_cases():
    from jitlib.transforms import regions as R
    i64 = np.dtype(np.int64)

    def counted_loop(x, w):
        # (counter, x, w): x <- sin(x * w) + 0.5 x, three trips; w is passed through
        types = [((), i64), (x.shape, F64), (w.shape, F64)]

        def body(ps):
            k, v, u = ps
            step = build.binary(Op.ADD, build.unary(Op.SIN, build.binary(Op.MUL, v, u)),
                                build.binary(Op.MUL, v, build.full(0.5, v.shape, F64)))
            return [build.binary(Op.ADD, k, const(1, i64)), step, u]
        outs = R.loop([const(0, i64), x, w], R.counted_cond(types, 3),
                      R.region("body", types, body), trip_count=3)
        return outs[1]

    def branches(*bodies):
        types = [((4,), F64), ((4,), F64)]
        return tuple(R.region(f"b{k}", types, fn) for k, fn in enumerate(bodies))

    two = branches(lambda ps: [build.binary(Op.MUL, *ps), build.unary(Op.EXP, ps[0])],
                   lambda ps: [build.binary(Op.ADD, build.unary(Op.SIN, ps[1]), ps[0]),
                               ps[0]])
    three = branches(lambda ps: [build.binary(Op.MUL, *ps)],
                     lambda ps: [build.unary(Op.COS, ps[1])],
                     lambda ps: [build.binary(Op.SUB, ps[0], ps[1])])

    def by_sign(x, y):
        pred = build.compare(build.reduce(Op.REDUCE_SUM, x, (0,)), const(0.0), "GT")
        return R.values(build.make(Op.CONDITIONAL, [pred, x, y], dict(branches=two)), 2)

    def by_index(k, x, y):
        return build.make(Op.CONDITIONAL, [k, x, y], dict(branches=three))

    return [
        Case("while_counted", counted_loop, normal(4), normal(4, seed=2)),
        Case("conditional_true", by_sign, positive(4), normal(4, seed=2)),
        Case("conditional_false", by_sign, -positive(4), normal(4, seed=2)),
        *(Case(f"conditional_index_{k}", by_index, np.int64(k), normal(4), normal(4, seed=2))
          for k in (-1, 1, 2, 7)),
    ]


CASES += _control_cases()


def _split(case):
    """The indices of the differentiated (floating-point) inputs."""
    return [i for i, x in enumerate(case.inputs) if np.issubdtype(x.dtype, np.inexact)]


def _oracle(case):
    """The lowering as a jax function of the float inputs only."""
    run = _lower(case.module)
    floats = _split(case)

    def f(*float_args):
        args = list(case.inputs)
        for i, a in zip(floats, float_args):
            args[i] = a
        return [r for r in run(*args) if np.issubdtype(r.dtype, np.inexact)]
    return f, [case.inputs[i] for i in floats]


def _float_results(module):
    return [i for i, r in enumerate(module.results) if np.issubdtype(r.dtype, np.inexact)]


def _close(actual, expected, what, module):
    for a, e in zip(actual, expected):
        np.testing.assert_allclose(np.asarray(a), np.asarray(e), rtol=1e-9, atol=1e-12,
                                   err_msg=f"{what} differs from JAX for\n{module}")


JAX_CASES = [c for c in CASES if c.jax_differentiates]
FD_CASES = [c for c in CASES if c.exact_in_f64]


@pytest.mark.parametrize("case", JAX_CASES, ids=repr)
def test_jvp_matches_jax(case):
    f, primals = _oracle(case)
    tangents = [like(x, seed=7 + i) for i, x in enumerate(primals)]
    _, expected = jax.jit(lambda p, t: jax.jvp(f, p, t))(primals, tangents)
    module = jvp.jvp_module(case.module, _split(case))
    results = evaluate(module, list(case.inputs) + tangents)
    n = len(case.module.results)
    out_tangents = [results[n + i] for i in _float_results(case.module)]
    _close(out_tangents, expected, "JVP", module)


@pytest.mark.parametrize("case", JAX_CASES, ids=repr)
def test_vjp_matches_jax(case):
    f, primals = _oracle(case)
    outs = jax.eval_shape(f, *primals)
    cts = [like(o, seed=11 + i) for i, o in enumerate(outs)]
    expected = jax.jit(lambda p, c: jax.vjp(f, *p)[1](c))(primals, cts)
    module = vjp.vjp_module(case.module, _split(case), _float_results(case.module))
    results = evaluate(module, list(case.inputs) + cts)
    _close(results[len(case.module.results):], expected, "VJP", module)


@pytest.mark.parametrize("case", FD_CASES, ids=repr)
def test_vjp_matches_finite_differences(case):
    floats, seeded = _split(case), _float_results(case.module)
    module = vjp.vjp_module(case.module, floats, seeded)
    cts = [like(case.module.results[i], seed=13 + i) for i in seeded]
    grads = evaluate(module, list(case.inputs) + cts)[len(case.module.results):]
    direction = [like(case.inputs[i], seed=17 + i) for i in floats]
    h = 1e-6

    def pairing(step):
        args = list(case.inputs)
        for i, d in zip(floats, direction):
            args[i] = args[i] + step * d
        outs = evaluate(case.module, args)
        # JAX's convention pairs complex values as Re(sum(a * b)), no conjugate
        return sum(float(np.real(np.sum(c * outs[i]))) for c, i in zip(cts, seeded))

    numeric = (pairing(h) - pairing(-h)) / (2 * h)
    analytic = sum(float(np.real(np.sum(g * d))) for g, d in zip(grads, direction))
    assert abs(numeric - analytic) <= 1e-6 * (1 + abs(numeric)), (numeric, analytic, str(module))


# -- coverage of the op set

# Ops whose results are never floating point: nothing to differentiate, ever.
NEVER_FLOAT = {Op.NOT, Op.IS_FINITE, Op.AND, Op.OR, Op.XOR, Op.COMPARE, Op.REDUCE_AND,
               Op.REDUCE_OR, Op.ARGMAX, Op.ARGMIN}
# Leaves: a parameter's tangent is given; constants and iotas have none.
LEAVES = set(ops.LEAF)


def test_every_op_has_both_rules_or_is_exempt():
    for table in (jvp.jvp_rules, vjp.vjp_rules):
        missing = set(Op) - set(table) - NEVER_FLOAT - LEAVES
        assert not missing, sorted(missing)


def test_every_op_is_exercised_by_a_case():
    seen = {i.op for case in CASES for i in case.module.instructions}
    for case in CASES:
        for i in case.module.instructions:
            if i.op is Op.FUSION:
                seen |= {j.op for j in i.attrs["body"].instructions}
    # collectives need a pmap's devices: tests/test_pmap.py differentiates them
    assert set(Op) - seen - ops.COLLECTIVE == set(), sorted(set(Op) - seen)


def test_a_missing_rule_names_the_op_and_the_users_line(monkeypatch):
    import jitlib
    monkeypatch.delitem(vjp.vjp_rules, Op.SIN)

    def f(x):
        return np.sin(x).sum()   # the line the error must point at

    with pytest.raises(errors.UnsupportedError) as info:
        jitlib.grad(f)(np.ones(3))
    assert "VJP rule for 'sin'" in str(info.value)
    assert info.value.location.function == "f"
    assert "np.sin(x)" in str(info.value)


def test_scatter_mul_updates_are_refused_like_jax():
    case = Case("scatter_mul", lambda x, u: build.scatter(x, const(IDX, np.int32), u, 1, "mul"),
                normal(2, 4), normal(2, 3, 2))
    with pytest.raises(errors.UnsupportedError, match="multiplying scatter"):
        vjp.vjp_module(case.module)
    with pytest.raises(errors.UnsupportedError, match="multiplying scatter"):
        jvp.jvp_module(case.module)
    # with respect to x alone it is fine
    vjp.vjp_module(case.module, [0])


def test_integer_values_carry_no_tangent():
    case = Case("int_path", lambda x, n: build.binary(Op.MUL, x, build.convert(n, F64)),
                normal(3), np.arange(3))
    module = jvp.jvp_module(case.module)
    assert len(module.params) == 3          # x, n, and x's tangent only
    assert not ad_util.is_differentiable(case.module.params[1])
