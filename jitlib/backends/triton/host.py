"""The host device: NumPy-backed buffers, kernels run by Triton's interpreter.

Used where no CUDA GPU is present (CI, this machine). Triton 3.6's interpreter takes any
object with `data_ptr()` and `dtype` as a pointer argument, but its launcher copies every
such argument to and from "the device" through PyTorch storages. Our buffers already
live in host memory, so `HostGridExecutor` skips those two copies and nothing here needs
PyTorch.

Two more things the interpreter needs that TRITON_INTERPRET=1 (set before importing
triton) would give, done here per launch so the same process can still compile for the
GPU ahead of time:
  - Triton's standard library (tl.sum, tl.max, tl.zeros, tl.cdiv...) is made of
    @triton.jit functions; during a launch they are swapped for their interpreted forms;
  - libdevice calls (extern functions the interpreter cannot run) are swapped, in the
    host copy of the kernel's module only, for the NumPy functions of the same meaning.
"""
import threading
import types

import numpy as np

from jitlib.backends.triton import tanh
from jitlib.backends.triton.elemental import LIBDEVICE


class HostBuffer:
    """A C-contiguous NumPy array seen as a device buffer."""

    __slots__ = ("array",)

    def __init__(self, array):
        self.array = array

    def data_ptr(self):
        return self.array.ctypes.data

    @property
    def shape(self):
        return self.array.shape

    @property
    def dtype(self):
        return self.array.dtype

    def __repr__(self):
        return f"<HostBuffer {self.array.dtype}{list(self.array.shape)}>"


class HostDevice:
    """The device interface (`empty`, `from_numpy`, `to_numpy`) over host memory."""

    name = "host (Triton interpreter)"
    interpreted = True

    def empty(self, shape, dtype):
        return HostBuffer(np.empty(shape, dtype))

    def from_numpy(self, a):
        return HostBuffer(np.array(a, order="C", copy=True))

    def to_numpy(self, buf):
        return buf.array

    def view(self, buf, shape):
        return HostBuffer(buf.array.reshape(shape))

    def reinterpret(self, buf, shape, dtype):
        return HostBuffer(buf.array.reshape(-1).view(dtype).reshape(shape))

    def launch(self, kernel, config, buffers):
        launch_interpreted(kernel, config, buffers)


_NUMPY_LIBDEVICE = {"exp": np.exp, "expm1": np.expm1, "log": np.log, "log1p": np.log1p,
                    "tanh": np.tanh, "sin": np.sin, "cos": np.cos, "tan": np.tan,
                    "atan2": np.arctan2, "pow": np.power, "rint": np.rint,
                    "fmod": np.fmod, "trunc": np.trunc}
assert set(_NUMPY_LIBDEVICE) == set(LIBDEVICE)
_lock = threading.Lock()      # the launch patches process-wide Triton modules
_executor_cls = None


def _numpy_libdevice():
    import triton.language as tl
    from triton.runtime.interpreter import TensorHandle

    def lift(f):
        def call(*xs):
            out = f(*[x.handle.data for x in xs])
            return tl.tensor(TensorHandle(out.astype(xs[0].handle.data.dtype, copy=False),
                                          xs[0].dtype.scalar), xs[0].type)
        return call
    return types.SimpleNamespace(**{n: lift(f) for n, f in _NUMPY_LIBDEVICE.items()})


def _executor():
    global _executor_cls
    if _executor_cls is None:
        from triton.runtime.interpreter import GridExecutor

        class HostGridExecutor(GridExecutor):
            """GridExecutor without the PyTorch device<->host copies."""

            def _init_args_hst(self, args_dev, kwargs):
                return args_dev, kwargs

            def _restore_args_dev(self, args_dev, args_hst, kwargs, kwargs_hst):
                pass

        _executor_cls = HostGridExecutor
    return _executor_cls


# what tl.sort calls in Triton's standard library: run interpreted too (its combine
# functions, which tl.reduce unwraps itself, must stay JITFunctions)
_SORT_HELPERS = ("sort_impl", "_bitonic_merge", "_bitonic_merge_hypercube",
                 "_compare_and_swap", "_indicator", "xor_sum")


def launch_interpreted(kernel, config, buffers):
    """Run `kernel` on host `buffers` under Triton's interpreter, with `config`."""
    import triton.language as tl
    from triton.runtime.interpreter import InterpretedFunction, _patch_lang
    from triton.runtime.jit import JITFunction

    from jitlib.backends.triton import compiler
    module = compiler.load(kernel, flavour="host")
    if not isinstance(getattr(module, "libdevice", None), types.SimpleNamespace):
        module.libdevice = _numpy_libdevice()
        # a helper the kernel calls (tanh) must run interpreted too; combine functions
        # passed to tl.reduce stay JITFunctions, which the interpreter unwraps itself
        helper = getattr(module, tanh.NAME, None)
        if isinstance(helper, JITFunction):
            setattr(module, tanh.NAME, InterpretedFunction(helper.fn).rewrite())
    fn = getattr(module, kernel.fn_name)
    fn = getattr(fn, "fn", fn)       # the plain function under @triton.jit
    grid = kernel.grid(config)
    try:   # imported lazily by the launch, it asserts tl's helpers are JITFunctions
        import triton.experimental.gluon  # noqa: F401
    except ImportError:
        pass
    with _lock, np.errstate(all="ignore"):
        saved = [(tl, n, f) for n, f in vars(tl).items() if isinstance(f, JITFunction)]
        saved += [(tl.standard, n, getattr(tl.standard, n)) for n in _SORT_HELPERS
                  if isinstance(getattr(tl.standard, n, None), JITFunction)]
        scope = _patch_lang(tl.sum.fn)   # also patches tl.core, which they call
        try:
            for ns, n, f in saved:
                setattr(ns, n, InterpretedFunction(f.fn).rewrite())
            interpreted = InterpretedFunction(fn)
            _executor()(interpreted.rewrite(), interpreted.arg_names, grid)(
                *buffers, **config.constexprs)
        finally:
            for ns, n, f in saved:
                setattr(ns, n, f)
            scope.restore()
