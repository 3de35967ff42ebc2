"""The transpose of the fft op, as JAX's `_fft_transpose_rule` (its JVP is the op itself:
the transform is linear).

The DFT matrix is symmetric, so FFT and IFFT are their own transposes. RFFT keeps the
first n//2+1 outputs of a complex FFT of a real input: its transpose pads the cotangent
back to n, transforms, and keeps the real part. IRFFT's transpose is an RFFT of the
cotangent with the halved spectrum's inner bins counted twice, scaled by 1/N and
conjugated (JAX's convention for complex gradients, jax-ml/jax#6223).
"""
import numpy as np

from jitlib.hlo import build
from jitlib.hlo.ops import Op


def _fft(x, kind, lengths):
    return build.make(Op.FFT, [x], dict(fft_type=kind, fft_length=tuple(lengths)))


def fft_vjp(instr, ct):
    kind, lengths = instr.attrs["fft_type"], tuple(instr.attrs["fft_length"])
    if kind in ("FFT", "IFFT"):
        return [_fft(ct, kind, lengths)]
    if kind == "RFFT":
        return [_rfft_transpose(ct, lengths)]
    return [_irfft_transpose(ct, lengths)]


def _rfft_transpose(ct, lengths):
    missing = lengths[-1] - ct.shape[-1]
    zero = build.constant(np.zeros((), ct.dtype))
    padded = build.pad(ct, zero, [0] * ct.ndim, [0] * (ct.ndim - 1) + [missing])
    return build.unary(Op.REAL, _fft(padded, "FFT", lengths))


def _irfft_transpose(ct, lengths):
    x = _fft(ct, "RFFT", lengths)
    n, odd = x.shape[-1], lengths[-1] % 2
    weights = np.concatenate([[1.0], np.full(n - 2 + odd, 2.0), np.ones(1 - odd)])
    weights = weights / np.prod(lengths, dtype=np.float64)
    scale = build.broadcast_in_dim(build.constant(weights.astype(x.dtype)), x.shape,
                                   (x.ndim - 1,))
    return build.unary(Op.CONJ, build.binary(Op.MUL, scale, x))
