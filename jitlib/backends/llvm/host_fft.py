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
pocketfft's inverse transforms, whose 1/N1 and 1/N2 make XLA's 1/N. A real transform of
even length N runs as the complex one of N/2 points (`RealRunner`). The result is not
NumPy's bit for bit: its error against the exact transform is within a small factor of
NumPy's own (tests/backends/test_llvm_host_fft.py). Other FFTs (several dims, short, odd
real lengths) keep the interpreter's rule; so does irfft, whose pocketfft c2r beat a
split through a half-length inverse on the Zen 3 VM up to 2^20 points (7.5 against 14.1
ms), losing only past the 32 MiB L3 (2^22: 61.7 against 36.3).
"""
import functools

import numpy as np

from jitlib import config, forksafe, host_threads
from jitlib.backends.llvm.buffers import RESULTS
from jitlib.hlo.ops import Op

# Below this many points a transform stays NumPy's single call (in cache already).
MIN_POINTS = 1 << 16
# Points of a real transform's final combination per block.
COMBINE_BLOCK = 1 << 14


def runner(body):
    """A runner for a fused body that is one FFT: the six-step one for a long 1-D FFT,
    IFFT or RFFT (of an even length), else NumPy's; None for any other body."""
    fft = one_fft(body)
    if fft is None:
        return None
    return long_runner(body) or NumPyRunner(fft)


def long_runner(body):
    """The six-step runner of a body that is one long 1-D FFT, IFFT or RFFT (of an even
    length), else None: those run on all cores, the others as one call (pocketfft.py
    compiles that call where it can)."""
    fft = one_fft(body)
    if fft is None:
        return None
    kind, lengths = fft.attrs["fft_type"], fft.attrs["fft_length"]
    (x,) = fft.operands
    if len(lengths) != 1 or x.shape[-1] != lengths[0]:
        return None
    n = lengths[0]
    if kind in ("FFT", "IFFT") and n >= MIN_POINTS and x.dtype == fft.dtype:
        return SixStepRunner(kind == "IFFT", n, np.dtype(fft.dtype))
    if kind == "RFFT" and n >= 2 * MIN_POINTS and n % 2 == 0 \
            and np.dtype(fft.dtype) == np.result_type(x.dtype, np.complex64):
        return RealRunner(n, np.dtype(fft.dtype))
    return None


def one_fft(body):
    """The FFT op of a fused body that is that one op, else None."""
    ops = [i for i in body.instructions if i.op is not Op.PARAMETER]
    if len(ops) != 1 or list(body.results) != ops or ops[0].op is not Op.FFT:
        return None
    return ops[0]


class NumPyRunner:
    """The interpreter's rule (NumPy's call) run directly: the same bits, without the
    interpreter's checks and bookkeeping around one op (10-15 us a call, more than a
    256-point transform takes, in a time-stepping loop's every trip)."""

    writes_into = False

    def __init__(self, fft):
        self._fft, self._one = fft, None
        lengths = fft.attrs["fft_length"]
        if len(lengths) == 1:
            # one axis: np.fft.fftn's own call for it, without fftn's axis bookkeeping
            one, n = _ONE_AXIS[fft.attrs["fft_type"]], lengths[0]
            self._one = lambda x: one(x, n=n, axis=-1).astype(fft.dtype, copy=False)

    def __call__(self, arrays, outs=None):
        from jitlib.hlo.interpreter import eval_rules
        with np.errstate(all="ignore"):
            if self._one is not None:
                return [self._one(arrays[0])]
            return [eval_rules[Op.FFT](self._fft, arrays[0])]


_ONE_AXIS = {"FFT": np.fft.fft, "IFFT": np.fft.ifft, "RFFT": np.fft.rfft,
             "IRFFT": np.fft.irfft}


class SixStepRunner:
    """Runs the transform over the last axis of its one operand, row by row. Its
    scratch matrix stays between calls, and the result comes from the result pool:
    fresh 8 MiB buffers cost a 2^20-point call more page faults than transform."""

    writes_into = False

    def __init__(self, inverse, n, dtype):
        self.inverse, self.n, self.dtype = inverse, n, dtype
        self.n1 = _split(n)
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


class RealRunner:
    """The transform of N real points (N = 2M) through the complex one of M points: the
    pairs (x[2m], x[2m+1]) are z[m] = x[2m] + i x[2m+1] as they lie in memory, and with
    Z = FFT(z), X[k] = ((Z[k] + conj Z[M-k]) - i w^k (Z[k] - conj Z[M-k])) / 2 for
    0 < k < M (w = exp(-2 pi i / N)), X[0] = Re Z[0] + Im Z[0], X[M] = Re Z[0] - Im Z[0]:
    half the transform work of a complex FFT of the padded input."""

    writes_into = False

    def __init__(self, n, dtype):
        self.m, self.dtype = n // 2, dtype
        self.half = SixStepRunner(False, self.m, dtype)
        self._spectrum = None

    def __call__(self, arrays, outs=None):
        (x,) = arrays
        rows = np.ascontiguousarray(x.reshape(-1, 2 * self.m), self.dtype.char.lower())
        out = np.empty((rows.shape[0], self.m + 1), self.dtype)
        with self.half._lock:
            if self._spectrum is None:
                self._spectrum = np.empty(self.m, self.dtype)
            for r in range(rows.shape[0]):
                self._real(rows[r].view(self.dtype), out[r])
        return [out.reshape(x.shape[:-1] + (self.m + 1,))]

    def _real(self, z, out):
        m, spectrum = self.m, self._spectrum
        self.half._transform(z, spectrum)
        w = _half_twiddles(m)          # in double, as the combination runs: one rounding

        def combine(block):         # k in [block.start, block.stop), 0 < k < M
            lo, hi = block.start, block.stop
            zk = spectrum[lo:hi].astype(np.complex128)
            mirror = np.conj(spectrum[m - hi + 1:m - lo + 1][::-1])
            out[lo:hi] = ((zk + mirror) - 1j * w[lo:hi] * (zk - mirror)) * 0.5
        threads = config.num_threads()
        # blocks of ~16K points: each one's double-precision temporaries stay in cache
        parts = max(threads, (m - 1) // COMBINE_BLOCK)
        blocks = [slice(b.start + 1, b.stop + 1) for b in _blocks(m - 1, parts)]
        host_threads.map_in_threads(combine, blocks, threads)
        z0 = spectrum[0]
        out[0], out[m] = z0.real + z0.imag, z0.real - z0.imag


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


@functools.lru_cache(maxsize=4)
def _half_twiddles(m):
    """w^k = exp(-2 pi i k / 2M) for k in [0, M], in double."""
    angle = (-np.pi / m) * np.arange(m + 1, dtype=np.float64)
    return np.cos(angle) + 1j * np.sin(angle)
