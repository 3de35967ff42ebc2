"""FUSION and GET_OUTPUT: building, text, verifying, interpreting and lowering kernels."""
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ir_strategies as irs
from jitlib.errors import InterpretError, SourceLocation, VerifierError
from jitlib.hlo import build as B
from jitlib.backends import get_backend
from jitlib.hlo import dtypes, ops
from jitlib.hlo.interpreter import evaluate, evaluate_instr
from jitlib.hlo.ir import Instr, Module, is_multi_output, output_types
from jitlib.hlo.ops import Op
from jitlib.hlo.parser import ParseError, parse_module
from jitlib.hlo.printer import print_module
from jitlib.hlo.shape_rules import IRTypeError
from jitlib.hlo.verifier import verify

F32 = np.dtype(np.float32)
LOC = SourceLocation("model.py", 3, "softmax")
TOP_LEVEL = {Op.PARAMETER, Op.CONSTANT, *ops.KERNEL}
PROPERTY = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def softmax():
    x = B.parameter(0, (64, 128), F32, "x")
    p = B.parameter(0, (64, 128), F32, "p0")
    m = B.broadcast_in_dim(B.reduce(Op.REDUCE_MAX, p, [1], loc=LOC), (64, 128), (0,))
    e = B.unary(Op.EXP, B.binary(Op.SUB, p, m))
    s = B.broadcast_in_dim(B.reduce(Op.REDUCE_SUM, e, [1]), (64, 128), (0,))
    body = Module("fused_softmax_0", [p], [B.binary(Op.DIV, e, s, loc=LOC)])
    kernel = B.fusion([x], body, "reduction", "fused_softmax_0", loc=LOC)
    return Module("softmax", [x], [kernel])


SOFTMAX = """\
module softmax(%x: f32[64,128]) {
  %0 = f32[64,128] fusion(%x), kind=reduction, name=fused_softmax_0  loc("model.py":3 softmax) {
    module fused_softmax_0(%p0: f32[64,128]) {
      %0 = f32[64] reduce_max(%p0), dims=[1]                    loc("model.py":3 softmax)
      %1 = f32[64,128] broadcast_in_dim(%0), dims=[0]
      %2 = f32[64,128] sub(%p0, %1)
      %3 = f32[64,128] exp(%2)
      %4 = f32[64] reduce_sum(%3), dims=[1]
      %5 = f32[64,128] broadcast_in_dim(%4), dims=[0]
      %6 = f32[64,128] div(%3, %5)                              loc("model.py":3 softmax)
      return (%6)
    }
  }
  return (%0)
}"""


def variance():
    """Sums and sums of squares in one two-output kernel; a second kernel finishes."""
    x = B.parameter(0, (4, 8), F32, "x")
    p = B.parameter(0, (4, 8), F32, "p0")
    sums = Module("fused_moments_0", [p], [B.reduce(Op.REDUCE_SUM, p, [1]),
                                          B.reduce(Op.REDUCE_SUM, B.binary(Op.MUL, p, p), [1])])
    total, squares = B.outputs(B.fusion([x], sums, "reduction", "fused_moments_0"))
    a, b = B.parameter(0, (4,), F32, "p0"), B.parameter(1, (4,), F32, "p1")
    n = B.full(8.0, (4,), F32)
    mean = B.binary(Op.DIV, a, n)
    var = B.binary(Op.SUB, B.binary(Op.DIV, b, n), B.binary(Op.MUL, mean, mean))
    finish = B.fusion([total, squares], Module("fused_var_1", [a, b], [var]), "loop",
                      "fused_var_1")
    return Module("variance", [x], [finish, total])


VARIANCE = """\
module variance(%x: f32[4,8]) {
  %0 = (f32[4], f32[4]) fusion(%x), kind=reduction, name=fused_moments_0 {
    module fused_moments_0(%p0: f32[4,8]) {
      %0 = f32[4] reduce_sum(%p0), dims=[1]
      %1 = f32[4,8] mul(%p0, %p0)
      %2 = f32[4] reduce_sum(%1), dims=[1]
      return (%0, %2)
    }
  }
  %1 = f32[4] get_output(%0), index=0
  %2 = f32[4] get_output(%0), index=1
  %3 = f32[4] fusion(%1, %2), kind=loop, name=fused_var_1 {
    module fused_var_1(%p0: f32[4], %p1: f32[4]) {
      %0 = f32[] constant(8.0)
      %1 = f32[4] broadcast_in_dim(%0), dims=[]
      %2 = f32[4] div(%p1, %1)
      %3 = f32[4] div(%p0, %1)
      %4 = f32[4] mul(%3, %3)
      %5 = f32[4] sub(%2, %4)
      return (%5)
    }
  }
  return (%3, %1)
}"""


def assert_same_bits(got, want):
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape
        assert g.tobytes() == w.tobytes()


# -- golden text

@pytest.mark.parametrize("make, golden", [(softmax, SOFTMAX), (variance, VARIANCE)],
                         ids=["softmax", "variance"])
def test_golden_text_roundtrips_to_the_same_instructions(make, golden):
    module = make()
    assert print_module(module) == golden
    verify(module)
    parsed = parse_module(golden)
    assert print_module(parsed) == golden
    assert parsed.results == module.results   # interned: the very same instructions


def test_parsed_body_keeps_locations():
    (kernel,) = parse_module(SOFTMAX).results
    assert kernel.loc == LOC
    body = kernel.attrs["body"]
    assert body.results[0].loc == LOC and body.instructions[1].loc == LOC


# -- building

def test_modules_hash_and_compare_by_structure():
    p = B.parameter(0, (3,), F32)
    neg = B.unary(Op.NEG, p)
    a, b = Module("k", [p], [neg]), Module("k", [p], [neg])
    assert a is not b and a == b and hash(a) == hash(b)
    assert a != Module("j", [p], [neg]) and a != Module("k", [p], [neg, neg])
    x = B.parameter(0, (3,), F32, "x")
    assert B.fusion([x], a, "loop", "k") is B.fusion([x], b, "loop", "k")
    assert B.fusion([x], a, "loop", "k") is not B.fusion([x], a, "opaque", "k")


def test_outputs_and_types():
    x = B.parameter(0, (2, 3), F32, "x")
    p = B.parameter(0, (2, 3), F32)
    single = B.fusion([x], Module("k", [p], [B.unary(Op.NEG, p)]), "loop", "k")
    multi = B.fusion([x], Module("k", [p], [p, B.reduce(Op.REDUCE_MAX, p, [0])]), "loop", "k")
    assert B.outputs(single) == [single] and not is_multi_output(single)
    first, second = B.outputs(multi)
    assert is_multi_output(multi) and (multi.shape, multi.dtype) == ((2, 3), F32)
    assert output_types(multi) == [((2, 3), F32), ((3,), F32)]
    assert (first.op, first.attrs["index"], first.shape) == (Op.GET_OUTPUT, 0, (2, 3))
    assert (second.attrs["index"], second.shape) == (1, (3,))
    assert B.get_output(single, 0).shape == (2, 3)


def _param_body(*types):
    params = [B.parameter(i, s, d) for i, (s, d) in enumerate(types)]
    return params, Module("k", params, [B.unary(Op.NEG, params[0])])


def test_builder_rejects_bad_fusions():
    x = B.parameter(0, (3,), F32, "x")
    (p,), body = _param_body(((3,), F32))
    (q,), other = _param_body(((4,), F32))
    multi = B.fusion([x], Module("m", [p], [p, p]), "loop", "m")
    nested = Module("n", [p], [B.fusion([p], body, "loop", "k")])
    cases = [
        (lambda: B.fusion([x], other, "loop", "k"), "operand 0 is f32[3] but body parameter 0"),
        (lambda: B.fusion([x, x], body, "loop", "k"), "body takes 1 parameters"),
        (lambda: B.fusion([x], body, "fast", "k"), "kind='fast' must be one of"),
        (lambda: B.fusion([x], body, "loop", 3), "name=3 must be a str"),
        (lambda: B.fusion([x], "body", "loop", "k"), "body must be a Module"),
        (lambda: B.fusion([x], Module("e", [p], []), "loop", "k"), "no results"),
        (lambda: B.fusion([x], nested, "loop", "k"), "fusions do not nest"),
        (lambda: B.unary(Op.NEG, multi), "operand 0 is a multi-output fusion"),
        (lambda: B.get_output(x, 0), "operand must be a fusion"),
        (lambda: B.get_output(multi, 2), "index=2 is out of range for 2 result(s)"),
    ]
    for make, needle in cases:
        with pytest.raises(IRTypeError) as info:
            make()
        assert needle in str(info.value)


# -- the verifier

def rejects(module, *needles):
    with pytest.raises(VerifierError) as info:
        verify(module)
    message = info.value.message
    for needle in needles:
        assert needle in message, message
    assert message.endswith("\nin module:\n" + print_module(module, short_locs=True))
    return info.value


def _raw_fusion(operands, body, kind="loop", name="k", shape=None):
    first = body.results[0]
    return Instr.make(Op.FUSION, first.shape if shape is None else shape, first.dtype,
                      operands, dict(body=body, kind=kind, name=name))


def test_verifier_rejects_mismatched_operand_types():
    x = B.parameter(0, (4,), np.float64, "x")
    (_,), body = _param_body(((4,), F32))
    rejects(Module("f", [x], [_raw_fusion([x], body)]),
            "operand 0 is f64[4] but body parameter 0 is f32[4]",
            "%0 = f32[4] fusion(%x), kind=loop, name=k {")
    y = B.parameter(1, (4,), F32, "y")
    rejects(Module("f", [x, y], [_raw_fusion([y, y], body)]), "body takes 1 parameters")


def test_verifier_rejects_a_nested_fusion_on_its_line():
    x = B.parameter(0, (3,), F32, "x")
    (p,), inner = _param_body(((3,), F32))
    outer = Module("outer", [p], [B.unary(Op.EXP, _raw_fusion([p], inner, name="inner"))])
    rejects(Module("f", [x], [_raw_fusion([x], outer, name="outer")]),
            "a fusion inside a fusion body: fusions do not nest",
            "(in the body of fusion 'outer')\n  %0 = f32[3] fusion(%p0), kind=loop, name=inner {")


def test_verifier_rejects_a_multi_output_fusion_used_directly():
    x = B.parameter(0, (3,), F32, "x")
    p = B.parameter(0, (3,), F32)
    multi = B.fusion([x], Module("m", [p], [p, B.unary(Op.NEG, p)]), "loop", "m")
    used = Instr.make(Op.ADD, (3,), F32, (multi, x))
    rejects(Module("f", [x], [used]), "operand 0 is a multi-output fusion",
            "%1 = f32[3] add(%0, %x)")
    fed = Instr.make(Op.FUSION, (3,), F32, (multi,), dict(
        body=Module("k", [p], [p]), kind="loop", name="k"))
    rejects(Module("f", [x], [fed]), "operand 0 is a multi-output fusion")
    rejects(Module("f", [x], [B.get_output(multi, 1), multi]),
            "result 1 is a multi-output fusion",
            "%0 = (f32[3], f32[3]) fusion(%x), kind=loop, name=m {")
    verify(Module("f", [x], B.outputs(multi)))


def test_verifier_rejects_bad_get_output():
    x = B.parameter(0, (3,), F32, "x")
    p = B.parameter(0, (3,), F32)
    multi = B.fusion([x], Module("m", [p], [p, B.unary(Op.NEG, p)]), "loop", "m")
    bad = Instr.make(Op.GET_OUTPUT, (3,), F32, (multi,), dict(index=2))
    rejects(Module("f", [x], [bad]), "index=2 is out of range for 2 result(s)",
            "%1 = f32[3] get_output(%0), index=2")
    rejects(Module("f", [x], [Instr.make(Op.GET_OUTPUT, (3,), F32, (x,), dict(index=0))]),
            "operand must be a fusion, loop or conditional, not a parameter")
    rejects(Module("f", [x], [Instr.make(Op.GET_OUTPUT, (3,), F32, (multi,), {})]),
            "get_output is missing attribute(s) index")
    wrong_type = Instr.make(Op.GET_OUTPUT, (4,), F32, (multi,), dict(index=1))
    rejects(Module("f", [x], [wrong_type]), "get_output should give f32[3]")


def test_verifier_rejects_bad_fusion_attributes():
    x = B.parameter(0, (3,), F32, "x")
    (_,), body = _param_body(((3,), F32))
    rejects(Module("f", [x], [_raw_fusion([x], body, kind="fast")]),
            "fusion attribute kind='fast' should be one of loop, reduction, dot, opaque")
    rejects(Module("f", [x], [_raw_fusion([x], body, name=7)]),
            "fusion attribute name=7 should be a str")
    no_body = Instr.make(Op.FUSION, (3,), F32, (x,), dict(kind="loop", name="k"))
    rejects(Module("f", [x], [no_body]), "fusion is missing attribute(s) body")
    rejects(Module("f", [x], [_raw_fusion([x], body, shape=(5,))]), "fusion should give f32[3]")


def test_verifier_checks_bodies_and_names_the_body_line():
    x = B.parameter(0, (3,), F32, "x")
    p = B.parameter(0, (3,), F32)
    bad = Instr.make(Op.EXP, (4,), F32, (p,), loc=LOC)
    error = rejects(Module("f", [x], [_raw_fusion([x], Module("k", [p], [bad]))]),
                    "exp should give f32[3]", "(in the body of fusion 'k')",
                    '  %0 = f32[4] exp(%p0)')
    assert error.location == LOC
    stray = B.parameter(1, (3,), F32, "stray")
    rejects(Module("f", [x], [_raw_fusion([x], Module("k", [p], [B.binary(Op.ADD, p, stray)]))]),
            "a parameter that is not among the module's parameters")


# -- parse errors name the line

GOOD = re.sub(r" +loc\([^)]*\)", "", SOFTMAX)   # line 2 opens the body, line 13 closes it


@pytest.mark.parametrize("bad, lineno, needle", [
    (GOOD.replace("f32[64,128] fusion", "(f32[64,128], f32[64]) fusion"), 2,
     "gives (f32[64,128], f32[64]), but it gives f32[64,128]"),
    (GOOD.replace("f32[64] reduce_max", "(f32[64], f32[64]) reduce_max"), 4,
     "reduce_max gives one value, not a tuple"),
    (GOOD.replace("f32[64] reduce_max", "(f32[64]) reduce_max"), 4, "two types or more"),
    (GOOD.replace("name=fused_softmax_0 {", "name=fused_softmax_0"), 2, "ends with '{'"),
    (GOOD.replace("dims=[1]\n", "dims=[1] {\n", 1), 4, "ends with '{'"),
    (GOOD.replace("%3 = f32[64,128] exp(%2)", "%3 = f32[64,128] exp(%x)"), 7, "%x is not defined"),
    (GOOD.replace("softmax(%x: f32[64,128])", "softmax(%x: f32[64,127])"), 2,
     "operand 0 is f32[64,127] but body parameter 0 is f32[64,128]"),
    (GOOD.replace("kind=reduction", "kind=fast"), 2, "kind='fast' should be one of"),
    (GOOD.replace("kind=reduction", "kind=loop, body=x"), 2, "not an attribute"),
    (GOOD.replace("    }\n  }\n", "    }\n"), 13, "expected '}' closing the fusion"),
    (GOOD.replace("      return (%6)\n", ""), 11, "missing 'return'"),
    (GOOD.replace("  }\n  return", "  }\n  }\n  return"), 14, "missing 'return'"),
])
def test_fusion_parse_errors_name_the_line(bad, lineno, needle):
    assert bad != GOOD
    with pytest.raises(ParseError) as info:
        parse_module(bad)
    assert info.value.lineno == lineno, str(info.value)
    assert needle in str(info.value)
    assert bad.splitlines()[lineno - 1].strip() in str(info.value)


def test_get_output_of_a_single_output_fusion_parses():
    s = GOOD.replace("  return (%0)", "  %1 = f32[64,128] get_output(%0), index=0\n"
                                      "  return (%1)")
    assert print_module(parse_module(s)) == s


# -- properties over random kernels

@PROPERTY
@given(irs.fused_modules())
def test_roundtrip_fused_modules(module):
    verify(module)
    s = print_module(module)
    parsed = parse_module(s)
    assert print_module(parsed) == s
    assert all(a is b for a, b in zip(parsed.instructions, module.instructions, strict=True))
    assert {i.op for i in module.instructions} <= TOP_LEVEL


@PROPERTY
@given(st.data())
def test_fusing_then_unfusing_gives_the_same_instructions(data):
    module = data.draw(irs.modules())
    fused = data.draw(irs.fusions_of(module))
    verify(fused)
    assert {i.op for i in fused.instructions} <= TOP_LEVEL
    assert irs.unfuse(fused).results == module.results


@PROPERTY
@given(st.data())
def test_fused_programs_evaluate_bit_identically(data):
    module, inputs = data.draw(irs.programs())
    fused = data.draw(irs.fusions_of(module))
    assert_same_bits(evaluate(fused, inputs), evaluate(module, inputs))


@PROPERTY
@given(irs.programs(ops=[Op.FUSION, Op.GET_OUTPUT, Op.ADD, Op.REDUCE_MAX, Op.TRANSPOSE,
                         Op.CONCATENATE, Op.SCATTER]))
def test_random_kernels_evaluate_as_their_bodies_inlined(program):
    module, inputs = program
    verify(module)
    assert_same_bits(evaluate(module, inputs), evaluate(irs.unfuse(module), inputs))


def test_errors_inside_a_body_name_the_body_line():
    x = B.parameter(0, (0, 13), F32, "x")
    p = B.parameter(0, (0, 13), F32)
    indices = B.constant(np.array([4, 1], np.int32))
    # the shape rules refuse this gather; build it raw to reach the rule's own failure
    gather = Instr.make(Op.GATHER, (2, 13), F32, (p, indices), {"axis": 0}, LOC)
    module = Module("g", [x], [_raw_fusion([x], Module("k", [p], [gather]))])
    with pytest.raises(InterpretError) as info:
        evaluate(module, [np.zeros((0, 13), np.float32)])
    assert "`%1 = f32[2,13] gather(%p0, %0), axis=0" in info.value.message
    assert info.value.location == LOC


def test_evaluate_instr_takes_tuples_for_multi_output_fusions():
    x = B.parameter(0, (3,), F32, "x")
    p = B.parameter(0, (3,), F32)
    multi = B.fusion([x], Module("m", [p], [p, B.unary(Op.NEG, p)]), "loop", "m")
    value = np.array([1.0, -0.0, np.nan], np.float32)
    both = evaluate_instr(multi, [value])
    assert_same_bits(both, [value, -value])
    assert_same_bits([evaluate_instr(B.get_output(multi, 1), [both])], [-value])
    with pytest.raises(InterpretError, match=r"is \(f32\[3\], f32\[3\]\), got a value of f32"):
        evaluate_instr(B.get_output(multi, 1), [value])


# -- the JAX backend on kernels

@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(irs.fused_programs(dtypes=[dtypes.BOOL, np.int8, np.int32, np.uint8, np.int64]))
def test_jax_agrees_with_the_interpreter_on_fused_programs(program):
    # Integer programs only: XLA's flushing of subnormal floats is the jax tests' business.
    module, inputs = program
    got = get_backend("jax").compile(module)(*inputs)
    want = evaluate(module, inputs)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w, strict=True)


def test_jax_runs_the_golden_kernels():
    rng = np.random.default_rng(0)
    for module in (softmax(), variance()):
        inputs = [rng.standard_normal(p.shape).astype(p.dtype) for p in module.params]
        for g, w in zip(get_backend("jax").compile(module)(*inputs), evaluate(module, inputs)):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
