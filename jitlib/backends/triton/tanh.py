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

Over all 2^32 float32 inputs the error is at most libdevice's own maximum, and gelu_tanh
runs at copy speed; the measurements are in docs/gpu_numerics.md. The interpreter path
runs the same operations with NumPy's exp2 and division.
"""

NAME = "_tanh_f32"

THRESHOLD = 0.6
# P on [0, 0.6]: max relative error of the fit 2.8e-9 before rounding to float32
COEFFS = (-0.33333298563957214, 0.13331924378871918, -0.053783830255270004,
          0.020795971155166626, -0.005895156413316727)
TWO_LOG2E = 2.885390081777927   # 2 / ln 2


def helper_source(name=NAME, threshold=THRESHOLD, coeffs=COEFFS):
    """The @triton.jit helper's source text for a switch point and polynomial."""
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
        "    big = tl.fma(tl.fdiv(1.0, e + 1.0), -2.0, 1.0)",
        "    z = x * x",
        f"    small = tl.fma(x * z, {horner}, x)",
        f"    mag = tl.where(a >= {threshold!r}, big, small)",
        "    bits = ((mag.to(tl.uint32, bitcast=True) & 0x7FFFFFFF)",
        "            | (x.to(tl.uint32, bitcast=True) & 0x80000000))",
        "    return bits.to(tl.float32, bitcast=True)",
        ""])


SOURCE = helper_source()
