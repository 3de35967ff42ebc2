"""LLVMExecutable: runs an optimised module's kernels in order.

Each FUSION kernel becomes a runner: compiled LLVM code called through ctypes on
C-contiguous buffers, a dot kernel (NumPy's BLAS, then a compiled epilogue), or the
reference interpreter for what the LLVM backend does not emit yet (recorded in
`fallbacks`, logged). Where every kernel compiles and none is large, one native call
runs them all (program.py). Otherwise the steps run here one by one on fresh `np.empty`
buffers, dropped after their last use, and large kernels are shared between threads
(parallel.py); ctypes releases the GIL while a compiled kernel runs.
"""
import ctypes
import logging

import numpy as np

from jitlib import config
from jitlib.backends.base import Executable
from jitlib.backends.llvm import kernels, parallel, program
from jitlib.backends.llvm.compiler import get_compiler
from jitlib.backends.llvm.emitter import Unsupported
from jitlib.hlo.interpreter import eval_rules, evaluate
from jitlib.hlo.ir import is_multi_output
from jitlib.hlo.ops import Op

log = logging.getLogger("jitlib")


def _contiguous(a):
    return a if a.flags.c_contiguous else np.array(a, order="C")


class NativeRunner:
    """A compiled kernel: inputs, then freshly allocated outputs, as pointer arguments,
    then the share of the work; large splittable calls are shared between threads."""

    def __init__(self, kernel):
        if config.debug_level() >= 4:
            log.info("llvm kernel %s:\n%s", kernel.name, kernel.ir)
        self.address = get_compiler().compile(kernel.ir, kernel.name)
        self.outputs = kernel.outputs
        n_args = len(kernel.inputs) + len(kernel.outputs)
        self._fn = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * n_args,
                                    ctypes.c_int64, ctypes.c_int64)(self.address)
        self._outputs = [(o.shape, o.dtype) for o in kernel.outputs]
        moved = sum(i.size * i.dtype.itemsize for i in kernel.inputs + kernel.outputs)
        self._pool = (parallel.get_pool() if kernel.splittable
                      and moved >= parallel.MIN_PARALLEL_BYTES else None)
        self.parallel = self._pool is not None and self._pool.threads > 1

    def __call__(self, arrays):
        # hold every buffer in a list: a pointer to a dropped temporary would dangle
        buffers = [_contiguous(a) for a in arrays]
        buffers += [np.empty(shape, dtype) for shape, dtype in self._outputs]
        pointers = [b.ctypes.data for b in buffers]
        if self._pool is None:
            self._fn(*pointers, 0, 1)
        else:
            self._pool.run(self._fn, pointers)
        return buffers[len(arrays):]


class DotRunner:
    """The dot_general through the interpreter's rule (np.matmul on operand views), then
    the compiled epilogue over its result."""

    def __init__(self, body, kernel):
        needed, stack = set(), [kernel.dot]
        while stack:
            instr = stack.pop()
            if instr not in needed and instr.op is not Op.PARAMETER:
                needed.add(instr)
                stack.extend(instr.operands)
        self._params = body.params
        self._steps = [i for i in body.instructions if i in needed]
        self._dot = kernel.dot
        self._epilogue = kernel.epilogue and NativeRunner(kernel.epilogue)
        self._epilogue_params = kernel.epilogue.inputs[:-1] if kernel.epilogue else []
        self._results = kernel.results

    def __call__(self, arrays):
        env = dict(zip(self._params, arrays))
        with np.errstate(all="ignore"):
            for instr in self._steps:
                env[instr] = eval_rules[instr.op](instr, *[env[o] for o in instr.operands])
        product = env[self._dot]
        outs = []
        if self._epilogue is not None:
            outs = self._epilogue([env[p] for p in self._epilogue_params] + [product])
        return [product if r is None else outs[r] for r in self._results]


class InterpretedRunner:
    """The kernel's body on the reference interpreter."""

    def __init__(self, body):
        self._body = body

    def __call__(self, arrays):
        return evaluate(self._body, arrays)


def make_runner(fusion):
    """(runner, None) for a kernel the backend compiles, or (interpreter runner, reason)."""
    body = fusion.attrs["body"]
    try:
        kernel = kernels.render(fusion)
    except Unsupported as e:
        return InterpretedRunner(body), str(e)
    if isinstance(kernel, kernels.DotKernel):
        return DotRunner(body, kernel), None
    return NativeRunner(kernel), None


class LLVMExecutable(Executable):
    """A module compiled for the CPU: its optimised form's kernels, run in order.

    `native` lists the kernels that run as compiled code, `fallbacks` maps each kernel that
    runs on the interpreter to the reason.
    """

    def __init__(self, module, backend_name, optimized):
        super().__init__(module, backend_name)
        self.optimized = optimized
        self.native, self.fallbacks = [], {}
        self._steps = []
        for instr in optimized.instructions:
            runner = None
            if instr.op is Op.FUSION:
                runner, reason = make_runner(instr)
                name = instr.attrs["name"]
                if reason is None:
                    self.native.append(name)
                else:
                    self.fallbacks[name] = reason
                    log.debug("llvm: kernel %s runs on the interpreter: %s", name, reason)
            self._steps.append((instr, runner))
        self._dead_after = _last_uses(optimized)
        self.program = self._driver()

    def _driver(self):
        """A `Program` (one native call per run) where every kernel compiled and none is
        large enough to share between threads, else None: the steps run one by one."""
        runners = {instr: r for instr, r in self._steps if r is not None}
        if not program.eligible(self.optimized) or not all(
                type(r) is NativeRunner and not r.parallel for r in runners.values()):
            return None
        driver = program.Program(self.optimized, runners)
        if config.debug_level() >= 4:
            log.info("llvm program driver:\n%s", driver.ir)
        return driver

    def __call__(self, *arrays):
        driver = self.program
        if driver is not None and driver.accepts(arrays):
            return driver.run(arrays)
        return super().__call__(*arrays)

    def _execute(self, arrays):
        env = {}
        for step, (instr, runner) in enumerate(self._steps):
            if instr.op is Op.PARAMETER:
                env[instr] = arrays[instr.attrs["index"]]
            elif instr.op is Op.CONSTANT:
                env[instr] = instr.attrs["value"].array
            elif instr.op is Op.GET_OUTPUT:
                env[instr] = env[instr.operands[0]][instr.attrs["index"]]
            else:
                outs = runner([env[o] for o in instr.operands])
                env[instr] = outs if is_multi_output(instr) else outs[0]
            for done in self._dead_after[step]:
                del env[done]
        results = []
        for r in self.optimized.results:
            value = env[r]
            # arguments and constants are not ours to hand out
            fresh = r.op not in (Op.PARAMETER, Op.CONSTANT) and value.flags.writeable
            results.append(value if fresh else np.array(value, order="C"))
        return results


def _last_uses(module):
    """Per step, the values no later step (nor the results) reads."""
    order = module.instructions
    last = {}
    for step, instr in enumerate(order):
        for operand in instr.operands:
            last[operand] = step
    dead = [[] for _ in order]
    keep = set(module.results)
    for instr, step in last.items():
        if instr not in keep:
            dead[step].append(instr)
    return dead
