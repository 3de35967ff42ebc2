"""The IR text format: printing, parsing, and print(parse(text)) == text."""
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from ir_strategies import modules
from jitlib.errors import SourceLocation
from jitlib.hlo import build, dtypes, serial
from jitlib.hlo import ops as O
from jitlib.hlo.ir import Instr, Module
from jitlib.hlo.ops import Op
from jitlib.hlo.parser import ParseError, parse_module
from jitlib.hlo.printer import print_instr, print_module, value_names

F32 = np.float32


def text(params, *body, ret=None):
    """A module `m` as the printer writes it; returns the last body value unless `ret`."""
    ret = ret if ret is not None else body[-1].split(" = ")[0]
    lines = [f"module m({params}) {{", *(f"  {line}" for line in body), f"  return ({ret})", "}"]
    return "\n".join(lines)


def roundtrip(s):
    module = parse_module(s)
    assert print_module(module) == s
    return module


# -- one hand-written case per op

def _unary_case(op):
    if op in O.FLOAT_ONLY:
        out = "bool" if op is Op.IS_FINITE else "f32"
        return text("%x: f32[3]", f"%0 = {out}[3] {op}(%x)")
    if op is Op.CONVERT:
        return text("%x: f32[3]", "%0 = bf16[3] convert(%x)")
    if op in (Op.REAL, Op.IMAG):
        return text("%x: c128[3]", f"%0 = f64[3] {op}(%x)")
    if op is Op.CONJ or op in O.COMPLEX_ONLY:
        return text("%x: c64[3]", f"%0 = c64[3] {op}(%x)")
    dt = "bool" if op is Op.NOT else "i32"
    return text(f"%x: {dt}[3]", f"%0 = {dt}[3] {op}(%x)")


def _binary_case(op):
    if op is Op.COMPARE:
        return text("%x: f32[3], %y: f32[3]", "%0 = bool[3] compare(%x, %y), direction=GE")
    if op is Op.COMPLEX:
        return text("%x: f32[3], %y: f32[3]", "%0 = c64[3] complex(%x, %y)")
    dt = "u8" if op in O.BITWISE else "f32"
    return text(f"%x: {dt}[3], %y: {dt}[3]", f"%0 = {dt}[3] {op}(%x, %y)")


CASES = {
    Op.PARAMETER: text("%x: f32[2,3], %y: i32[]", ret="%y, %x"),
    Op.CONSTANT: text("", "%0 = f32[2,2] constant({1.0, -0.0, nan, -inf})"),
    Op.IOTA: text("", "%0 = i32[2,3] iota(), dimension=1"),
    Op.SELECT: text("%p: bool[3], %x: f32[3], %y: f32[3]", "%0 = f32[3] select(%p, %x, %y)"),
    Op.CLAMP: text("%lo: f32[], %x: f32[3], %hi: f32[]", "%0 = f32[3] clamp(%lo, %x, %hi)"),
    Op.BROADCAST_IN_DIM: text("%x: f32[3]", "%0 = f32[2,3] broadcast_in_dim(%x), dims=[1]"),
    Op.RESHAPE: text("%x: f32[2,3]", "%0 = f32[3,2] reshape(%x)"),
    Op.TRANSPOSE: text("%x: f32[2,3]", "%0 = f32[3,2] transpose(%x), perm=[1,0]"),
    Op.SLICE: text("%x: f32[5]", "%0 = f32[2] slice(%x), limit=[4], start=[1], strides=[2]"),
    Op.PAD: text("%x: f32[3], %v: f32[]",
                 "%0 = f32[6] pad(%x, %v), high=[-1], interior=[1], low=[2]"),
    Op.CONCATENATE: text("%x: f32[2,3], %y: f32[1,3]",
                         "%0 = f32[3,3] concatenate(%x, %y), dim=0"),
    Op.REVERSE: text("%x: f32[2,3]", "%0 = f32[2,3] reverse(%x), dims=[0,1]"),
    Op.DYNAMIC_SLICE: text("%x: f32[4,5], %i: i32[], %j: i64[]",
                           "%0 = f32[2,2] dynamic_slice(%x, %i, %j)"),
    Op.DYNAMIC_UPDATE_SLICE: text("%x: f32[4,5], %u: f32[2,2], %i: i32[], %j: i32[]",
                                  "%0 = f32[4,5] dynamic_update_slice(%x, %u, %i, %j)"),
    Op.GATHER: text("%x: f32[4,5], %i: i32[2,3]", "%0 = f32[4,2,3] gather(%x, %i), axis=1"),
    Op.SCATTER: text("%x: f32[4,5], %i: i32[3], %u: f32[4,3]",
                     "%0 = f32[4,5] scatter(%x, %i, %u), axis=1, mode=max"),
    Op.DOT_GENERAL: text("%a: f32[2,3,4], %b: f32[2,4,5]",
                         "%0 = f32[2,3,5] dot_general(%a, %b), lhs_batch=[0], lhs_contract=[2], "
                         "rhs_batch=[0], rhs_contract=[1]"),
    Op.SORT: text("%x: f32[2,3], %y: i8[2,3]",
                  "%0 = i64[2,3] sort(%x, %y), dimension=1, indices=true"),
    Op.CHOLESKY: text("%x: f64[2,3,3]", "%0 = f64[2,3,3] cholesky(%x)"),
    Op.TRIANGULAR_SOLVE: text(
        "%a: f32[3,3], %b: f32[2,3]", "%0 = f32[2,3] triangular_solve(%a, %b), left_side=false, "
        "lower=true, transpose_a=true, unit_diagonal=false"),
    Op.LU: text("%x: f32[4,4]", "%0 = i64[4] lu(%x), output=permutation"),
    Op.QR: text("%x: f64[5,3]", "%0 = f64[5,5] qr(%x), full_matrices=true, output=q"),
    Op.EIGH: text("%x: f64[2,4,4]", "%0 = f64[2,4] eigh(%x), output=values"),
    Op.SVD: text("%x: f32[5,3]", "%0 = f32[3,3] svd(%x), full_matrices=false, output=vh"),
}
CASES[Op.FFT] = text("%x: f32[2,8]", "%0 = c64[2,5] fft(%x), fft_length=[8], fft_type=RFFT")
CASES[Op.FUSION] = text("%x: f32[3]", "%0 = f32[3] fusion(%x), kind=loop, name=fused_neg_0 {",
                        "  module fused_neg_0(%p0: f32[3]) {", "    %0 = f32[3] neg(%p0)",
                        "    return (%0)", "  }", "}", ret="%0")
CASES[Op.GET_OUTPUT] = text(
    "%x: f32[3]", "%0 = (f32[3], f32[]) fusion(%x), kind=reduction, name=k {",
    "  module k(%p0: f32[3]) {", "    %0 = f32[] reduce_max(%p0), dims=[0]",
    "    return (%p0, %0)", "  }", "}", "%1 = f32[] get_output(%0), index=1")
CASES[Op.WHILE] = text(
    "%x: f32[3], %n: i64[]", "%0 = (f32[3], i64[]) while(%x, %n), trip_count=2 {",
    "  module cond(%c0: f32[3], %c1: i64[]) {", "    %0 = i64[] constant(2)",
    "    %1 = bool[] compare(%c1, %0), direction=LT", "    return (%1)", "  }",
    "  module body(%c0: f32[3], %c1: i64[]) {", "    %0 = f32[3] neg(%c0)",
    "    %1 = i64[] constant(1)", "    %2 = i64[] add(%c1, %1)", "    return (%0, %2)", "  }",
    "}", "%1 = f32[3] get_output(%0), index=0", ret="%1")
CASES[Op.CONDITIONAL] = text(
    "%p: bool[], %x: f32[3]", "%0 = f32[3] conditional(%p, %x) {",
    "  module no(%c0: f32[3]) {", "    return (%c0)", "  }",
    "  module yes(%c0: f32[3]) {", "    %0 = f32[3] exp(%c0)", "    return (%0)", "  }",
    "}", ret="%0")
CASES[Op.ALL_REDUCE] = text("%x: f32[3]",
                            "%0 = f32[3] all_reduce(%x), axis_name=i, axis_size=4, reduction=max")
CASES[Op.ALL_GATHER] = text("%x: f32[3]",
                            "%0 = f32[3,2] all_gather(%x), axis=1, axis_name=i, axis_size=2")
CASES[Op.REDUCE_SCATTER] = text(
    "%x: f32[2,3]", "%0 = f32[3] reduce_scatter(%x), axis=0, axis_name=i, axis_size=2")
CASES[Op.COLLECTIVE_PERMUTE] = text(
    "%x: f32[3]",
    "%0 = f32[3] collective_permute(%x), axis_name=i, axis_size=3, pairs=[[0,1],[1,2]]")
CASES[Op.AXIS_INDEX] = text("%x: f32[3]", "%0 = i32[] axis_index(), axis_name=i, axis_size=2",
                            ret="%0")
CASES.update({op: _unary_case(op) for op in O.UNARY})
CASES.update({op: _binary_case(op) for op in O.BINARY})
CASES.update({op: text(f"%x: {'bool' if op in (Op.REDUCE_AND, Op.REDUCE_OR) else 'f32'}[2,3]",
                       f"%0 = {'bool' if op in (Op.REDUCE_AND, Op.REDUCE_OR) else 'f32'}[2] "
                       f"{op}(%x), dims=[1]")
              for op in O.REDUCE})
CASES.update({op: text("%x: f32[2,3]", f"%0 = u8[2] {op}(%x), axis=1") for op in O.ARG_REDUCE})
CASES.update({op: text("%x: i16[2,3]", f"%0 = i16[2,3] {op}(%x), axis=1, reverse=true")
              for op in O.CUMULATIVE})


def test_every_op_has_a_case():
    assert set(CASES) == set(Op)


@pytest.mark.parametrize("op", list(Op), ids=str)
def test_roundtrip_each_op(op):
    module = roundtrip(CASES[op])
    assert op in {i.op for i in module.instructions}


# -- golden text

def _layernorm():
    loc = SourceLocation("/src/model.py", 12, "layernorm")
    x = build.parameter(0, (4, 8), F32, "x")
    g = build.parameter(1, (8,), F32, "g")
    b = build.parameter(2, (8,), F32, "b")
    s = build.reduce(Op.REDUCE_SUM, x, [1], loc=loc)
    n = build.broadcast_in_dim(build.constant(F32(8)), (4,), ())
    mean = build.binary(Op.DIV, s, n)
    return Module("layernorm", [x, g, b], [mean, build.compare(mean, n, "LT")])


LAYERNORM = """\
module layernorm(%x: f32[4,8], %g: f32[8], %b: f32[8]) {
  %0 = f32[4] reduce_sum(%x), dims=[1]                      loc("/src/model.py":12 layernorm)
  %1 = f32[] constant(8.0)
  %2 = f32[4] broadcast_in_dim(%1), dims=[]
  %3 = f32[4] div(%0, %2)
  %4 = bool[4] compare(%3, %2), direction=LT
  return (%3, %4)
}"""


def test_golden_layernorm():
    module = _layernorm()
    assert print_module(module) == LAYERNORM
    assert str(module) == LAYERNORM
    parsed = roundtrip(LAYERNORM)
    assert parsed.instructions == module.instructions
    assert parsed.instructions[3].loc == SourceLocation("/src/model.py", 12, "layernorm")


def test_short_locs_print_basenames():
    short = print_module(_layernorm(), short_locs=True)
    assert 'loc("model.py":12 layernorm)' in short
    assert "/src/" not in short


def test_golden_implied_attrs_are_omitted():
    x = build.parameter(0, (2, 3), F32, "x")
    outs = [build.iota((2, 3), np.int32, 1), build.reshape(x, (6,)),
            build.convert(x, np.float16), build.arg_reduce(Op.ARGMIN, x, 0, np.int32),
            build.dynamic_slice(x, [build.constant(np.int64(1))] * 2, (1, 2)),
            build.broadcast_in_dim(x, (4, 2, 3), (1, 2))]
    # interned instructions keep the location of whoever built them first (another test's
    # program may hold the same constant alive): compare the text without locations
    printed = re.sub(r"\s+loc\(.*\)$", "", str(Module("f", [x], outs)), flags=re.M)
    assert printed == """\
module f(%x: f32[2,3]) {
  %0 = i32[2,3] iota(), dimension=1
  %1 = f32[6] reshape(%x)
  %2 = f16[2,3] convert(%x)
  %3 = i32[3] argmin(%x), axis=0
  %4 = i64[] constant(1)
  %5 = f32[1,2] dynamic_slice(%x, %4, %4)
  %6 = f32[4,2,3] broadcast_in_dim(%x), dims=[1,2]
  return (%0, %1, %2, %3, %5, %6)
}"""
    roundtrip(str(Module("f", [x], outs)))


def test_implied_attrs_may_be_written_out():
    written = text("%x: f32[2,3]", "%0 = f32[6] reshape(%x), shape=[6]")
    assert print_module(parse_module(written)) == text("%x: f32[2,3]", "%0 = f32[6] reshape(%x)")


def test_parameter_names_are_sanitised_and_deduplicated():
    names = ["x", "x", "2d", "a b", "x_1", ""]
    params = [build.parameter(i, (), F32, n) for i, n in enumerate(names)]
    module = Module("my fn", params, params[:1])
    header = "module my_fn(%x: f32[], %x_1: f32[], %_2d: f32[], %a_b: f32[], " \
             "%x_1_1: f32[], %_: f32[]) {"
    assert str(module).splitlines()[0] == header
    roundtrip(str(module))


def test_return_a_parameter_twice_and_no_results():
    s = text("%x: f32[2], %y: f32[2]", ret="%y, %y, %x")
    assert [p.attrs["name"] for p in roundtrip(s).results] == ["y", "y", "x"]
    assert roundtrip(text("", ret="")).results == ()


def test_locations_with_odd_paths_roundtrip():
    odd = SourceLocation('C:\\dir with space\\"q"\\ünï.py', 7, "<lambda> (x)")
    x = build.parameter(0, (3,), F32, "x")
    y = build.unary(Op.NEG, x, loc=odd)
    module = roundtrip(str(Module("f", [x], [y])))
    assert module.results[0].loc == odd


def test_bool_and_integer_constants():
    c = [build.constant(np.array([True, False])), build.constant(np.uint64(2**64 - 1)),
         build.constant(np.array([-128, 127], np.int8)), build.constant(np.zeros((0, 3), F32))]
    s = str(Module("f", [], c))
    assert "bool[2] constant({true, false})" in s
    assert "u64[] constant(18446744073709551615)" in s
    assert "i8[2] constant({-128, 127})" in s
    assert "f32[0,3] constant({})" in s
    assert roundtrip(s).results == tuple(c)


def test_big_constants_print_as_hex_and_roundtrip_exactly():
    bits = np.arange(100, dtype=np.uint32) * 0x01010101 + 0x7F800001   # NaN payloads too
    c = build.constant(bits.view(F32).reshape(4, 25))
    flags = build.constant(np.arange(70) % 3 == 0)
    s = str(Module("f", [], [c, flags]))
    assert 'f32[4,25] constant(hex"' in s and 'bool[70] constant(hex"' in s
    assert roundtrip(s).results == (c, flags)


@pytest.mark.parametrize("dt", [np.complex64, np.complex128], ids=["c64", "c128"])
def test_complex_constants_print_as_pairs_and_roundtrip_bit_exactly(dt):
    small = np.array([1 + 2j, complex(-0.0, np.inf), complex(np.nan, -0.0), 0.1j], dt)
    rng = np.random.default_rng(0)
    parts = rng.standard_normal((2, 40, 40))
    big = (parts[0] + 1j * parts[1]).astype(dt)
    consts = [build.constant(small), build.constant(big), build.constant(dt(3 - 1j))]
    s = str(Module("f", [], consts))
    name = dtypes.name(dt)
    assert f"{name}[4] constant({{(1.0, 2.0), (-0.0, inf), (nan, -0.0), (0.0, 0.1)}})" in s
    assert f'{name}[40,40] constant(hex"' in s and f"{name}[] constant((3.0, -1.0))" in s
    assert roundtrip(s).results == tuple(consts)


FLOATS = [np.float16, dtypes.bfloat16, np.float32, np.float64]


@pytest.mark.slow   # an exhaustive sweep: the slow job's
@pytest.mark.parametrize("dt", [np.float16, dtypes.bfloat16], ids=["f16", "bf16"])
def test_every_16_bit_float_roundtrips_bit_exactly(dt):
    values = np.arange(2**16, dtype=np.uint16).view(dt)
    values = values[~np.isnan(values)]
    values = np.concatenate([values, np.zeros(-len(values) % 64, dt)]).reshape(-1, 64)
    consts = [build.constant(chunk) for chunk in values]
    assert "hex" not in str(Module("f", [], consts[:1]))
    assert roundtrip(str(Module("f", [], consts))).results == tuple(consts)


@pytest.mark.parametrize("dt", [np.float32, np.float64], ids=["f32", "f64"])
def test_wide_floats_roundtrip_bit_exactly(dt):
    rng = np.random.default_rng(0)
    width = np.dtype(dt).itemsize
    values = rng.integers(0, 256, 64 * 64 * width, dtype=np.uint8).view(dt)
    values = np.where(np.isnan(values), dt(0), values).reshape(64, 64)
    info = np.finfo(dt)
    special = np.array([info.max, info.min, info.tiny, info.smallest_subnormal, info.eps,
                        -0.0, np.inf, -np.inf, np.nan, 0.1, 1 / 3, 1e16, 1e-5], dt)
    consts = [build.constant(v) for v in [*values, special, *special]]
    assert roundtrip(str(Module("f", [], consts))).results == tuple(consts)


@pytest.mark.parametrize("dt", FLOATS, ids=dtypes.name)
def test_float_spellings(dt):
    values = np.array([np.nan, np.inf, -np.inf, -0.0, 0.1, 3.0], dt)
    s = str(Module("f", [], [build.constant(values)]))
    name = dtypes.name(dt)
    assert f"{name}[6] constant({{nan, inf, -inf, -0.0, 0.1, 3.0}})" in s


def test_print_instr_is_one_line():
    x = build.parameter(0, (3,), F32, "x")
    y = build.binary(Op.ADD, x, x)
    module = Module("f", [x], [y])
    names = value_names(module)
    assert names == {x: "x", y: "0"}
    assert print_instr(y, names) == "%0 = f32[3] add(%x, %x)"
    assert print_instr(x, names) == "%x = f32[3] parameter(), index=0, name=x"


def test_stray_and_ill_typed_instructions_still_print():
    x = build.parameter(0, (3,), F32, "x")
    stray = build.parameter(1, (3,), F32, "y")
    bad = Instr.make(Op.ADD, (4,), F32, (x, stray))
    s = str(Module("f", [x], [bad]))
    assert "%0 = f32[3] parameter(), index=1, name=y" in s
    assert "%1 = f32[4] add(%x, %0)" in s


def test_parsing_ignores_an_active_location_source():
    s = text("%tracing: f32[3]", "%0 = f32[3] neg(%tracing)", "%1 = f32[3] exp(%0)")
    with build.locations(lambda: SourceLocation("/tracer.py", 1, "g")):
        module = parse_module(s)
    assert print_module(module) == s


def test_comments_and_blank_lines_are_skipped():
    s = "# a comment\n\n" + text("%x: f32[3]", "%0 = f32[3] neg(%x)").replace(
        "\n  return", "\n  // another\n\n  return")
    assert print_module(parse_module(s)) == text("%x: f32[3]", "%0 = f32[3] neg(%x)")


# -- the property: print(parse(print(m))) == print(m), and the same interned objects

@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(modules())
def test_roundtrip_random_modules(module):
    s = print_module(module)
    parsed = parse_module(s)
    assert print_module(parsed) == s
    assert len(parsed.instructions) == len(module.instructions)
    assert all(a is b for a, b in zip(parsed.instructions, module.instructions))
    assert all(a is b for a, b in zip(parsed.results, module.results))


# -- parse errors name the line and show it

GOOD = text("%x: f32[3]", "%0 = f32[3] neg(%x)", "%1 = f32[3] add(%0, %x)")


@pytest.mark.parametrize("bad, lineno, needle", [
    (GOOD.replace("neg(%x)", "frob(%x)"), 2, "unknown op 'frob'"),
    (GOOD.replace("add(%0, %x)", "add(%0, %7)"), 3, "%7 is not defined"),
    (GOOD.replace("%1 = f32[3] add", "%1 = f32[4] add"), 3, "gives f32[3]"),
    (GOOD.replace("%x: f32[3]", "%x: f32[3], %y: i32[3]").replace("add(%0, %x)", "add(%0, %y)"),
     3, "same shape and dtype"),
    (GOOD.replace("%0 = f32[3] neg(%x)", "%0 = f32[] reduce_sum(%x)"), 2,
     "missing attribute(s) dims"),
    (GOOD.replace("neg(%x)", "neg(%x), dims=[0]"), 2, "unexpected attribute(s) dims"),
    (GOOD.replace("neg(%x)", "neg(%x), dims=[0], dims=[0]"), 2, "given twice"),
    (GOOD.replace("neg(%x)", "neg(%x), dims=1.5"), 2, "bad attribute value '1.5'"),
    (GOOD.replace("neg(%x)", "neg(%x), dims=inf"), 2, "bad attribute value 'inf'"),
    (GOOD.replace("neg(%x)", "neg(%x), dims=[0, 1.5]"), 2, "bad attribute value '1.5'"),
    (GOOD.replace("add(%0, %x)", "add(%0%x)"), 3, "expected ','"),
    (GOOD.replace("%0 = f32[3] neg(%x)", "%0 = f32[3] constant({1.0, 2.0})"), 2,
     "has 2 elements"),
    (GOOD.replace("%0 = f32[3] neg(%x)", "%0 = i8[] constant(300)"), 2, "out of range"),
    (GOOD.replace("%0 = f32[3] neg(%x)", "%0 = bool[] constant(2)"), 2, "true or false"),
    (GOOD.replace("%0 = f32[3] neg(%x)", "%0 = f32[3] constant(1.0)"), 2, "needs a {...}"),
    (GOOD.replace("%1 = f32[3] add(%0, %x)", "%0 = f32[3] add(%0, %x)"), 3, "defined twice"),
    (GOOD.replace("%x: f32[3]", "%x: q32[3]"), 1, "unknown dtype name 'q32'"),
    (GOOD.replace("%0 = f32[3] neg(%x)", "%0 = f32[3] parameter()"), 2, "module header"),
    (GOOD.replace("neg(%x)", "neg(%x) garbage"), 2, "unexpected 'garbage'"),
    (GOOD.replace("neg(%x)", "neg(%x) loc(oops)"), 2, "bad location"),
    (GOOD.replace("neg(%x)", "neg(%x) $"), 2, "unexpected character '$'"),
    (GOOD.replace("  return (%1)\n", ""), 4, "missing 'return'"),
    (GOOD[:-1], 4, "expected '}'"),
    (GOOD + "\n}", 6, "after the end"),
    (GOOD.replace("%0 = f32[3] neg(%x)", "%0 = bool[3] compare(%x, %x), direction=UP"), 2,
     "direction='UP' should be one of EQ"),
])
def test_parse_errors_name_the_line(bad, lineno, needle):
    with pytest.raises(ParseError) as info:
        parse_module(bad)
    message = str(info.value)
    assert message.startswith(f"line {lineno}: ")
    assert needle in message
    assert bad.splitlines()[lineno - 1].strip() in message
    assert info.value.lineno == lineno


def test_parse_error_is_a_value_error():
    assert issubclass(ParseError, ValueError)
    with pytest.raises(ValueError, match="empty"):
        parse_module("  \n")


def test_plain_lines_skip_the_token_parser(monkeypatch):
    """Most lines parse in one match (`_parse_plain_instr`); a constant, a fusion or an
    odd line goes through the token parser, to the same interned instructions."""
    from jitlib.hlo import parser
    token_lines = []
    token_parse = parser._parse_instr
    monkeypatch.setattr(parser, "_parse_instr",
                        lambda line, *a: token_lines.append(line.text) or token_parse(line, *a))
    assert print_module(parse_module(LAYERNORM)) == LAYERNORM
    assert [t.split("=")[0].strip() for t in token_lines] == ["%1"]   # the constant
    for op, case in CASES.items():
        fast = parse_module(case)
        monkeypatch.setattr(parser, "_parse_plain_instr", lambda line, env: None)
        slow = parse_module(case)
        monkeypatch.undo()
        assert fast.instructions == slow.instructions and print_module(fast) == case, op


def test_written_parameters_roundtrip_in_the_header():
    a = build.parameter(0, (3,), np.float32, "A")
    b = build.parameter(1, (3,), np.float32, "b")
    total = build.reduce(Op.REDUCE_SUM, b, (0,))
    module = Module("step", [a, b], [total, build.binary(Op.ADD, a, b)], writes=[0])
    text = print_module(module)
    assert text.splitlines()[0] == "module step(%A: f32[3], %b: f32[3]) writes(%A) {"
    again = parse_module(text)
    assert again == module and again.writes == (0,)
    assert serial.from_data(serial.to_data(module)).writes == (0,)


def test_a_write_must_have_the_parameters_type():
    a = build.parameter(0, (3,), np.float32, "A")
    with pytest.raises(ValueError, match="does not have its type"):
        Module("bad", [a], [build.reduce(Op.REDUCE_SUM, a, (0,))], writes=[0])
    text = "module bad(%A: f32[3]) writes(%B) {\n  return (%A)\n}"
    with pytest.raises(ParseError, match="names no parameter"):
        parse_module(text)
