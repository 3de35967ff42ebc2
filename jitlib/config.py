"""Process-wide settings. Environment variables give the defaults only."""
import functools
import os


def debug_level() -> int:
    """JITLIB_DEBUG: 1 = cache events, 2 = IR before/after the pipeline, 3 = each pass,
    4 = generated source."""
    try:
        return int(os.environ.get("JITLIB_DEBUG", "0"))
    except ValueError:
        return 0


def default_backend() -> str:
    """JITLIB_BACKEND if set, else "gpu" where a CUDA GPU and Triton are present, else "cpu"."""
    return os.environ.get("JITLIB_BACKEND") or _detected_backend()


@functools.lru_cache(maxsize=None)
def _detected_backend() -> str:
    # probing for triton and a GPU costs a file-system walk: once per process
    from jitlib.backends import default_backend_name
    return default_backend_name()
