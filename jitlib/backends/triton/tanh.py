"""tanh of float32 values in generated kernels, without a branch.

libdevice's tanhf takes one of two paths per element (an odd polynomial below 0.6, else
1 - 2/(e + 1) with e from the hardware's approximate 2^x), and ptxas keeps that as a
branch. gelu's arguments fall on both sides within a warp, so each warp ran both paths
plus the branch's bookkeeping. This form computes both sides and selects:

  |x| < THRESHOLD: x + x^3 P(x^2), P of degree 4 fitted here for relative error
                   (weighted least squares on Chebyshev nodes against 40-digit tanh);
  otherwise:       1 - 2/(e + 1), e = 2^(2|x| log2 e) by ex2.approx, 1/(e + 1) by
                   div.full (rcp.approx, which scales denominators above 2^126), so an
                   e that overflows to inf gives exactly 1;

then the sign of x (so -0.0 stays -0.0). NaN fails `a >= THRESHOLD` and the polynomial
returns it; a subnormal x returns x (the fma keeps it; libdevice flushes it to 0).

On the H200 (2026-12-03, benchmarks/results/gpu-2026-12-03c-notes.md) gelu_tanh's 16M
elements ran in 32.70 us against 33.31 with libdevice (torch's copy_ of the same bytes:
32.77), and over all 2^32 float32 inputs the error is at most 1.815 ulp, libdevice's own
maximum (docs/gpu_numerics.md). The interpreter path runs the same operations with
NumPy's exp2 and division.
"""

NAME = "_tanh_f32"

THRESHOLD = 0.6
# P on [0, 0.6]: max relative error of the fit 2.8e-9 before rounding to float32
COEFFS = (-0.33333298563957214, 0.13331924378871918, -0.053783830255270004,
          0.020795971155166626, -0.005895156413316727)
TWO_LOG2E = 2.885390081777927   # 2 / ln 2
TWO_LOG2E_LO = 3.851925982253235e-08   # 2 / ln 2 minus its float32 rounding


def helper_source(name=NAME, threshold=THRESHOLD, coeffs=COEFFS, compensated=False):
    """The @triton.jit helper's source text. tools/gpu_tanh_probe.py builds its candidates
    with it; `compensated` (a candidate only) adds the rounding error of 2|x|/ln2 back
    into e (four more operations)."""
    horner = repr(coeffs[-1])
    for c in reversed(coeffs[:-1]):
        horner = f"tl.fma({horner}, z, {c!r})"
    return "\n".join([
        "@triton.jit",
        f"def {name}(x):",
        "    # tanh of f32 x, both forms and a select (jitlib/backends/triton/tanh.py)",
        "    a = tl.abs(x)",
        f"    t = a * {TWO_LOG2E!r}",
        "    e = tl.math.exp2(t)",
        *([f"    t_err = tl.fma(a, {TWO_LOG2E!r}, -t) + a * {TWO_LOG2E_LO!r}",
           "    e = tl.fma(e, t_err * 0.6931471805599453, e)"] if compensated else []),
        "    big = tl.fma(tl.fdiv(1.0, e + 1.0), -2.0, 1.0)",
        "    z = x * x",
        f"    small = tl.fma(x * z, {horner}, x)",
        f"    mag = tl.where(a >= {threshold!r}, big, small)",
        "    bits = ((mag.to(tl.uint32, bitcast=True) & 0x7FFFFFFF)",
        "            | (x.to(tl.uint32, bitcast=True) & 0x80000000))",
        "    return bits.to(tl.float32, bitcast=True)",
        ""])


SOURCE = helper_source()
