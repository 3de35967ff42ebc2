"""The CPU backend's memory-traffic paths for kernels over data past the caches.

Row kernels prefetch the next row while computing this one (kernels.py,
`prefetch_ahead`); kernels that move more than streaming.STREAM_MIN_BYTES write their
outputs with non-temporal stores (streaming.py). These paths exist only in kernels that
are shared between threads, so the tests use arrays of several MiB (tens for streaming)
and check two things: the IR has the path where it should and not where it should not,
and the results equal the interpreter's, NaN positions, zeros' signs and infinities
included, with special values in the last rows (whose prefetches point past the array)
and around the unaligned ends of every share.
"""
import re

import numpy as np
import pytest

import jitlib
from jitlib.backends.llvm import LLVMBackend, kernels, parallel, streaming
from jitlib.backends.llvm.executable import NativeRunner
from jitlib.fusion import optimize
from jitlib.hlo import Op
from jitlib.hlo.interpreter import evaluate

LLVM = LLVMBackend()


def _kernels(module):
    return [kernels.render(f) for f in optimize(module).instructions if f.op is Op.FUSION]


def _softmax(x):
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)


def _logsumexp(x):
    m = np.max(x, axis=-1, keepdims=True)
    return np.log(np.sum(np.exp(x - m), axis=-1)) + m[..., 0]


def _layernorm(x):
    mu = np.mean(x, axis=-1, keepdims=True)
    var = np.mean((x - mu) * (x - mu), axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-5)


def _special_rows(rows, cols, dtype, seed=0):
    """Random rows, with NaN, infinities and signed zeros in the first and last rows."""
    x = np.random.default_rng(seed).normal(0, 3, (rows, cols)).astype(dtype)
    for r in (0, rows - 1):
        x[r, cols // 2] = np.nan
    x[1, 3], x[rows - 2, -1] = np.inf, -np.inf
    x[2] = -np.abs(x[2])
    x[2, 7] = 0.0
    x[rows - 3] = 0.0
    x[rows - 3, ::3] = -0.0
    x[rows - 4, :] = x[rows - 4, 0]         # all equal
    return x


def _same(got, want, rtol, what, atol=1e-30):
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=what)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=what)
    zero = want == 0
    np.testing.assert_array_equal(np.signbit(got[zero]), np.signbit(want[zero]), err_msg=what)


def test_row_kernels_prefetch_the_next_row_only_when_shared_out():
    big = jitlib.make_ir(_softmax)(np.ones((512, 1024), np.float32))     # 4 MiB
    small = jitlib.make_ir(_softmax)(np.ones((8, 1024), np.float32))     # runs whole
    (kernel,) = _kernels(big)
    assert "@llvm.prefetch" in kernel.ir, kernel.ir
    (kernel,) = _kernels(small)
    assert "@llvm.prefetch" not in kernel.ir, kernel.ir


def _prefetch_hints(ir):
    return set(re.findall(r"@llvm\.prefetch\.p0\(ptr %\w+, i32 0, i32 (\d), i32 1\)", ir))


@pytest.mark.parametrize("l1_host", [True, False])
@pytest.mark.parametrize("row_bytes, short", [
    (kernels.PREFETCH_L1_MAX_ROW_BYTES, True), (kernels.PREFETCH_L1_MAX_ROW_BYTES + 64, False)])
def test_short_rows_are_prefetched_into_l1_on_l1_hosts_the_rest_into_l2(
        monkeypatch, l1_host, row_bytes, short):
    # prefetcht0 for a row that fits beside the one being computed in L1, on a host that
    # takes it well (AMD Zen); prefetcht1 for longer rows, and for every row elsewhere
    monkeypatch.setattr(streaming, "l1_prefetch_host", lambda: l1_host)
    x = np.ones((parallel.MIN_PARALLEL_BYTES // row_bytes + 1, row_bytes // 4), np.float32)
    (kernel,) = _kernels(jitlib.make_ir(_logsumexp)(x))
    assert _prefetch_hints(kernel.ir) == {"3" if short and l1_host else "2"}, kernel.ir[:3000]


def test_the_l1_prefetch_host_rule_names_amd_zen():
    import llvmlite.binding as llvm
    assert streaming.l1_prefetch_host() == llvm.get_host_cpu_name().startswith("znver")


def test_no_prefetch_for_rows_too_long_to_stay_in_cache():
    cols = kernels.PREFETCH_MAX_ROW_BYTES // 4 + 16
    module = jitlib.make_ir(lambda x: np.sum(x, axis=-1))(np.ones((32, cols), np.float32))
    (kernel,) = _kernels(module)
    assert "@llvm.prefetch" not in kernel.ir


@pytest.mark.parametrize("fn", [_softmax, _logsumexp, _layernorm])
@pytest.mark.parametrize("dtype, rtol", [(np.float32, 4e-6), (np.float64, 1e-13)])
def test_shared_out_row_kernels_match_the_interpreter(fn, dtype, rtol):
    x = _special_rows(300, 1000, dtype)          # 300 rows: shares are not whole rows apart
    assert 2 * x.nbytes >= parallel.MIN_PARALLEL_BYTES
    # x - mean cancels where x is near the mean: the two sums' orders differ by a few
    # ulps of the row's scale, which the division by the deviation magnifies
    atol = 1e-30 if fn is not _layernorm else 64 * np.finfo(dtype).eps
    if fn is _layernorm:
        x[-4] = np.linspace(-1, 1, x.shape[1])   # not all equal: 0/0-like noise
    module = jitlib.make_ir(fn)(x)
    exe = LLVM.compile(module)
    assert not exe.fallbacks
    for got, want in zip(exe(x), evaluate(module, [x])):
        _same(got, want, rtol, f"{fn.__name__} {np.dtype(dtype)}", atol)


def _carried(fn, x):
    (kernel,) = _kernels(jitlib.make_ir(fn)(x))
    return "carried" in kernel.ir


def test_the_next_rows_max_is_carried_only_by_blind_maxima_of_whole_blocks():
    x = np.ones((parallel.MIN_PARALLEL_BYTES // 4096 + 1, 1024), np.float32)
    assert _carried(_softmax, x) and _carried(_logsumexp, x)
    assert _carried(_softmax, x.astype(np.float64))
    assert not _carried(_layernorm, x)                             # no max
    assert not _carried(lambda x: (np.max(x, axis=1), np.sum(x, axis=1)), x)   # shown
    assert not _carried(_softmax, x.astype(np.float16))             # not loaded as it is
    assert not _carried(lambda x: _softmax(x * 2.0), x)             # max of a computed value
    odd = np.ones((parallel.MIN_PARALLEL_BYTES // 4000 + 1, 1000), np.float32)
    assert not _carried(_softmax, odd)                              # a partial sum block


@pytest.mark.parametrize("fn", [_softmax, _logsumexp])
@pytest.mark.parametrize("dtype, rtol", [(np.float32, 4e-6), (np.float64, 1e-13)])
@pytest.mark.parametrize("parts", [1, 2, 3, 7])
def test_carried_maxima_give_the_interpreters_results_in_any_split(fn, dtype, rtol, parts):
    # every row but the first of each part takes its max from the previous row's sum
    # pass; the rows of specials (NaN, infinities, zeros of both signs, all equal) sit
    # first, last and between
    x = _special_rows(301, 1024, dtype, seed=7)
    x[150] = -np.inf
    x[151] = 0.0
    x[152, ::2] = -0.0
    module = jitlib.make_ir(fn)(x)
    (kernel,) = _kernels(module)
    assert "carried" in kernel.ir
    runner = NativeRunner(kernel)
    outs = [np.empty(o.shape, o.dtype) for o in kernel.outputs]
    for part in range(parts):
        runner._fn(x.ctypes.data, *[o.ctypes.data for o in outs], part, parts)
    for got, want in zip(outs, evaluate(module, [x])):
        _same(got, want, rtol, f"{fn.__name__} {np.dtype(dtype)} parts={parts}")


@pytest.mark.parametrize("fn", [_softmax, _logsumexp])
def test_carried_maxima_of_rows_in_a_batch(fn):
    # kept dims (batch, row): the next row's start crosses from one batch to the next
    x = np.random.default_rng(8).normal(0, 3, (6, 100, 512)).astype(np.float32)
    x[2, 99, 7], x[3, 0], x[3, 1], x[3, 2, ::2] = np.nan, -np.inf, 0.0, -0.0
    module = jitlib.make_ir(fn)(x)
    (kernel,) = _kernels(module)
    assert "carried" in kernel.ir
    exe = LLVM.compile(module)
    for got, want in zip(exe(x), evaluate(module, [x])):
        _same(got, want, 4e-6, fn.__name__)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_shared_out_row_max_and_min_are_exact(dtype):
    # the vector max has no NaN semantics of its own: a detector in the same loop sends
    # rows with NaN or infinities (and zero results) to the in-order fold
    x = _special_rows(257, 2048, dtype, seed=3)
    x[5, :] = -np.inf
    x[6, -1] = np.nan                            # NaN in the vector loop's last element
    module = jitlib.make_ir(lambda x: (np.max(x, axis=1), np.min(x, axis=1)))(x)
    exe = LLVM.compile(module)
    for got, want in zip(exe(x), evaluate(module, [x])):
        _same(got, want, 0, "max/min")


# -- streaming stores

def _loop_kernel(fn, *args):
    (kernel,) = _kernels(jitlib.make_ir(fn)(*args))
    return kernel


def _streamed_size(dtype, outputs=1, inputs=1):
    """An element count whose kernel just passes STREAM_MIN_BYTES, and is no whole
    number of blocks."""
    item = np.dtype(dtype).itemsize
    return streaming.STREAM_MIN_BYTES // (item * (inputs + outputs)) + 37


def test_large_loop_kernels_stream_and_fence_small_ones_do_not():
    n = _streamed_size(np.float32)
    big = _loop_kernel(lambda x: np.exp(x) * 2.0, np.ones(n, np.float32))
    assert "!nontemporal" in big.ir and "sfence" in big.ir, big.ir
    below = _loop_kernel(lambda x: np.exp(x) * 2.0, np.ones(n // 4, np.float32))
    assert "!nontemporal" not in below.ir and "sfence" not in below.ir
    assert "@llvm.prefetch" not in below.ir


@pytest.mark.parametrize("l1_host", [True, False])
def test_streamed_loop_kernels_prefetch_each_full_size_input_ahead(monkeypatch, l1_host):
    # one prefetch per line of each block of every input read at the output's index
    # (float64 `a`: twice the lines of the float32 output), none for the broadcast row
    monkeypatch.setattr(streaming, "l1_prefetch_host", lambda: l1_host)
    n = _streamed_size(np.float32, inputs=2)
    kernel = _loop_kernel(lambda a, b, c: (a * b + c[0]).astype(np.float32),
                          np.ones(n), np.ones(n, np.float32), np.ones((1,), np.float32))
    assert "!nontemporal" in kernel.ir
    assert _prefetch_hints(kernel.ir) == {"3" if l1_host else "2"}, kernel.ir[:3000]
    block = re.search(r"^blocks\d+:$(.*?)^\w+\d+:$", kernel.ir, re.M | re.S).group(1)
    assert block.count("@llvm.prefetch") == 3 * streaming.BLOCK_BYTES // streaming.LINE, \
        kernel.ir[:3000]
    ahead = re.findall(r"add (?:nsw )?i64 %\w+, (\d+)\n\s+%\w+ = getelementptr i8, ptr (%in\d)",
                       block)
    by_input = {}
    for d, ptr in ahead:
        by_input.setdefault(ptr, set()).add(int(d) - streaming.INPUT_PREFETCH_BYTES)
    lines = streaming.BLOCK_BYTES // streaming.LINE
    assert sorted(map(sorted, by_input.values())) == [
        list(range(0, lines * 64, 64)), list(range(0, 2 * lines * 64, 64))], block


def _positive_terms(x):   # exp inlined from mathlib; no cancellation to magnify its ulps
    return np.exp(x * 0.5) + np.abs(x) * 3.0


def _specials(n, dtype, seed):
    x = np.random.default_rng(seed).normal(0, 4, n).astype(dtype)
    with np.errstate(over="ignore"):
        for at in (0, 1, n // 2 - 1, n // 2, n // 2 + 1, n - 2, n - 1):   # share edges
            x[at] = [np.nan, np.inf, -np.inf, -0.0, 0.0, 1e30, -1e30][at % 7]
    return x


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_streamed_loop_kernels_match_the_interpreter(dtype):
    x = _specials(_streamed_size(dtype), dtype, 1)
    module = jitlib.make_ir(_positive_terms)(x)
    (kernel,) = _kernels(module)
    assert "!nontemporal" in kernel.ir
    exe = LLVM.compile(module)
    assert not exe.fallbacks
    (got,), (want,) = exe(x), evaluate(module, [x])
    rtol = {np.float16: 1e-3, np.float32: 4e-6, np.float64: 1e-13}[dtype]
    _same(got.astype(np.float64), want.astype(np.float64), rtol, str(np.dtype(dtype)))


@pytest.mark.parametrize("offset", [0, 4, 16, 60, 2])
@pytest.mark.parametrize("parts", [1, 2, 3])
def test_streamed_stores_at_any_alignment_and_split(offset, parts):
    # the output starts `offset` bytes past a line: the head before the first line and
    # the tail differ; an offset that is no multiple of the item size never streams
    n = _streamed_size(np.float32, inputs=2)
    rng = np.random.default_rng(offset)
    a, b = (rng.standard_normal(n, dtype=np.float32) for _ in range(2))
    kernel = _loop_kernel(lambda a, b: np.maximum(a * b, 0.0), a, b)
    assert "!nontemporal" in kernel.ir
    runner = NativeRunner(kernel)
    memory = np.full(n * 4 + 128, 0xAB, np.uint8)
    at = (-memory.ctypes.data) % 64 + offset
    out = memory[at:at + n * 4].view(np.float32)
    fn = runner._fn
    pointers = [a.ctypes.data, b.ctypes.data, out.ctypes.data]
    for part in range(parts):
        fn(*pointers, part, parts)
    np.testing.assert_array_equal(out, np.maximum(a * b, np.float32(0.0)))
    assert (memory[:at] == 0xAB).all() and (memory[at + n * 4:] == 0xAB).all()


@pytest.mark.parametrize("fn", [_softmax, _layernorm])
@pytest.mark.parametrize("dtype, rtol", [(np.float32, 4e-6), (np.float64, 1e-13)])
def test_streamed_row_kernels_match_the_interpreter(fn, dtype, rtol):
    # rows of 2100: each row starts at a different offset within a line, so every row
    # has its own unaligned head and tail; softmax keeps exp in the row buffer
    rows = streaming.STREAM_MIN_BYTES // (2 * 2100 * np.dtype(dtype).itemsize) + 3
    x = _special_rows(rows, 2100, dtype, seed=5)
    if fn is _layernorm:
        x[-4] = np.linspace(-1, 1, x.shape[1])
    module = jitlib.make_ir(fn)(x)
    (kernel,) = _kernels(module)
    assert "!nontemporal" in kernel.ir and "@llvm.prefetch" in kernel.ir
    exe = LLVM.compile(module)
    atol = 1e-30 if fn is not _layernorm else 64 * np.finfo(dtype).eps
    for got, want in zip(exe(x), evaluate(module, [x])):
        _same(got, want, rtol, f"{fn.__name__} {np.dtype(dtype)}", atol)


def test_rows_too_long_for_the_row_buffer_keep_plain_stores():
    cols = streaming.ROW_BUFFER_BYTES // 4 + 16
    x = np.ones((streaming.STREAM_MIN_BYTES // (8 * cols) + 1, cols), np.float32)
    (kernel,) = _kernels(jitlib.make_ir(_softmax)(x))
    assert "!nontemporal" not in kernel.ir


def test_short_rows_keep_plain_stores():
    # attention's 512-wide softmax rows: no faster streamed, and slower to compile
    cols = streaming.ROW_STREAM_MIN_BYTES // 4 // 2
    x = np.ones((streaming.STREAM_MIN_BYTES // (8 * cols) + 1, cols), np.float32)
    (kernel,) = _kernels(jitlib.make_ir(_softmax)(x))
    assert "!nontemporal" not in kernel.ir and "@llvm.prefetch" in kernel.ir


def test_streamed_stores_reach_the_machine_code():
    # LLVM drops !nontemporal it cannot honour (an unaligned vector): check the assembly
    from jitlib.backends.llvm.compiler import get_compiler
    if streaming.platform.machine().lower() not in ("x86_64", "amd64"):
        pytest.skip("the assembly check reads x86 mnemonics")
    n = _streamed_size(np.float32)
    kernel = _loop_kernel(lambda x: np.exp(x) * 2.0, np.ones(n, np.float32))
    asm = get_compiler().assembly(kernel.ir)
    assert re.search(r"\bv?movntps\s+%[xyz]mm", asm), asm[:3000]
    assert "sfence" in asm
    assert not re.findall(r"^\s*call\w*\s+(\S+)", asm, re.M)
