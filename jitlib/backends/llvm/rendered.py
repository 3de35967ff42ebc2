"""Rendered kernels on disk, so a new process with a warm cache skips rendering.

Rendering a kernel (kernels.py) walks its body in Python: 7 ms for the 181-instruction
layernorm/gelu/softmax chain's one kernel, a third of that program's warm start. An entry
holds what `render` made, as plain JSON: the LLVM IR text (whose object code the disk
cache holds under the text's own hash), the function name and how calls may be split; a
dot kernel's epilogue, which body parameters it reads, and where its results come from.
The kernel's inputs and outputs are the fusion body's own instructions, found again on
load.

The key is the optimized module's disk key (`jitlib.cache.optimized.entry_key`: the
traced module's text and the optimizer's sources), the kernel's name in it, the code
generators' sources, and the target (vector width and AVX-512 choices depend on it).
Modules too small for the optimized-module entry have no key: they render in well under
a millisecond.
"""
import json
import logging

from jitlib.backends.llvm import kernels, opaque
from jitlib.backends.llvm.compiler import get_compiler
from jitlib.cache import disk
from jitlib.cache.fingerprint import source_fingerprint
from jitlib.cache.optimized import entry_key
from jitlib.hlo.ops import Op

log = logging.getLogger("jitlib")
_KIND = "llvm-kernel"


def render_fusion(fusion):
    """The kernel of one FUSION instruction, of any kind; raises `Unsupported` where the
    backend cannot emit it."""
    if fusion.attrs["kind"] == "opaque":
        return opaque.render(fusion.attrs["name"], fusion.attrs["body"])
    return kernels.render(fusion)


def render(fusion, optimized):
    """`render_fusion(fusion)`, read from the disk cache where `optimized`, the module
    holding `fusion`, has an entry key."""
    store, module_key = disk.object_store(), entry_key(optimized)
    if store is None or module_key is None:
        return render_fusion(fusion)
    key = store.key(_KIND, module_key, fusion.attrs["name"],
                    source_fingerprint("backends/llvm"), *get_compiler().target())
    data = store.load(key)
    if data is not None:
        try:
            return _from_record(json.loads(data), fusion.attrs["body"])
        except (ValueError, KeyError, IndexError, TypeError) as e:
            log.warning("jitlib: discarding an unreadable rendered kernel in the disk "
                        "cache: %s", e)
            store.discard(key)
    kernel = render_fusion(fusion)
    record = _record(kernel, fusion.attrs["body"])
    if record is not None:
        store.store(key, json.dumps(record).encode(), kind=_KIND, kernel=fusion.attrs["name"])
    return kernel


def _record(kernel, body):
    """The kernel as plain data, or None for a form `_from_record` would not rebuild."""
    if isinstance(kernel, kernels.DotKernel):
        epilogue = kernel.epilogue and dict(
            _native_record(kernel.epilogue),
            inputs=[-1 if i is kernel.dot else body.params.index(i)
                    for i in kernel.epilogue.inputs])
        return {"dot": True, "epilogue": epilogue, "results": kernel.results}
    if list(kernel.inputs) != list(body.params) or list(kernel.outputs) != list(body.results):
        return None
    return _native_record(kernel)


def _native_record(kernel):
    return {"name": kernel.name, "ir": kernel.ir, "splittable": kernel.splittable,
            "split_extent": kernel.split_extent}


def _native(record, inputs, outputs):
    if not (isinstance(record["name"], str) and isinstance(record["ir"], str)):
        raise TypeError("a kernel record's name and IR must be text")
    return kernels.NativeKernel(record["name"], record["ir"], inputs, outputs,
                                bool(record["splittable"]), int(record["split_extent"]))


def _from_record(record, body):
    if not record.get("dot"):
        return _native(record, list(body.params), list(body.results))
    (dot,) = [i for i in body.instructions if i.op is Op.DOT_GENERAL]
    epilogue, results = record["epilogue"], record["results"]
    if epilogue is None:
        return kernels.DotKernel(dot, None, results)
    inputs = [dot if i == -1 else body.params[i] for i in epilogue["inputs"]]
    outputs = [r for r in dict.fromkeys(body.results) if r is not dot]
    return kernels.DotKernel(dot, _native(epilogue, inputs, outputs), results)
