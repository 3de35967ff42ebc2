"""Process-wide settings. Environment variables give the defaults only."""
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
    name = os.environ.get("JITLIB_BACKEND")
    if name:
        return name
    from jitlib.backends import default_backend_name
    return default_backend_name()
