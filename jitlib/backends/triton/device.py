"""The CUDA device under the GPU backend: a context, a stream, and memory from the driver.

Everything goes through the CUDA driver API of cuda-python (`cuda.bindings.driver`),
imported when a device is first asked for, so `import jitlib` never loads CUDA:

- context: the device's primary context, the one PyTorch, JAX and Triton also use, so
  pointers pass between them unchanged;
- stream: the one Triton launches kernels on (see `_triton_launch_stream`). Allocations,
  frees and copies are queued on it too, so they are ordered with the kernels without
  events or waits;
- memory: `cuMemAllocAsync` / `cuMemFreeAsync` from the device's stream-ordered pool. The
  pool is the allocator; it is told to keep freed memory (release threshold = max) so a
  steady loop of calls reuses it instead of going back to the OS at every synchronize.

`get_device()` returns the process-wide device; its `empty`, `from_numpy`, `to_numpy` and
`copy` make and read `jitlib.Array`s. Every failure is a `DeviceError` that names the call.
"""
import logging
import threading

import numpy as np

from jitlib.array import Array, DeviceError
from jitlib.backends.triton import staging
from jitlib.errors import JitlibTypeError
from jitlib.hlo import dtypes

log = logging.getLogger("jitlib")

_CU_STREAM_LEGACY = 1       # the driver's handle for the legacy default stream
_CU_STREAM_PER_THREAD = 2   # ... and for the per-thread default stream
_NO_GPU_HINT = ("the 'gpu' backend needs an NVIDIA GPU with its driver and the cuda-python "
                "package (pip install cuda-bindings); elsewhere use backend='cpu'")

_devices = {}
_devices_lock = threading.Lock()


def get_device(ordinal=0):
    """The CUDA device `ordinal`, set up on first use; a DeviceError ("no CUDA GPU ...")
    where there is none."""
    device = _devices.get(ordinal)
    if device is None:
        with _devices_lock:
            device = _devices.get(ordinal)
            if device is None:
                device = _devices[ordinal] = Device(ordinal)
    return device


def _driver():
    try:
        from cuda.bindings import driver
    except ImportError as e:
        raise DeviceError(f"no CUDA GPU: cuda-python is not installed ({e})",
                          hint=_NO_GPU_HINT) from None
    return driver


def _triton_launch_stream(cu, ordinal):
    """The CUstream handle Triton launches kernels on, as an int.

    Why PyTorch is reached here: Triton 3.6's launcher takes the current device and stream
    from PyTorch (`torch._C._cuda_getCurrentRawStream`); queueing our allocations and
    copies on that same stream keeps them ordered with the kernels. This function is the
    only place the runtime may touch PyTorch, and only through Triton's own driver object.
    Where that fails (no Triton, or no PyTorch under it) we use the legacy default stream,
    which is also what PyTorch reports unless the user switched streams. Where PyTorch is
    not loaded, Triton's driver is told to answer without it (torch_free.py), as Triton
    3.9 does: importing PyTorch was most of a cold first call.
    """
    try:
        from jitlib.backends.triton import torch_free
        torch_free.install(cu, ordinal)
        from triton.runtime import driver
        return int(driver.active.get_current_stream(ordinal))
    except Exception as e:   # the fallback is correct for the usual setup; say so
        log.warning("jitlib: Triton did not report its launch stream (%s: %s); using the "
                    "legacy default stream", type(e).__name__, e)
        return 0


class Device:
    """One CUDA GPU: its primary context, one stream, and its stream-ordered memory pool.

    `host_to_device` and `device_to_host` count the copies made, so tests can check that a
    chain of jitted calls never touches the host.
    """

    def __init__(self, ordinal=0):
        self.ordinal = ordinal
        self._cu = cu = _driver()
        try:
            self._check(cu.cuInit(0), "cuInit")
        except DeviceError:
            raise
        except Exception as e:   # cuda-python could not load libcuda: no driver here
            raise DeviceError(f"no CUDA GPU: the CUDA driver library did not load "
                              f"({type(e).__name__}: {e})", hint=_NO_GPU_HINT) from None
        count = self._check(cu.cuDeviceGetCount(), "cuDeviceGetCount")
        if not 0 <= ordinal < count:
            raise DeviceError(f"no CUDA GPU {ordinal}: the driver sees {count} device(s)",
                              hint=_NO_GPU_HINT)
        self._handle = self._check(cu.cuDeviceGet(ordinal), "cuDeviceGet")
        name = self._check(cu.cuDeviceGetName(256, self._handle), "cuDeviceGetName")
        self.name = bytes(name).split(b"\0", 1)[0].decode()
        self._context = self._check(cu.cuDevicePrimaryCtxRetain(self._handle),
                                    "cuDevicePrimaryCtxRetain")
        self._thread = threading.local()
        self._make_current()
        self._stream = _triton_launch_stream(cu, ordinal)
        self._capture_stream = None
        self._pool = self._check(cu.cuDeviceGetDefaultMemPool(self._handle),
                                 "cuDeviceGetDefaultMemPool")
        self._keep_freed_memory()
        self._event = self._check(
            cu.cuEventCreate(int(cu.CUevent_flags.CU_EVENT_DISABLE_TIMING)), "cuEventCreate")
        self.host_to_device = self.device_to_host = 0
        self._target = None
        self._staging = None

    def __repr__(self):
        return f"cuda:{self.ordinal}"

    @property
    def stream(self):
        """The stream work is queued on: Triton's launch stream, or on a thread capturing
        a CUDA graph (`capture`), the capture stream."""
        capture = self._capture_now()
        return self._stream if capture is None else capture.stream

    @property
    def target(self):
        """Triton's GPUTarget for this GPU (what ahead-of-time compiles build for)."""
        if self._target is None:
            from triton.runtime import driver
            self._make_current()
            self._target = driver.active.get_current_target()
        return self._target

    # -- arrays

    def empty(self, shape, dtype):
        """An uninitialised Array of `shape` and `dtype` (while capturing a graph, from
        the capture's arena)."""
        capture = self._capture_now()
        if capture is not None:
            return capture.take(shape, dtype)
        dtype = np.dtype(dtype)
        shape = tuple(int(d) for d in shape)
        allocation = _Allocation(self, self._alloc(dtypes.nbytes(shape, dtype)))
        return Array(allocation.ptr, shape, dtype, allocation, self)

    def from_numpy(self, a):
        """`a` copied to a new Array (C order)."""
        # not np.ascontiguousarray: it makes a 0-d array 1-d
        a = np.asarray(a, order="C")
        out = self.empty(a.shape, a.dtype)
        staged = a.nbytes >= staging.MIN_BYTES and self._staged_copy(out, a)
        if not staged and a.nbytes:
            # pageable source: the call returns once the driver has staged the bytes, so
            # `a` may go right after
            self._check(self._cu.cuMemcpyHtoDAsync(out.data_ptr(), a.ctypes.data, a.nbytes,
                                                   self.stream), "cuMemcpyHtoDAsync")
        self.host_to_device += 1
        return out

    def _staged_copy(self, out, a):
        """Copy `a` into `out` through the pinned staging buffers; False where there are
        none, or where a staged copy failed (the driver's path then copies it all)."""
        stager = self._stager()
        if stager is None:
            return False
        try:
            stager.copy_in(out.data_ptr(), a)
        except DeviceError as e:
            log.warning("jitlib: pinned staging failed (%s); copying from pageable memory "
                        "from now on", e)
            self._staging = False
            return False
        return True

    def _stager(self):
        """The pinned staging pipeline (staging.py), made on the first large copy; None
        where page-locked memory cannot be had (then copies go the driver's way)."""
        if self._staging is None:
            cu, events = self._cu, []
            try:
                for _ in range(staging.SLOTS):
                    events.append(self._check(cu.cuEventCreate(
                        int(cu.CUevent_flags.CU_EVENT_DISABLE_TIMING)), "cuEventCreate"))
                self._staging = staging.Staging(
                    pinned_alloc=lambda n: int(self._check(cu.cuMemHostAlloc(n, 0),
                                                           f"cuMemHostAlloc({n} bytes)")),
                    queue_copy=lambda dst, src, n: self._check(
                        cu.cuMemcpyHtoDAsync(dst, src, n, self.stream), "cuMemcpyHtoDAsync"),
                    record=lambda slot: self._check(cu.cuEventRecord(events[slot],
                                                                     self.stream),
                                                    "cuEventRecord"),
                    wait=lambda slot: self._check(cu.cuEventSynchronize(events[slot]),
                                                  "cuEventSynchronize"))
                self._staging.copy_in(0, np.empty(0, np.uint8))   # allocates the buffers
            except DeviceError as e:
                log.warning("jitlib: no pinned staging buffers (%s); host arrays are copied "
                            "from pageable memory", e)
                self._staging = False
        return self._staging or None

    def to_numpy(self, array):
        """A host copy of `array`, after all work queued on it so far."""
        host = np.empty(array.shape, array.dtype)
        if host.nbytes:
            self._make_current()
            self._check(self._cu.cuMemcpyDtoHAsync(host.ctypes.data, array.data_ptr(),
                                                   host.nbytes, self.stream),
                        "cuMemcpyDtoHAsync")
            self.synchronize()
        self.device_to_host += 1
        return host

    def view(self, array, shape):
        """An Array over `array`'s memory with another shape of the same size."""
        return Array(array.data_ptr(), shape, array.dtype, array._keepalive, self)

    def reinterpret(self, array, shape, dtype):
        """An Array over `array`'s bytes as another type and shape of the same size (a
        complex array as its real pairs, and back)."""
        return Array(array.data_ptr(), shape, dtype, array._keepalive, self)

    def copy(self, array):
        """A new Array with `array`'s contents, copied on the device."""
        out = self.empty(array.shape, array.dtype)
        if array.nbytes:
            self._check(self._cu.cuMemcpyDtoDAsync(out.data_ptr(), array.data_ptr(),
                                                   array.nbytes, self.stream),
                        "cuMemcpyDtoDAsync")
        return out

    def copy_into(self, dst, src):
        """Write `src` (an Array, or host data) into the Array `dst` of the same shape and
        dtype, on the device: how a jitted call's writes reach an Array argument."""
        src = self.as_array(src, dst.dtype)
        if tuple(src.shape) != tuple(dst.shape):
            raise DeviceError(f"cannot write a {src.shape} array into a {dst.shape} one")
        if dst.nbytes:
            self._check(self._cu.cuMemcpyDtoDAsync(dst.data_ptr(), src.data_ptr(),
                                                   dst.nbytes, self.stream),
                        "cuMemcpyDtoDAsync")

    def as_array(self, x, dtype=None):
        """`x` as an Array on this device: an Array passes through, anything else (NumPy
        arrays, scalars) is copied in once."""
        if isinstance(x, Array):
            if dtype is not None and x.dtype != dtype:
                raise DeviceError(f"a {x.dtype} Array was passed where {np.dtype(dtype)} "
                                  "is expected")
            return x
        return self.from_numpy(np.asarray(x, dtype=dtype))

    def run_executable(self, executable, args):
        """Run a module compiled for this device (a TritonExecutable) on `args`: Arrays
        pass through, host arrays and scalars are copied in once, and the results are
        Arrays that stay here, so a chain of jitted calls never touches the host."""
        params = executable.module.params
        if len(args) != len(params):
            raise JitlibTypeError(f"module {executable.module.name!r} takes {len(params)} "
                                  f"arguments, got {len(args)}")
        buffers = []
        for p, x in zip(params, args):
            if type(x) is not Array:
                x = np.asarray(x)
            if x.dtype != p.dtype or tuple(x.shape) != p.shape:
                got = f"{x.dtype}[{','.join(map(str, x.shape))}]"
                raise JitlibTypeError(
                    f"argument {p.attrs['index']} ({p.attrs['name']}) of module "
                    f"{executable.module.name!r} must be {p.type_str}, got {got}")
            if type(x) is Array and x.device is not self:
                raise DeviceError(f"argument {p.attrs['name']} lives on {x.device}, the "
                                  f"program on {self}",
                                  hint="move it with jitlib.from_dlpack or np.asarray")
            buffers.append(x if type(x) is Array else self.from_numpy(x))
        results = executable.run_buffers(buffers)
        # a result over an argument's or a cached constant's memory is copied: the caller
        # owns what it gets and may write to it through DLPack
        return [self.copy(buf) if copy else buf
                for copy, buf in zip(executable.results_to_copy, results)]

    # -- ordering

    def synchronize(self):
        """Wait until everything queued on the stream has run."""
        self._check(self._cu.cuStreamSynchronize(self.stream), "cuStreamSynchronize")

    @property
    def dlpack_stream(self):
        """Our stream as a DLPack consumer names it (0 is not allowed: the legacy default
        stream is 1)."""
        return _CU_STREAM_LEGACY if self.stream == 0 else self.stream

    def order_before(self, consumer_stream):
        """Make work already queued on our stream run before whatever is queued on
        `consumer_stream` from now on (DLPack's `stream` argument: None or 1 the legacy
        default stream, 2 the per-thread one, -1 no ordering, else a CUstream handle)."""
        if consumer_stream == -1:
            return
        if consumer_stream in (None, 0):
            consumer_stream = _CU_STREAM_LEGACY
        if consumer_stream == self.dlpack_stream:
            return
        self._make_current()
        self._check(self._cu.cuEventRecord(self._event, self.stream), "cuEventRecord")
        self._check(self._cu.cuStreamWaitEvent(consumer_stream, self._event, 0),
                    "cuStreamWaitEvent")

    # -- memory

    def memory_in_use(self):
        """Bytes of the pool now handed out to live allocations (after a synchronize,
        frees are counted)."""
        cu = self._cu
        value = self._check(cu.cuMemPoolGetAttribute(
            self._pool, cu.CUmemPool_attribute.CU_MEMPOOL_ATTR_USED_MEM_CURRENT),
            "cuMemPoolGetAttribute")
        return int(value)

    def _alloc(self, nbytes):
        if nbytes == 0:
            return 0   # cuMemAllocAsync rejects 0 bytes; nothing will be read or written
        self._make_current()
        return int(self._check(self._cu.cuMemAllocAsync(nbytes, self.stream),
                               f"cuMemAllocAsync({nbytes} bytes)"))

    def _free(self, ptr):
        if ptr:
            capture = self._capture_now()
            if capture is not None:   # not part of the graph: freed once capture ends
                capture.deferred_frees.append(ptr)
                return
            self._make_current()
            self._check(self._cu.cuMemFreeAsync(ptr, self._stream), "cuMemFreeAsync")

    # -- CUDA graphs

    def capture(self, take):
        """A context manager: work this thread queues inside it is recorded into a CUDA
        graph instead of run; its `graph` attribute is then the instantiated graph (run
        it with `launch_graph`). `take(shape, dtype) -> Array` supplies the memory kernels
        ask for meanwhile (the graph replays with the same addresses)."""
        return _Capture(self, take)

    def capturing(self):
        """Whether this thread is capturing a graph now."""
        return self._capture_now() is not None

    def _capture_now(self):
        """This thread's capture in progress (a _Capture), or None."""
        return getattr(self._thread, "capture", None)

    def launch_graph(self, graph):
        self._check(self._cu.cuGraphLaunch(graph.handle, self._stream), "cuGraphLaunch")

    def _keep_freed_memory(self):
        cu = self._cu
        try:
            self._check(cu.cuMemPoolSetAttribute(
                self._pool, cu.CUmemPool_attribute.CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                cu.cuuint64_t(2 ** 64 - 1)), "cuMemPoolSetAttribute")
        except Exception as e:   # only costs speed; keep going, but say so
            log.warning("jitlib: could not raise the pool's release threshold (%s)", e)

    def _make_current(self):
        # A driver context is current per thread; the first call on a thread sets it.
        if getattr(self._thread, "current", False):
            return
        self._check(self._cu.cuCtxSetCurrent(self._context), "cuCtxSetCurrent")
        self._thread.current = True

    def _check(self, result, what):
        """The value of a cuda-python call `(CUresult, *values)`, or a DeviceError."""
        err, *values = result
        if err != self._cu.CUresult.CUDA_SUCCESS:
            name = self._cu.cuGetErrorName(err)[1]
            text = self._cu.cuGetErrorString(err)[1]
            raise DeviceError(f"{what} failed on cuda:{self.ordinal}: "
                              f"{_decode(name)}: {_decode(text)}")
        if not values:
            return None
        return values[0] if len(values) == 1 else tuple(values)


class _Capture:
    """One stream capture on a private stream (device.capture)."""

    def __init__(self, device, take):
        self.device, self.take = device, take
        self.deferred_frees, self.graph = [], None

    def __enter__(self):
        d, cu = self.device, self.device._cu
        if d.capturing():
            raise DeviceError("a CUDA graph capture is already running on this thread")
        d._make_current()
        if d._capture_stream is None:
            d._capture_stream = int(d._check(cu.cuStreamCreate(
                int(cu.CUstream_flags.CU_STREAM_NON_BLOCKING)), "cuStreamCreate"))
        self.stream = d._capture_stream
        d._check(cu.cuStreamBeginCapture(
            self.stream, cu.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
            "cuStreamBeginCapture")
        d._thread.capture = self
        return self

    def __exit__(self, kind, error, tb):
        d, cu = self.device, self.device._cu
        d._thread.capture = None
        # always leave capture mode, also when the work inside failed
        err, graph = cu.cuStreamEndCapture(self.stream)
        for ptr in self.deferred_frees:
            d._free(ptr)
        if kind is not None:
            if err == cu.CUresult.CUDA_SUCCESS:
                cu.cuGraphDestroy(graph)
            return False
        d._check((err, graph), "cuStreamEndCapture")
        try:
            handle = d._check(cu.cuGraphInstantiate(graph, 0), "cuGraphInstantiate")
        finally:
            cu.cuGraphDestroy(graph)
        self.graph = _Graph(d, handle)
        return False


class _Graph:
    """An instantiated CUDA graph, destroyed with its last reference."""

    __slots__ = ("device", "handle")

    def __init__(self, device, handle):
        self.device, self.handle = device, handle

    def __del__(self):
        try:
            self.device._cu.cuGraphExecDestroy(self.handle)
        except Exception:
            pass   # interpreter shutdown


class _Allocation:
    """One pool allocation; returned to the pool (on the stream, after the work queued on
    it) when the last Array over it is collected."""

    __slots__ = ("device", "ptr")

    def __init__(self, device, ptr):
        self.device = device
        self.ptr = ptr

    def __del__(self):
        try:
            self.device._free(self.ptr)
        except Exception:
            pass   # interpreter shutdown: the driver module may be gone already


def _decode(value):
    return value.decode() if isinstance(value, bytes) else str(value)
