"""Process-wide settings. Environment variables give the defaults only."""
import functools
import os


def default_backend() -> str:
    """JITLIB_BACKEND if set, else "gpu" where a CUDA GPU and Triton are present, else "cpu"."""
    return os.environ.get("JITLIB_BACKEND") or _detected_backend()


@functools.lru_cache(maxsize=None)
def _detected_backend() -> str:
    # probing for triton and a GPU costs a file-system walk: once per process
    from jitlib.backends import default_backend_name
    name: str = default_backend_name()
    return name


def num_threads() -> int:
    """JITLIB_NUM_THREADS if it is a positive integer, else the number of CPUs: the
    threads a large cpu kernel or a batch of LAPACK calls is shared between."""
    try:
        n = int(os.environ.get("JITLIB_NUM_THREADS", ""))
    except ValueError:
        n = 0
    return n if n > 0 else (os.cpu_count() or 1)


def compile_worker() -> str:
    """JITLIB_COMPILE_WORKER: where the cpu backend runs LLVM's optimizer. "auto" (the
    default): in this process for its first compiles, then in a worker process (llvmlite
    never frees part of each run's memory); meanwhile, from a process's third program
    with several kernels to compile, a second worker at the lowest priority compiles part
    of each such program beside this process. "always": every compile in the worker;
    "never": every compile here, one at a time."""
    value = os.environ.get("JITLIB_COMPILE_WORKER", "auto").strip().lower() or "auto"
    aliases = {"1": "always", "true": "always", "0": "never", "false": "never"}
    value = aliases.get(value, value)
    if value not in ("auto", "always", "never"):
        raise ValueError(f"JITLIB_COMPILE_WORKER={value!r}: use auto, always or never")
    return value


def gpu_f32_dot() -> str:
    """JITLIB_GPU_F32_DOT: how the gpu backend multiplies f32 tiles (docs/gpu_numerics.md).
    "tf32x3": on the tensor cores, an f32 x f32 product as three TF32 products of high and
    low parts (~2^-21 relative; a dot tile whose sums come out inf or NaN is computed
    again with IEEE products, so inf and NaN land where NumPy puts them), an f32 x bf16
    one as two bf16 products of the f32 operand's halves (~2^-17). "ieee": exact f32
    products on the FMA units everywhere. "auto" (the default): f32 x bf16 dots and
    fused attention as "tf32x3"; an f32 x f32 dot kernel holds both the tf32x3 and the
    IEEE loop and the autotuner keeps the faster on this GPU (without tuning: tf32x3
    for outputs of at least 256 128x64 tiles). Read when a kernel is generated."""
    value = os.environ.get("JITLIB_GPU_F32_DOT", "auto").strip().lower() or "auto"
    if value not in ("auto", "tf32x3", "ieee"):
        raise ValueError(f"JITLIB_GPU_F32_DOT={value!r}: use tf32x3, ieee or auto")
    return value


def gpu_linalg() -> str:
    """JITLIB_GPU_LINALG: where the gpu backend runs linear-algebra kernels. "host" (the
    default until a GPU session has checked the other): the interpreter through host
    memory (NumPy's and SciPy's LAPACK); "cusolver": cuSOLVER and cuBLAS through CuPy
    on the device's stream where CuPy is installed (backends/triton/cusolver.py). Read
    when a program is compiled."""
    value = os.environ.get("JITLIB_GPU_LINALG", "host").strip().lower() or "host"
    if value not in ("host", "cusolver"):
        raise ValueError(f"JITLIB_GPU_LINALG={value!r}: use host or cusolver")
    return value


def cpu_blas() -> str:
    """JITLIB_BLAS: which BLAS the cpu backend's float32/float64 products call. "numpy"
    (default): NumPy's own OpenBLAS (np.matmul: the interpreter's bits). "private"
    (opt-in): where NumPy's OpenBLAS runs AVX2 kernels on an AVX-512 host, a second,
    private copy of it with AVX-512 kernels, loaded into the process
    (jitlib/backends/llvm/blas_library.py; gains in docs/performance.md)."""
    value = os.environ.get("JITLIB_BLAS", "numpy").strip().lower() or "numpy"
    if value not in ("numpy", "private"):
        raise ValueError(f"JITLIB_BLAS={value!r}: use numpy (the default) or private")
    return value


def cpu_loader() -> str:
    """JITLIB_CPU_LOADER: what maps the cpu backend's object code into the process.
    "auto" (the default): jitlib's own loader (jitlib/backends/llvm/loader.py) where it
    can, else an MCJIT engine; "mcjit": always an MCJIT engine."""
    value = os.environ.get("JITLIB_CPU_LOADER", "auto").strip().lower() or "auto"
    if value not in ("auto", "mcjit"):
        raise ValueError(f"JITLIB_CPU_LOADER={value!r}: use auto or mcjit")
    return value


def roll_loops() -> bool:
    """JITLIB_ROLL_LOOPS: how jit turns a Python `for` loop back into one `while` op.
    "1" (the default): trace a loop's body once where its trips provably repeat
    (jitlib/trace/loop_capture.py), and roll what traced trip by trip afterwards
    (jitlib/trace/rolling.py); "after": only the latter; "0": neither, the straight-line
    trace. Read at each trace."""
    return _roll_loops_mode() != "0"


def capture_loops() -> bool:
    """Whether JITLIB_ROLL_LOOPS lets jit trace a loop's body once (see roll_loops)."""
    return _roll_loops_mode() == "1"


def _roll_loops_mode() -> str:
    value = os.environ.get("JITLIB_ROLL_LOOPS", "1").strip().lower() or "1"
    modes = {"1": "1", "true": "1", "on": "1", "0": "0", "false": "0", "off": "0",
             "after": "after"}
    if value not in modes:
        raise ValueError(f"JITLIB_ROLL_LOOPS={value!r}: use 1, after or 0")
    return modes[value]


# ---------------------------------------------------------------------------- settings
# Settings a program changes at run time with `update`: name -> (environment variable
# giving the default, allowed values, default without the variable). The variable is
# read once, at import: `update` is the way to change a setting in a running process.

_SETTINGS: dict[str, tuple[str, tuple[str, ...], str]] = {
    # what a jitted function on the gpu backend returns: "device" keeps results in GPU
    # memory as jitlib.Array (chained calls never touch the host), "numpy" copies them to
    # host NumPy arrays after each call (docs/arrays.md)
    "results": ("JITLIB_RESULTS", ("device", "numpy"), "device"),
    # how float products may round, named as JAX names them: "highest" follows NumPy
    # (f32 products exact to f32), "high" is tf32x3 on the GPU's tensor cores, "default"
    # one TF32 product, and 16-bit operands keep their type (docs/gpu_numerics.md)
    "matmul_precision": ("JITLIB_MATMUL_PRECISION", ("highest", "high", "default"),
                         "highest"),
    # what a jitted function called on Dask arrays does with an op that couples blocks
    # along a chunked axis (a cumsum, a reverse): "error" says which op and how to
    # rechunk; "auto" rechunks that axis to one chunk and goes on (docs/dask.md)
    "dask_rechunk": ("JITLIB_DASK_RECHUNK", ("error", "auto"), "error"),
}


def _from_environment(name: str) -> str:
    variable, allowed, default = _SETTINGS[name]
    value = os.environ.get(variable, "").strip().lower() or default
    if value not in allowed:
        raise ValueError(f"{variable}={value!r}: use {' or '.join(allowed)}")
    return value


_values = {name: _from_environment(name) for name in _SETTINGS}


def update(name: str, value: str) -> None:
    """Change a setting for the rest of the process, as `jax.config.update` does:
    `jitlib.config.update("results", "numpy")`. Known settings: "results" ("device", the
    default, or "numpy"; its environment variable JITLIB_RESULTS sets the default),
    "matmul_precision" ("highest", the default, "high" or "default";
    JITLIB_MATMUL_PRECISION) and "dask_rechunk" ("error", the default, or "auto";
    JITLIB_DASK_RECHUNK)."""
    if name not in _SETTINGS:
        raise ValueError(f"unknown jitlib setting {name!r}: known are "
                         f"{', '.join(sorted(_SETTINGS))}")
    allowed = _SETTINGS[name][1]
    if value not in allowed:
        raise ValueError(f"jitlib setting {name!r} takes {' or '.join(allowed)}, "
                         f"got {value!r}")
    _values[name] = value


def get(name: str) -> str:
    """The current value of a setting `update` changes."""
    if name not in _values:
        raise ValueError(f"unknown jitlib setting {name!r}: known are "
                         f"{', '.join(sorted(_SETTINGS))}")
    return _values[name]


def matmul_precision(requested: str | None = None) -> str:
    """The precision products are traced with: `requested` (a jit option) where given,
    else the "matmul_precision" setting. Raises ValueError for an unknown name."""
    if requested is None:
        return _values["matmul_precision"]
    allowed = _SETTINGS["matmul_precision"][1]
    if requested not in allowed:
        raise ValueError(f"matmul_precision={requested!r}: use {', '.join(allowed)}")
    return requested


def results_on_host() -> bool:
    """Whether jitted functions return host NumPy arrays (setting "results" = "numpy")
    rather than leaving device results as jitlib.Array."""
    return _values["results"] == "numpy"
