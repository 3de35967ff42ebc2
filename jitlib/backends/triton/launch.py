"""Launching a generated kernel on the CUDA device with as little host work as we can.

Triton's `fn[grid](*args)` binds and specializes every argument, hashes a cache key and
looks the compiled kernel up on every call: tens of microseconds, more than the kernels of
a small program take. Our kernels have static shapes and one config, so the only thing
that can change between calls is the pointers. `CompiledLaunch` goes through Triton's path
once per pointer-alignment pattern (Triton specializes pointers on 16-byte divisibility),
keeps the CompiledKernel it returns, and from then on calls that kernel's launcher (a C
function) directly with integer pointers, the cached grid and our stream.
"""
import logging

from triton import knobs

from jitlib.backends.triton import compiler

log = logging.getLogger("jitlib")


class CompiledLaunch:
    """`launch(buffers)`: run `kernel` with `config` on `stream`; buffers (with `data_ptr()`
    and `dtype`) one per input then per output, in the kernel's parameter order. `stream`
    is a CUstream handle, or the device, whose `stream` is read at each launch (it differs
    while a thread captures a CUDA graph)."""

    def __init__(self, kernel, config, stream):
        self.kernel = kernel
        self.fn = compiler.jit_function(kernel)
        self.config = config
        self._stream = stream
        grid = tuple(kernel.grid(config))
        self.grid = grid
        self.grid3 = (grid + (1, 1, 1))[:3]
        self.empty = not all(n > 0 for n in grid)
        self.n_ptr = n_ptr = len(kernel.inputs) + len(kernel.outputs)
        # the launcher takes every parameter, constexprs included (it ignores their values)
        self.tail = tuple(config.constexprs[name] for name in self.fn.arg_names[n_ptr:])
        self._compiled = {}     # alignment pattern -> CompiledKernel

    def precompile(self, target):
        """Compile for `target` before the first call, for 16-byte aligned buffers (every
        allocation of the device is), so that a program's kernels can be compiled side by
        side (compiler.compile_all) instead of one at each kernel's first launch."""
        aligned = (True,) * self.n_ptr
        if not self.empty and aligned not in self._compiled:
            self._compiled[aligned] = compiler.compile_for(self.kernel, target, self.config)

    @property
    def stream(self):
        s = self._stream
        return s if type(s) is int else s.stream

    def __call__(self, buffers):
        if self.empty:
            return
        pointers = [b.data_ptr() for b in buffers]
        aligned = tuple(p % 16 == 0 for p in pointers)
        compiled = self._compiled.get(aligned)
        if compiled is None and type(self._stream) is not int and self._stream.capturing():
            # Triton's own path launches on its current stream, not a capture's
            from jitlib.array import DeviceError
            raise DeviceError(f"kernel {self.fn.__name__} is not compiled for these "
                              "pointers yet, which a CUDA graph capture cannot do")
        if compiled is None:
            # Triton's own path: compiles (or finds) the kernel and launches it this once
            # on its current stream, which is ours (device.py takes the stream from it).
            # It needs the buffers, not ints: it types each pointer from the buffer's dtype
            c = self.config
            compiled = self.fn[self.grid](*buffers, **c.constexprs, **c.options())
            if hasattr(compiled, "result"):     # an asynchronous compile's future
                compiled = compiled.result()
            self._compiled[aligned] = compiled
            return
        args = (*pointers, *self.tail)
        stream = self.stream
        enter = exit_ = metadata = None
        if _hooks_set():     # profilers (proton) add launch hooks; pass them on as Triton does
            enter, exit_ = knobs.runtime.launch_enter_hook, knobs.runtime.launch_exit_hook
            metadata = compiled.launch_metadata(self.grid, stream, *args)
        g0, g1, g2 = self.grid3
        try:
            compiled.run(g0, g1, g2, stream, compiled.function, compiled.packed_metadata,
                         metadata, enter, exit_, *args)
        except TypeError as e:
            # the launcher's calling convention is Triton-internal; if a Triton version
            # changed it, keep working through the public path (slower), and say so once
            log.warning("jitlib: direct launch of %s failed (%s); using Triton's launcher",
                        self.fn.__name__, e)
            self.__class__ = TritonLaunch
            self(buffers)


def _hooks_set():
    """Whether any launch hook is installed (Triton 3.6 keeps them in HookChains, empty by
    default; older versions use None for none)."""
    rt = knobs.runtime
    return any(h is not None and getattr(h, "calls", True)
               for h in (rt.launch_enter_hook, rt.launch_exit_hook))


class TritonLaunch(CompiledLaunch):
    """Every call through Triton's `fn[grid]` (the fallback of CompiledLaunch)."""

    def __call__(self, buffers):
        if not self.empty:
            c = self.config
            self.fn[self.grid](*buffers, **c.constexprs, **c.options())

