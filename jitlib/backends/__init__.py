"""The backend registry: names to backends, each module imported on first use.

Importing this package imports no backend, so `import jitlib` never pulls in jax, llvmlite or
triton.
"""
import glob
import importlib
import importlib.util
import os

from jitlib.errors import BackendError

# name -> (module, class, the third-party package it needs or None)
_BACKENDS = {
    "interpreter": ("jitlib.backends.interpreter", "InterpreterBackend", None),
    "jax": ("jitlib.backends.jax", "JaxBackend", "jax"),
    "cpu": ("jitlib.backends.llvm", "LLVMBackend", "llvmlite"),
    # without a CUDA GPU it runs its kernels on Triton's interpreter (slow; for tests)
    "gpu": ("jitlib.backends.triton", "TritonBackend", "triton"),
}
KNOWN = tuple(_BACKENDS)

_instances = {}


def get_backend(name):
    """The backend called `name`: one of "interpreter", "jax", "cpu", "gpu"."""
    check_name(name)
    if name not in _instances:
        module, cls, needs = _BACKENDS[name]
        if needs is not None and not _installed(needs):
            extra = {"triton": "gpu", "jax": "test"}.get(needs)
            raise BackendError(
                f"backend {name!r} needs the {needs} package, which is not installed",
                hint=f"pip install {needs}" + (f" (or jitlib's extra: pip install -e "
                                               f"\".[{extra}]\")" if extra else ""))
        _instances[name] = getattr(importlib.import_module(module), cls)()
    return _instances[name]


def _installed(package):
    try:
        return importlib.util.find_spec(package) is not None
    except ValueError:   # in sys.modules as None: blocked, as a test may do
        return False


def check_name(name):
    """Raise a clear error for a backend name that does not exist."""
    if name not in _BACKENDS:
        raise BackendError(f"unknown backend {name!r}",
                           hint=f"known backends: {', '.join(KNOWN)}")


def available_backends():
    """The names `get_backend` accepts here, given what is installed."""
    usable = [n for n, (_, _, needs) in _BACKENDS.items()
              if needs is None or importlib.util.find_spec(needs) is not None]
    return tuple(usable)


def default_backend_name():
    """The default backend: "gpu" where it can run (triton installed, a CUDA GPU
    visible), else "cpu"."""
    if importlib.util.find_spec("triton") is not None and _cuda_gpu_visible():
        return "gpu"
    return "cpu"


def _cuda_gpu_visible():
    # Device nodes and the env var answer without loading a CUDA library.
    if os.environ.get("CUDA_VISIBLE_DEVICES") in ("", "-1"):
        return False
    return bool(glob.glob("/dev/nvidia[0-9]*"))
