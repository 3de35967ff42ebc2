"""The sort kernel (backends/triton/sort.py) under Triton's interpreter, bit for bit
against the interpreter's sort: stable order among equal keys, NaN last, -0.0 equal to
0.0, each sorted value the very key a stable sort puts there (payload and sign bits)."""
import numpy as np
import pytest

from test_triton_aot import compile_sm90
from triton_cases import rendered
from jitlib.backends.triton import TritonBackend, sort
from jitlib.backends.triton.host import HostDevice
from jitlib.hlo import build as B, dtypes
from jitlib.hlo.interpreter import evaluate
from jitlib.hlo.ir import Module

GPU = TritonBackend(HostDevice())
NAMES = ["f64", "f32", "f16", "bf16", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64",
         "bool"]
SHAPES = [(1,), (5,), (3, 7), (2, 3, 33), (130, 5), (2, 300)]


def _sort_module(name, shape, indices, dimension=-1, keys=1):
    params = [B.parameter(k, shape, dtypes.from_name(name), f"k{k}") for k in range(keys)]
    return Module("s", params, [B.sort(params, dimension % len(shape), indices)])


def _float_pool(dt):
    """Bit patterns where a sort can go wrong: both zeros, NaNs of either sign with
    different payloads, infinities, the smallest subnormals, and a few plain values."""
    bits = 8 * dt.itemsize
    uint = np.dtype(f"u{dt.itemsize}")
    inf = int(np.array(np.inf, dt).view(uint))
    sign = 1 << (bits - 1)
    special = [0, sign, inf, inf | sign, inf + 1, inf + 3, (inf + 1) | sign,
               (inf + 5) | sign, (1 << bits) - 1, 1, 1 | sign]
    plain = np.array([1.0, -1.0, 2.5, -2.5, 0.5], dt).view(uint).tolist()
    return np.array(special + plain, uint).view(dt)


def _keys(name, shape, seed):
    """Tie-heavy keys: a few values drawn with many repeats."""
    rng, dt = np.random.default_rng(seed), dtypes.from_name(name)
    if name == "bool":
        return rng.random(shape) < 0.5
    if dtypes.is_float(dt):
        return rng.choice(_float_pool(dt), shape)
    info = np.iinfo(dt)
    pool = [int(info.min), int(info.max), 0, 1, 2, int(info.max) // 2]
    if info.min < 0:
        pool += [-1, -2, int(info.min) + 1]
    return rng.choice(np.array(pool, dt), shape)


def _bits(a):
    a = np.ascontiguousarray(a)
    return a.view(f"u{a.dtype.itemsize}") if a.dtype.itemsize > 1 else a.view(np.uint8)


def _run_and_compare(module, args):
    exe = GPU.compile(module)
    assert exe.device.interpreted
    assert not exe.fallbacks, exe.fallbacks
    assert [k.kind for k in exe.kernels.values()] == ["sort"]
    got, want = exe(*args), evaluate(module, args)
    got, want = np.asarray(got[0]), np.asarray(want[0])
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(_bits(got), _bits(want), err_msg=exe.kernel_sources())


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("indices", [False, True], ids=["values", "argsort"])
def test_sort_matches_the_interpreter_bit_for_bit(name, indices):
    # argsort runs the same network with an index payload whatever the key type: half
    # the shapes (each one a program on Triton's interpreter, 0.5-1 s) cover it
    for seed, shape in enumerate(SHAPES):
        if indices and seed % 2 == 0:
            continue
        module = _sort_module(name, shape, indices)
        _run_and_compare(module, [_keys(name, shape, seed)])


@pytest.mark.slow   # a minute a case on Triton's interpreter
@pytest.mark.parametrize("name", ["f32", "f64"])
@pytest.mark.parametrize("indices", [False, True], ids=["values", "argsort"])
def test_the_longest_row_one_program_sorts(name, indices):
    shape = (1, sort.MAX_ROW)
    _run_and_compare(_sort_module(name, shape, indices), [_keys(name, shape, 7)])


def test_float32_permutation_of_every_kind_of_tie():
    # -0.0 before 0.0 in the input and after it: the stable order keeps each as it came
    x = np.array([[0.0, -0.0, np.nan, -np.nan, 1.0, -0.0, 0.0, np.inf, -np.inf, 1.0]],
                 np.float32)
    module = _sort_module("f32", x.shape, True)
    exe = GPU.compile(module)
    got = np.asarray(exe(x)[0])
    np.testing.assert_array_equal(got, [[8, 0, 1, 5, 6, 4, 9, 7, 2, 3]])
    assert got.dtype == np.int64


@pytest.mark.parametrize("name,shape,dimension,keys,why", [
    ("f32", (3, 7), 0, 1, "other than the last"), ("f64", (3, 7), -1, 2, "lexsort"),
    ("f32", (1, sort.MAX_ROW + 1), -1, 1, "longer than")])
def test_sorts_not_generated_fall_back_with_the_reason(name, shape, dimension, keys, why):
    module = _sort_module(name, shape, True, dimension, keys)
    exe = GPU.compile(module)
    (reason,) = exe.fallbacks.values()
    assert why in reason and "interpreter" in reason, reason
    args = [_keys(name, shape, k) for k in range(keys)]
    np.testing.assert_array_equal(np.asarray(exe(*args)[0]),
                                  np.asarray(evaluate(module, args)[0]))


@pytest.mark.parametrize("name,shape", [("f32", (3, 7)), ("bf16", (5, 300)),
                                        ("i8", (2, 17)), ("f32", (1, sort.MAX_ROW)),
                                        ("f64", (4, 9)), ("i64", (1, sort.MAX_ROW))])
@pytest.mark.parametrize("indices", [False, True], ids=["values", "argsort"])
def test_sort_kernels_compile_for_sm90(name, shape, indices):
    ((_, kernel),) = rendered(_sort_module(name, shape, indices))
    assert kernel.kind == "sort", kernel
    ptx = compile_sm90(kernel)
    assert "ld.local" not in ptx, "the tile spills out of registers"


def test_np_sort_through_jit_runs_the_sort_kernel(monkeypatch):
    import jitlib
    from jitlib import backends
    monkeypatch.setitem(backends._instances, "gpu", GPU)
    x = _keys("f32", (4, 37), 3)
    for fn, kind in ((np.sort, None), (np.argsort, "stable")):
        f = jitlib.jit(lambda v: fn(v, axis=-1, kind=kind), backend="gpu")
        text = f.lower(x).as_text("kernels")
        assert "tl.sort" in text and "not generated" not in text, text
        # the sort op is NumPy's stable sort, whatever `kind` asked for
        want = fn(x, axis=-1, kind="stable")
        np.testing.assert_array_equal(_bits(np.asarray(f(x))), _bits(want))
