"""The simplifier: golden cases per rule, the exactness claims measured, meaning preserved."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import golden
from ir_strategies import programs
from jitlib.fusion import Options, run_pipeline
from jitlib.fusion.options import UNSAFE_MATH_RULES
from jitlib.fusion.rewrite import RuleError, RuleTable, rewrite_module
from jitlib.fusion.simplify import ALGEBRAIC, FOLD, arith
from jitlib.hlo import build, dtypes
from jitlib.hlo.shape_rules import IRTypeError
from jitlib.hlo.interpreter import evaluate
from jitlib.hlo.ir import Module
from jitlib.hlo.ops import Op
from jitlib.hlo.parser import parse_module
from jitlib.hlo.printer import print_module

CASES = golden.collect("simplify_*.hlo")
RULE_NAMES = (ALGEBRAIC + FOLD).names()
UNSAFE_CASES = [c for c in CASES if "unsafe_math=" in c.run]


# -- golden cases

@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_golden(case):
    golden.check_case(case)


def test_every_rule_has_a_positive_and_a_do_not_case():
    tagged = [(rule, case) for case in CASES for rule in case.rules]
    unknown = sorted({rule for rule, _ in tagged} - set(RULE_NAMES))
    assert not unknown, f"RULE lines name no rule: {unknown}"
    for rule in RULE_NAMES:
        cases = [case for r, case in tagged if r == rule]
        assert any(not c.negative for c in cases), f"{rule} has no positive golden case"
        assert any(c.negative for c in cases), f"{rule} has no DoNot golden case"


def test_opt_in_rules_are_listed_in_options_and_each_has_a_rule():
    decorated = {getattr(fn, "unsafe_math", None) for _, fn in ALGEBRAIC + FOLD} - {None}
    assert decorated == UNSAFE_MATH_RULES


@pytest.mark.parametrize("case", UNSAFE_CASES, ids=lambda c: c.id)
def test_opt_in_rule_is_off_by_default(case):
    before, after = golden.run_case(case, options=Options())
    assert print_module(after) == print_module(before)


@pytest.mark.parametrize("case", UNSAFE_CASES, ids=lambda c: c.id)
def test_opt_in_rule_really_changes_bits(case):
    before, after = golden.run_case(case)
    inputs = golden.special_inputs(before, np.random.default_rng(0))
    with pytest.raises(AssertionError, match="differ"):
        golden.assert_same_bits(evaluate(before, inputs), evaluate(after, inputs))


# -- the exactness claims, measured on the interpreter

def _all_values(dtype):
    return np.arange(2**16, dtype=np.uint16).view(dtype)


def _many_values(dtype, n=1 << 20):
    rng = np.random.default_rng(0)
    width = np.dtype(dtype).itemsize
    bits = rng.integers(0, 2 ** (8 * width), n, dtype=f"u{width}").view(dtype)
    scaled = rng.standard_normal(n) * rng.choice([1e-3, 1.0, 1e3, 1e20], n)
    specials = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 1e-3]
    return np.concatenate([bits, scaled.astype(dtype), np.array(specials, dtype)])


VALUES = [(np.dtype(np.float16), _all_values), (dtypes.bfloat16, _all_values),
          (np.dtype(np.float32), _many_values), (np.dtype(np.float64), _many_values)]


def _pow_module(dtype, n, exponent):
    x = build.parameter(0, (n,), dtype)
    return Module("m", [x], [build.binary(Op.POW, x, build.full(exponent, (n,), dtype))])


@pytest.mark.parametrize("dtype, values", VALUES, ids=lambda v: getattr(v, "name", ""))
@pytest.mark.parametrize("exponent", [1, 2])
def test_pow_by_scalar_one_and_two_are_exact(dtype, values, exponent):
    xs = values(dtype)
    module = _pow_module(dtype, len(xs), exponent)
    simplified = run_pipeline(module)
    assert all(i.op is not Op.POW for i in simplified.instructions)
    golden.assert_same_bits(evaluate(module, [xs]), evaluate(simplified, [xs]))


def test_scalar_pow_of_two_is_exact_on_zero_dim_values():
    x = build.parameter(0, (), np.float32)
    module = Module("m", [x], [build.binary(Op.POW, x, build.constant(np.float32(2)))])
    simplified = run_pipeline(module)
    for v in _many_values(np.float32, 2000):
        golden.assert_same_bits(evaluate(module, [v]), evaluate(simplified, [v]))


@pytest.mark.parametrize("dtype", [np.float16, dtypes.bfloat16, np.float32])
def test_pow_half_is_sqrt_exactly_even_at_signed_zero_and_minus_inf(dtype):
    xs = np.array([-0.0, -np.inf], dtype)
    module = _pow_module(dtype, 2, 0.5)
    simplified = run_pipeline(module)
    assert any(i.op is Op.SQRT for i in simplified.instructions)
    golden.assert_same_bits(evaluate(module, [xs]), evaluate(simplified, [xs]))


def _convert_chain(source, middle, target, n):
    x = build.parameter(0, (n,), source)
    return Module("m", [x], [build.convert(build.convert(x, middle), target)])


def _convert_inputs(dtype):
    if dtypes.is_bool(dtype):
        return np.array([False, True])
    if dtype.itemsize <= 2:
        return np.arange(2 ** (8 * dtype.itemsize), dtype=f"u{dtype.itemsize}").view(dtype)
    if dtypes.is_float(dtype):
        return _many_values(dtype, 1 << 14)
    info = dtypes.iinfo(dtype)
    rng = np.random.default_rng(1)
    edges = np.array([info.min, info.max, 0, 1, 2**24 + 1, 2**53 + 1], dtype=object)
    edges = np.clip(edges, info.min, info.max).astype(dtype)
    return np.concatenate([edges, rng.integers(info.min, info.max, 1 << 14, dtype=dtype)])


def test_convert_chains_the_rule_merges_are_exact():
    merged = 0
    for s in dtypes.REAL:
        xs = _convert_inputs(np.dtype(s))
        for m in dtypes.REAL:
            if m == s or not arith.holds_exactly(m, s):
                continue
            for t in dtypes.REAL:
                module = _convert_chain(s, m, t, len(xs))
                simplified = run_pipeline(module)
                if len(simplified.instructions) == len(module.instructions):
                    continue
                merged += 1
                golden.assert_same_bits(evaluate(module, [xs]), evaluate(simplified, [xs]),
                                        f"{s} -> {m} -> {t}")
    assert merged > 100


@pytest.mark.parametrize("wide, narrow, holds", [
    ("f64", "f32", True), ("f32", "f16", True), ("f32", "bf16", True), ("f16", "bf16", False),
    ("bf16", "f16", False), ("f32", "i16", True), ("f32", "i32", False), ("f64", "u32", True),
    ("bf16", "u8", True), ("bf16", "i16", False), ("i16", "u8", True), ("u16", "i8", False),
    ("i64", "u32", True), ("u64", "i64", False), ("i8", "bool", True), ("bool", "i8", False),
])
def test_holds_exactly(wide, narrow, holds):
    assert arith.holds_exactly(dtypes.from_name(wide), dtypes.from_name(narrow)) == holds


def test_transpose_folded_into_dot_is_bit_identical():
    rng = np.random.default_rng(0)
    for dt in (np.float32, np.float64, dtypes.bfloat16, np.int32):
        a = build.parameter(0, (7, 5, 3), dt)
        b = build.parameter(1, (3, 7, 4), dt)
        at = build.transpose(a, (0, 2, 1))                 # [7, 3, 5]
        bt = build.transpose(b, (1, 0, 2))                 # [7, 3, 4]
        dot = build.dot_general(at, bt, (1,), (1,), (0,), (0,))
        module = Module("m", [a, b], [dot])
        simplified = run_pipeline(module)
        assert not any(i.op is Op.TRANSPOSE for i in simplified.instructions)
        args = [(rng.standard_normal(p.shape) * 100).astype(dt) for p in module.params]
        golden.assert_same_bits(evaluate(module, args), evaluate(simplified, args))


@pytest.mark.parametrize("dt", [np.float16, dtypes.bfloat16, np.float32, np.int8, np.uint8])
@pytest.mark.parametrize("shapes, batch", [
    (((), (2,)), ((), ())), (((), ()), ((), ())), (((3,), (2,)), ((), ())),
    (((2, 3), (2, 4)), ((0,), (0,))), (((3, 2, 5), (5, 4, 2)), ((1, 2), (2, 0)))])
def test_a_dot_summing_nothing_becomes_a_product(dt, shapes, batch):
    # found by fuzzing the Triton backend: a rank-0 tl.dot does not exist; one product,
    # rounded once, is the multiply's result to the bit (overflow and wrapping included)
    rng = np.random.default_rng(1)
    a, b = build.parameter(0, shapes[0], dt, "a"), build.parameter(1, shapes[1], dt, "b")
    dot = build.dot_general(a, b, (), (), *batch)
    module = Module("m", [a, b], [dot])
    simplified = run_pipeline(module)
    assert not any(i.op is Op.DOT_GENERAL for i in simplified.instructions), simplified
    args = [(rng.standard_normal(p.shape) * 300).astype(dt) for p in module.params]
    with np.errstate(all="ignore"):
        golden.assert_same_bits(evaluate(module, args), evaluate(simplified, args))


# -- meaning preserved on random programs

def _check_same_bits(module, inputs, options=None):
    simplified = run_pipeline(module, options=options, verify_each=True)
    golden.assert_same_bits(evaluate(module, inputs), evaluate(simplified, inputs),
                            f"simplifying\n{module}\ninto\n{simplified}\n")


@settings(max_examples=100)
@given(programs())
def test_simplifier_preserves_random_programs_bit_for_bit(case):
    _check_same_bits(*case)


POW_OF_FOLDED_EXPONENT = """module m(%x: f32[4]) {
  %0 = f32[] constant(2.0)
  %1 = f32[4] broadcast_in_dim(%0), dims=[]
  %2 = f32[] constant(1.0)
  %3 = f32[4] broadcast_in_dim(%2), dims=[]
  %4 = f32[4] mul(%1, %3)
  %5 = f32[4] pow(%x, %4)
  return (%5)
}"""


def test_folding_a_pow_exponent_keeps_the_bits():
    module = parse_module(POW_OF_FOLDED_EXPONENT)
    x = np.array([1e-3, 0.5741666, 1.2127726, 9.034919], np.float32)
    golden.assert_same_bits(evaluate(module, [x]), evaluate(run_pipeline(module), [x]))


RULE_OPS = (Op.PARAMETER, Op.CONSTANT, Op.IOTA, Op.ADD, Op.SUB, Op.MUL, Op.DIV, Op.POW,
            Op.MAX, Op.NEG, Op.NOT, Op.XOR, Op.AND, Op.COMPARE, Op.SELECT, Op.CONVERT,
            Op.BROADCAST_IN_DIM, Op.RESHAPE, Op.TRANSPOSE, Op.SLICE, Op.REDUCE_SUM,
            Op.REDUCE_MAX, Op.DOT_GENERAL)


@settings(max_examples=100)
@given(programs(ops=RULE_OPS, max_steps=10))
def test_simplifier_preserves_programs_made_of_the_ops_it_rewrites(case):
    _check_same_bits(*case)


# Programs made of the shapes the rules look for: constants that are 0, -0.0, 1, 2, 0.5
# or -1 on either side of an op, an op on one value twice, chains of converts and
# movement. Inputs are full of special values.
_PATTERN_CONSTANTS = (0.0, -0.0, 1.0, 2.0, 0.5, -1.0)
_PATTERN_BINARY = (Op.ADD, Op.SUB, Op.MUL, Op.DIV, Op.POW, Op.MAX, Op.MIN, Op.AND, Op.OR,
                   Op.XOR)


@st.composite
def rule_programs(draw):
    dtype = draw(st.sampled_from(dtypes.REAL))
    shape = draw(st.sampled_from([(), (3,), (2, 3), (1, 4)]))
    x = build.parameter(0, shape, dtype)
    values = [x]
    for _ in range(draw(st.integers(1, 6))):
        v = draw(st.sampled_from(values))
        kind = draw(st.sampled_from(["const", "self", "twice", "convert", "select", "move"]))
        try:
            values.append(_pattern(draw, kind, v))
        except IRTypeError:
            pass
    module = Module("m", [x], values[-2:])
    inputs = golden.special_inputs(module, np.random.default_rng(draw(st.integers(0, 99))))
    return module, inputs


def _pattern(draw, kind, v):
    op = draw(st.sampled_from(_PATTERN_BINARY))
    if kind == "const":
        with np.errstate(all="ignore"):
            c = build.full(np.array(draw(st.sampled_from(_PATTERN_CONSTANTS))).astype(v.dtype),
                           v.shape, v.dtype)
        return build.binary(op, *((c, v) if draw(st.booleans()) else (v, c)))
    if kind == "self":
        return build.binary(op, v, v)
    if kind == "twice":
        unary = draw(st.sampled_from([Op.NEG, Op.NOT]))
        return build.unary(unary, build.unary(unary, v))
    if kind == "convert":
        middle, target = (draw(st.sampled_from(dtypes.REAL)) for _ in range(2))
        return build.convert(build.convert(v, middle), v.dtype if draw(st.booleans()) else target)
    if kind == "select":
        c = build.full(np.array(1).astype(v.dtype), v.shape, v.dtype)
        pred = build.compare(v, c, draw(st.sampled_from(["LT", "EQ", "GE"])))
        pred = build.unary(Op.NOT, pred) if draw(st.booleans()) else pred
        return build.select(pred, v, build.binary(op, v, v))
    y = build.broadcast_in_dim(v, (2,) + v.shape, range(1, v.ndim + 1))
    y = build.transpose(y, (*range(1, y.ndim), 0))
    reduce = draw(st.sampled_from([Op.REDUCE_SUM, Op.REDUCE_MAX, Op.REDUCE_PROD]))
    return build.reduce(reduce, y, (y.ndim - 1,))


@settings(max_examples=100)
@given(rule_programs())
def test_simplifier_preserves_programs_shaped_like_its_rules(case):
    _check_same_bits(*case)


# -- the rewrite engine

def _module(text):
    return parse_module(text)


NEG_X = """module m(%x: f32[3]) {
  %0 = f32[3] neg(%x)
  return (%0)
}"""


def test_a_rule_that_changes_the_type_is_an_error():
    def widen(instr, options):
        return build.convert(instr, np.float64)
    with pytest.raises(RuleError, match="widen turned f32"):
        rewrite_module(_module(NEG_X), RuleTable([(Op.NEG, widen)]))


def test_rules_that_undo_each_other_are_an_error():
    def to_abs(instr, options):
        return build.unary(Op.ABS, instr.operands[0])

    def to_neg(instr, options):
        return build.unary(Op.NEG, instr.operands[0])
    rules = RuleTable([(Op.NEG, to_abs), (Op.ABS, to_neg)])
    with pytest.raises(RuleError, match="cycle"):
        rewrite_module(_module(NEG_X), rules)


def test_what_a_rule_builds_is_simplified_too():
    # pow_two builds mul(x, x) on x = neg(neg(y)); the rebuilt operand is already y, and
    # the new mul's constant-free operands leave nothing to do: one mul remains.
    module = _module("""module m(%y: i32[3]) {
  %0 = i32[3] neg(%y)
  %1 = i32[3] neg(%0)
  %2 = i32[] constant(2)
  %3 = i32[3] broadcast_in_dim(%2), dims=[]
  %4 = i32[3] pow(%1, %3)
  %5 = i32[] constant(1)
  %6 = i32[3] broadcast_in_dim(%5), dims=[]
  %7 = i32[3] pow(%4, %6)
  return (%7)
}""")
    out = rewrite_module(module, ALGEBRAIC)
    assert [i.op for i in out.instructions] == [Op.PARAMETER, Op.MUL]


def test_sum_of_broadcast_result_is_simplified_again():
    # the count is 1: x * 1 from the rule becomes x within the same walk
    x = build.parameter(0, (3,), np.int32)
    b = build.broadcast_in_dim(build.reshape(x, (1, 3)), (1, 3), (0, 1))
    module = Module("m", [x], [build.reduce(Op.REDUCE_SUM, b, (0,))])
    assert rewrite_module(module, ALGEBRAIC).results == (x,)


def test_deep_chains_do_not_recurse():
    x = build.parameter(0, (2,), np.float32)
    y = x
    for _ in range(5000):
        y = build.unary(Op.NEG, y)
    assert rewrite_module(Module("m", [x], [y]), ALGEBRAIC).results == (x,)


def test_rewritten_instructions_keep_their_locations():
    from jitlib.errors import SourceLocation
    loc = SourceLocation("/src/model.py", 7, "f")
    x = build.parameter(0, (2,), np.float32)
    sq = build.binary(Op.POW, x, build.full(2.0, (2,), np.float32), loc=loc)
    out = rewrite_module(Module("m", [x], [build.unary(Op.EXP, sq, loc=loc)]), ALGEBRAIC)
    (mul,) = out.results[0].operands
    assert mul.op is Op.MUL and mul.loc == loc


# -- the golden matcher itself

OUTPUT = "module m(%x: f32[4]) {\n  %0 = f32[4] neg(%x)\n  %1 = f32[4] exp(%0)\n" \
         "  return (%1)\n}"


@pytest.mark.parametrize("checks", [
    [("CHECK", "neg(%x)", 1), ("CHECK-NEXT", "exp(%0)", 2)],
    [("CHECK", "%0 =  f32[4]   neg", 1)],
    [("CHECK", "%[[A:[0-9]+]] = f32[4] neg", 1), ("CHECK", "exp(%[[A]])", 2)],
    [("CHECK", "module", 1), ("CHECK-NOT", "add", 2), ("CHECK", "return", 3)],
])
def test_matcher_accepts(checks):
    golden.check(OUTPUT, checks)


@pytest.mark.parametrize("checks, message", [
    ([("CHECK", "exp", 1), ("CHECK", "neg", 2)], "CHECK: neg matches no line"),
    ([("CHECK", "module", 1), ("CHECK-NEXT", "exp", 2)], "CHECK-NEXT: exp does not match"),
    ([("CHECK", "module", 1), ("CHECK-NOT", "neg", 2), ("CHECK", "return", 3)],
     "CHECK-NOT: neg matched line 2"),
    ([("CHECK-NOT", "exp", 1)], "CHECK-NOT: exp"),
    ([("CHECK", "%[[A:[0-9]+]] = f32[4] neg", 1), ("CHECK", "neg(%[[A]])", 2)],
     "matches no line"),
    ([("CHECK-UNCHANGED", "", 1)], "CHECK-UNCHANGED"),
])
def test_matcher_rejects(checks, message):
    with pytest.raises(AssertionError, match=message):
        golden.check(OUTPUT, checks, before=OUTPUT.replace("exp", "log"))


def test_a_case_without_checks_is_rejected(tmp_path):
    path = tmp_path / "simplify_bad.hlo"
    path.write_text("# RUN: simplify\n# CASE: Nothing\nmodule m() {\n  return ()\n}\n")
    with pytest.raises(ValueError, match="at least one CHECK"):
        golden.load(path)


@pytest.mark.parametrize("index", [-7, -1, 0, 2, 4, 5, 9, 2**40])
def test_a_row_written_through_a_window_is_the_same_write_for_every_index(index):
    # the scatter drops an index outside the written axis in both forms
    x = build.parameter(0, (5, 6), np.dtype(np.float32))
    i = build.parameter(1, (), np.dtype(np.int64))
    v = build.parameter(2, (4,), np.dtype(np.float32))
    window = build.slice(x, (0, 1), (5, 5), (1, 1))
    row = build.scatter(window, i, v, 0, mode="set")
    zero, one = build.constant(0, np.int64), build.constant(1, np.int64)
    module = Module("m", [x, i, v], [build.dynamic_update_slice(x, row, [zero, one])])
    simplified = run_pipeline(module)
    assert not any(instr.op is Op.SLICE for instr in simplified.instructions), simplified
    rng = np.random.default_rng(index & 0xFF)
    args = [rng.standard_normal((5, 6)).astype(np.float32), np.array(index),
            rng.standard_normal(4).astype(np.float32)]
    golden.assert_same_bits(evaluate(module, args), evaluate(simplified, args))
