"""Generated sources on disk, loaded as modules, and compiled ahead of time.

Each kernel's source is written once to `<cache dir>/triton/<fn>_<hash>.py` (the disk
cache's directory, else one temp dir per process) so a user can open the kernel
they ran, and so Triton (which reads a kernel's source through `inspect`) and its
interpreter see a real file. A module is imported from that file once per process.

`compile_for(kernel, target)` runs Triton's ahead-of-time path (`triton.compile` on an
ASTSource, no GPU needed: LLVM and the ptxas bundled in the wheel) and returns the
compiled kernel with its `asm` dict (ttir, ttgir, llir, ptx, cubin).
"""
import importlib.util
import logging
import os
import sys
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor

log = logging.getLogger("jitlib")

_lock = threading.Lock()
_modules = {}      # (path, flavour) -> module
_default_dir = None
_pool = None       # the compile threads, made on first use


def cache_dir():
    """Where generated kernels (and tuned configs) live: under the disk cache's directory
    (cache/disk.py: JITLIB_CACHE_DIR, else ~/.cache/jitlib), so a config tuned once
    holds in later processes; a temp dir of this process when the disk cache is off."""
    from jitlib.cache import disk
    global _default_dir
    base = disk.cache_dir()
    if not base:
        if _default_dir is None:
            _default_dir = tempfile.mkdtemp(prefix="jitlib-")
        base = _default_dir
    path = os.path.join(base, "triton")
    os.makedirs(path, exist_ok=True)
    return path


def source_path(kernel):
    """The kernel's source file, written on first use."""
    path = os.path.join(cache_dir(), f"{kernel.fn_name}_{kernel.digest}.py")
    if not os.path.exists(path):
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w") as f:
            f.write(kernel.source)
        os.replace(tmp, path)   # atomic: a concurrent reader never sees half a file
    return path


def load(kernel, flavour="cuda"):
    """The kernel's module, imported from its file. flavour "host" is a separate instance
    whose globals the interpreter launcher may patch (libdevice) without touching the
    one that compiles for the GPU."""
    path = source_path(kernel)
    with _lock:
        key = (path, flavour)
        if key not in _modules:
            name = f"jitlib_triton_{flavour}_{kernel.fn_name}_{kernel.digest}"
            spec = importlib.util.spec_from_file_location(name, path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module     # Triton resolves the function's module by name
            spec.loader.exec_module(module)
            _modules[key] = module
        return _modules[key]


def jit_function(kernel, flavour="cuda"):
    return getattr(load(kernel, flavour), kernel.fn_name)


SM90 = ("cuda", 90, 32)


def compile_for(kernel, target=SM90, config=None):
    """`kernel` compiled ahead of time for `target`: (backend, arch, warp size) or a
    GPUTarget (a device's `target`)."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    config = config or kernel.config
    fn = jit_function(kernel)
    n_ptr = len(kernel.inputs) + len(kernel.outputs)
    # what the launcher specializes at run time for aligned buffers: 16-byte divisible
    attrs = {(i,): [["tt.divisibility", 16]] for i in range(n_ptr)}
    signature = dict(kernel.signature)
    signature.update({name: "constexpr" for name in config.constexprs})
    src = ASTSource(fn=fn, signature=signature, constexprs=dict(config.constexprs),
                    attrs=attrs)
    if not isinstance(target, GPUTarget):
        target = GPUTarget(*target)
    return triton.compile(src, target=target, options=config.options())


def compile_all(launches, target):
    """Compile every launch (launch.CompiledLaunch) for `target` at once, on a thread per
    core: Triton's passes, LLVM and ptxas run outside the GIL for most of a compile, so a
    program's kernels build side by side instead of one at each first launch. A compile
    that fails here is left to the launch's own first call, which reports it in context."""
    launches = list(launches)
    for launch in launches:
        jit_function(launch.kernel)    # import the modules here: the import lock is global

    def build(launch):
        try:
            launch.precompile(target)
        except Exception as e:   # noqa: BLE001 - the first launch raises it with context
            log.debug("gpu: ahead-of-time compile of %s failed: %s", launch.kernel.name, e)
    if len(launches) > 1:
        list(_compile_pool().map(build, launches))
    elif launches:
        build(launches[0])


def _compile_pool():
    global _pool
    with _lock:
        if _pool is None:
            cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") \
                else os.cpu_count()
            _pool = ThreadPoolExecutor(cores or 1, thread_name_prefix="jitlib-compile")
        return _pool
