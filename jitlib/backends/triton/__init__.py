"""The Triton GPU backend: each fused kernel becomes generated Triton source.

    source.py      dtypes, literals, the line writer
    elemental.py   each op's value at a tile of indices (the rule tables)
    kernels.py     the loop / reduction / dot kernel around the emitted values
    attention.py   a dot -> row softmax -> dot chain of kernels as one (flash attention)
    configs.py     block sizes and warps per signature; the autotuner's hook and cache
    compiler.py    sources on disk, loaded as modules; ahead-of-time compiles (sm_90)
    executable.py  runs the kernels in order on a device; what is not generated runs
                   on the interpreter
    host.py        the host device: NumPy buffers, kernels run by Triton's interpreter
    device.py      the CUDA device (the runtime's; may be absent)

Importing this package imports neither triton nor a CUDA binding: `compile` does.
"""
from jitlib.backends.base import Backend
from jitlib.backends import complex_products
from jitlib.fusion import optimize

__all__ = ["TritonBackend", "default_device"]


def default_device():
    """The CUDA device. Without a GPU, a DeviceError ("no CUDA GPU"), unless
    JITLIB_GPU_INTERPRET=1 asks for Triton's interpreter on host memory: slow, for
    debugging kernels and for tests, never a silent stand-in for a missing GPU."""
    import os

    from jitlib.backends import _cuda_gpu_visible
    if os.environ.get("JITLIB_GPU_INTERPRET") == "1":
        from jitlib.backends.triton.host import HostDevice
        return HostDevice()
    from jitlib.backends.triton import device as cuda
    if not _cuda_gpu_visible():
        from jitlib.array import DeviceError
        raise DeviceError("no CUDA GPU: backend='gpu' needs an NVIDIA GPU and its driver",
                          hint="use backend='cpu' (the default without a GPU), or set "
                               "JITLIB_GPU_INTERPRET=1 to run the generated Triton kernels "
                               "on Triton's interpreter")
    return cuda.get_device()


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
        return TritonExecutable(module, self.name, _optimize(module), self.device)

    def kernel_sources(self, module):
        """The generated source of every kernel of `module` (for Lowered.as_text)."""
        import triton  # noqa: F401
        from jitlib.array import DeviceError
        from jitlib.backends.triton.executable import TritonExecutable
        try:
            device = self.device
        except DeviceError:
            # Reading the generated source needs no GPU: build it against host buffers.
            from jitlib.backends.triton.host import HostDevice
            device = HostDevice()
        return TritonExecutable(module, self.name, _optimize(module), device).kernel_sources()


def _optimize(module):
    # complex products as real ones: the dot kernels are real (complex_products.py)
    return optimize(complex_products.split(module))
