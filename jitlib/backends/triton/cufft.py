"""FFT kernels on the GPU: cuFFT through CuPy, where it is installed.

A kernel whose body is one `fft` op of a parameter runs here on the device buffer
itself, on the device's own stream, in the op's precision (complex64 stays complex64, as
NumPy 2 keeps it); results agree with NumPy's pocketfft to rounding, not to the bit.
Every other kernel with a complex value, and every fft where CuPy is missing, runs on
the interpreter through host memory (complex_values.py).
"""
import logging

from jitlib.backends.triton.cupy_bridge import cupy_or_none, cupy_view
from jitlib.hlo.ops import Op

log = logging.getLogger("jitlib")

_FFTN = {"FFT": "fftn", "IFFT": "ifftn", "RFFT": "rfftn", "IRFFT": "irfftn"}


def runner(fusion, device, fallback):
    """An FftRunner for a kernel that is one fft of a parameter on a CUDA device, or
    None."""
    body = fusion.attrs["body"]
    ops = [i for i in body.instructions if i.op is not Op.PARAMETER]
    if (len(ops) != 1 or ops[0].op is not Op.FFT or list(body.results) != ops
            or getattr(device, "interpreted", False) or ops[0].size == 0):
        return None
    cp = cupy_or_none("cupy.fft")
    return None if cp is None else FftRunner(cp, ops[0], device, fallback)


class FftRunner:
    """One fft op through cupy.fft on the device's stream."""

    def __init__(self, cp, instr, device, fallback):
        self.cp, self.instr, self.device, self.fallback = cp, instr, device, fallback
        lengths = instr.attrs["fft_length"]
        self.transform = getattr(cp.fft, _FFTN[instr.attrs["fft_type"]])
        self.lengths = tuple(lengths)
        self.axes = tuple(range(instr.operands[0].ndim - len(lengths),
                                instr.operands[0].ndim))

    def __call__(self, buffers):
        if self.fallback is None:
            return self._run(buffers)
        try:
            out = self._run(buffers)
        except Exception as e:   # a CuPy that cannot: the interpreter still can, slower
            log.warning("jitlib: cuFFT through CuPy failed (%s: %s); this fft runs on the "
                        "host from now on", type(e).__name__, e)
            self._run = self.fallback
            return self.fallback(buffers)
        self.fallback = None   # it worked once: later failures are real errors
        return out

    def _run(self, buffers):
        cp = self.cp
        with cp.cuda.ExternalStream(self.device.stream):
            x = cupy_view(cp, buffers[self.instr.operands[0].attrs["index"]])
            result = self.transform(x, s=self.lengths, axes=self.axes)
            out = self.device.empty(self.instr.shape, self.instr.dtype)
            cupy_view(cp, out)[...] = result
        return [out]
