"""The plain-data form of a Module (hlo/serial.py): what goes in comes out, bit for bit.

Instructions are interned, so decoding next to the original would hand back the very
same objects and prove nothing: each round trip decodes into an empty intern table and
compares the printed text (types, attributes, constants' bits, locations, bodies).
"""
import json
import pathlib

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from ir_strategies import fused_modules, modules
from jitlib.errors import SourceLocation
from jitlib.hlo import build, serial
from jitlib.hlo.ir import Instr, Literal, Module
from jitlib.hlo.ops import Op
from jitlib.hlo.parser import parse_module
from jitlib.hlo.printer import print_module
from jitlib.hlo.verifier import verify

from test_text import CASES   # the text format tests' hand-written case per op

REGRESSIONS = pathlib.Path(__file__).parents[1] / "fuzz" / "regressions"


def decoded_alone(module, monkeypatch):
    """`module` through JSON text and back, built without the original's instructions."""
    text = json.dumps(serial.to_data(module))
    with monkeypatch.context() as m:
        m.setattr(Instr, "_interned", {})
        copy = serial.from_data(json.loads(text))
        assert not any(a is b for a, b in zip(copy.instructions, module.instructions))
        verify(copy)
        return copy


def assert_roundtrips(module, monkeypatch):
    copy = decoded_alone(module, monkeypatch)
    assert print_module(copy) == print_module(module)
    # and, decoded beside it, the very same interned instructions
    again = serial.from_data(serial.to_data(module))
    assert again == module


@pytest.mark.parametrize("op", list(Op), ids=str)
def test_each_op(op, monkeypatch):
    assert_roundtrips(parse_module(CASES[op]), monkeypatch)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(modules())
def test_random_modules(module):
    with pytest.MonkeyPatch.context() as mp:
        assert_roundtrips(module, mp)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fused_modules())
def test_random_fused_modules(module):
    with pytest.MonkeyPatch.context() as mp:
        assert_roundtrips(module, mp)


@pytest.mark.parametrize("path", sorted(REGRESSIONS.glob("*.hlo")), ids=lambda p: p.stem)
def test_fuzz_regression_modules(path, monkeypatch):
    assert_roundtrips(parse_module(path.read_text()), monkeypatch)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64"])
def test_constants_keep_their_bits(dtype, monkeypatch):
    from jitlib.hlo import dtypes
    dt = dtypes.canonicalize(dtype)
    width = dt.itemsize * 8
    # NaN payloads, -0.0, infinities, subnormals: every value as its bit pattern
    bits = np.array([0, 1 << (width - 1), 1, (1 << (width - 1)) - 1, (1 << width) - 1,
                     (1 << (width - 1)) | 3], dtype=f"u{dt.itemsize}")
    value = Literal(bits.view(dt))
    x = build.parameter(0, (6,), dt, "x")
    c = build.constant(value, loc=SourceLocation("/src/a b.py", 3, "f"))
    module = Module("m", [x], [build.binary(Op.ADD, x, c)])
    copy = decoded_alone(module, monkeypatch)
    got = [i for i in copy.instructions if i.op is Op.CONSTANT][0].attrs["value"].array
    assert got.dtype == dt and got.tobytes() == value.array.tobytes()


def test_a_value_with_no_plain_form_is_refused():
    x = build.parameter(0, (3,), np.float32, "x")
    odd = Instr.make(Op.NEG, (3,), np.float32, (x,), {"note": 1.5})
    with pytest.raises(TypeError, match="no plain-data form"):
        serial.to_data(Module("m", [x], [odd]))


def test_data_of_another_version_is_refused():
    x = build.parameter(0, (3,), np.float32, "x")
    data = serial.to_data(Module("m", [x], [build.unary(Op.NEG, x)]))
    data["version"] = serial.VERSION + 1
    with pytest.raises(ValueError, match="version"):
        serial.from_data(data)
