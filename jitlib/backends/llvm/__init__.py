"""The LLVM CPU backend: fused kernels compiled to machine code through llvmlite.

    emitter.py     each op's value at one index, as LLVM IR text (the rule tables)
    wide_math.py   sin/cos/tan past mathlib's accurate range: libm, once per vector
    kernels.py     the loop nest of each kernel kind around the emitted values
    compiler.py    IR text -> optimised machine code for the host CPU, cached by text
    executable.py  runs the kernels in order; what is not compiled runs on the interpreter
    buffers.py     where values live: the arena planned by liveness, recycled results
    program.py     small programs: one native driver call runs every kernel
    parallel.py    large kernels: their outermost loop shared between threads

`LLVMBackend().compile(module)` optimises the module (`jitlib.fusion.optimize`), renders
and compiles each kernel, and returns an `LLVMExecutable`.
"""
import numpy as np

from jitlib.backends.base import Backend
from jitlib.backends.llvm import blas_library
from jitlib.backends.llvm.executable import LLVMExecutable, multiply_adds
from jitlib.cache.optimized import optimize   # jitlib.fusion.optimize, kept on disk when large
from jitlib.hlo.ops import Op

__all__ = ["LLVMBackend", "LLVMExecutable"]
_BLAS_TYPES = (np.dtype(np.float32), np.dtype(np.float64))


class LLVMBackend(Backend):
    """Compiles each fused kernel with LLVM for this machine's CPU."""

    name = "cpu"

    def compile(self, module):
        """`module` optimised into kernels, each compiled (or, where the backend cannot
        yet, run on the interpreter), as one executable."""
        products = [i for i in module.instructions
                    if i.op is Op.DOT_GENERAL and i.dtype in _BLAS_TYPES]
        if products:   # the BLAS loads on another thread while this compiles
            blas_library.prepare(max(multiply_adds(p) for p in products))
        return LLVMExecutable(module, self.name, optimize(module))

    def kernel_sources(self, module):
        """Each kernel's LLVM IR as rendered (for `Lowered.as_text("kernels")`)."""
        from jitlib.backends.llvm.sources import kernel_texts
        return kernel_texts(optimize(module))

    def kernel_assembly(self, module):
        """Each kernel's host assembly (for `Lowered.as_text("assembly")`)."""
        from jitlib.backends.llvm.sources import kernel_texts
        return kernel_texts(optimize(module), assembly=True)

