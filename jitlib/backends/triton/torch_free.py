"""Triton's CUDA driver without PyTorch, for Tritons whose driver imports it.

Up to Triton 3.8, `CudaDriver()` (what `triton.runtime.driver.active` is built from on
first use) imports PyTorch to learn the current device, its capability and the current
stream, and so does choosing the driver (`CudaDriver.is_active`). On a GPU first call
that import is most of the time before jitlib's own work (H100, Triton 3.6: 1-3 s of a
2-3 s first call, docs/performance.md). Triton 3.9 skips it when PyTorch is not loaded
and answers from the CUDA driver instead; `install()` does the same on older versions:
where PyTorch is not loaded and Triton has not picked its driver yet, the active driver
is a CudaDriver that asks cuda-python, and reports the legacy default stream, which is
what PyTorch reports too unless a user switched streams (the device's stream in
device.py comes from here). A process that loads PyTorch first keeps Triton's own.
"""
import sys


def install(cu, ordinal):
    """Make the torch-free driver Triton's active one where it is needed and safe; `cu`
    is cuda-python's driver module, `ordinal` the device set up. Returns whether it did."""
    from triton.backends.nvidia import driver as nvidia
    from triton.runtime import driver as drivers
    if sys.modules.get("torch") is not None or getattr(drivers, "_active", True) is not None:
        return False    # PyTorch is loaded (its streams count), or Triton already chose
    if hasattr(nvidia.CudaDriver, "_get_current_stream"):
        return False    # Triton 3.9 and later do this themselves
    drivers.set_active(_driver_class(nvidia)(cu))
    return True


def _driver_class(nvidia):
    class TorchFreeCudaDriver(nvidia.CudaDriver):
        """CudaDriver whose device, capability and stream come from the CUDA driver."""

        def __init__(self, cu):   # not CudaDriver's: GPUDriver.__init__ imports torch
            self.utils = nvidia.CudaUtils()
            self.launcher_cls = nvidia.CudaLauncher
            self._cu = cu

        def get_current_device(self):
            err, device = self._cu.cuCtxGetDevice()
            return int(device) if err == self._cu.CUresult.CUDA_SUCCESS else 0

        def set_current_device(self, device):
            cu = self._cu
            _, handle = cu.cuDeviceGet(device)
            _, context = cu.cuDevicePrimaryCtxRetain(handle)
            cu.cuCtxSetCurrent(context)

        def get_device_capability(self, device):
            cu, attr = self._cu, self._cu.CUdevice_attribute
            _, handle = cu.cuDeviceGet(device)
            major = cu.cuDeviceGetAttribute(
                attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, handle)[1]
            minor = cu.cuDeviceGetAttribute(
                attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, handle)[1]
            return int(major), int(minor)

        def get_current_stream(self, device=None):
            return 0   # the legacy default stream

    return TorchFreeCudaDriver
