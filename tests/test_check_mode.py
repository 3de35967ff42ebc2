"""The check mode: `jit(f, check=...)` measures each checked call against a reference and,
on a mismatch, names the rewrite rule or kernel that changed the answer."""
import re
import warnings

import numpy as np
import pytest

import jitlib
import jitlib.numpy as jnp
import jitlib.testing
from jitlib import check as C
from jitlib.backends import get_backend
from jitlib.errors import CheckError
from jitlib.fusion.simplify import ALGEBRAIC
from jitlib.hlo import Op, build
from jitlib.hlo.ir import regions


def gelu(x):
    return 0.5 * x * (1.0 + np.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))


def scale_and_shift(x):
    return x * 3.0 + np.exp(x)


X = np.random.default_rng(0).standard_normal((8, 16)).astype(np.float32)


@pytest.mark.parametrize("reference", ["numpy", "interpreter", "jax"])
def test_a_correct_program_is_within_tolerance_in_ulps(reference):
    f = jitlib.jit(gelu, backend="cpu", check=reference)
    with warnings.catch_warnings():
        warnings.simplefilter("error", C.CheckWarning)
        got = f(X)
    report = f.last_check
    assert report.ok and report.culprit is None, report
    (out,) = report.outputs
    assert out.type == "f32[8,16]"
    # tanh from another libm, and cancellation in 1 + tanh(...) near -1, cost some ulps
    # (tens, for an output near zero) but stay within f32's relative tolerance
    assert 0 <= out.max_ulps < 64 and out.max_rel <= jitlib.testing.tolerance(X.dtype)[0], \
        report
    np.testing.assert_allclose(got, gelu(X), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("reference", ["numpy", "jax"])
def test_complex_outputs_are_measured_part_by_part(reference):
    z = (X + 1j * X[::-1]).astype(np.complex64)
    f = jitlib.jit(lambda z: (np.exp(z) * z.conj(), np.abs(z)), backend="cpu", check=reference)
    with warnings.catch_warnings():
        warnings.simplefilter("error", C.CheckWarning)
        f(z)
    report = f.last_check
    assert report.ok, report
    assert report.outputs[0].type == "c64[8,16]" and report.outputs[0].max_ulps < 64


def test_check_rate_checks_an_even_fraction_of_calls_from_the_first(monkeypatch):
    checked = []
    real = C.CheckedJitted._check
    monkeypatch.setattr(C.CheckedJitted, "_check",
                        lambda self, *a: checked.append(1) or real(self, *a))
    f = jitlib.jit(gelu, backend="cpu", check="interpreter", check_rate=0.25)
    for _ in range(8):
        f(X)
    assert len(checked) == 2


def _broken_mul_by_constant(instr, options):
    """x * c -> x + c: wrong on purpose."""
    x, y = instr.operands
    if y.op is Op.BROADCAST_IN_DIM and y.operands[0].op is Op.CONSTANT:
        return build.binary(Op.ADD, x, y, loc=instr.loc)
    return None


@pytest.fixture
def broken_rule(monkeypatch):
    by_op = {op: list(fns) for op, fns in ALGEBRAIC.by_op.items()}
    by_op[Op.MUL] = [_broken_mul_by_constant] + by_op.get(Op.MUL, [])
    monkeypatch.setattr(ALGEBRAIC, "by_op", by_op)
    monkeypatch.setattr(ALGEBRAIC, "rules", ALGEBRAIC.rules + ((Op.MUL,
                                                                _broken_mul_by_constant),))


def test_a_broken_rewrite_rule_is_caught_and_named(broken_rule):
    f = jitlib.jit(scale_and_shift, backend="cpu", check="numpy", check_raise=True)
    with pytest.raises(CheckError) as info:
        f(X)
    text = str(info.value)
    assert "MISMATCH" in text
    assert "with '_broken_mul_by_constant' turned off the answer is right" in text
    assert "test_check_mode.py" in text   # the error points at the user's call


def test_a_mismatch_warns_by_default_and_returns_the_compiled_answer(broken_rule):
    f = jitlib.jit(scale_and_shift, backend="cpu", check="interpreter")
    with pytest.warns(C.CheckWarning, match="_broken_mul_by_constant"):
        got = f(X)
    assert not f.last_check.ok
    np.testing.assert_allclose(got, X + 3.0 + np.exp(X), rtol=1e-5)   # what cpu computed


def test_a_wrong_kernel_is_named_with_its_user_lines(monkeypatch):
    cpu = get_backend("cpu")
    real_compile = cpu.compile

    def compile_with_a_bad_exp(module):
        exe = real_compile(module)
        if not any(i.op is Op.EXP for i in _all_instructions(module)):
            return exe
        return lambda *args: [r + np.ones((), r.dtype) for r in exe(*args)]

    monkeypatch.setattr(cpu, "compile", compile_with_a_bad_exp)

    def two_kernels(x):
        y = np.sum(x * x, axis=1)
        return y, np.exp(x) - 1.0

    f = jitlib.jit(two_kernels, backend="cpu", check="numpy", check_raise=True)
    # a shape no other test traces: instructions are interned, and an op's loc is where
    # the first identical op was built
    with pytest.raises(CheckError) as info:
        f(X[:5])
    line = two_kernels.__code__.co_firstlineno + 2
    assert re.search(rf"culprit: the cpu backend's code for kernel \w+ = "
                     rf"test_check_mode.py:{line}: exp, sub\n", str(info.value)), info.value


def _all_instructions(module):
    for instr in module.instructions:
        yield instr
        for region in regions(instr):
            yield from _all_instructions(region)


def test_a_wrong_kernel_inside_a_loop_is_named(monkeypatch):
    cpu = get_backend("cpu")
    real_compile = cpu.compile

    def compile_with_a_bad_exp(module):
        exe = real_compile(module)
        if not any(i.op is Op.EXP for i in _all_instructions(module)):
            return exe
        return lambda *args: [r + np.ones((), r.dtype) for r in exe(*args)]

    monkeypatch.setattr(cpu, "compile", compile_with_a_bad_exp)

    def decays(x):
        return jnp.fori_loop(0, 3, lambda i, c: np.exp(-c) * 0.5, x[:7])

    f = jitlib.jit(decays, backend="cpu", check="numpy", check_raise=True)
    with pytest.raises(CheckError) as info:
        f(X)
    line = decays.__code__.co_firstlineno + 1
    assert re.search(rf"culprit: the cpu backend's code for kernel \w+ = "
                     rf"test_check_mode.py:{line}: neg, exp, mul\n", str(info.value)), info.value


def test_ulp_distance_counts_representable_values():
    one = np.float32([1.0, -0.0, -1e-45, 2.0])
    other = np.float32([np.nextafter(np.float32(1), np.float32(2)), 0.0, 1e-45, 2.0])
    assert C.ulp_distance(one, other).tolist() == [1, 0, 2, 0]


def test_bad_check_arguments_are_refused():
    with pytest.raises(ValueError, match="check must be one of"):
        jitlib.jit(gelu, check="torch")
    with pytest.raises(ValueError, match="check_rate"):
        jitlib.jit(gelu, check="numpy", check_rate=2.0)


def test_jit_without_check_is_the_plain_jitted():
    assert type(jitlib.jit(gelu)) is jitlib.api.Jitted


def test_every_pass_and_rule_the_bisection_names_can_be_turned_off():
    from jitlib.fusion import optimize
    from jitlib.fusion.options import Options

    def simplifiable(x):
        return np.exp(x * 1.0) - 2.0

    module = jitlib.make_ir(simplifiable)(X)
    optimized = optimize(module)
    for name in C._optimizer_parts():
        off = optimize(module, Options(disabled={name}))
        if name in ("fuse", "simplify_and_fold", "simplify"):
            assert off.results != optimized.results, name
    unfused = optimize(module, Options(disabled={"fuse"}))
    assert not any(i.op is Op.FUSION for i in unfused.instructions)
    kept_mul = optimize(module, Options(disabled={"simplify_and_fold"}))
    assert any(i.op is Op.MUL for k in kept_mul.instructions if k.op is Op.FUSION
               for i in k.attrs["body"].instructions)
