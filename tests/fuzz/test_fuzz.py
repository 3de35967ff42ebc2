"""The bounded fuzz run (a few hundred programs, every generator, every variant), the
replay of saved regressions, and tests that the oracle itself catches what it should."""
import subprocess
import sys

import numpy as np
import pytest

from jitlib.hlo import build as B
from jitlib.fusion import optimize
from jitlib.hlo import Module, Op
from jitlib.hlo.interpreter import evaluate

from . import oracle, regressions
from .driver import fuzz
from .generators import GENERATORS, check_numpy_source

# Programs per generator: about 100 in all in CI, and in the slow job 300 more from
# another seed (the fuller run takes about 20 s on two cores).
CI_EXAMPLES = {"ir": 30, "ir_exact": 24, "fused": 16, "numpy": 30, "numpy_complex": 20}
SLOW_EXAMPLES = {"ir": 90, "ir_exact": 70, "fused": 50, "numpy": 90, "numpy_complex": 60}
BUDGETS = ([pytest.param(name, n, 0, id=name) for name, n in CI_EXAMPLES.items()] +
           [pytest.param(name, n, 1, id=f"{name}-slow", marks=pytest.mark.slow)
            for name, n in SLOW_EXAMPLES.items()])


@pytest.mark.parametrize("name,examples,seed", BUDGETS)
def test_bounded_fuzz_run_finds_no_disagreement(name, examples, seed, tmp_path):
    outcome = fuzz(GENERATORS[name], examples, seed=seed)
    if outcome.failure is not None:
        path = regressions.save(outcome.failure, name, tmp_path)
        pytest.fail(f"{outcome.failure}\n\nshrunk regression saved as {path}; move it "
                    f"to {regressions.DIRECTORY} to keep it", pytrace=False)
    assert outcome.tried > 0


@pytest.mark.parametrize("path", regressions.all_files(), ids=lambda p: p.stem)
def test_saved_regression_agrees_everywhere(path, request):
    module, inputs, header = regressions.load(path)
    if "xfail" in header:
        request.applymarker(pytest.mark.xfail(strict=True, reason=header["xfail"]))
    oracle.check_program(module, inputs)


@pytest.mark.parametrize("path", regressions.all_files(suffix="py"), ids=lambda p: p.stem)
def test_saved_numpy_regression_agrees_everywhere(path, request):
    source, args, header = regressions.load_numpy(path)
    if "xfail" in header:
        request.applymarker(pytest.mark.xfail(strict=True, reason=header["xfail"]))
    check_numpy_source(source, args)


# Programs that crash a backend's process (a native compiler's segfault) replay in a
# child process, so one open crash cannot take the test run down with it.
_REPLAY_IN_A_CHILD = """
import sys
from jitlib.backends import get_backend
from jitlib.hlo.parser import parse_module
get_backend(sys.argv[2]).compile(parse_module(open(sys.argv[1]).read()))
"""


@pytest.mark.parametrize("path", regressions.all_files(regressions.DIRECTORY / "crashes"),
                         ids=lambda p: p.stem)
def test_saved_crash_compiles_without_killing_the_process(path, request):
    header = regressions.load_header(path)
    if "xfail" in header:
        request.applymarker(pytest.mark.xfail(strict=True, reason=header["xfail"]))
    child = subprocess.run([sys.executable, "-c", _REPLAY_IN_A_CHILD, str(path),
                            header["variant"]], capture_output=True, text=True, timeout=300)
    assert child.returncode == 0, f"exit {child.returncode}\n{child.stderr[-2000:]}"


# -- the oracle catches what it must, and only that

def _negate_module():
    x = B.parameter(0, (4,), np.dtype(np.float32))
    return Module("f", [x], [B.unary(Op.NEG, x)])


def test_a_backend_off_by_one_ulp_on_an_exact_op_is_caught(monkeypatch):
    module = _negate_module()
    real = oracle.run_variant

    def off_by_one_ulp(name, module, inputs):
        out = real(name, module, inputs)
        return [np.nextafter(o, np.float32(np.inf)) if name == "cpu" else o for o in out]

    monkeypatch.setattr(oracle, "run_variant", off_by_one_ulp)
    with pytest.raises(oracle.Mismatch, match=r"cpu: result 0 \(exact\) differs: not "
                                              r"bit-equal") as info:
        oracle.check_program(module, [np.float32([1, -2, 0.5, 3])])
    assert "f32[4] neg(%p0)" in str(info.value)   # the failure shows the IR


def test_a_wrong_nan_position_is_caught_in_approximate_results():
    x = B.parameter(0, (2,), np.dtype(np.float32))
    module = Module("f", [x], [B.unary(Op.EXP, x)])
    want = [np.float32([1.0, 2.0])]
    got = np.float32([np.nan, 2.0000002])
    assert oracle.compare(got, want[0], "approx") .startswith("NaN in different places")
    assert oracle.compare(np.float32([1.00001, 2.0]), want[0], "approx") is None
    assert oracle.compare(np.float32([1.00001, 2.0]), want[0], "exact") is not None
    assert module.results[0].op is Op.EXP


def _one_ulp_up_inside_exp(monkeypatch):
    """A stand-in "cpu": the interpreter, with every exp one ulp above NumPy's (within any
    libm's freedom)."""
    from jitlib.hlo.interpreter import eval_rules
    real = eval_rules[Op.EXP]

    def cpu(name, module, inputs):
        monkeypatch.setitem(eval_rules, Op.EXP, lambda i, x: np.nextafter(
            real(i, x), np.asarray(np.inf, x.dtype)))
        try:
            return evaluate(module, inputs)
        finally:
            monkeypatch.setitem(eval_rules, Op.EXP, real)
    monkeypatch.setattr(oracle, "run_variant", cpu)


def test_ill_conditioned_elements_are_not_compared_and_the_rest_still_are(monkeypatch):
    """sin(exp(exp(x))) at x = 2.5: one ulp of the inner exp moves the outer one by 12
    ulps and sin by 3% (found by the fuzzer: the cpu backend's exp(2.5) is the correctly
    rounded one, NumPy's is not); at x = 0 it is well conditioned and still checked."""
    _one_ulp_up_inside_exp(monkeypatch)
    x = B.parameter(0, (2,), np.dtype(np.float32))
    module = Module("f", [x], [B.unary(Op.SIN, B.unary(Op.EXP, B.unary(Op.EXP, x)))])
    oracle.check_program(module, [np.float32([2.5, 0.0])], variants=["cpu"])

    wrong = Module("f", [x], [B.binary(Op.MUL, B.unary(Op.EXP, x),
                                       B.full(1.001, (2,), np.dtype(np.float32)))])
    monkeypatch.setattr(oracle, "run_variant", lambda name, m, i: [
        o * np.float32(1.01) for o in evaluate(m, i)])
    with pytest.raises(oracle.Mismatch, match="beyond rtol"):   # 1% off, well conditioned
        oracle.check_program(wrong, [np.float32([2.5, 0.0])], variants=["cpu"])


def test_a_cancelling_sum_is_not_compared_but_a_plain_wrong_sum_is(monkeypatch):
    """Huge terms that cancel leave a sum whose value depends on the order of its terms
    (found by the fuzzer: f64 terms of +-9.2e18 and 1 summed to 1.0 on the interpreter,
    -1.0 on the cpu backend); a sum without cancellation is still held to its tolerance."""
    x = B.parameter(0, (4, 2), np.dtype(np.float64))
    module = Module("f", [x], [B.reduce(Op.REDUCE_SUM, x, (0,))])
    values = np.float64([[1.0, 1.0], [9.2e18, 2.0], [-9.2e18, 3.0], [-1.0, 4.0]])
    reversed_order = np.float64([values[::-1, 0].sum(), values[:, 1].sum()])
    monkeypatch.setattr(oracle, "run_variant", lambda name, m, i: [reversed_order])
    oracle.check_program(module, [values], variants=["cpu"])
    monkeypatch.setattr(oracle, "run_variant", lambda name, m, i: [reversed_order * 1.01])
    with pytest.raises(oracle.Mismatch, match=r"at \(1,\)"):   # only the plain column
        oracle.check_program(module, [values], variants=["cpu"])


def test_an_overflowing_sum_may_be_inf_or_nan_but_only_where_sums_are():
    # inf + -inf is NaN; a fused multiply-add that keeps a product exact gives inf instead
    want, got = np.float64([np.nan, 1.0]), np.float64([np.inf, 1.0])
    assert oracle.compare(got, want, "approx", overflow_free=False) is None
    assert oracle.compare(want, got, "approx", overflow_free=False) is None
    assert oracle.compare(got, want, "approx") is not None
    assert oracle.compare(got, want, "exact", overflow_free=False) is not None


def test_zero_signs_count_unless_the_order_of_combining_is_free():
    want = np.float32([0.0, -0.0])
    swapped = np.float32([-0.0, 0.0])
    assert oracle.compare(swapped, want, "exact") is not None
    assert oracle.compare(swapped, want, "exact", zero_sign=False) is None


def test_a_crashing_variant_is_a_finding_and_shrinks_to_a_saved_regression(monkeypatch,
                                                                           tmp_path):
    def crashes_on_sin(name, module, inputs):
        # a stand-in "cpu" that is the interpreter but for sin: real bugs stay out of it
        if any(i.op is Op.SIN for i in module.instructions):
            raise RuntimeError("emitter has no sin")
        return evaluate(module, inputs)

    monkeypatch.setattr(oracle, "run_variant", crashes_on_sin)
    outcome = fuzz(GENERATORS["ir"], 200, seed=3, variants=["cpu"])
    failure = outcome.failure
    assert failure is not None and "raised RuntimeError: emitter has no sin" in failure.what
    # shrunk: the sin and the leaf it reads, nothing else
    assert len(failure.module.instructions) <= 2, str(failure.module)
    path = regressions.save(failure, "ir", tmp_path)
    module, inputs, header = regressions.load(path)
    assert module == failure.module and header["variant"] == "cpu"
    for a, b in zip(inputs, failure.inputs):
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes()

    # once kept as an expected failure, the same bug is counted apart, not failed on
    regressions.save(failure, "ir", tmp_path, xfail="emitter has no sin yet")
    known = regressions.known_bugs(tmp_path)
    assert list(known) == [failure.signature]
    again = fuzz(GENERATORS["ir"], 200, seed=3, variants=["cpu"], known=known)
    assert again.failure is None and again.skipped[f"known bug {path.stem}"] > 0


# -- bugs the fuzzer found in unowned code, fixed there

def test_optimizing_a_module_that_already_has_kernels_keeps_them():
    # Found by the "fused" generator: fuse() wrapped an existing fusion in a new one, and
    # fusions do not nest (IRTypeError). Existing kernels now stay as they are, and new
    # kernels form around them.
    f32 = np.dtype(np.float32)
    x, p = B.parameter(0, (3,), f32), B.parameter(0, (3,), f32)
    body = Module("k", [p], [B.unary(Op.NEG, p), B.unary(Op.ABS, p)])
    kernel = B.fusion([B.unary(Op.EXP, x)], body, "loop", "k")
    module = Module("f", [x], [B.binary(Op.ADD, B.get_output(kernel, 0), x),
                               B.get_output(kernel, 1)])
    optimized = optimize(module)
    names = [i.attrs["name"] for i in optimized.instructions if i.op is Op.FUSION]
    assert "k" in names and len(names) == 3, optimized
    arg = np.float32([1, -2, 30])
    for got, want in zip(evaluate(optimized, [arg]), evaluate(module, [arg])):
        assert got.tobytes() == want.tobytes()


def test_reshape_to_a_0d_shape_traces():
    # Found by the "numpy" generator: `a.reshape(())` raised "shape must be integers,
    # got ()" while tracing, since np.asarray(()) is float64.
    import jitlib

    def f(a):
        return a.reshape(()), np.reshape(a, [])

    arg = np.float32([[2.5]])
    for got in jitlib.jit(f, backend="cpu")(arg):
        assert got.shape == () and got.dtype == np.float32 and got == 2.5


# -- loops in the fuzzed programs (issue 22)

def test_about_a_third_of_numpy_programs_hold_a_loop_of_either_kind():
    from hypothesis import given, settings
    from hypothesis import seed as hypothesis_seed

    from .numpy_programs import numpy_programs
    sources = []

    @settings(max_examples=120, database=None, deadline=None)
    @given(numpy_programs())
    def draw(program):
        sources.append(program.source)
    hypothesis_seed(0)(draw)()
    fori = sum("jnp.fori_loop(" in s for s in sources)
    plain = sum("for i in range(" in s for s in sources)
    assert fori > 0 and plain > 0
    # about 0.45 on average; a seeded draw still varies with hypothesis's process-wide
    # state (0.38-0.53 seen), so the band is wide enough not to flake under xdist
    assert 0.2 <= (fori + plain) / len(sources) <= 0.65, (fori, plain, len(sources))


def _loop_module(body, cond_on_carry=False):
    import jitlib
    import jitlib.numpy as jnp

    def f(x):
        if cond_on_carry:   # the trip count depends on an approximate value
            return jnp.while_loop(lambda c: np.exp(c).sum() < 100.0, body, x)
        return jnp.fori_loop(0, 3, lambda i, c: body(c), x)
    return jitlib.make_ir(f)(np.ones(3, np.float32))


def test_a_loop_whose_body_is_approximate_is_compared_within_tolerance():
    from .exactness import APPROX, EXACT, UNSTABLE, result_classes
    assert result_classes(_loop_module(lambda c: c * 2.0 + 1.0)) == [EXACT]
    assert result_classes(_loop_module(lambda c: np.exp(c) * 0.5)) == [APPROX]
    # approximate only from the second trip on: the carry's class rises to a fixed point
    assert result_classes(_loop_module(lambda c: np.floor(c) + np.sin(c))) == [UNSTABLE]
    assert result_classes(_loop_module(lambda c: c + 1.0, cond_on_carry=True)) == [UNSTABLE]
