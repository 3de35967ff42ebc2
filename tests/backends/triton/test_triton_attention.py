"""The fused attention kernel (jitlib/backends/triton/attention.py): dot -> row softmax ->
dot generated as one Triton kernel with an online softmax.

Paths: numerics under Triton's interpreter (host buffers, no GPU, no PyTorch) against
jitlib's interpreter and JAX, with small tiles so every case streams several key blocks and
has masked tails; the kernels compile for sm_90 ahead of time; `-m gpu` runs them on the
GPU. Triton 3.6's interpreter multiplies bf16 tiles wrongly, so f16 stands in for the
16-bit scores there; bf16 compiles here and runs on the GPU.
"""
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from triton_cases import traced
from jitlib.backends import _cuda_gpu_visible
from jitlib.backends.jax import JaxBackend
from jitlib.backends.triton import TritonBackend, attention, compiler, configs
from jitlib.backends.triton.host import HostDevice
from jitlib.fusion import optimize
from jitlib.hlo import dtypes
from jitlib.hlo.interpreter import evaluate
from jitlib.testing import assert_allclose_tree

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")
PATH = "triton-interpreter (host buffers, no torch)"
TOL = {"f32": 2e-5, "f16": 1e-2, "bf16": 3e-2}


def attend(q, k, v):
    s = (q @ np.swapaxes(k, -1, -2)) * (1.0 / math.sqrt(q.shape[-1]))
    p = np.exp(s - np.max(s, axis=-1, keepdims=True))
    return (p / np.sum(p, axis=-1, keepdims=True)) @ v


def attend_masked(q, k, v, bias):
    s = q @ np.swapaxes(k, -1, -2) * 0.25 + bias
    p = np.exp(s - np.max(s, axis=-1, keepdims=True))
    return (p / np.sum(p, axis=-1, keepdims=True)) @ v


def attend_keeping_probs(q, k, v):
    s = q @ np.swapaxes(k, -1, -2)
    p = np.exp(s - np.max(s, axis=-1, keepdims=True))
    p = p / np.sum(p, axis=-1, keepdims=True)
    return p @ v, p


def qkv(batch, m, n, d, dv, dt="f32", seed=0):
    rng = np.random.default_rng(seed)
    t = dtypes.from_name(dt)
    return [rng.standard_normal(batch + s).astype(t) for s in ((m, d), (n, d), (n, dv))]


@pytest.fixture
def small_tiles(monkeypatch):
    """16x16 tiles: several key blocks per row and partial blocks at both ends."""
    monkeypatch.setattr(configs, "attention_config",
                        lambda m, n, itemsize: configs.Config({"BM": 16, "BN": 16}))


def run_fused(fn, args, tol, fused=1):
    module = traced(fn, args)
    exe = TritonBackend(HostDevice()).compile(module)
    assert exe.device.interpreted, PATH
    kinds = sorted(k.kind for k in exe.kernels.values())
    assert kinds.count("attention") == fused, f"{kinds}\n{exe.kernel_sources()}"
    got = exe(*args)
    why = f"{PATH}\n{exe.kernel_sources()}"
    assert_allclose_tree(got, evaluate(module, args), rtol=tol, atol=tol, err_msg=why)
    assert_allclose_tree(got, JaxBackend().compile(module)(*args), rtol=tol, atol=tol,
                         err_msg=why)
    return exe, got


@pytest.mark.parametrize("shape", [((2,), 40, 72, 24, 20), ((2, 3), 33, 17, 16, 8),
                                   ((), 16, 48, 32, 32)], ids=str)
@pytest.mark.parametrize("dt", ["f32", "f16"])
def test_attention_runs_as_one_kernel(small_tiles, shape, dt):
    exe, _ = run_fused(attend, qkv(*shape, dt=dt), TOL[dt])
    assert len(exe.kernels) == 1 and len(exe.absorbed) == 2, exe.kernel_sources()


def test_default_tiles_match(tmp_path):
    run_fused(attend, qkv((2,), 70, 130, 64, 64), TOL["f32"])


def test_nan_and_inf_rows_as_numpy(small_tiles):
    q, k, v = qkv((2,), 20, 40, 16, 16)
    q[1, 3] = np.nan                        # a NaN score: the row is NaN
    bias = np.zeros((20, 40), np.float32)
    bias[5, 7] = np.inf                     # +inf - +inf: the row is NaN
    bias[6] = -np.inf                       # no finite score: 0 / 0, NaN
    bias[8, :35] = -np.inf                  # finite only in the last key block
    bias[9, ::2] = -np.inf
    _, (got,) = run_fused(attend_masked, [q, k, v, bias], TOL["f32"])
    nan_rows = np.isnan(got).all(axis=-1)
    assert nan_rows[1, 3] and nan_rows[:, 5].all() and nan_rows[:, 6].all()
    assert np.isfinite(got[:, 8]).all() and np.isfinite(got[:, 9]).all()


def test_inf_keys_and_values_as_numpy(small_tiles):
    """An inf in a key or value block takes the IEEE products (tf32x3 would make NaN)."""
    q, k, v = qkv((2,), 20, 40, 16, 16)
    k[0, 5] = 0.0
    k[0, 5, 0] = -np.inf      # score -inf where q[.., 0] > 0 (key ignored), else +inf
    v[1, 30, 2] = np.inf      # column 2 of batch 1 is inf
    _, (got,) = run_fused(attend, [q, k, v], TOL["f32"])
    assert np.isfinite(got[0][q[0, :, 0] > 0]).all()
    assert np.isnan(got[0][q[0, :, 0] < 0]).all()
    assert (got[1, :, 2] == np.inf).all() and np.isfinite(np.delete(got[1], 2, 1)).all()


def test_stacked_attention_layers_each_fuse(small_tiles):
    q, k, v = qkv((2,), 24, 24, 16, 16)
    exe, _ = run_fused(lambda q, k, v: attend(attend(q, k, v), k, v), [q, k, v], TOL["f32"], 2)
    assert [kr.kind for kr in exe.kernels.values()] == ["attention", "attention"]


def test_chains_sharing_a_kernel_fuse_once(small_tiles):
    """The first attention's output kernel is the scores kernel of a second softmax @ w:
    only the first chain is fused, the second runs as its remaining two kernels."""
    def softmax_of_attention(q, k, v, w):
        o = attend(q, k, v)
        p = np.exp(o - np.max(o, axis=-1, keepdims=True))
        return (p / np.sum(p, axis=-1, keepdims=True)) @ w
    args = qkv((2,), 24, 24, 16, 16) + [np.ones((16, 8), np.float32)]
    exe, _ = run_fused(softmax_of_attention, args, TOL["f32"])
    assert [kr.kind for kr in exe.kernels.values()] == ["attention", "reduction", "dot"]


def test_probabilities_kept_as_an_output_stay_three_kernels():
    args = qkv((2,), 24, 40, 16, 16)
    module = traced(attend_keeping_probs, args)
    exe = TritonBackend(HostDevice()).compile(module)
    assert exe.absorbed == {} and sorted(k.kind for k in exe.kernels.values()) == [
        "dot", "dot", "reduction"]
    assert_allclose_tree(exe(*args), evaluate(module, args), rtol=2e-5, atol=2e-5)


def test_softmax_form_is_matched_exactly():
    """A max over another value, or a sum divided by something else, is not a softmax."""
    def shifted_by_other(q, k, v):
        s = q @ np.swapaxes(k, -1, -2)
        p = np.exp(s - np.max(s * 2.0, axis=-1, keepdims=True))
        return (p / np.sum(p, axis=-1, keepdims=True)) @ v
    module = traced(shifted_by_other, qkv((2,), 24, 40, 16, 16))
    for chain in attention.chains(optimize(module)):
        with pytest.raises(attention.Unsupported, match="max"):
            attention.render(chain)


def _kernel(fn, args):
    (chain,) = attention.chains(optimize(traced(fn, args)))
    return attention.render(chain).kernel


@pytest.mark.parametrize("dt", ["f32", "f16", "bf16"])
def test_attention_kernel_compiles_for_sm90(dt):
    kernel = _kernel(attend, qkv((4,), 300, 520, 64, 64, dt=dt))
    for config in configs.candidates(kernel)[:2]:
        ptx = compiler.compile_for(kernel, config=config).asm["ptx"]
        assert ".target sm_90" in ptx
        # the tensor cores: 16-bit tiles, or f32 ones as tf32x3 (wgmma on sm_90)
        assert "mma" in ptx, kernel.source
        assert "ex2.approx" in ptx, kernel.source
    # exp of the online softmax as ex2 of (x - m) * log2(e), not libdevice's longer expf
    assert "tl.math.exp2(" in kernel.source and "libdevice.exp(" not in kernel.source
    # bf16 @ bf16 is f32 in NumPy, so p is f32: split in two bf16 halves for the cores
    assert ("acc_lo" in kernel.source) == (dt == "bf16"), kernel.source


def test_lowered_kernels_text_shows_the_fused_kernel():
    import jitlib
    text = jitlib.jit(attend, backend="gpu").lower(*qkv((2,), 24, 40, 16, 16)).as_text(
        "kernels")
    assert text.count("computed inside fused_dot_general_2") == 2, text
    assert "def flash_fused_dot_general_0(" in text, text


def test_attention_source_reads_as_the_algorithm():
    source = _kernel(attend, qkv((2,), 64, 64, 32, 32)).source
    for text in ("running row max", "tl.PropagateNan.ALL", "acc * alpha",
                 "tl.div_rn(acc, l)", "for n0 in range(0, 64, BN)"):
        assert text in source, source


@pytest.mark.gpu
@pytest.mark.skipif(not _cuda_gpu_visible(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("dt", ["f32", "bf16", "f16"])
def test_attention_on_the_gpu(dt):
    from jitlib.backends.triton import default_device
    q, k, v = qkv((3,), 300, 520, 64, 64, dt=dt)
    q[1, 7] = np.nan
    v[2, 5, 3] = np.inf      # inf in column 3 of batch 2's output; 0 * inf is NaN
    v[2, 9, 4] = -np.inf
    k[0, 5] = 0
    k[0, 5, 0] = -np.inf     # scores -inf (key ignored) or +inf (NaN row) by q's sign
    module = traced(attend, [q, k, v])
    exe = TritonBackend(default_device()).compile(module)
    assert [kr.kind for kr in exe.kernels.values()] == ["attention"]
    got = exe(q, k, v)
    tol = TOL[dt]
    assert_allclose_tree(got, evaluate(module, [q, k, v]), rtol=tol, atol=tol,
                         err_msg=exe.kernel_sources())
    assert_allclose_tree(got, JaxBackend().compile(module)(q, k, v), rtol=tol, atol=tol)


@settings(max_examples=12, deadline=None)
@given(st.data())
def test_random_attention_with_nonfinite_values(data):
    """Random extents (tails everywhere, head dims under tl.dot's 16) and a few inf, -inf
    and NaN among q, k and v: the same NaN and inf positions as jitlib's interpreter."""
    dims = [data.draw(st.integers(2, hi)) for hi in (40, 50, 20, 20)]
    batch = data.draw(st.sampled_from([(), (2,)]))
    args = qkv(batch, *dims, seed=data.draw(st.integers(0, 99)))
    for a in args:
        for _ in range(data.draw(st.integers(0, 2))):
            spot = tuple(data.draw(st.integers(0, n - 1)) for n in a.shape)
            a[spot] = data.draw(st.sampled_from([np.inf, -np.inf, np.nan]))
    module = traced(attend, args)
    exe = TritonBackend(HostDevice()).compile(module)
    assert [k.kind for k in exe.kernels.values()] == ["attention"]
    assert_allclose_tree(exe(*args), evaluate(module, args), rtol=TOL["f32"],
                         atol=TOL["f32"], err_msg=exe.kernel_sources())
