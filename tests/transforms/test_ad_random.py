"""Random float64 programs (tests/ir_strategies.py), plain and cut into fusions:
reverse mode is the transpose of forward mode, <c, J t> == <J^T c, t>, for every op
mix the strategies draw, and the transformed programs agree across backends."""
import numpy as np
from hypothesis import assume, given, settings

from ir_strategies import fused_programs, programs
from jitlib import errors
from jitlib.backends import get_backend
from jitlib.hlo import dtypes
from jitlib.hlo.interpreter import evaluate
from jitlib.testing import assert_allclose_tree
from jitlib.transforms.jvp import jvp_module
from jitlib.transforms.vjp import vjp_module

F64 = ["f64"]


def _floats(values):
    return [i for i, v in enumerate(values) if dtypes.is_float(v.dtype)]


def _transforms(module):
    """(jvp module, vjp module), or a hypothesis rejection where the derivative is
    refused (the updates of a multiplying scatter, as in JAX)."""
    assume(_floats(module.params) and _floats(module.results))
    try:
        return jvp_module(module), vjp_module(module)
    except errors.UnsupportedError:
        assume(False)


def _directions(values, indices, seed):
    rng = np.random.default_rng(seed)
    return [rng.normal(size=values[i].shape) for i in indices]


def check_transpose(module, args):
    forward, backward = _transforms(module)
    params, results = _floats(module.params), _floats(module.results)
    tangents = _directions(module.params, params, 1)
    cotangents = _directions(module.results, results, 2)
    n = len(module.results)
    pushed = evaluate(forward, list(args) + tangents)[n:]
    pulled = evaluate(backward, list(args) + cotangents)[n:]
    terms = [c * pushed[i] for c, i in zip(cotangents, results)]
    terms_back = [g * t for g, t in zip(pulled, tangents)]
    lhs, rhs = sum(map(np.sum, terms)), sum(map(np.sum, terms_back))
    assume(np.isfinite(lhs) and np.isfinite(rhs))
    scale = sum(np.abs(t).sum() for t in terms + terms_back)
    assert abs(lhs - rhs) <= 1e-9 * scale + 1e-300, (
        f"<c, J t> = {lhs!r} but <J^T c, t> = {rhs!r}\nmodule:\n{module}\n"
        f"jvp:\n{forward}\nvjp:\n{backward}")


@given(programs(dtypes=F64))
def test_vjp_is_the_transpose_of_jvp(program):
    check_transpose(*program)


@given(fused_programs(dtypes=F64))
@settings(max_examples=20)
def test_vjp_is_the_transpose_of_jvp_through_fusions(program):
    check_transpose(*program)


@given(programs(dtypes=F64, max_steps=5))
@settings(max_examples=8)
def test_transformed_programs_agree_across_backends(program):
    module, args = program
    _, backward = _transforms(module)
    cotangents = _directions(module.results, _floats(module.results), 3)
    inputs = list(args) + cotangents
    expected = evaluate(backward, inputs)
    for name in ("jax", "cpu"):
        actual = get_backend(name).compile(backward)(*inputs)
        assert_allclose_tree(actual, expected, rtol=1e-9, atol=1e-12,
                             err_msg=f"{name} backend on\n{backward}")
