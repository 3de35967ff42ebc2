"""CuPy, where it is installed, over jitlib's device memory: the library kernels
(cusolver.py, cufft.py) run on the device buffers themselves."""
import importlib


def cupy_or_none(*submodules):
    """The cupy module with `submodules` imported, or None where it cannot be had."""
    try:
        import cupy
        for name in submodules:
            importlib.import_module(name)
    except Exception:   # not installed, or no CUDA runtime under it
        return None
    return cupy


def cupy_view(cp, array):
    """A CuPy array over a jitlib Array's memory (no copy; the Array stays alive)."""
    memory = cp.cuda.UnownedMemory(array.data_ptr(), array.nbytes, array)
    return cp.ndarray(array.shape, array.dtype, cp.cuda.MemoryPointer(memory, 0))
