"""f32 matrix products on the tensor cores at f32-like accuracy (the dot kernels' part).

The tensor cores do TF32 at about 4x the FMA units' f32 rate but round inputs to 10
mantissa bits, which NumPy's answers would not survive.
Splitting an operand into a high part and a low part that the tensor cores take exactly
buys the accuracy back for a few products (JITLIB_GPU_F32_DOT, jitlib/config.py):

  tf32x3   f32 x f32: Triton's input_precision="tf32x3" (a = a_hi + a_lo in TF32,
           a_hi*b_hi + a_hi*b_lo + a_lo*b_hi, about 2^-21 relative per product), then a
           test of the finished accumulator tile: a tile with any inf or NaN sum is
           computed again with IEEE products (`recheck`, which says why that is sound).
           No pass over the operands first: one cost more than tf32x3 saved.
  bf16x2   f32 x bf16 (NumPy's bf16 @ bf16 is f32, so a bf16 MLP's second product is
           f32 @ bf16): the f32 operand as two bf16 halves, two bf16 products, each exact
           in f32 (about 2^-17 relative). No test needed: see `split_bf16`.
  ieee     exact f32 products on the FMA units.
  tf32     one TF32 product (inputs rounded to 10 mantissa bits), only where the user
           asked for it: matmul_precision="default", as jax.jit's default on GPUs.

The default ("auto") takes bf16x2 for f32 x bf16; for f32 x f32 its kernels hold both the
tf32x3 and the IEEE loop behind a constexpr (TF32X3) that the launch config sets, so the
autotuner times both and keeps the faster per shape: see `mode`.
"""
import numpy as np

from jitlib import config
from jitlib.backends.triton.source import F32, literal
from jitlib.hlo import dtypes

# |x| from here up rounds to inf in bf16 (past the largest finite, (2 - 2^-7) * 2^127)
BF16_ROUND_LIMIT = float((2.0 - 2.0 ** -8) * 2.0 ** 127)


def mode(lhs_source, rhs_source, tile_dt, precision=None):
    """How a dot kernel multiplies, from the operands' memory types, its tile type and
    the dot's `precision` attribute (jit's matmul_precision): "tf32" (one TF32 product,
    "default"), "tf32x3" ("high", or the knob's choice), "either" (f32 x f32 under
    "auto": tf32x3 or IEEE as the config's TF32X3 says), "bf16x2" or "ieee" for f32
    tiles, None for 16-bit and f64 tiles."""
    if np.dtype(tile_dt) != F32:
        return None
    if precision == "default":
        return "tf32"
    if precision == "high":
        return "tf32x3"
    knob = config.gpu_f32_dot()
    if knob == "ieee":
        return "ieee"
    names = sorted([dtypes.name(lhs_source), dtypes.name(rhs_source)])
    if names == ["f32", "f32"]:
        # "auto": neither wins everywhere. tf32x3 is faster on a wide output (mlp's first
        # product), slower on one of few programs (its second): docs/performance.md
        return "tf32x3" if knob == "tf32x3" else "either"
    if names == ["bf16", "f32"]:
        return "bf16x2"
    return "ieee"    # f32 x f16: f16 halves would overflow at 65504


def recheck(acc):
    """Source of the test after a tile's tf32x3 products: true when the tile must be
    computed again with IEEE products. Sound because the split goes wrong only in ways
    that leave a non-finite sum in the tile:

    - an inf or NaN operand element a[i, k] makes every IEEE result of row i inf or NaN
      (inf * b is inf, or NaN where b is 0), and under tf32x3 its high part is inf or
      NaN too, so the high products make those sums non-finite (the low part is inf -
      inf = NaN; Triton 3.6 zeroes a NaN sum of the low products, earlier versions
      kept it: non-finite either way); likewise a column of b;
    - a finite |x| >= (2 - 2^-11) * 2^127 rounds (cvt.rna) to an inf high part: its
      products are inf or NaN, so the tile is recomputed, exactly;
    - a product or partial sum that overflows stays inf or becomes NaN (inf - inf): no
      later addition makes it finite again.
    At the small end, a low part below 2^-126 may lose bits, an absolute error under
    2^-126 * |b| per product: below the f32 roundings of any sum that is not itself
    near underflow. What stays different: a sum within ~2^-11 of the f32 limit can be
    finite here and inf in NumPy, or the other way round, as reordering the f32 sums
    can do (docs/gpu_numerics.md). Masked lanes load 0 and sum to 0."""
    # NaN compares false, so it counts as non-finite
    return f"tl.sum(tl.where(tl.abs({acc}) < {literal(np.inf, F32)}, 0, 1)) != 0"


def split_bf16(w, value):
    """(hi, lo): bf16 tiles with hi + lo = `value` (f32) to about 2^-17 relative; hi is
    `value` rounded to nearest bf16 (asked for explicitly: Triton's interpreter would
    truncate), lo the rounded rest. A magnitude that would round up past bf16's largest
    finite value is truncated to it instead (the rest is then < 2^-7 of it, and lo still
    carries it to 2^-17), so only inf and NaN make a non-finite hi. An inf's lo is NaN,
    and so is a low product of 0 with an inf of the other operand: `merge_low` drops a
    non-finite low sum, whose element the high sum already makes inf or NaN."""
    limit = literal(BF16_ROUND_LIMIT, F32)   # (NaN compares false: it stays NaN)
    rtne = 'fp_downcast_rounding="rtne"'
    cut = w.let(f"({value}.to(tl.int32, bitcast=True) & -65536).to(tl.float32, "
                "bitcast=True)", "cut")
    hi = w.let(f"tl.where(tl.abs({value}) >= {limit}, {cut}, {value})"
               f".to(tl.bfloat16, {rtne})", "hi")
    lo = w.let(f"({value} - {hi}.to(tl.float32)).to(tl.bfloat16, {rtne})", "lo")
    return hi, lo


def merge_low(acc, acc_lo):
    """Source adding the low products' sum to the high one, where it is finite."""
    return f"{acc} + tl.where(tl.abs({acc_lo}) < {literal(np.inf, F32)}, {acc_lo}, 0.0)"
