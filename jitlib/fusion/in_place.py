"""In-place writes: a kernel that computes a written parameter's new contents (Module.writes)
may write them straight into the caller's array, saving the copy back after the call.

It is safe when the kernel reads that parameter only through elementwise ops (so output
element i needs input element i alone, read before it is written, whatever order the
kernel's loops take) and no later kernel reads the parameter. The pass marks such a
kernel `overwrites=((output, operand), ...)`; a backend may then place the output in the
operand's memory (the cpu backend does, where the caller's array is contiguous), and
knows not to stream the stores of that output (the lines were just read: a streaming
store would evict them).

A kernel that does not read the parameter at all (`out[...] = x * 2`, the commonest
write) is marked `fills=((output, parameter number), ...)`: its output may be placed in
the caller's array just the same, under the same condition on later kernels.
"""
from jitlib.hlo import build as B
from jitlib.hlo.ops import ELEMENTWISE, Op


def mark_in_place(module, options=None):
    """`module` with its kernels that may overwrite a written parameter marked."""
    if not module.writes:
        return module
    n_user = len(module.results) - len(module.writes)
    order = list(module.instructions)
    position = {instr: k for k, instr in enumerate(order)}
    marks, fills = {}, {}
    for index, result in zip(module.writes, module.results[n_user:]):
        kernel, j = result, 0
        if result.op is Op.GET_OUTPUT:
            kernel, j = result.operands[0], result.attrs["index"]
        param = module.params[index]
        if kernel.op is not Op.FUSION or kernel.attrs["kind"] != "loop" \
                or list(module.results).count(result) > 1:
            continue
        body = kernel.attrs["body"]
        if body.results[j].op is Op.PARAMETER or body.results[j].shape != param.shape \
                or body.results[j].dtype != param.dtype:
            continue
        if any(param in step.operands for step in order[position[kernel] + 1:]):
            continue
        reads = [i for i, o in enumerate(kernel.operands) if o is param]
        if not reads:
            fills.setdefault(kernel, []).append((j, index))
        elif len(reads) == 1 and _reads_elementwise(body, reads[0]):
            marks.setdefault(kernel, []).append((j, reads[0]))
    if not marks and not fills:
        return module
    new = {}
    for instr in order:
        operands = [new.get(o, o) for o in instr.operands]
        if instr in marks or instr in fills:
            attrs = dict(instr.attrs)
            if instr in marks:
                attrs["overwrites"] = tuple(sorted(marks[instr]))
            if instr in fills:
                attrs["fills"] = tuple(sorted(fills[instr]))
            new[instr] = B.make(Op.FUSION, operands, attrs, loc=instr.loc)
        elif any(o is not n for o, n in zip(instr.operands, operands)):
            new[instr] = B.make(instr.op, operands, dict(instr.attrs), loc=instr.loc)
    return module.with_results([new.get(r, r) for r in module.results])


def _reads_elementwise(body, operand):
    """Whether every op of `body` that (transitively) reads parameter `operand` is
    elementwise, at the parameter's own shape."""
    reached = {body.params[operand]}
    shape = body.params[operand].shape
    for instr in body.instructions:
        if instr in reached or not any(o in reached for o in instr.operands):
            continue
        if instr.op not in ELEMENTWISE or instr.shape != shape:
            return False
        reached.add(instr)
    return True


def overwritten(kernel):
    """{output index: operand index} a kernel marked by `mark_in_place` may overwrite."""
    return dict(kernel.attrs.get("overwrites", ()))


def filled(kernel):
    """{output index: module parameter number} of the written parameters a kernel marked
    by `mark_in_place` computes without reading them."""
    return dict(kernel.attrs.get("fills", ()))
