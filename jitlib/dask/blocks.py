"""Which memory a task's blocks live in, and keeping the program's results there.

A Dask array's blocks are NumPy arrays, or on GPU workers (dask-cuda) CuPy arrays; a
user can also map blocks to `jitlib.Array`s. A stage program takes each block where it
is: a device block goes to the gpu backend's program through DLPack, without a copy, and
the results come back as the same kind of array on the same device, so a chain of
stages never leaves the GPU. Host blocks run as before (a gpu program copies them in
and its results out, since Dask expects host blocks back).
"""
import numpy as np

from jitlib.array import Array

NUMPY, CUPY, JITLIB = "numpy", "cupy", "jitlib"


def kind(x):
    """The kind of array `x` is: NUMPY (anything on the host), CUPY, or JITLIB."""
    if type(x) is Array:
        return JITLIB
    if type(x).__module__.startswith("cupy"):
        return CUPY
    return NUMPY


def program_inputs(blocks, dtypes):
    """The blocks as a program takes them, and where its results go: the first device
    block among them (its kind and device), or None for the host."""
    home, inputs = None, []
    for x, dtype in zip(blocks, dtypes):
        k = kind(x)
        if k == NUMPY:
            inputs.append(np.asarray(x, dtype=dtype))
            continue
        home = x if home is None else home
        if k == CUPY:
            from jitlib.array import from_dlpack
            x = from_dlpack(x)
        inputs.append(x if x.dtype == dtype else x.astype(dtype))
    return inputs, home


def program_outputs(outs, home):
    """A program's results as arrays of `home`'s kind on its device (NumPy for None)."""
    k = NUMPY if home is None else kind(home)
    if k == NUMPY:
        return [np.asarray(o) for o in outs]
    if k == JITLIB:
        from jitlib.transfer import device_put
        return [o if type(o) is Array else device_put(o, home.device) for o in outs]
    import cupy
    with cupy.cuda.Device(home.device.id):
        return [cupy.from_dlpack(o) if type(o) is Array else cupy.asarray(o) for o in outs]


def pad_to(block, shape):
    """`block` padded with zeros at the end of each axis to `shape`, where it lives
    (np.pad dispatches to CuPy's and jitlib's own for their arrays)."""
    widths = [(0, n - m) for n, m in zip(shape, block.shape)]
    if kind(block) == NUMPY:
        block = np.asarray(block)
    return np.pad(block, widths)
