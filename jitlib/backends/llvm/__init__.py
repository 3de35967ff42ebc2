"""The LLVM CPU backend: fused kernels compiled to machine code through llvmlite.

    emitter.py     each op's value at one index, as LLVM IR text (the rule tables)
    wide_math.py   sin/cos/tan past mathlib's accurate range: libm, once per vector
    kernels.py     the loop nest of each kernel kind around the emitted values
    compiler.py    IR text -> optimised machine code for the host CPU, cached by text
    loader.py      object code mapped into the process (ELF relocation; MCJIT fallback)
    executable.py  runs the kernels in order; what is not compiled runs on the interpreter
    buffers.py     where values live: the arena planned by liveness, recycled results
    program.py     small programs: one native driver call runs every kernel
    parallel.py    large kernels: their outermost loop shared between threads
    rendered.py    render a fusion of any kind; a rendered kernel as plain data
    saved.py       compiled programs on disk: optimized module, kernels, object code

`LLVMBackend().compile(module)` optimises the module (`jitlib.fusion.optimize`), renders
and compiles each kernel, and returns an `LLVMExecutable`; with the disk cache on, a
later process loads the saved program instead (no optimizer, renderer or LLVM run).
"""
import numpy as np

from jitlib import logs
from jitlib.backends.base import Backend
from jitlib.backends.llvm import blas_library
from jitlib.backends.llvm import saved
from jitlib.backends.llvm.executable import LLVMExecutable, multiply_adds, render_all
from jitlib.cache import disk
from jitlib.cache.optimized import optimize   # jitlib.fusion.optimize, kept on disk when large
from jitlib.hlo.ops import Op

__all__ = ["LLVMBackend", "LLVMExecutable"]
_BLAS_TYPES = (np.dtype(np.float32), np.dtype(np.float64))


class LLVMBackend(Backend):
    """Compiles each fused kernel with LLVM for this machine's CPU."""

    name = "cpu"
    saves_programs = True

    def compile(self, module):
        """`module` optimised into kernels, each compiled (or, where the backend cannot
        yet, run on the interpreter), as one executable. With the disk cache on, the
        program is saved (saved.py) and a later process loads it instead."""
        largest = largest_product(module)
        if largest:   # the BLAS loads on another thread while the program compiles or loads
            blas_library.prepare(largest)
        store = disk.object_store()
        key = None if store is None else saved.program_key(store, module)
        found = None if key is None else saved.load(store, key)
        if found is not None:
            return self._from_saved(module, found, key)
        with logs.compiling(module.name):   # a slow compile reports its progress
            optimized = optimize(module)
            made = render_all(optimized)
            executable = LLVMExecutable(module, self.name, optimized, made)
        if key is not None:
            saved.save(store, key, optimized, made, executable.code, largest)
        executable.saved_key = key
        return executable

    def load_saved(self, key, record=None):
        store = disk.object_store()
        found = None if store is None else saved.load(store, key, record)
        if found is None:
            return None
        optimized, _, _, largest = found
        if largest:
            blas_library.prepare(largest)
        # the optimized module takes the same parameters as the module it came from
        return self._from_saved(optimized, found, key)

    def load_record(self, module, key, record):
        """The executable of `module` from a saved program's record that another process
        shipped (a Dask client to its workers), mapped without compiling; None if the
        record does not read back. The caller checks `saved_context()` matches first."""
        found = saved.load(None, key, record)
        if found is None:
            return None
        if found[3]:
            blas_library.prepare(found[3])
        return self._from_saved(module, found, key)

    def compile_optimized(self, module, optimized):
        """`module`'s executable from its already optimized form (`optimized`, as
        `jitlib.fusion.optimize` gave it, maybe in another process): the kernels are
        rendered and compiled for this machine, the optimizer does not run again."""
        largest = largest_product(module)
        if largest:
            blas_library.prepare(largest)
        with logs.compiling(module.name):
            executable = LLVMExecutable(module, self.name, optimized, render_all(optimized))
        executable.saved_key = None   # not in this machine's disk cache
        return executable

    def saved_context(self):
        return saved.context()

    def saved_record(self, key):
        store = disk.object_store()
        return None if store is None else saved.read(store, key)

    def _from_saved(self, module, found, key):
        """The executable of a saved program (its object code was saved with it: nothing
        to compile ahead)."""
        optimized, made, objects, _ = found
        executable = LLVMExecutable(module, self.name, optimized, made, ahead=False,
                                    saved=objects)
        executable.saved_key = key
        return executable

    def kernel_sources(self, module):
        """Each kernel's LLVM IR as rendered (for `Lowered.as_text("kernels")`)."""
        from jitlib.backends.llvm.sources import kernel_texts
        return kernel_texts(optimize(module))

    def kernel_assembly(self, module):
        """Each kernel's host assembly (for `Lowered.as_text("assembly")`)."""
        from jitlib.backends.llvm.sources import kernel_texts
        return kernel_texts(optimize(module), assembly=True)


def largest_product(module):
    """The multiply-adds of the module's largest float product (in its instructions or
    its kernels' bodies), 0 if it has none: what decides which BLAS it loads."""
    products = [i for i in module.instructions
                if i.op is Op.DOT_GENERAL and i.dtype in _BLAS_TYPES]
    products += [i for f in module.instructions if f.op is Op.FUSION
                 for i in f.attrs["body"].instructions
                 if i.op is Op.DOT_GENERAL and i.dtype in _BLAS_TYPES]
    return max((multiply_adds(p) for p in products), default=0)
