"""The marks of tests that need a real CUDA device: `gpu`, and a skip that carries the
device's own reason (no driver, no cuda-python, no GPU) where there is none."""
import pytest

from jitlib.array import DeviceError
from jitlib.backends.triton.device import get_device


def no_gpu_reason():
    """None where a CUDA device can be set up, else why not."""
    try:
        get_device()
    except DeviceError as e:
        return e.message
    return None


_NO_GPU = no_gpu_reason()
NEEDS_CUDA = [pytest.mark.gpu,
              pytest.mark.skipif(_NO_GPU is not None, reason=f"needs a CUDA GPU: {_NO_GPU}")]
