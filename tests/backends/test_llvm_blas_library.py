"""The CPU backend's float products (jitlib/backends/llvm/blas_library.py): NumPy's
OpenBLAS, or where it runs AVX2 kernels on an AVX-512 host, a private single-threaded
copy of it with AVX-512 kernels, split by rows between jitlib's threads.

Checked: which cores ask for the copy; that the copy, where loaded, really runs other
kernels than NumPy's; products of many shapes (batches, one row, empty contraction, a
split that crosses a batch boundary, float64) against the interpreter within the
product tolerance; JITLIB_BLAS=numpy, the default, keeps the interpreter's bits."""
import numpy as np
import pytest

import jitlib
from jitlib.backends.llvm import blas_library

AVX512 = set(blas_library._AVX512_FLAGS)


@pytest.mark.parametrize("core, flags, want", [
    (b"Haswell", AVX512 | {"avx2"}, "SkylakeX"),
    (b"Zen", AVX512 | {"avx512_bf16"}, "SkylakeX"),
    (b"Haswell", {"avx2", "avx512f"}, None),          # no AVX512-BW/DQ/VL: keep AVX2
    (b"SkylakeX", AVX512, None),                       # NumPy's already runs AVX-512
    (b"Cooperlake", AVX512, None),
])
def test_the_copy_is_wanted_only_for_avx2_kernels_on_an_avx512_host(core, flags, want):
    assert blas_library.wanted_core(core, flags) == want


@pytest.fixture
def private(monkeypatch):
    monkeypatch.setenv("JITLIB_BLAS", "private")


def test_the_loaded_copy_runs_the_kernels_it_asked_for(private):
    found = blas_library._numpys_library()
    library = blas_library._loader.library()
    wanted = found and blas_library.wanted_core(found[1], blas_library._host_flags())
    if wanted:
        assert library is not None, blas_library._loader.reason
        assert library.corename == wanted.encode() != found[1]
        assert "private copy" in blas_library.describe()
    else:
        assert library is None and "NumPy's OpenBLAS" in blas_library.describe()


def _matmul(a, b):
    return a @ b


SHAPES = [
    ((64, 32), (32, 48)),
    ((1, 300), (300, 7)),                 # one row: never split
    ((5, 0), (0, 6)),                     # empty contraction: zeros
    ((3, 5, 512), (3, 512, 4096)),        # split by rows across batch boundaries
    ((2, 129, 257), (257, 1031)),         # batch broadcast on the right
    ((1024, 96), (96, 1024)),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shapes", SHAPES, ids=str)
def test_products_match_the_interpreter(dtype, shapes, private):
    rng = np.random.default_rng(1)
    a, b = (rng.standard_normal(s).astype(dtype) for s in shapes)
    got = jitlib.jit(_matmul, backend="cpu")(a, b)
    want = jitlib.jit(_matmul, backend="interpreter")(a, b)
    assert got.shape == want.shape and got.dtype == want.dtype
    # each result is a sum of k products: compare against the sum of their magnitudes
    scale = np.abs(a) @ np.abs(b) + 1e-30
    tol = 8 * a.shape[-1] * np.finfo(dtype).eps
    assert np.all(np.abs(got - want) <= tol * scale), np.max(np.abs(got - want) / scale)


def test_epilogue_and_transposed_operands_through_the_copy():
    rng = np.random.default_rng(2)
    q, k = (rng.standard_normal((4, 256, 64)).astype(np.float32) for _ in range(2))
    fn = lambda q, k: np.maximum(q @ np.swapaxes(k, -1, -2) * 0.125, 0.0)  # noqa: E731
    got = jitlib.jit(fn, backend="cpu")(q, k)
    want = fn(q, k)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_blas_numpy_keeps_the_interpreters_bits(monkeypatch):
    monkeypatch.setenv("JITLIB_BLAS", "numpy")
    rng = np.random.default_rng(3)
    a = rng.standard_normal((3, 200, 300)).astype(np.float32)
    b = rng.standard_normal((3, 300, 500)).astype(np.float32)
    got = jitlib.jit(_matmul, backend="cpu")(a, b)
    np.testing.assert_array_equal(got, jitlib.jit(_matmul, backend="interpreter")(a, b))
    assert "JITLIB_BLAS=numpy" in blas_library.describe()


def test_the_private_copy_is_opt_in(monkeypatch):
    monkeypatch.delenv("JITLIB_BLAS", raising=False)
    assert not blas_library.uses_copy(1 << 40)
    assert "the default" in blas_library.describe()


def test_a_bad_setting_is_an_error(monkeypatch):
    monkeypatch.setenv("JITLIB_BLAS", "mkl")
    with pytest.raises(ValueError, match="JITLIB_BLAS"):
        blas_library.describe()


def test_small_products_stay_on_numpys_copy(monkeypatch, private):
    # below blas_threads.SMALL_PRODUCT multiply-adds: NumPy's copy, single-threaded, so a
    # served model's small batches never wait for the private copy to load; the same
    # bits as with JITLIB_BLAS=numpy
    rng = np.random.default_rng(4)
    a = rng.standard_normal((100, 64)).astype(np.float32)
    b = rng.standard_normal((64, 256)).astype(np.float32)
    assert not blas_library.uses_copy(100 * 64 * 256)
    assert blas_library.uses_copy(blas_library.blas_threads.SMALL_PRODUCT)
    auto = jitlib.jit(_matmul, backend="cpu")(a, b)
    monkeypatch.setenv("JITLIB_BLAS", "numpy")
    np.testing.assert_array_equal(auto, jitlib.jit(_matmul, backend="cpu")(a, b))
