"""Long one-dimensional FFTs on the cpu backend: NumPy's pocketfft in six steps, on all
cores.

The interpreter's FFT rule is NumPy's call itself: one thread, and for 2^20 complex64
points a walk over 8 MiB whose passes miss the cache (42 ms on the Zen 3 VM, jax.jit's
ducc 20 ms). A transform of N = N1 * N2 points (N1, N2 near sqrt(N)) is, for x read as
an N1 x N2 matrix (x[n1 * N2 + n2]):

    1. N2 transforms of length N1 down the columns,
    2. a multiplication by the twiddles w^(k1 * n2), w = exp(-+2 pi i / N),
    3. N1 transforms of length N2 along the rows, written transposed: X[k1 + N1 * k2].

Steps 1-2 share the columns between the threads, step 3 the rows: each thread calls
pocketfft on a block that fits in cache, and pocketfft releases the GIL. The inverse uses
pocketfft's inverse transforms, whose 1/N1 and 1/N2 make XLA's 1/N. The result is not
NumPy's bit for bit: its error against the exact transform is NumPy's own size
(tests/backends/test_llvm_host_fft.py). Other FFTs (real, several dims, short) keep the
interpreter's rule.
"""
import functools

import numpy as np

from jitlib import config, forksafe, host_threads
from jitlib.backends.llvm.buffers import RESULTS
from jitlib.hlo.ops import Op

# Below this many points a transform stays NumPy's single call (in cache already).
MIN_POINTS = 1 << 16


def runner(body):
    """A runner for a fused body that is one long 1-D complex FFT or IFFT, else None."""
    ops = [i for i in body.instructions if i.op is not Op.PARAMETER]
    if len(ops) != 1 or list(body.results) != ops or ops[0].op is not Op.FFT:
        return None
    fft = ops[0]
    kind, lengths = fft.attrs["fft_type"], fft.attrs["fft_length"]
    (x,) = fft.operands
    if kind not in ("FFT", "IFFT") or len(lengths) != 1 or x.shape[-1] != lengths[0] \
            or lengths[0] < MIN_POINTS or x.dtype != fft.dtype:
        return None
    return SixStepRunner(kind == "IFFT", lengths[0], np.dtype(fft.dtype))


class SixStepRunner:
    """Runs the transform over the last axis of its one operand, row by row. Its
    scratch matrix stays between calls, and the result comes from the result pool:
    fresh 8 MiB buffers cost a 2^20-point call more page faults than transform."""

    writes_into = False

    def __init__(self, inverse, n, dtype):
        self.inverse, self.n, self.dtype = inverse, n, dtype
        self.n1 = 1 << ((n.bit_length() - 1) // 2) if n & (n - 1) == 0 else _split(n)
        self.n2 = n // self.n1
        self._scratch = None
        self._lock = forksafe.lock()     # one call at a time owns the scratch

    def __call__(self, arrays, outs=None):
        (x,) = arrays
        rows = x.reshape(-1, self.n)
        out = RESULTS.array(rows.shape, self.dtype)
        with self._lock:
            for r in range(rows.shape[0]):
                self._transform(rows[r], out[r])
        return [out.reshape(x.shape)]

    def _transform(self, x, out):
        n1, n2, step = self.n1, self.n2, np.fft.ifft if self.inverse else np.fft.fft
        if n1 == 1:                    # a prime length: no split
            step(x, out=out)
            return
        if self._scratch is None:
            self._scratch = np.empty((n1, n2), self.dtype)
        a, scratch = x.reshape(n1, n2), self._scratch
        twiddles = _twiddles(n1, n2, self.inverse, self.dtype)
        result = out.reshape(n2, n1)   # X[k1 + n1 * k2] = result[k2, k1]
        threads = config.num_threads()

        def down(block):               # columns, then their twiddles, in the scratch
            step(a[:, block], axis=0, out=scratch[:, block])
            scratch[:, block] *= twiddles[:, block]

        def along(block):              # rows in place, then written transposed
            step(scratch[block], axis=1, out=scratch[block])
            result[:, block] = scratch[block].T
        host_threads.map_in_threads(down, _blocks(n2, threads), threads)
        host_threads.map_in_threads(along, _blocks(n1, threads), threads)


def _blocks(n, parts):
    """`parts` contiguous slices covering range(n)."""
    edges = np.linspace(0, n, max(1, min(parts, n)) + 1).astype(int)
    return [slice(lo, hi) for lo, hi in zip(edges[:-1], edges[1:])]


def _split(n):
    """The largest divisor of n not above sqrt(n) (1 for a prime)."""
    for d in range(int(n ** 0.5), 0, -1):
        if n % d == 0:
            return d
    return 1


@functools.lru_cache(maxsize=4)
def _twiddles(n1, n2, inverse, dtype):
    """w^(k1 * n2) for the N1 x N2 grid, computed in double and rounded once (k1 * n2 <
    N: the angles need no reduction), a block of rows per thread: built whole on one
    thread, the table's temporaries cost a 2^20-point first call ~50 ms of page faults."""
    table = np.empty((n1, n2), dtype)
    turn = (2.0 if inverse else -2.0) * np.pi / (n1 * n2)
    columns = np.arange(n2, dtype=np.float64)

    def rows(block):
        k1 = np.arange(block.start, block.stop, dtype=np.float64)[:, None]
        angle = (k1 * columns) * turn
        table[block] = np.cos(angle) + 1j * np.sin(angle)
    threads = config.num_threads()
    host_threads.map_in_threads(rows, _blocks(n1, 8 * threads), threads)
    return table
