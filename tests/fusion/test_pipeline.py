"""The pass pipeline: running, verifying, logging, fixed points, options, and the simplifier
on every catalogue program."""
import logging
import zlib

import numpy as np
import pytest

import golden
import jitlib
import programs
from jitlib.errors import VerifierError
from jitlib.fusion import Options, optimize, pipeline, run_pipeline
from jitlib.fusion.rewrite import cse, dce
from jitlib.hlo import build
from jitlib.hlo import ops as O
from jitlib.hlo.interpreter import evaluate
from jitlib.hlo.ir import Instr, Module
from jitlib.hlo.ops import Op
from jitlib.hlo.parser import parse_module
from jitlib.hlo.printer import print_module
from jitlib.testing import module_inputs

MUL_BY_ONE = """module m(%x: f32[4]) {
  %0 = f32[] constant(1.0)
  %1 = f32[4] broadcast_in_dim(%0), dims=[]
  %2 = f32[4] mul(%x, %1)
  %3 = f32[4] exp(%2)
  return (%3)
}"""


def test_passes_run_in_the_documented_order():
    assert [p.name for p in pipeline.PASSES] == ["simplify_and_fold", "cse", "dce"]
    first = pipeline.PASSES[0]
    assert [p.name for p in first.passes] == ["simplify", "constant_fold", "control"]


def test_run_pipeline_returns_a_new_module_with_the_same_signature():
    module = parse_module(MUL_BY_ONE)
    out = run_pipeline(module)
    assert out is not module and out.params == module.params and out.name == module.name
    assert [i.op for i in out.instructions] == [Op.PARAMETER, Op.EXP]


def _broken(module, options):
    # a raw Instr.make skips the type rules: the verifier must catch it
    (x,) = module.params
    bad = Instr.make(Op.NEG, (5,), np.float32, (x,))
    return Module(module.name, module.params, [bad])


@pytest.mark.parametrize("verify_each, topics", [(True, ""), (False, "passes")])
def test_the_verifier_runs_after_each_pass_and_names_it(monkeypatch, verify_each, topics):
    monkeypatch.setenv("JITLIB_LOG", topics)
    broken = pipeline.Pass("breaks_types", _broken)
    with pytest.raises(VerifierError, match="after pass 'breaks_types'"):
        run_pipeline(parse_module(MUL_BY_ONE), [pipeline.SIMPLIFY, broken],
                     verify_each=verify_each)


def test_without_verification_a_broken_pass_goes_unnoticed(monkeypatch):
    monkeypatch.setenv("JITLIB_LOG", "")
    broken = pipeline.Pass("breaks_types", _broken)
    assert run_pipeline(parse_module(MUL_BY_ONE), [broken]).results[0].shape == (5,)


def test_log_passes_logs_each_pass_diff(monkeypatch, caplog):
    monkeypatch.setenv("JITLIB_LOG", "passes")
    with caplog.at_level(logging.INFO, logger="jitlib"):
        run_pipeline(parse_module(MUL_BY_ONE))
    text = caplog.text
    assert "--- before simplify" in text and "+++ after simplify" in text
    assert "-  %2 = f32[4] mul(%x, %1)" in text
    assert "pass dce: no change" in text


def test_log_passes_logs_the_module_around_optimize(monkeypatch, caplog):
    monkeypatch.setenv("JITLIB_LOG", "passes")
    with caplog.at_level(logging.INFO, logger="jitlib"):
        optimize(parse_module(MUL_BY_ONE))
    assert "optimize: before" in caplog.text and "optimize: after" in caplog.text


def _counting(calls):
    def step(module, options):
        calls.append(len(module.instructions))
        return run_pipeline(module, [pipeline.SIMPLIFY])
    return pipeline.Pass("count", step)


def test_fixed_point_stops_when_a_round_changes_nothing():
    calls = []
    run_pipeline(parse_module(MUL_BY_ONE), [pipeline.fixed_point(_counting(calls), 10)])
    assert calls == [5, 2]      # the second round changed nothing


def test_fixed_point_stops_after_max_iters():
    def grow(module, options):
        return Module(module.name, module.params,
                      [build.unary(Op.NEG, r) for r in module.results])
    calls = []
    step = pipeline.Pass("grow", lambda m, o: calls.append(1) or grow(m, o))
    out = run_pipeline(parse_module(MUL_BY_ONE), [pipeline.fixed_point(step, 3)])
    assert len(calls) == 3 and out.results[0].op is Op.NEG


def test_fixed_point_defaults_to_the_options_bound():
    calls = []
    step = pipeline.Pass("grow", lambda m, o: calls.append(1) or Module(
        m.name, m.params, [build.unary(Op.NEG, r) for r in m.results]))
    run_pipeline(parse_module(MUL_BY_ONE), [pipeline.fixed_point(step)], Options(max_iters=2))
    assert len(calls) == 2


def test_passes_are_callable_on_their_own():
    module = parse_module(MUL_BY_ONE)
    assert print_module(pipeline.SIMPLIFY(module)) == print_module(run_pipeline(module))
    assert pipeline.PASSES[0](module).results == run_pipeline(module).results


def test_cse_is_interning():
    x = build.parameter(0, (3,), np.float32)
    a = build.unary(Op.EXP, x)
    b = build.unary(Op.EXP, x)
    assert a is b      # the IR cannot hold two copies, so cse has nothing left to merge
    module = Module("m", [x], [build.binary(Op.ADD, a, b)])
    assert cse(module).results == module.results


def test_dce_keeps_only_what_results_reach_and_every_parameter():
    x = build.parameter(0, (3,), np.float32)
    unused = build.parameter(1, (2,), np.int32)
    module = Module("m", [x, unused], [build.unary(Op.NEG, build.unary(Op.NEG, x))])
    out = dce(run_pipeline(module, [pipeline.SIMPLIFY]))
    assert out.params == (x, unused) and out.instructions == (x, unused)


def test_unknown_unsafe_math_names_are_rejected():
    with pytest.raises(ValueError, match="unknown unsafe_math rule.*add_zero_please"):
        Options(unsafe_math={"add_zero_please"})


def test_fast_math_enables_every_opt_in_rule_and_the_default_none():
    assert Options().unsafe_math == frozenset()
    fast = Options.fast_math()
    assert all(fast.allows(name) for name in pipeline.Options().__class__.fast_math()
               .unsafe_math)
    with pytest.raises(KeyError):
        fast.allows("mul_one")      # an exact rule is never gated


def test_optimize_fuses():
    module = parse_module(MUL_BY_ONE)
    assert any(i.op is Op.FUSION for i in optimize(module).instructions)


# -- every catalogue program, simplified, gives the same bits

def _flat_args(prog):
    args = prog.make_args(np.random.default_rng(zlib.crc32(prog.name.encode())))
    module = jitlib.make_ir(prog.fn, static_argnums=prog.static_argnums)(*args)
    return module, module_inputs(module, args, prog.static_argnums)


def _work(module):
    """Instructions that compute (not leaves, not data movement)."""
    return sum(i.op not in O.LEAF | O.MOVEMENT for i in module.instructions)


@pytest.mark.parametrize("prog", programs.PROGRAMS + programs.CONTROL_FLOW, ids=lambda p: p.name)
def test_simplifier_preserves_every_catalogue_program(prog):
    module, inputs = _flat_args(prog)
    simplified = run_pipeline(module, verify_each=True)
    assert _work(simplified) <= _work(module)
    golden.assert_same_bits_but_blas(module, evaluate(module, inputs),
                                     evaluate(simplified, inputs), prog.name)


def test_the_catalogue_gives_the_simplifier_work():
    less = sum(_work(run_pipeline(m)) < _work(m)
               for m, _ in map(_flat_args, programs.PROGRAMS))
    assert less >= 10
