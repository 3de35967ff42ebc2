"""The BLAS the CPU backend's float products call: NumPy's OpenBLAS, with the kernels
the host CPU can run.

NumPy's wheels ship OpenBLAS built for many CPUs (DYNAMIC_ARCH) and pick the kernels
at load time from the CPU it detects. Releases before OpenMathLib/OpenBLAS#6033 detect
AMD Zen 5 as "Haswell" and run AVX2 kernels on a CPU with full-width AVX-512, at about
half the speed of the same library's SkylakeX kernels there (docs/performance.md).

The kernel set is chosen once per loaded copy of the library (OPENBLAS_CORETYPE, read
when it initializes), and NumPy's copy is loaded before jitlib can say anything. So
where NumPy's OpenBLAS runs AVX2 kernels on an AVX-512 host, this module loads a second,
private copy of the same file, told to use SkylakeX, and calls its cblas_sgemm /
cblas_dgemm. The copy is the file's bytes in
an anonymous memory file (memfd: dlopen would hand back NumPy's copy for the same inode),
made on a background thread when the first program with a large product (`uses_copy`)
is compiled, so the time it takes overlaps the rest of the compile; small products
stay on NumPy's copy. Its dependencies (libgfortran) are
the ones NumPy already loaded.

A second OpenBLAS in the user's process is a surprise, so the copy is opt-in:
`JITLIB_BLAS=private`. By default (`numpy`) products run on NumPy's own copy (results
then have the interpreter's bits; the tuned kernels sum in another order, within the
usual float tolerance of a product). Anywhere the copy cannot work (another BLAS, no
memfd, a library without the symbols) the products stay np.matmul.
"""
import ctypes
import os
import threading

import numpy as np

from jitlib import config, forksafe, logs
from jitlib import blas_threads
from jitlib.backends.llvm import parallel
from jitlib.backends.llvm.compiler import get_compiler


# NumPy's core names that mean "AVX2 kernels", on hosts that could run AVX-512 ones
_AVX2_CORES = {b"Haswell", b"Zen"}
_AVX512_FLAGS = ("avx512f", "avx512bw", "avx512dq", "avx512vl")

_I64, _INT = ctypes.c_int64, ctypes.c_int
_ROW_MAJOR, _NO_TRANS = 101, 111


class _Library:
    """A loaded OpenBLAS copy's gemm entry points (ILP64 cblas, scipy-openblas names)."""

    def __init__(self, lib, corename):
        self.lib, self.corename = lib, corename
        self.gemm = {}
        for dt, name, scalar in ((np.float32, "sgemm", ctypes.c_float),
                                 (np.float64, "dgemm", ctypes.c_double)):
            fn = getattr(lib, f"scipy_cblas_{name}64_")
            fn.restype = None
            fn.argtypes = [_INT, _INT, _INT, _I64, _I64, _I64, scalar, ctypes.c_void_p, _I64,
                           ctypes.c_void_p, _I64, scalar, ctypes.c_void_p, _I64]
            self.gemm[np.dtype(dt)] = fn


def _host_flags():
    """The host CPU's features as the backend's LLVM compiler detected them."""
    features = get_compiler().features.split(",")
    return {f[1:] for f in features if f.startswith("+")}


def _numpys_library():
    """(path, corename) of the OpenBLAS NumPy loaded, or None."""
    path = blas_threads.library_path()
    if path is None:
        return None
    try:
        corename = ctypes.CDLL(path).scipy_openblas_get_corename64_
    except (OSError, AttributeError):
        return None
    corename.restype = ctypes.c_char_p
    return path, corename()


def wanted_core(numpys_core, flags):
    """The OPENBLAS_CORETYPE for a private copy, or None where NumPy's kernels are right."""
    if numpys_core not in _AVX2_CORES or not all(f in flags for f in _AVX512_FLAGS):
        return None
    return "SkylakeX"   # the float gemm kernels of the later AVX-512 cores are these


def _load_copy(path, core):
    """The library at `path` loaded again from an anonymous memory file, with `core`."""
    fd = os.memfd_create("jitlib-openblas", 0)
    src = os.open(path, os.O_RDONLY)
    try:
        size, done = os.fstat(src).st_size, 0
        while done < size:
            sent = os.sendfile(fd, src, done, size - done)
            if sent == 0:
                raise OSError(f"short copy of {path}")
            done += sent
    finally:
        os.close(src)
    # OpenBLAS reads these once, when the copy initializes: its kernels, and no threads
    settings = {"OPENBLAS_CORETYPE": core, "OPENBLAS_NUM_THREADS": "1"}
    saved = {name: os.environ.get(name) for name in settings}
    os.environ.update(settings)
    try:
        lib = ctypes.CDLL(f"/proc/self/fd/{fd}", mode=ctypes.RTLD_LOCAL)
    finally:
        for name, value in saved.items():
            if value is None:
                del os.environ[name]
            else:
                os.environ[name] = value
    getter = lib.scipy_openblas_get_corename64_
    getter.restype = ctypes.c_char_p
    return _Library(lib, getter())


class _Loader:
    """The private copy, loaded at most once per process, on a background thread."""

    def __init__(self):
        self._lock = forksafe.lock()
        self._thread = None
        self._library = None
        self.reason = None          # why NumPy's copy is used, once decided

    def start(self):
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._load, name="jitlib-blas",
                                                daemon=True)
                self._thread.start()

    def _load(self):
        try:
            found = _numpys_library()
            if found is None:
                self.reason = "NumPy's BLAS is not a scipy-openblas copy this module can load"
                return
            path, numpys_core = found
            core = wanted_core(numpys_core, _host_flags())
            if core is None:
                self.reason = f"NumPy's OpenBLAS already runs {numpys_core.decode()} kernels"
                return
            library = _load_copy(path, core)
            if library.corename != core.encode():
                self.reason = f"the copy chose {library.corename.decode()}, not {core}"
                return
            self._library = library
            logs.log("compiles", "float products on a private OpenBLAS copy with %s "
                     "kernels (NumPy's runs %s)", core, numpys_core.decode())
        except Exception as e:   # noqa: BLE001 - any failure leaves NumPy's BLAS in charge
            self.reason = f"loading a private OpenBLAS copy failed: {e}"
            logs.log("compiles", "%s", self.reason)

    def library(self):
        """The private copy, waiting for its load; None where NumPy's is used."""
        self.start()
        self._thread.join()
        return self._library


_loader = _Loader()


def prepare(multiply_adds):
    """Start loading the private copy, if a product of this size would use it."""
    if uses_copy(multiply_adds):
        _loader.start()


def describe():
    """Which BLAS the products run on, in words."""
    if config.cpu_blas() != "private":
        return "NumPy's OpenBLAS (JITLIB_BLAS=numpy, the default)"
    library = _loader.library()
    if library is None:
        return f"NumPy's OpenBLAS ({_loader.reason})"
    return f"a private copy of NumPy's OpenBLAS with {library.corename.decode()} kernels"


def matmul(left, right, out, multiply_adds):
    """out[...] = left @ right for C-contiguous stacks [..., m, k] @ [..., k, n] with the
    same leading dimensions; float32/float64 go to the private copy where it is loaded,
    everything else (and an `out` that is strided or overlaps an operand) to np.matmul.
    The copy runs single-threaded: a large product is split by rows between jitlib's
    own threads (parallel.py), so no second pool of OpenBLAS threads spins beside
    NumPy's."""
    if left.ndim == 2 and (right.shape[1] == 1 or left.shape[0] == 1):
        # a matrix and a vector: NumPy's gemv, as eager `M @ x` calls it (its bits too),
        # threaded from a smaller size than a gemm (blas_threads.SMALL_MATVEC)
        if right.shape[1] == 1:
            blas_threads.matmul(left, right[:, 0], out[:, 0], multiply_adds)
        else:
            blas_threads.matmul(left[0], right, out[0], multiply_adds)
        return out
    library = _loader.library() if uses_copy(multiply_adds) else None
    if (library is None or out.dtype not in library.gemm or not out.flags.c_contiguous
            or not left.flags.c_contiguous or not right.flags.c_contiguous
            or np.may_share_memory(out, left) or np.may_share_memory(out, right)):
        return blas_threads.matmul(left, right, out, multiply_adds)
    m, k = left.shape[-2:]
    n = right.shape[-1]
    rows = out.size // n                      # every batch's rows, one after the other
    args = (library.gemm[out.dtype], left.ctypes.data, right.ctypes.data, out.ctypes.data,
            m, n, k, left.itemsize, rows)
    if rows < 2:
        _rows_part(*args, 0, 1)
    else:
        parallel.get_pool().run(_rows_part, args)
    return out


def uses_copy(multiply_adds):
    """Whether a product of this size goes to the private copy (where one is loaded).
    Small ones stay on NumPy's (single-threaded, blas_threads.py): their time is mostly
    overhead, and a program of small products, like a served MLP's batch, then never
    waits for the copy to load in a new process. The choice is by size alone, so
    a program gives the same bits on every call."""
    return (multiply_adds >= blas_threads.SMALL_PRODUCT
            and config.cpu_blas() == "private")


def _rows_part(gemm, a, b, c, m, n, k, size, rows, part, parts):
    """Rows [part * rows // parts, (part + 1) * rows // parts) of the stacked product,
    one gemm call per batch they touch (ctypes releases the GIL during each)."""
    lo, hi = part * rows // parts, (part + 1) * rows // parts
    while lo < hi:
        batch, row = divmod(lo, m)
        count = min(hi - lo, m - row)
        gemm(_ROW_MAJOR, _NO_TRANS, _NO_TRANS, count, n, k, 1.0, a + lo * k * size, k,
             b + batch * k * n * size, n, 0.0, c + lo * n * size, n)
        lo += count
