"""What the cpu backend runs, as text, for `Lowered.as_text("kernels" | "assembly")`.

"kernels" is the LLVM IR each fused kernel renders to, as handed to LLVM; "assembly" is
the host machine code LLVM makes of it (at O3, for this CPU: the place to check that a
loop was vectorized). A dot kernel's product runs on the BLAS, so only its epilogue has
code; a kernel the backend does not emit runs on the interpreter and says why.
"""
from jitlib.backends.llvm import kernels
from jitlib.backends.llvm.compiler import get_compiler
from jitlib.backends.llvm.executable import render
from jitlib.hlo.ops import Op


def kernel_texts(optimized, assembly=False):
    """One block per kernel of the optimized module, headed by a `; ----` line."""
    compiler = get_compiler() if assembly else None
    blocks = []
    for fusion in optimized.instructions:
        if fusion.op is not Op.FUSION:
            continue
        name = fusion.attrs["name"]
        kernel, reason = render(fusion)
        if kernel is None:
            blocks.append(f"; ---- {name}: runs on the interpreter ({reason})\n")
            continue
        header = f"; ---- {name}: {fusion.attrs['kind']} kernel"
        if isinstance(kernel, kernels.DotKernel):
            header += ", its dot_general on the BLAS"
            if kernel.epilogue is None:
                blocks.append(header + "; no epilogue\n")
                continue
            header += f", then {kernel.epilogue.name}"
            kernel = kernel.epilogue
        text = compiler.assembly(kernel.ir) if assembly else kernel.ir
        where = f"host assembly at O3 for {compiler.cpu}" if assembly else "LLVM IR as rendered"
        blocks.append(f"{header} ({where})\n{text}")
    return "\n".join(blocks)
