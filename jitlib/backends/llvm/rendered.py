"""Rendering a fused kernel, and a rendered kernel as plain data for the disk cache.

Rendering (kernels.py, opaque.py) walks the kernel's body in Python: for a long fused
chain, a third of the program's warm start, so saved programs (saved.py) keep what it
made. A record is plain JSON: the
LLVM IR text (saved.py keeps its object code beside the record), the function name and
how calls may be split; for a dot kernel its epilogue, which body
parameters that reads, and where the results come from. The kernel's inputs and outputs
are the fusion body's own instructions, found again on load.
"""
from jitlib.backends import complex_lowering
from jitlib.backends.complex_values import first_complex
from jitlib.backends.llvm import host_fft, kernels, opaque, pocketfft
from jitlib.backends.llvm.emitter import Unsupported
from jitlib.hlo.ops import Op


def render_fusion(fusion):
    """The kernel of one FUSION instruction, of any kind; raises `Unsupported` where the
    backend cannot emit it."""
    body = fusion.attrs["body"]
    if any(i.op is Op.FFT for i in body.instructions):
        if host_fft.long_runner(body) is not None:
            raise Unsupported("a long FFT runs in six steps on all cores (host_fft.py)")
        return pocketfft.render(fusion.attrs["name"], body)
    if first_complex(body) is not None:
        return _render_complex(fusion)
    if fusion.attrs["kind"] == "opaque":
        return opaque.render(fusion.attrs["name"], fusion.attrs["body"])
    return kernels.render(fusion)


def _render_complex(fusion):
    """A loop or reduction kernel with complex values, rendered from its real form
    (complex_lowering.py) and run on the complex kernel's own buffers."""
    kind, name, body = fusion.attrs["kind"], fusion.attrs["name"], fusion.attrs["body"]
    real, parts = complex_lowering.lower_kernel(kind, body, ("loop", "reduction"),
                                                Unsupported, "NumPy computes it")
    if kind == "loop":
        # written over its own input (in place), it loads element i's pair before storing
        # either part (render_loop), and streams no store (the lines were just read)
        kernel = kernels.render_loop(name, list(real.params), list(real.results),
                                     stream=not fusion.attrs.get("overwrites"),
                                     interleaved=parts)
    else:
        kernel = kernels.render_reduction(name, real)
    return kernels.NativeKernel(kernel.name, kernel.ir, list(body.params), list(body.results),
                                kernel.splittable, kernel.split_extent)


def kernel_record(kernel, body):
    """`kernel`, rendered from a fusion with body `body`, as plain data; or None for a
    form `kernel_from_record` would not rebuild."""
    if isinstance(kernel, kernels.DotKernel):
        epilogue = kernel.epilogue and dict(
            _native_record(kernel.epilogue),
            inputs=[-1 if i is kernel.dot else body.params.index(i)
                    for i in kernel.epilogue.inputs])
        return {"dot": True, "epilogue": epilogue, "results": kernel.results}
    if list(kernel.inputs) != list(body.params) or list(kernel.outputs) != list(body.results):
        return None
    return _native_record(kernel)


def kernel_from_record(record, body):
    """The kernel `kernel_record` described, over `body`'s instructions. Raises
    KeyError, IndexError, TypeError or ValueError on a record it did not write."""
    if not record.get("dot"):
        return _native(record, list(body.params), list(body.results))
    (dot,) = [i for i in body.instructions if i.op is Op.DOT_GENERAL]
    epilogue, results = record["epilogue"], record["results"]
    if epilogue is None:
        return kernels.DotKernel(dot, None, results)
    inputs = [dot if i == -1 else body.params[i] for i in epilogue["inputs"]]
    outputs = [r for r in dict.fromkeys(body.results) if r is not dot]
    return kernels.DotKernel(dot, _native(epilogue, inputs, outputs), results)


def _native_record(kernel):
    return {"name": kernel.name, "ir": kernel.ir, "splittable": kernel.splittable,
            "split_extent": kernel.split_extent}


def _native(record, inputs, outputs):
    if not (isinstance(record["name"], str) and isinstance(record["ir"], str)):
        raise TypeError("a kernel record's name and IR must be text")
    return kernels.NativeKernel(record["name"], record["ir"], inputs, outputs,
                                bool(record["splittable"]), int(record["split_extent"]))
