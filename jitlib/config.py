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


def compile_worker() -> str:
    """JITLIB_COMPILE_WORKER: where the cpu backend runs LLVM's optimizer. "auto" (the
    default): in this process for its first compiles, then in a worker process (llvmlite
    never frees part of each run's memory); "always"; "never"."""
    value = os.environ.get("JITLIB_COMPILE_WORKER", "auto").strip().lower() or "auto"
    aliases = {"1": "always", "true": "always", "0": "never", "false": "never"}
    value = aliases.get(value, value)
    if value not in ("auto", "always", "never"):
        raise ValueError(f"JITLIB_COMPILE_WORKER={value!r}: use auto, always or never")
    return value


def gpu_f32_dot() -> str:
    """JITLIB_GPU_F32_DOT: how the gpu backend's matmul kernels multiply f32 tiles.
    "tf32x3" (the default): on the tensor cores, each f32 operand split into a high and a
    low TF32 part and three products summed in f32 (about 2^-21 relative per product);
    a program whose operand blocks hold inf, NaN or magnitudes near the f32 limit takes
    the IEEE products instead. An f32 x bf16 product splits the f32 operand into two
    bf16 halves (two products, about 2^-17 relative). "ieee": exact f32 products on the
    FMA units, everywhere. Read when a kernel is generated (docs/gpu_numerics.md)."""
    value = os.environ.get("JITLIB_GPU_F32_DOT", "tf32x3").strip().lower() or "tf32x3"
    if value not in ("tf32x3", "ieee"):
        raise ValueError(f"JITLIB_GPU_F32_DOT={value!r}: use tf32x3 or ieee")
    return value
