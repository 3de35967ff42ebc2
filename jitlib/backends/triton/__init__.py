"""The Triton GPU backend: each fused kernel becomes generated Triton source.

    source.py      dtypes, literals, the line writer
    elemental.py   each op's value at a tile of indices (the rule tables)
    kernels.py     the loop / reduction / dot kernel around the emitted values
    configs.py     block sizes and warps per signature; the autotuner's hook and cache
    compiler.py    sources on disk, loaded as modules; ahead-of-time compiles (sm_90)
    executable.py  runs the kernels in order on a device; what is not generated runs
                   on the interpreter
    host.py        the host device: NumPy buffers, kernels run by Triton's interpreter
    device.py      the CUDA device (the runtime's; may be absent)

Importing this package imports neither triton nor a CUDA binding: `compile` does.
"""
from jitlib.backends.base import Backend
from jitlib.fusion import optimize

__all__ = ["TritonBackend", "default_device"]


def default_device():
    """The CUDA device when one can be used, else the host device (Triton's interpreter)."""
    from jitlib.backends import _cuda_gpu_visible
    if _cuda_gpu_visible():
        try:
            from jitlib.backends.triton import device as cuda
        except ImportError:   # the runtime is not built yet
            cuda = None
        if cuda is not None:
            get = getattr(cuda, "get_device", None) or getattr(cuda, "default_device", None)
            if get is not None:
                return get()
    from jitlib.backends.triton.host import HostDevice
    return HostDevice()


class TritonBackend(Backend):
    """Generates and launches one Triton kernel per fused kernel."""

    name = "gpu"

    def __init__(self, device=None):
        self._device = device

    @property
    def device(self):
        if self._device is None:
            self._device = default_device()
        return self._device

    def compile(self, module):
        import triton  # noqa: F401  (fail here, clearly, when triton is missing)
        from jitlib.backends.triton.executable import TritonExecutable
        return TritonExecutable(module, self.name, optimize(module), self.device)

    def kernel_sources(self, module):
        """The generated source of every kernel of `module` (for Lowered.as_text)."""
        return self.compile(module).kernel_sources()
