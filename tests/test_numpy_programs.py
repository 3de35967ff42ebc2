"""Realistic NumPy programs: eager sanity, jitted == eager on every backend, and the harness."""

import collections
import warnings
import zlib

import ml_dtypes
import numpy as np
import pytest

import programs
import jitlib
from jitlib import tree
from jitlib.testing import (
    TOLERANCES, assert_allclose_tree, check_backends, tolerance, working_dtypes)

IDS = [p.name for p in programs.PROGRAMS]


def program_args(prog):
    """The program's inputs, from a generator seeded by its name (stable across runs)."""
    return prog.make_args(np.random.default_rng(zlib.crc32(prog.name.encode())))


def test_catalogue_is_large_with_unique_names():
    assert len(programs.PROGRAMS) >= 60
    assert len(set(IDS)) == len(IDS)


@pytest.mark.parametrize("prog", programs.PROGRAMS, ids=IDS)
def test_program_runs_eagerly_with_finite_results(prog):
    args = program_args(prog)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = prog.fn(*args)
    # a program that leaves its result in its arguments (and returns None) is checked there
    leaves = tree.leaves(result) or tree.leaves(args)
    assert leaves
    for leaf in leaves:
        arr = np.asarray(leaf)
        assert arr.dtype != object
        if np.issubdtype(arr.dtype, np.inexact):
            assert np.isfinite(arr).all(), f"{prog.name} produced non-finite values"


@pytest.mark.parametrize("prog", programs.PROGRAMS, ids=IDS)
def test_jit_matches_numpy(prog):
    check_backends(prog.fn, *program_args(prog), backends=("interpreter", "jax"),
                   static_argnums=prog.static_argnums, rtol=prog.rtol, atol=prog.atol)


# --- complex values and spectra (issue 23): interpreter, cpu (NumPy's kernels) and jax ------

COMPLEX_IDS = [p.name for p in programs.COMPLEX]


@pytest.mark.parametrize("prog", programs.COMPLEX, ids=COMPLEX_IDS)
def test_complex_program_matches_numpy(prog):
    check_backends(prog.fn, *program_args(prog), backends=("interpreter", "cpu", "jax"),
                   rtol=prog.rtol, atol=prog.atol)


@pytest.mark.parametrize("prog", programs.COMPLEX, ids=COMPLEX_IDS)
def test_complex_program_runs_eagerly_with_finite_results(prog):
    test_program_runs_eagerly_with_finite_results(prog)


# --- control flow programs (issue 22): eager jitlib.numpy control flow is the reference -------

CF_IDS = [p.name for p in programs.CONTROL_FLOW]


def test_control_flow_catalogue_has_unique_names():
    assert len(programs.CONTROL_FLOW) >= 8
    assert len(set(CF_IDS)) == len(CF_IDS)
    assert not set(CF_IDS) & set(IDS)


@pytest.mark.parametrize("prog", programs.CONTROL_FLOW, ids=CF_IDS)
def test_control_flow_program_is_traced_as_control_flow(prog):
    # a loop or branch that traced away (unrolled, or folded on a concrete predicate)
    # would leave the backends' while and conditional ops untested
    from jitlib.hlo.ops import CONTROL
    module = jitlib.make_ir(prog.fn, static_argnums=prog.static_argnums)(*program_args(prog))
    assert any(i.op in CONTROL for i in module.instructions)


@pytest.mark.parametrize("prog", programs.CONTROL_FLOW, ids=CF_IDS)
def test_control_flow_program_matches_eager(prog):
    args = program_args(prog)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = check_backends(prog.fn, *args, backends=("interpreter", "cpu", "jax"),
                                static_argnums=prog.static_argnums, rtol=prog.rtol,
                                atol=prog.atol)
    for leaf in tree.leaves(result):
        arr = np.asarray(leaf)
        if np.issubdtype(arr.dtype, np.inexact):
            assert np.isfinite(arr).all(), f"{prog.name} produced non-finite values"


# --- assert_allclose_tree ----------------------------------------------------------------------

Pair = collections.namedtuple("Pair", ["a", "b"])


def fails(actual, expected, match, **kwargs):
    with pytest.raises(AssertionError, match=match):
        assert_allclose_tree(actual, expected, **kwargs)


def test_identical_trees_pass():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    assert_allclose_tree({"x": x, "t": (x, [None, np.int32(3)])},
                         {"x": x.copy(), "t": (x.copy(), [None, np.array(3, np.int32)])})


def test_dtype_mismatch_fails():
    x = np.ones(3, np.float32)
    fails(x, x.astype(np.float64), "dtype float32 != expected float64")
    fails(np.ones(2, np.int32), np.ones(2, np.int64), "dtype int32")
    fails(np.ones(2, bool), np.ones(2, np.int8), "dtype bool")


def test_shape_mismatch_fails():
    fails(np.zeros((2, 3)), np.zeros((3, 2)), r"shape \(2, 3\)")
    fails(np.zeros(()), np.zeros((1,)), "shape")


@pytest.mark.parametrize("actual, expected", [
    ((1.0,), [1.0]),
    (Pair(1.0, 2.0), (1.0, 2.0)),
    ({"a": 1.0}, {"b": 1.0}),
    ((1.0, None), (1.0, 2.0)),
    ((1.0,), (1.0, 2.0)),
])
def test_structure_mismatch_fails(actual, expected):
    fails(actual, expected, "tree structure differs")


def test_failure_names_the_leaf_path():
    expected = {"out": Pair(np.zeros(2), [np.zeros(1), np.ones(1)])}
    actual = {"out": Pair(np.zeros(2), [np.zeros(1), np.zeros(1)])}
    fails(actual, expected, r"leaf \['out'\]\.b\[1\]")


def test_err_msg_is_prefixed():
    fails(np.zeros(1), np.ones(1), "^backend x\n", err_msg="backend x")


def test_nan_positions_must_match():
    nan = np.nan
    assert_allclose_tree(np.array([nan, 1.0, nan]), np.array([nan, 1.0, nan]))
    fails(np.array([nan, 1.0]), np.array([1.0, nan]), "2/2 elements differ")
    fails(np.array([nan], np.float32), np.array([0.0], np.float32), "1/1")


def test_infinities_must_match_in_sign():
    assert_allclose_tree(np.array([np.inf, -np.inf]), np.array([np.inf, -np.inf]))
    fails(np.array([np.inf]), np.array([-np.inf]), "elements differ")
    fails(np.array([np.inf]), np.array([1e308]), "elements differ")
    fails(np.array([np.nan]), np.array([np.inf]), "elements differ")


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16, np.float32, np.float64])
def test_default_tolerance_edges(dtype):
    rtol, atol = TOLERANCES[np.dtype(dtype)]
    assert tolerance(dtype) == (rtol, atol)
    # A value exactly representable in every float type; perturb it in float64 and round.
    ref = 4.0
    inside = np.array([ref * (1 + 0.5 * rtol)], dtype)
    outside = np.array([ref * (1 + 4 * rtol) + 4 * atol], dtype)
    expected = np.array([ref], dtype)
    assert_allclose_tree(inside, expected)
    fails(outside, expected, "elements differ")
    # atol is what lets results near zero differ.
    assert_allclose_tree(np.array([0.5 * atol], dtype), np.array([0.0], dtype))


def test_explicit_tolerances_override_float_defaults():
    a, e = np.array([1.001], np.float32), np.array([1.0], np.float32)
    fails(a, e, "rtol=2e-05")
    assert_allclose_tree(a, e, rtol=1e-2)
    fails(a, e, "rtol=0", rtol=0.0, atol=0.0)


def test_integers_and_bools_are_exact_whatever_the_tolerance():
    assert tolerance(np.int32) == (0.0, 0.0)
    fails(np.array([1000001]), np.array([1000000]), "elements differ", rtol=1e-3, atol=1)
    fails(np.array([True]), np.array([False]), "elements differ", atol=1)
    assert_allclose_tree(np.array([-7, 3], np.int8), np.array([-7, 3], np.int8))


def test_python_scalars_compare_as_numpy_scalars():
    assert_allclose_tree(2.5, np.array(2.5))
    assert_allclose_tree(np.float64(2.5), 2.5)
    assert_allclose_tree(3, np.array(3, np.int64))
    assert_allclose_tree(True, np.True_)
    fails(2.5, np.array(2.5, np.float32), "dtype float64 != expected float32")
    fails(np.float32(2.5), 2.5, "dtype float32 != expected float64")
    fails(3, 3.0, "dtype int64")


def test_scalar_and_zero_d_array_are_interchangeable():
    assert_allclose_tree(np.float32(1.5), np.array(1.5, np.float32))
    assert_allclose_tree(np.array(1.5, np.float32), np.float32(1.5))


def test_non_numeric_leaves_compare_by_equality():
    assert_allclose_tree(("relu", 1.0), ("relu", 1.0))
    fails(("relu",), ("gelu",), "non-array leaves differ")


def test_empty_arrays():
    assert_allclose_tree(np.zeros((0, 3), np.float32), np.zeros((0, 3), np.float32))
    fails(np.zeros((0, 3), np.float32), np.zeros((0, 2), np.float32), "shape")


def test_message_reports_error_sizes_and_positions():
    a = np.array([[1.0, 2.0], [3.0, 4.5]], np.float32)
    e = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    fails(a, e, r"1/4 elements differ \(max abs err 0\.5.*at \(1, 1\): 4\.5 vs 4\.0")


def test_precisions_loosen_a_leaf_to_the_type_it_was_computed_in():
    # an f64 result of f32 products (attention scaled by np.sqrt(int)): one f32 ulp apart
    e = np.array([1.0, 3.0], np.float32).astype(np.float64) / 3
    a = e * (1 + 2.0 ** -23)
    fails(a, e, "2/2 elements differ")
    assert_allclose_tree(a, e, precisions=[np.dtype(np.float32)])
    assert_allclose_tree((a, 1), (e, 1), precisions=[np.dtype(np.float32), None])
    fails(a * 1.001, e, "elements differ", precisions=[np.dtype(np.float32)])


def test_working_dtypes_follow_each_output():
    def f(x, i):
        return (x.astype(np.float64) * 2.0,          # f64 work on an exact widening
                x + 1,                               # f32 work
                (x * 2).T.astype(np.float64) + 1.0,  # f32 work, widened, then f64 work
                i * 2,                               # no float work
                x.reshape(3, 1))                     # a parameter moved
    module = jitlib.make_ir(f)(np.ones(3, np.float32), np.ones(3, np.int32))
    f32, f64 = np.dtype(np.float32), np.dtype(np.float64)
    assert working_dtypes(module) == [f64, f32, f32, None, None]


# --- check_backends, without a backend ---------------------------------------------------------


def test_check_backends_runs_eager_on_copies():
    def bump(x, acc):
        x += 1
        acc["n"] += 1
        return x * 2

    x = np.arange(3, dtype=np.float32)
    acc = {"n": np.zeros(())}
    result = check_backends(bump, x, acc, backends=())
    np.testing.assert_array_equal(result, [2.0, 4.0, 6.0])
    np.testing.assert_array_equal(x, [0.0, 1.0, 2.0])
    assert acc["n"] == 0


def test_check_backends_passes_kwargs():
    result = check_backends(lambda x, scale: x * scale, np.ones(2), backends=(),
                            kwargs={"scale": 3.0})
    np.testing.assert_array_equal(result, [3.0, 3.0])


def test_array_against_non_array_leaf_fails():
    fails("1.0", np.array(1.0), "str leaf, expected ndarray")
    fails(np.array(1.0), object(), "ndarray leaf, expected object")


# --- check_backends against the interpreter: functions that behave differently when traced ---


def doubles_eagerly_triples_traced(x):
    return x * (2 if isinstance(x, np.ndarray) else 3)


def narrows_dtype_when_traced(x):
    return x if isinstance(x, np.ndarray) else x.astype(np.float32)


def raises_when_traced(x):
    if not isinstance(x, np.ndarray):
        raise ValueError("boom")
    return x


def test_check_backends_reports_wrong_values_with_backend_and_ir():
    with pytest.raises(AssertionError, match=r"(?s)backend='interpreter'.*traced IR:"):
        check_backends(doubles_eagerly_triples_traced, np.ones(3), backends=("interpreter",))


def test_check_backends_reports_wrong_dtype():
    with pytest.raises(AssertionError, match="dtype float32 != expected float64"):
        check_backends(narrows_dtype_when_traced, np.ones(3), backends=("interpreter",))


def test_check_backends_notes_the_backend_on_exceptions():
    with pytest.raises(ValueError, match="boom") as info:
        check_backends(raises_when_traced, np.ones(3), backends=("interpreter",))
    assert any("backend='interpreter'" in note for note in info.value.__notes__)
