"""Reductions on the LLVM backend: the vectorized float max/min and the order of sums.

Float max/min run in vector lanes (llvm.maxnum/minnum, with NaNs and infinities detected
in the same loop) and fold the row again in order only when the row holds a NaN or an
infinity or the result is a zero (kernels.py, `float_extreme`). These tests use rows
long enough for the vector loop and put NaNs, infinities and zeros of both signs where
each path is taken. The interpreter (np.max) is the reference wherever its answer does
not depend on NumPy's own SIMD layout; where the row's extreme is a zero of both signs,
the documented rule is the left fold of np.maximum / np.minimum.
"""
import functools
import math
import re

import numpy as np
import pytest

from jitlib.backends.llvm import LLVMBackend
from jitlib.hlo import Module, Op, build as B, dtypes
from jitlib.hlo.interpreter import evaluate

LLVM = LLVMBackend()
FLOATS = {"f16": np.dtype(np.float16), "bf16": dtypes.bfloat16,
          "f32": np.dtype(np.float32), "f64": np.dtype(np.float64)}
EXTREMES = {Op.REDUCE_MAX: np.maximum, Op.REDUCE_MIN: np.minimum}


def _bits_equal(got, want, what):
    g, w = got.astype(np.float64), want.astype(np.float64)
    np.testing.assert_array_equal(g, w, err_msg=what)      # NaN equals NaN here
    zero = w == 0
    np.testing.assert_array_equal(np.signbit(g[zero]), np.signbit(w[zero]),
                                  err_msg=f"{what}: sign of zero")


def _rows(dt, cols, seed):
    """One row per case the two paths must get right, `cols` long."""
    rng = np.random.default_rng(seed)
    rows = rng.normal(0, 3, (10, cols))
    rows[1, cols // 2] = np.nan                    # one NaN in the middle
    rows[2, [min(3, cols - 1), cols - 1]] = np.nan  # NaN near both ends
    rows[3, 0] = np.inf                            # infinities at the edges
    rows[3, -1] = -np.inf
    rows[4] = -np.abs(rows[4])                     # max is a +0 (min is some negative)
    rows[4, cols // 3] = 0.0
    rows[5] = np.abs(rows[5])                      # min is a -0
    rows[5, cols // 4] = -0.0
    rows[6] = -np.inf                              # all infinite: the identity's edge
    rows[7, :] = 7.0                               # all equal
    rows[8, -3:] = 1e30                            # the extreme in the unrolled tail
    rows[9, :] = rows[9, ::-1]
    with np.errstate(over="ignore"):
        return rows.astype(dt)


@pytest.mark.parametrize("name", list(FLOATS))
@pytest.mark.parametrize("cols", [1, 7, 1000, 4099])
def test_float_max_min_match_the_interpreter(name, cols):
    x = _rows(FLOATS[name], cols, cols)
    p = B.parameter(0, x.shape, x.dtype)
    module = Module("extremes", [p], [B.reduce(op, p, (1,)) for op in EXTREMES])
    exe = LLVM.compile(module)
    assert not exe.fallbacks
    for op, got, want in zip(EXTREMES, exe(x), evaluate(module, [x])):
        _bits_equal(got, want, f"{op} of {name}[10, {cols}]")


@pytest.mark.parametrize("dt", ["f32", "f64", "i8", "i64", "u32"])
@pytest.mark.parametrize("cols", [65, 1000, 4099])
def test_argmax_argmin_of_long_rows_find_the_first_extreme(dt, cols):
    # rows past ARG_BLOCK: the extreme's value, then the first block holding it; the
    # first extreme wins, NaN first, zeros of both signs tie
    if dt in FLOATS:
        x = _rows(FLOATS[dt], cols, cols + 1)
        x[2, [5, cols - 2]] = x[2].max() if cols > 5 else 0   # a tie for the maximum
        x[0, 64:] = x[0, 0]                                   # ties across blocks
    else:
        info = np.iinfo({"i8": np.int8, "i64": np.int64, "u32": np.uint32}[dt])
        rng = np.random.default_rng(cols)
        x = rng.integers(info.min, info.max, (6, cols), endpoint=True).astype(
            info.dtype)
        x[1, :] = info.max
        x[2, [7, cols - 1]] = info.min
        x[3, 64:] = x[3, 0]
    p = B.parameter(0, x.shape, x.dtype)
    module = Module("args", [p], [B.arg_reduce(op, p, 1) for op in (Op.ARGMAX, Op.ARGMIN)])
    exe = LLVM.compile(module)
    assert not exe.fallbacks
    for got, want in zip(exe(x), (np.argmax(x, 1), np.argmin(x, 1))):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name", list(FLOATS))
def test_zeros_of_both_signs_follow_the_left_fold(name):
    # the extreme of every row is a zero of both signs, in varying order
    rng = np.random.default_rng(7)
    signs = rng.random((16, 513)) < 0.5
    x = np.where(signs, -0.0, 0.0)
    x[:, ::5] = -1.5
    x[::2] = -x[::2]                   # even rows: min is the zero, odd rows: max is
    x[0, :] = x[0, ::-1]
    x = x.astype(FLOATS[name])
    p = B.parameter(0, x.shape, x.dtype)
    module = Module("zeros", [p], [B.reduce(op, p, (1,)) for op in EXTREMES])
    for (op, rule), got in zip(EXTREMES.items(), LLVM.compile(module)(x)):
        want = np.array([functools.reduce(rule, row) for row in x], x.dtype)
        _bits_equal(got, want, f"{op} of {name}")


def test_extremes_inside_a_fused_row_kernel():
    # softmax's max feeds the exp of the same kernel; NaN rows stay NaN rows
    x = _rows(np.float32, 777, 3)

    def softmax(x):
        e = np.exp(x - np.max(x, axis=-1, keepdims=True))
        return e / np.sum(e, axis=-1, keepdims=True)

    import jitlib
    module = jitlib.make_ir(softmax)(x)
    exe = LLVM.compile(module)
    assert not exe.fallbacks
    (got,), (want,) = exe(x), evaluate(module, [x])
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-30)


# -- the order of float sums (docs/cpu_reductions.md)

def _sum_bound(n, dt):
    """The documented worst cases, in units of u * sum|x|: jitlib's blocked, compensated
    sum whatever the vector width, and NumPy's pairwise sum (8 accumulators over blocks
    of 128, then halving)."""
    from jitlib.backends.llvm.kernels import SUM_BLOCK
    ours = SUM_BLOCK + 2
    numpy = 128 // 8 + 2 + max(0, math.ceil(math.log2(n / 128)))
    return ours, numpy


def _mixed(kind, n, rng):
    mag = 10.0 ** rng.uniform(-6, 6, n)             # twelve decades of magnitude
    if kind == "positive":
        return mag
    if kind == "signed":
        return mag * rng.choice([-1, 1], n)
    return rng.standard_normal(n) + 100.0           # an offset that rounding shows up on


@pytest.mark.parametrize("name", ["f32", "f64"])
@pytest.mark.parametrize("kind", ["positive", "signed", "offset"])
def test_large_sums_are_within_the_documented_bound(name, kind):
    dt = FLOATS[name]
    rng = np.random.default_rng(len(kind))
    n = (1 << 20) + 77                              # >= 1e6, not a whole number of blocks
    x = _mixed(kind, n, rng).astype(dt)
    p = B.parameter(0, x.shape, x.dtype)
    (got,) = LLVM.compile(Module("sum", [p], [B.reduce(Op.REDUCE_SUM, p, (0,))]))(x)
    (pairwise,) = evaluate(Module("sum", [p], [B.reduce(Op.REDUCE_SUM, p, (0,))]), [x])
    exact = math.fsum(x.astype(np.float64))         # f32 data: exact in f64 to ~1e-16
    scale = np.finfo(dt).eps / 2 * float(np.sum(np.abs(x), dtype=np.float64))
    ours, numpy = _sum_bound(n, dt)
    assert abs(float(got) - exact) <= ours * scale, (float(got), exact, scale)
    assert abs(float(got) - float(pairwise)) <= (ours + numpy) * scale


def test_sums_over_several_dims_and_rows_keep_the_bound():
    rng = np.random.default_rng(9)
    x = _mixed("positive", 3 * 4 * 100003, rng).astype(np.float32).reshape(3, 4, 100003)
    p = B.parameter(0, x.shape, x.dtype)
    module = Module("sums", [p], [B.reduce(Op.REDUCE_SUM, p, (0, 2)),
                                  B.reduce(Op.REDUCE_SUM, p, (2,))])
    ours, _ = _sum_bound(x.size, np.float32)
    u = np.finfo(np.float32).eps / 2
    for got, axes in zip(LLVM.compile(module)(x), [(0, 2), (2,)]):
        wide = x.astype(np.float64)
        exact = np.sum(wide, axis=axes)             # f64 pairwise: far below f32's u
        scale = u * np.sum(np.abs(wide), axis=axes)
        assert np.all(np.abs(got - exact) <= ours * scale), (got, exact)


@pytest.mark.parametrize("values, want", [
    ([np.inf, 1.0, 2.0], np.inf), ([-np.inf, 5.0], -np.inf), ([np.inf, -np.inf], np.nan),
    ([1.0, np.nan, 3.0], np.nan), ([-0.0, -0.0], -0.0), ([-0.0, 0.0], 0.0), ([], 0.0)])
def test_sum_special_values(values, want):
    x = np.array(values * 300 if values else [], np.float32)   # several blocks
    p = B.parameter(0, x.shape, x.dtype)
    (got,) = LLVM.compile(Module("sum", [p], [B.reduce(Op.REDUCE_SUM, p, (0,))]))(x)
    np.testing.assert_array_equal(got, np.float32(want))
    # IEEE's exact sum: -0.0 only when every term is -0.0 (NumPy's pairwise sum gives
    # -0.0 for two of them and +0.0 for 600: its blocks start from +0.0)
    assert want != 0 or np.signbit(got) == np.signbit(want)


# -- a costly summed value is evaluated once (kernels.py, `_kept_in_outputs`)

def _reduction_kernel(module):
    from jitlib.backends.llvm import kernels
    from jitlib.fusion import optimize
    (fusion,) = [i for i in optimize(module).instructions
                 if i.op is Op.FUSION and i.attrs["kind"] == "reduction"]
    return kernels.render(fusion)


def _softmax(x):
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)


def _softmax_and_exp(x):   # the reduction kernel's output is e itself
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    s = np.sum(e, axis=-1, keepdims=True)
    return e / s, e * 2.0, s


def _two_sums(x):   # one output row keeps one summed value; tanh goes to a row buffer
    a, b = np.exp(x), np.tanh(x)
    return a / np.sum(a, axis=-1, keepdims=True) + b / np.sum(b, axis=-1, keepdims=True)


# call sites: a summed value kept in an output row twice in the sum pass (the loop over
# full blocks of SUM_BLOCK and the last 232 of 1000); one kept in a row buffer once, in
# the loop that fills the buffer (the sum pass and the write pass then load it)
@pytest.mark.parametrize("fn, calls", [(_softmax, 2), (_softmax_and_exp, 2), (_two_sums, 3)])
@pytest.mark.parametrize("name", ["f32", "f64"])
def test_summed_exp_is_evaluated_once_and_matches_the_interpreter(fn, calls, name):
    import jitlib
    x = _rows(FLOATS[name], 1000, 5)
    x[2] = np.nan_to_num(x[2], nan=1.0)    # one NaN row stays, so NaN goes through the cache
    module = jitlib.make_ir(fn)(x)
    ir = _reduction_kernel(module).ir
    start = ir.index("define void")         # the kernel's own call sites, not mathlib's
    body = ir[start:ir.index("\n}", start)]
    sites = len([line for line in body.splitlines()
                 if re.search(r"= call \w+ @jl_(exp|tanh)_f", line)])
    assert sites == calls, ir
    exe = LLVM.compile(module)
    assert not exe.fallbacks
    for got, want in zip(exe(x), evaluate(module, [x])):
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=str(module))
        np.testing.assert_allclose(got, want, rtol=4e-6 if name == "f32" else 1e-13,
                                   atol=1e-30, err_msg=str(module))


def test_cheap_or_narrow_summed_values_are_recomputed():
    import jitlib

    def centered(x):   # x - mean is cheaper to recompute than to store and reload
        return x - np.mean(x, axis=-1, keepdims=True)

    x = _rows(np.float32, 300, 6)
    assert "%out0" not in _sum_pass(_reduction_kernel(jitlib.make_ir(centered)(x)).ir)
    h = np.random.default_rng(7).normal(size=(4, 300)).astype(np.float16)
    module = jitlib.make_ir(_softmax)(h)   # f16 output: a rounded copy, not the f32 value
    ir = _reduction_kernel(module).ir
    assert "%out0" not in _sum_pass(ir)
    (got,), (want,) = LLVM.compile(module)(h), evaluate(module, [h])
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=2e-3)


def _sum_pass(ir):
    """The kernel text from the first reassociating add up to the block's compensation."""
    start = ir.index("fadd reassoc")
    return ir[ir.rindex("\n", 0, ir.rindex("loop", 0, start)):ir.index("fabs", start)]


# -- row buffers: a costly value read by several of a row kernel's loops is computed once

def _stages(x, g, b, stages=2):
    """layernorm -> gelu -> softmax, repeated: every stage's loops read the last one's."""
    for _ in range(stages):
        mu = x.mean(axis=-1, keepdims=True)
        var = ((x - mu) * (x - mu)).mean(axis=-1, keepdims=True)
        x = (x - mu) / np.sqrt(var + 1e-5) * g + b
        x = 0.5 * x * (1.0 + np.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))
        e = np.exp(x - x.max(axis=-1, keepdims=True))
        x = e / e.sum(axis=-1, keepdims=True)
    return x


def _kernel_call_sites(ir, name):
    start = ir.index("define void")
    body = ir[start:ir.index("\n}", start)]
    return len([line for line in body.splitlines()
                if re.search(rf"= call \w+ @jl_{name}_f", line)])


@pytest.mark.parametrize("name", ["f32", "f64"])
@pytest.mark.parametrize("cols", [7, 300])
@pytest.mark.parametrize("stages", [1, 3])
@pytest.mark.usefixtures("no_loop_rolling")   # the stages are one kernel, not a loop
def test_chained_row_stages_evaluate_each_costly_value_once(name, cols, stages):
    import jitlib
    from jitlib.testing import check_backends
    dt = FLOATS[name]
    rng = np.random.default_rng(cols + stages)
    args = [rng.normal(0, 2, s).astype(dt) for s in [(6, cols), (cols,), (cols,)]]
    fn = functools.partial(_stages, stages=stages)
    module = jitlib.make_ir(fn)(*args)
    ir = _reduction_kernel(module).ir
    # one tanh and one exp per stage, each evaluated by the loop that fills its row
    # buffer only (before: again in every later loop of the row, 1 + 4 + 7 + ... sites);
    # a single stage is softmax's form: its exp stays kept in the output row by the sum
    # pass (two sites, the full blocks and the tail, for a row past SUM_BLOCK)
    assert _kernel_call_sites(ir, "tanh") == stages, ir
    want_exp = stages if stages > 1 else (2 if cols > 256 else 1)
    assert _kernel_call_sites(ir, "exp") == want_exp, ir
    exe = LLVM.compile(module)
    assert not exe.fallbacks
    rtol = 2e-4 if name == "f32" else 1e-10   # layernorm of a softmax magnifies roundings
    for got, want in zip(exe(*args), evaluate(module, args)):
        np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-30, err_msg=str(module))
    check_backends(fn, *args, backends=("cpu", "jax"), rtol=rtol, atol=1e-12)


def test_row_buffers_leave_the_anchor_row_kernels_alone():
    # softmax keeps its exp in the output row, layernorm's costly division is read by the
    # write pass only, logsumexp's exp by its sum only: none of them needs a row buffer
    import jitlib
    from jitlib.backends.llvm import kernels
    from jitlib.fusion import optimize
    x = np.ones((4, 64), np.float32)
    g = np.ones(64, np.float32)
    programs = {
        "softmax": (lambda x: np.exp(x - x.max(-1, keepdims=True))
                    / np.exp(x - x.max(-1, keepdims=True)).sum(-1, keepdims=True), [x]),
        "layernorm": (lambda x, g: (x - x.mean(-1, keepdims=True))
                      / np.sqrt(x.var(-1, keepdims=True) + 1e-5) * g, [x, g]),
        "logsumexp": (lambda x: x.max(-1) + np.log(np.exp(x - x.max(-1, keepdims=True))
                                                   .sum(-1)), [x]),
    }
    for name, (fn, args) in programs.items():
        (fusion,) = [i for i in optimize(jitlib.make_ir(fn)(*args)).instructions
                     if i.op is Op.FUSION and i.attrs["kind"] == "reduction"]
        emitter = kernels._ReductionEmitter("k", fusion.attrs["body"])
        assert emitter.row_buffers == {}, name


def test_row_buffers_over_several_reduced_dims():
    # the buffer is indexed by the reduced dims in C order: rows reduced over (1, 2)
    import jitlib
    from jitlib.testing import check_backends

    def stages(x):
        for _ in range(2):
            t = np.tanh(x - x.mean(axis=(1, 2), keepdims=True))
            e = np.exp(t - t.max(axis=(1, 2), keepdims=True))
            x = e / e.sum(axis=(1, 2), keepdims=True) * 7.0
        return x

    x = np.random.default_rng(5).normal(0, 2, (3, 5, 70)).astype(np.float32)
    module = jitlib.make_ir(stages)(x)
    ir = _reduction_kernel(module).ir
    assert "alloca [350 x float]" in ir, ir
    exe = LLVM.compile(module)
    assert not exe.fallbacks
    for got, want in zip(exe(x), evaluate(module, [x])):
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-30, err_msg=str(module))
    check_backends(stages, x, backends=("cpu", "jax"), rtol=2e-5, atol=1e-12)


# -- softmax's and logsumexp's row max: exp of x - max(x) without its upper clamp
# (emitter.py, `below_row_max`), the max pass without its NaN detector where no output
# can show the max of a row holding a NaN (kernels.py, `_nan_blind_maxima`)

def _exp_operands(fn, *args):
    """below_row_max of each exp's operand in fn's fused kernels, in program order."""
    import jitlib
    from jitlib.backends.llvm.emitter import below_row_max
    from jitlib.fusion import optimize
    bodies = [i.attrs["body"] for i in optimize(jitlib.make_ir(fn)(*args)).instructions
              if i.op is Op.FUSION]
    return [below_row_max(i.operands[0]) for body in bodies for i in body.instructions
            if i.op is Op.EXP]


def test_exp_of_x_minus_its_own_row_max_is_recognized():
    rng = np.random.default_rng(11)
    x, y = rng.normal(size=(6, 6)).astype(np.float32), rng.normal(size=(6, 6)).astype(np.float32)
    t = rng.normal(size=(3, 4, 5)).astype(np.float32)
    yes = {
        "keepdims": (lambda x: np.exp(x - x.max(-1, keepdims=True)).sum(-1), [x]),
        "indexed": (lambda x: np.exp(x - x.max(-1)[:, None]).sum(-1), [x]),
        "axis 0": (lambda x: np.exp(x - x.max(0, keepdims=True)).sum(0), [x]),
        "middle axis": (lambda t: np.exp(t - t.max(1, keepdims=True)).sum(1), [t]),
        "two axes": (lambda t: np.exp(t - t.max((1, 2), keepdims=True)).sum((1, 2)), [t]),
    }
    no = {
        "min": (lambda x: np.exp(x - x.min(-1, keepdims=True)).sum(-1), [x]),
        "another array's max": (lambda x, y: np.exp(x - y.max(-1, keepdims=True)).sum(-1),
                                [x, y]),
        # row i's max subtracted along column i of a square matrix: may be positive
        "transposed": (lambda x: np.exp(x - x.max(-1)[None, :]).sum(-1), [x]),
        "reversed": (lambda x: np.exp(x.max(-1, keepdims=True) - x).sum(-1), [x]),
    }
    for name, (fn, args) in yes.items():
        assert _exp_operands(fn, *args) == [True], name
    for name, (fn, args) in no.items():
        assert _exp_operands(fn, *args) == [False], name
    # the transposed form keeps the clamped exp: positive arguments stay right
    fn = no["transposed"][0]
    from jitlib.testing import check_backends
    check_backends(fn, x * 30, backends=("cpu", "jax"), rtol=2e-6)


def _log_softmax(x):
    m = np.max(x, axis=-1, keepdims=True)
    return x - m - np.log(np.sum(np.exp(x - m), axis=-1, keepdims=True))


def _logsumexp(x):
    m = np.max(x, axis=-1, keepdims=True)
    return np.log(np.sum(np.exp(x - m), axis=-1)) + m[..., 0]


def _softmax_and_max(x):   # the max itself is an output: its NaN must show
    m = np.max(x, axis=-1, keepdims=True)
    e = np.exp(x - m)
    return e / np.sum(e, axis=-1, keepdims=True), m


def _special_rows(dt, cols):
    """_rows' cases plus the ones a NaN-blind max and an unclamped exp must get right."""
    x = _rows(np.float64, cols, cols + 1)
    extra = np.random.default_rng(cols).normal(0, 3, (9, cols))
    extra[0, :] = np.nan                                  # all NaN
    extra[1, [0, cols // 2]] = [np.inf, np.nan]            # NaN with +inf
    extra[2, :] = np.inf                                  # all +inf
    extra[3, cols // 3] = np.inf                          # one +inf
    extra[4, ::2] = -np.inf                               # -inf among finite values
    extra[5] = np.random.default_rng(1).uniform(-200, 0, cols)   # exp underflows here
    extra[6] = 1e-310 * np.arange(cols)                   # subnormal (f64) spread
    extra[7] = -np.abs(extra[7]) - 1e4                    # far below 0, max not 0
    extra[8, :] = -0.0                                    # all -0.0
    with np.errstate(over="ignore"):
        return np.concatenate([x, extra]).astype(dt)


@pytest.mark.parametrize("name", list(FLOATS))
@pytest.mark.parametrize("cols", [5, 300, 1000])
@pytest.mark.parametrize("fn, blind", [(_softmax, True), (_logsumexp, True),
                                       (_log_softmax, True), (_softmax_and_exp, False),
                                       (_softmax_and_max, False)])
def test_row_max_without_nan_detector_matches_the_interpreter(fn, blind, name, cols,
                                                              monkeypatch):
    import jitlib
    from jitlib.backends.llvm import kernels
    x = _special_rows(FLOATS[name], cols)
    module = jitlib.make_ir(fn)(x)
    ir = _reduction_kernel(module).ir
    assert ('asm ""' in ir) == blind, ir          # the frozen max of the blind pass
    assert re.search(r"= call \w+ @jl_exp_f(32|64)_nonpositive\(", ir), ir
    exe = LLVM.compile(module)
    assert not exe.fallbacks
    got = exe(x)
    # the same bits as the max pass with its NaN detector, NaN where it gives NaN
    monkeypatch.setattr(kernels, "_nan_blind_maxima", lambda plan, body: set())
    assert 'asm ""' not in _reduction_kernel(module).ir
    for g, w in zip(got, LLVM.compile(module)(x)):
        _bits_equal(g, w, f"blind max against the detector's\n{module}")
    # and near the interpreter: for 16-bit types its float32 form (NumPy sums bfloat16
    # in bfloat16, the kernel in float32), loosely: x - max rounded to 8 bits moves
    # exp(x - max) by up to 30% where x - max is near -200
    rtol = {"f16": 0.1, "bf16": 0.5, "f32": 4e-6, "f64": 1e-13}[name]
    atol = {"f16": 1e-7, "bf16": 1e-37, "f32": 1e-40, "f64": 1e-300}[name]   # subnormals
    x32 = x if name in ("f32", "f64") else x.astype(np.float32)
    ref = module if x32 is x else jitlib.make_ir(fn)(x32)
    for g, w in zip(got, evaluate(ref, [x32])):
        g, w = g.astype(np.float64), w.astype(np.float64)
        np.testing.assert_array_equal(np.isnan(g), np.isnan(w), err_msg=str(module))
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, err_msg=str(module))
    if name == "f32":
        from jitlib.testing import check_backends
        with np.errstate(invalid="ignore", over="ignore"):
            check_backends(fn, x, backends=("cpu", "jax"), rtol=rtol, atol=1e-30)


def test_a_row_read_first_by_its_max_pass_is_prefetched_further():
    # the prefetches go out from the sum pass: after a max pass they lead by 1.5 rows
    # (softmax, log-softmax) or, without a row-shaped output, by 1.25 (logsumexp);
    # where a sum pass comes first (layernorm) by one
    import jitlib
    from jitlib.backends.llvm import kernels
    from jitlib.fusion import optimize
    x = np.ones((512, 1024), np.float32)
    g = np.ones(1024, np.float32)
    programs = {
        "softmax": (_softmax, [x], 1536), "logsumexp": (_logsumexp, [x], 1280),
        "log-softmax": (_log_softmax, [x], 1536),
        "layernorm": (lambda x, g: (x - x.mean(-1, keepdims=True))
                      / np.sqrt(x.var(-1, keepdims=True) + 1e-5) * g, [x, g], 1024),
        "row sum": (lambda x: x.sum(-1), [x], 1024),
    }
    for name, (fn, args, ahead) in programs.items():
        (fusion,) = [i for i in optimize(jitlib.make_ir(fn)(*args)).instructions
                     if i.op is Op.FUSION and i.attrs["kind"] == "reduction"]
        emitter = kernels._ReductionEmitter("k", fusion.attrs["body"])
        assert emitter.ahead == ahead, name
        ir = emitter.render()
        assert "@llvm.prefetch" in ir, name
        # the results do not depend on it: the last rows' prefetches point past the end
        exe = LLVM.compile(jitlib.make_ir(fn)(*args))
        for got, want in zip(exe(*args), evaluate(jitlib.make_ir(fn)(*args), args)):
            np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-30, err_msg=name)


def _grouped_order(x):
    """Row sums of a 2-D float32/float64 array in the order of `grouped_block` (rows a
    whole number of SUM_BLOCKs): per block, SUM_VECTORS accumulators of 64 bytes add
    the block's groups lane by lane, are added in order, halved down to one lane; the
    block sums are added with Neumaier's compensation. NumPy's float32 adds are single
    IEEE additions, so this is the kernel's arithmetic, step for step."""
    from jitlib.backends.llvm import kernels
    dt = x.dtype.type
    rows, cols = x.shape
    width = 64 // x.dtype.itemsize
    group = kernels.SUM_VECTORS * width
    total = np.full(rows, -0.0, dt)
    comp = np.full(rows, -0.0, dt)
    for b in range(0, cols, kernels.SUM_BLOCK):
        acc = np.full((rows, kernels.SUM_VECTORS, width), -0.0, dt)
        for s in range(b, b + kernels.SUM_BLOCK, group):
            acc += x[:, s:s + group].reshape(rows, kernels.SUM_VECTORS, width)
        v = acc[:, 0]
        for k in range(1, kernels.SUM_VECTORS):
            v = v + acc[:, k]
        while v.shape[1] > 1:
            half = v.shape[1] // 2
            v = v[:, :half] + v[:, half:]
        block = v[:, 0]
        new = total + block
        big = np.abs(total) >= np.abs(block)
        hi, lo = np.where(big, total, block), np.where(big, block, total)
        comp = comp + ((hi - new) + lo)
        total = new
    keep = (comp == 0) | ~np.isfinite(total)
    return np.where(keep, total, total + comp)


@pytest.mark.parametrize("name", ["f32", "f64"])
@pytest.mark.parametrize("kind", ["positive", "signed", "offset"])
def test_prefetching_row_sums_add_in_the_grouped_order(name, kind):
    # a kernel over enough data to be shared between threads prefetches the next row,
    # and then sums each full block in explicit vectors (`grouped_block`): the order is
    # fixed on every host, so the bits are checked against it exactly
    dt = FLOATS[name]
    rows, cols = (512, 1024) if dt == np.float32 else (256, 1024)   # 2 MiB: prefetched
    x = _mixed(kind, rows * cols, np.random.default_rng(7)).astype(dt).reshape(rows, cols)
    module = Module("rows", [p := B.parameter(0, x.shape, x.dtype)],
                    [B.reduce(Op.REDUCE_SUM, p, (1,))])
    ir = _reduction_kernel(module).ir
    assert "@llvm.prefetch" in ir and f"<{64 // dt.itemsize} x " in ir, ir
    (got,) = LLVM.compile(module)(x)
    _bits_equal(got, _grouped_order(x), f"grouped order, {name} {kind}")
    exact = np.array([math.fsum(r) for r in x.astype(np.float64)])
    bound = (256 + 2) * np.finfo(dt).eps / 2 * np.abs(x.astype(np.float64)).sum(axis=1)
    assert np.all(np.abs(got.astype(np.float64) - exact) <= bound)


@pytest.mark.parametrize("name", list(FLOATS))
@pytest.mark.parametrize("cols", [300, 1000, 4096])
@pytest.mark.parametrize("fn", [_softmax, _logsumexp, _softmax_and_max])
def test_grouped_blocks_keep_special_values(fn, name, cols):
    # _special_rows repeated over more than 1 MiB, so that the kernel prefetches and sums
    # its full blocks in explicit vectors, the last partial block (300, 1000) as before:
    # NaN where the interpreter gives NaN, and its values, as in the small-row test above
    import jitlib
    dt = FLOATS[name]
    base = _special_rows(dt, cols)
    reps = -(-(1 << 20) // (base.nbytes)) + 1
    x = np.concatenate([base] * reps)
    module = jitlib.make_ir(fn)(x)
    ir = _reduction_kernel(module).ir
    assert "@llvm.prefetch" in ir and "splat (" in ir, ir
    exe = LLVM.compile(module)
    assert not exe.fallbacks
    got = exe(x)
    rtol = {"f16": 0.1, "bf16": 0.5, "f32": 4e-6, "f64": 1e-13}[name]
    atol = {"f16": 1e-7, "bf16": 1e-37, "f32": 1e-40, "f64": 1e-300}[name]
    x32 = x if name in ("f32", "f64") else x.astype(np.float32)
    ref = module if x32 is x else jitlib.make_ir(fn)(x32)
    with np.errstate(invalid="ignore", over="ignore"):
        want = evaluate(ref, [x32])
    for g, w in zip(got, want):
        g, w = g.astype(np.float64), w.astype(np.float64)
        np.testing.assert_array_equal(np.isnan(g), np.isnan(w), err_msg=str(module))
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, err_msg=str(module))
    # every repeat of the rows gives the same bits (the order depends on the row only)
    for g in got:
        per = g.reshape(reps, -1)
        _bits_equal(per, np.broadcast_to(per[0], per.shape), "rows repeated")
