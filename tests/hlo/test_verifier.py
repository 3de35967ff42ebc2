"""The verifier: one test per kind of rejection, and the strategies it checks."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ir_strategies import modules, programs
from jitlib.errors import JitlibError, SourceLocation, VerifierError
from jitlib.hlo import build, dtypes
from jitlib.hlo import ops as O
from jitlib.hlo.ir import Instr, Literal, Module
from jitlib.hlo.ops import Op
from jitlib.hlo.printer import print_module
from jitlib.hlo.verifier import ATTRS, verify

F32 = np.float32
LOC = SourceLocation("/src/model.py", 12, "f")


def x_param(shape=(2,), name="x"):
    return build.parameter(0, shape, F32, name)


def rejects(module, *needles):
    """Verify must fail, naming every needle, and show the whole module below."""
    with pytest.raises(VerifierError) as info:
        verify(module)
    message = info.value.message
    for needle in needles:
        assert needle in message
    assert message.endswith("\nin module:\n" + print_module(module, short_locs=True))
    return info.value


def test_well_typed_module_passes():
    x = x_param()
    verify(Module("f", [x], [build.binary(Op.ADD, x, x), x]))


def test_only_raw_instructions_are_typed_again(monkeypatch):
    # the builder inferred its instructions' types when it made them; the verifier infers
    # again only for raw `Instr.make` ones (a raw one that the builder later finds interned
    # stays unmarked, so it is still checked)
    x = x_param()
    built = build.binary(Op.MUL, x, x)
    raw = Instr.make(Op.SUB, (2,), F32, (x, x))
    assert built.typed and not raw.typed
    assert build.binary(Op.SUB, x, x) is raw
    inferred = []
    import jitlib.hlo.verifier as verifier
    real = verifier.infer
    monkeypatch.setattr(verifier, "infer", lambda op, *a: inferred.append(op) or real(op, *a))
    verify(Module("f", [x], [built, raw]))
    assert inferred == [Op.SUB]


def test_wrong_result_type():
    x = x_param()
    bad = Instr.make(Op.ADD, (3,), F32, (x, x))
    error = rejects(Module("f", [x], [bad]), "add should give f32[2]",
                    "\n  %0 = f32[3] add(%x, %x)\n")
    assert isinstance(error, JitlibError)


def test_wrong_result_dtype():
    x = x_param()
    bad = Instr.make(Op.COMPARE, (2,), F32, (x, x), dict(direction="LT"))
    rejects(Module("f", [x], [bad]), "compare should give bool[2]",
            "%0 = f32[2] compare(%x, %x), direction=LT")


def test_ill_typed_operands():
    x = x_param()
    i = build.parameter(1, (2,), np.int32, "i")
    bad = Instr.make(Op.ADD, (2,), F32, (x, i))
    rejects(Module("f", [x, i], [bad]), "ill-typed add", "same shape and dtype",
            "%0 = f32[2] add(%x, %i)")


def test_wrong_operand_count():
    x = x_param()
    bad = Instr.make(Op.NEG, (2,), F32, (x, x))
    rejects(Module("f", [x], [bad]), "takes 1 operands, got 2", "%0 = f32[2] neg(%x, %x)")


def test_stray_parameter():
    x = x_param()
    stray = build.parameter(1, (2,), F32, "y")
    rejects(Module("f", [x], [build.binary(Op.ADD, x, stray)]),
            "not among the module's parameters", "%0 = f32[2] parameter(), index=1, name=y")


def test_parameter_with_the_wrong_index():
    x, y = x_param(), build.parameter(1, (2,), F32, "y")
    module = Module("f", [x, y], [y])
    module.params = (y, x)   # Module's constructor would refuse this
    rejects(module, "module parameter 0 has index 1", "%y = f32[2] parameter(), index=1")


def test_duplicate_parameter_index():
    x, x_again = x_param(), x_param(name="x2")
    module = Module("f", [x], [x])
    module.params = (x, x_again)
    rejects(module, "module parameter 1 has index 0", "name=x2")


def test_parameter_listed_twice():
    x = x_param()
    module = Module("f", [x], [x])
    module.params = (x, x)
    rejects(module, "module parameter 1 is listed twice")


def test_non_parameter_among_parameters():
    x = x_param()
    neg = build.unary(Op.NEG, x)
    module = Module("f", [x], [neg])
    module.params = (neg,)
    rejects(module, "module parameter 0 is a neg, not a parameter")


def test_parameter_attrs_disagree_with_its_type():
    p = Instr.make(Op.PARAMETER, (3,), F32, (), dict(index=0, name="x", shape=(2,), dtype="f32"))
    rejects(Module("f", [p], [p]), "parameter should give f32[2]", "shape=[2]")


def test_missing_attribute():
    x = x_param((2, 3))
    bad = Instr.make(Op.REDUCE_SUM, (2,), F32, (x,))
    rejects(Module("f", [x], [bad]), "reduce_sum is missing attribute(s) dims",
            "%0 = f32[2] reduce_sum(%x)")


def test_unexpected_attribute():
    x = x_param()
    bad = Instr.make(Op.NEG, (2,), F32, (x,), dict(dims=(0,)))
    rejects(Module("f", [x], [bad]), "neg has unexpected attribute(s) dims",
            "%0 = f32[2] neg(%x), dims=[0]")


WRONG_KINDS = [
    (Op.REDUCE_SUM, dict(dims=(1.0,)), "dims=(1.0,) should be a tuple of ints"),
    (Op.CUMSUM, dict(axis=1, reverse=0), "reverse=0 should be a bool"),
    (Op.CUMSUM, dict(axis=True, reverse=False), "axis=True should be an int"),
    (Op.CONVERT, dict(dtype="float32"), "dtype='float32' should be a dtype name"),
    (Op.COMPARE, dict(direction="UP"), "direction='UP' should be one of EQ"),
    (Op.SCATTER, dict(axis=0, mode="sub"), "mode='sub' should be one of add"),
    (Op.SORT, dict(dimension=0, indices=1), "indices=1 should be a bool"),
    (Op.ALL_REDUCE, dict(axis_name="i", axis_size=2, reduction="mean"),
     "reduction='mean' should be one of sum"),
    (Op.ALL_REDUCE, dict(axis_name=0, axis_size=2, reduction="sum"), "axis_name=0 should be"),
    (Op.TRIANGULAR_SOLVE, dict(left_side=1, lower=True, transpose_a=False, unit_diagonal=False),
     "left_side=1 should be a bool"),
    (Op.QR, dict(output=0, full_matrices=False), "output=0 should be a str"),
    (Op.CONSTANT, dict(value=np.float32(1)), "value=np.float32(1.0) should be a Literal"),
]


@pytest.mark.parametrize("case", range(len(WRONG_KINDS)))
def test_attribute_of_the_wrong_kind(case):
    op, attrs, needle = WRONG_KINDS[case]
    # Interning treats True == 1 == 1.0 == np.int64(1), so cases 1 and 2 would be one
    # instruction: a parameter name of its own keeps each case (and real IR) apart.
    x = x_param((2, 3), name=f"wrong_kind_{case}")
    bad = Instr.make(op, (2, 3), F32, (x,), attrs)
    rejects(Module("f", [x], [bad]), needle, f"%0 = f32[2,3] {op}(")


def test_unknown_op():
    x = x_param()
    bad = object.__new__(Instr)   # Instr.make refuses unknown ops; build one by hand
    bad.op, bad.shape, bad.dtype, bad.operands, bad.attrs = "frob", (2,), F32, (x,), {}
    bad.loc = None
    rejects(Module("f", [x], [bad]), "unknown op 'frob'", "%0 = f32[2] frob(%x)")


def test_first_problem_wins_and_location_is_the_instructions():
    x = x_param()
    bad = Instr.make(Op.EXP, (5,), F32, (x,), loc=LOC)
    worse = Instr.make(Op.NEG, (7,), F32, (bad,))
    error = rejects(Module("f", [x], [worse]), "exp should give f32[2]",
                    'loc("model.py":12 f)')
    assert error.location == LOC
    assert "/src/" not in error.message   # locations print short in messages


def test_every_op_has_an_attribute_schema():
    assert set(ATTRS) == set(Op)


# -- the strategies draw modules the verifier accepts

@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(modules())
def test_random_modules_verify(module):
    verify(module)


# random modules are real-valued (ir_strategies.accepts): the complex ops are tested by hand
@pytest.mark.parametrize("op", [op for op in Op
                                if op not in O.COMPLEX_PARTS | O.COMPLEX_ONLY | {Op.FFT}
                                | O.COLLECTIVE],
                         ids=str)
@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_strategies_cover_each_op(op, data):
    module, inputs = data.draw(programs(ops=[op]))
    verify(module)
    assert op in {i.op for i in module.instructions}
    assert len(inputs) == len(module.params)
    for p, value in zip(module.params, inputs):
        assert isinstance(value, np.ndarray)
        assert value.shape == p.shape and value.dtype == p.dtype


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs(dtypes=["f32", "i32"]))
def test_program_dtypes_are_restricted(program):
    module, _ = program
    allowed = {np.dtype(F32), np.dtype(np.int32), dtypes.BOOL}
    assert {i.dtype for i in module.instructions} <= allowed


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs(ops=[Op.GATHER]))
def test_gather_inputs_are_in_range(program):
    module, inputs = program
    values = dict(zip(module.params, inputs))
    for instr in module.instructions:
        if instr.op is Op.GATHER and instr.operands[1] in values:
            n = instr.operands[0].shape[instr.attrs["axis"]]
            idx = values[instr.operands[1]]
            assert ((0 <= idx) & (idx < n)).all()


def test_programs_refuse_impossible_requests():
    with pytest.raises(ValueError, match="none of the ops"):
        programs(ops=[Op.EXP], dtypes=["i32"])


def test_complex_module_verifies_and_a_mistyped_part_is_rejected():
    z = build.parameter(0, (2,), np.complex64, "z")
    re = build.unary(Op.REAL, z)
    verify(Module("f", [z], [build.binary(Op.COMPLEX, re, build.unary(Op.IMAG, z))]))
    bad = Instr.make(Op.REAL, (2,), np.complex64, (z,))
    rejects(Module("f", [z], [bad]), "f32[2]")


def test_literals_of_unsupported_dtype_are_rejected():
    bad = Instr.make(Op.CONSTANT, (), np.float32, (), dict(value=Literal(np.longdouble(1))))
    rejects(Module("f", [], [bad]), "value", "should be a Literal of a supported dtype")
