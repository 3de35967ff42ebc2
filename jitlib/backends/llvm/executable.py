"""LLVMExecutable: runs an optimised module's kernels in order.

Each FUSION kernel becomes a runner: compiled LLVM code called through ctypes on
C-contiguous buffers, a dot kernel (NumPy's BLAS, then a compiled epilogue), or the
reference interpreter for what the LLVM backend does not emit yet (recorded in
`fallbacks`, logged). Where every kernel compiles and is small, one native call runs
them all (program.py). Otherwise the steps run here one by one: intermediates in an
arena kept between calls (offsets planned by liveness, buffers.py), results in fresh
arrays or in last call's ones the caller dropped, large kernels shared between threads
(parallel.py); ctypes releases the GIL while a compiled kernel runs.
"""
import ctypes
import functools
import math

import numpy as np

from jitlib import blas_threads, forksafe, logs
from jitlib.backends import control
from jitlib.backends.base import Executable
from jitlib.backends.llvm import (blas_library, claiming, host_fft, int_products, kernels,
                                  native_loop, parallel, program, rendered)
from jitlib.backends.llvm.buffers import RECYCLE_MIN_BYTES, RESULTS, BufferPlan
from jitlib.backends.llvm.compiler import get_compiler
from jitlib.backends.llvm.emitter import Unsupported
from jitlib.backends.llvm.pointers import data_pointer
from jitlib.fusion.in_place import filled, overwritten
from jitlib.hlo import dtypes
from jitlib.hlo.interpreter import eval_rules, evaluate
from jitlib.hlo import ops as O
from jitlib.hlo.ir import is_multi_output, is_reshape_only, output_types
from jitlib.hlo.ops import Op


def _contiguous(a):
    return a if a.flags.c_contiguous else np.array(a, order="C")


class NativeRunner:
    """A compiled kernel: inputs, then outputs, as pointer arguments, then the share of
    the work; large splittable calls are shared between threads."""

    writes_into = True   # takes the memory of its outputs from the caller

    def __init__(self, kernel, code=None, body=None):
        """`code`: the kernel's KernelCode, where the caller has it mapped already;
        `body`: the fused module it was rendered from, to count what it reads."""
        if logs.enabled("kernels"):
            logs.log("kernels", "llvm kernel %s:\n%s", kernel.name, kernel.ir)
        # keeps the code mapped
        self._code = code or get_compiler().load(kernel.ir, kernel.name)
        self.address = self._code.address
        self.outputs = kernel.outputs
        n_args = len(kernel.inputs) + len(kernel.outputs)
        self._fn = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * n_args,
                                    ctypes.c_int64, ctypes.c_int64)(self.address)
        self._outputs = [(o.shape, o.dtype) for o in kernel.outputs]
        read = _bytes_read(body) if body is not None else {}
        moved = sum(read.get(i, i.size * i.dtype.itemsize) for i in kernel.inputs) + sum(
            o.size * o.dtype.itemsize for o in kernel.outputs)
        # small: not worth a thread's wake-up, and short enough to run holding the GIL
        self.small = moved < parallel.min_parallel_bytes()
        self._pool = None if self.small or not kernel.splittable else parallel.get_pool()
        self._claim, self._chunks = None, 0   # the threads claim chunks (claiming.py)
        if self._pool is not None:
            self._claim = claiming.Claim(n_args, self.address)
            self._chunks = claiming.chunk_count(moved, kernel.split_extent, self._pool.threads)

    def __call__(self, arrays, outs=None):
        """The outputs, written into `outs` where it gives an array (C-contiguous, of the
        output's type, not overlapping the inputs), else into fresh ones."""
        # hold every buffer in a list: a pointer to a dropped temporary would dangle
        buffers = [_contiguous(a) for a in arrays]
        buffers += [np.empty(shape, dtype) if outs is None or outs[j] is None else outs[j]
                    for j, (shape, dtype) in enumerate(self._outputs)]
        pointers = [data_pointer(b) for b in buffers]
        if self._pool is None:
            self._fn(*pointers, 0, 1)
        else:
            self._pool.run(self._fn, pointers, self._claim, self._chunks, self._code)
        return buffers[len(arrays):]


def _bytes_read(body):
    """{parameter: bytes the kernel reads of it} for the parameters `body` reads only
    through gathers and dynamic slices (a loop trip's row of a stacked array), by their
    results' sizes; the others are read whole."""
    readers = {p: [] for p in body.params}
    for instr in body.instructions:
        for k, operand in enumerate(instr.operands):
            if operand in readers:
                windowed = k == 0 and instr.op in (Op.GATHER, Op.DYNAMIC_SLICE)
                readers[operand].append(instr if windowed else None)
    found = {}
    for param, users in readers.items():
        if users and None not in users:
            whole = param.size * param.dtype.itemsize
            found[param] = min(whole, sum(u.size * u.dtype.itemsize for u in users))
    return found


class DotRunner:
    """The dot_general as the interpreter computes it (np.matmul on operand views, so the
    same BLAS call), written straight into its destination, then the compiled epilogue
    over the product. A product only the epilogue reads goes to scratch memory kept
    between calls: a fresh one would cost its page faults every call."""

    writes_into = True

    def __init__(self, body, kernel, code=None):
        needed, stack = set(), [kernel.dot]
        while stack:
            instr = stack.pop()
            if instr not in needed and instr.op is not Op.PARAMETER:
                needed.add(instr)
                stack.extend(instr.operands)
        self._params = body.params
        self._steps = [i for i in body.instructions if i in needed]
        self._dot = kernel.dot
        self._epilogue = kernel.epilogue and NativeRunner(kernel.epilogue, code)
        self._epilogue_params = kernel.epilogue.inputs[:-1] if kernel.epilogue else []
        self._results = kernel.results
        self._scratch = Scratch()
        self._dot_bytes = dtypes.nbytes(kernel.dot.shape, kernel.dot.dtype)
        self._tiny = _tiny_matrix_product(kernel.dot)

    def __call__(self, arrays, outs=None):
        outs = outs or [None] * len(self._results)
        env = dict(zip(self._params, arrays))
        dot_out = next((o for o, r in zip(outs, self._results) if r is None), None)
        scratch, owned = None, False
        try:
            if len(self._steps) > 1:   # steps before the product (most dots have none)
                with np.errstate(all="ignore"):
                    for instr in self._steps[:-1]:
                        env[instr] = eval_rules[instr.op](instr,
                                                          *[env[o] for o in instr.operands])
            lhs, rhs = [env[o] for o in self._dot.operands]
            if self._tiny and lhs.flags.c_contiguous and rhs.flags.c_contiguous:
                # what matmul() below ends in for this case, without its checks and
                # without scratch memory: they cost several times a tiny product's time
                product = np.matmul(lhs, rhs, out=dot_out)
            else:
                if dot_out is None and None not in self._results:
                    scratch, owned = self._scratch.acquire(self._dot_bytes)
                    dot_out = _view(scratch, 0, self._dot.shape, self._dot.dtype)
                product = matmul(self._dot, lhs, rhs, dot_out)
            if self._epilogue is None:
                return [product] * len(self._results)
            epilogue_outs = [None] * len(self._epilogue.outputs)
            for o, r in zip(outs, self._results):
                if r is not None:
                    epilogue_outs[r] = o
            done = self._epilogue([env[p] for p in self._epilogue_params] + [product],
                                  epilogue_outs)
        finally:
            self._scratch.release(owned)
        return [product if r is None else done[r] for r in self._results]


def _tiny_matrix_product(dot):
    """Whether `dot` is a plain float32/float64 2-D matrix product small enough that
    OpenBLAS runs it on the calling thread by itself (blas_threads.OPENBLAS_ALONE), with
    both operands more than one row and column: matmul() sends exactly that case to
    np.matmul on the operands as they are."""
    a = dot.attrs
    lhs, rhs = dot.operands
    return (a["lhs_contract"] == (1,) and a["rhs_contract"] == (0,) and not a["lhs_batch"]
            and lhs.ndim == rhs.ndim == 2 and lhs.dtype == rhs.dtype == dot.dtype
            and np.dtype(dot.dtype) in (np.float32, np.float64)
            and min(lhs.shape[0], rhs.shape[1]) > 1
            and multiply_adds(dot) < blas_threads.OPENBLAS_ALONE)


def matmul(dot, lhs, rhs, out=None):
    """dot_general(lhs, rhs) as the interpreter's rule computes it, into `out` if given.
    Float products go to the BLAS (blas_library.py: NumPy's OpenBLAS, or a copy of it
    with the kernels this CPU can run) on the rule's [batch, m, k] @ [batch, k, n]
    operands, made contiguous: f16 and bf16 widened to f32 (exact), the f32 product
    rounded once, as NumPy's float16 matmul and the interpreter's bfloat16 rule do
    (NumPy's own f16 loop, which sums in f32 too, ran a 512^3 product in 0.58 s).
    Integer and bool products run compiled (int_products.py); others take the rule."""
    wide = np.dtype(np.float32) if dtypes.is_bfloat16(dot.dtype) \
        else _BLAS_TYPE.get(np.dtype(dot.dtype))
    if wide is None and int_products.supports(dot.dtype):
        wide = np.dtype(dot.dtype)   # integer and bool products: int_products.py
    if wide is None or (out is not None and not out.flags.c_contiguous):
        result = eval_rules[Op.DOT_GENERAL](dot, lhs, rhs)
        if out is None:
            return result
        np.copyto(out, result)
        return out
    if out is None:
        out = np.empty(dot.shape, dot.dtype)
    a = dot.attrs
    lc, rc, lb, rb = a["lhs_contract"], a["rhs_contract"], a["lhs_batch"], a["rhs_batch"]
    if (lc == (1,) and rc == (0,) and not lb and lhs.ndim == rhs.ndim == 2
            and wide.kind == "f" and lhs.dtype == rhs.dtype == out.dtype == wide
            and lhs.flags.c_contiguous and rhs.flags.c_contiguous):
        # a plain matrix product (an MLP layer's): the operands are the BLAS's already
        blas_library.matmul(lhs, rhs, out, multiply_adds(dot))
        return out
    lfree = tuple(i for i in range(lhs.ndim) if i not in lc + lb)
    rfree = tuple(i for i in range(rhs.ndim) if i not in rc + rb)
    batch = [lhs.shape[i] for i in lb]
    m, n, k = (math.prod([x.shape[i] for i in dims])
               for x, dims in ((lhs, lfree), (rhs, rfree), (lhs, lc)))
    # NumPy's matmul is ~3x slower on a stack of transposed matrices (q @ k^T) than on
    # contiguous ones (measured): copying an operand costs a fraction of the product
    left = np.transpose(lhs, lb + lfree + lc).reshape(batch + [m, k])
    right = np.transpose(rhs, rb + rc + rfree).reshape(batch + [k, n])
    # one transposed matrix is the BLAS's own case (a transpose flag): copying it costs
    # more than the product (M.T @ y, 4000x5000 float64: 174 ms copied, 5 ms as a view)
    # (integer products run compiled code that reads C order: those are copied)
    left, right = (x if not batch and wide.kind == "f" and x.dtype == wide and _blas_layout(x)
                   else np.ascontiguousarray(x, dtype=wide) for x in (left, right))
    product = out if wide == out.dtype else np.empty(out.shape, wide)
    if wide.kind in "f":
        blas_library.matmul(left, right, product.reshape(batch + [m, n]), multiply_adds(dot))
    else:
        int_products.matmul(left, right, product.reshape(batch + [m, n]))
    if product is not out:   # one rounding, to nearest even; past the range is inf,
        with np.errstate(over="ignore"):   # as compiled kernels give it, without a warning
            np.copyto(out, product, casting="unsafe")
    return out


def _blas_layout(matrix):
    """Whether a 2-D view is a row-major or column-major matrix a BLAS takes as it is."""
    item = matrix.itemsize
    rows, cols = matrix.strides
    return (cols == item and rows >= max(matrix.shape[1], 1) * item) or \
        (rows == item and cols >= max(matrix.shape[0], 1) * item)


# the type each float product runs in on the BLAS
_BLAS_TYPE = {np.dtype(np.float32): np.dtype(np.float32),
              np.dtype(np.float64): np.dtype(np.float64),
              np.dtype(np.float16): np.dtype(np.float32)}   # and bfloat16


def multiply_adds(dot):
    """The multiply-adds of a dot_general: every output element's contraction length."""
    lhs = dot.operands[0]
    return dot.size * math.prod(lhs.shape[d] for d in dot.attrs["lhs_contract"])


class Scratch:
    """Memory kept between calls, for one user at a time: `acquire(nbytes)` gives
    (memory, owned), this scratch's own buffer if it is free, else fresh memory; the
    caller then calls `release(owned)`."""

    def __init__(self):
        self._lock = forksafe.lock()
        self.buffer = np.empty(0, np.uint8)

    def acquire(self, nbytes):
        if not self._lock.acquire(blocking=False):
            return np.empty(nbytes, np.uint8), False
        if self.buffer.size < nbytes:
            self.buffer = np.empty(nbytes, np.uint8)
        return self.buffer, True

    def release(self, owned):
        if owned:
            self._lock.release()


class ViewRunner:
    """A reshape-only kernel over a compiled kernel's output: that output (C-contiguous,
    so the reshape is a view) in the new shape, no copy."""

    writes_into = False

    def __init__(self, shape):
        self._shape = shape

    def __call__(self, arrays, outs=None):
        return [arrays[0].reshape(self._shape)]


class InterpretedRunner:
    """The kernel's body on the reference interpreter."""

    writes_into = False

    def __init__(self, body):
        self._body = body

    def __call__(self, arrays, outs=None):
        # a result may be a view of an input, which may live in the arena: a copy keeps
        # it valid after the arena's memory is reused
        return [np.array(r) if any(np.may_share_memory(r, a) for a in arrays) else r
                for r in evaluate(self._body, arrays)]


def render(fusion):
    """(kernel, None) for a kernel the backend compiles, or (None, why not)."""
    try:
        return rendered.render_fusion(fusion), None
    except Unsupported as e:
        return None, str(e)


def native_texts(kernel):
    """[(ir_text, name)] of the compiled code a rendered kernel runs."""
    if isinstance(kernel, kernels.DotKernel):
        kernel = kernel.epilogue
    return [] if kernel is None else [(kernel.ir, kernel.name)]


def _scalar_loop(fusion):
    """Whether `fusion` is a loop kernel of one element per output (a loop counter, an
    index, a step size): straight-line code that LLVM's optimizer has nothing to do for,
    compiled at -O0 in a tenth of the time (the index kernels of a rolled loop's body were
    a third of a first call's objects). No kernel has fast-math flags outside reductions,
    so the bits are the same."""
    return fusion.attrs.get("kind") == "loop" and all(
        math.prod(shape) <= 1 for shape, _ in output_types(fusion))


def render_all(optimized):
    """{fusion: `render(fusion)`} for every kernel of `optimized`."""
    return {instr: render(instr) for instr in optimized.instructions if instr.op is Op.FUSION}


def make_runner(fusion, made=None, code=None):
    """(runner, None) for a kernel the backend compiles, or (interpreter runner, reason).
    `made`: what `render(fusion)` gave, where the caller has it already; `code`: its
    compiled code's KernelCode, where the caller has it mapped."""
    body = fusion.attrs["body"]
    kernel, reason = made or render(fusion)
    if kernel is None:
        fft = host_fft.runner(body)
        if fft is not None:
            return fft, None
        return InterpretedRunner(body), reason
    if isinstance(kernel, kernels.DotKernel):
        return DotRunner(body, kernel, code), None
    return NativeRunner(kernel, code, body), None


class LLVMExecutable(Executable):
    """A module compiled for the CPU: its optimised form's kernels, run in order.

    `native` lists the kernels that run as compiled code, `fallbacks` maps each kernel that
    runs on the interpreter to the reason.
    """

    def __init__(self, module, backend_name, optimized, made=None, ahead=True, saved=None):
        """`made`: each FUSION's `render` result, where the caller has them (a saved
        program, saved.py). `ahead`: compile the kernels' object code on both cores first
        where that pays (not for a saved program: its object code was saved with it).
        `saved`: {kernel IR text: (digest, object code)} a saved program kept."""
        super().__init__(module, backend_name)
        self.optimized = optimized
        self.native, self.fallbacks = [], {}
        self._steps = []
        if made is None:
            made = render_all(optimized)
        # every kernel's object code first, on both cores where that pays
        texts, quick = [], []
        for instr, (kernel, _) in made.items():
            for text in native_texts(kernel):
                texts.append(text)
                quick.append(_scalar_loop(instr))
        progress = logs.current()
        if progress is not None:
            progress.total = len(texts)
        if ahead:
            get_compiler().compile_ahead([t for t, q in zip(texts, quick) if not q])
        # mapped together; each runner holds its kernel's handle
        mapped = get_compiler().load_all(
            texts, quick, saved=saved and [saved.get(text) for text, _ in texts])
        self.code = {text: code for (text, _), code in zip(texts, mapped)}
        for instr in optimized.instructions:
            runner = None
            if instr.op is Op.FUSION:
                native = native_texts(made[instr][0])
                runner, reason = make_runner(instr, made[instr],
                                             self.code[native[0][0]] if native else None)
                name = instr.attrs["name"]
                if reason is None:
                    self.native.append(name)
                else:
                    self.fallbacks[name] = reason
                    logs.log("compiles", "kernel %s runs on the interpreter: %s", name,
                             reason)
            elif instr.op in O.CONTROL:
                runner = _control_runner(instr)
            self._steps.append((instr, runner))
        self._dead_after = _last_uses(optimized)
        self.program = self._driver()
        self._in_place = _in_place_writes(optimized, [i for i, r in self._steps if r is not None
                                                      and r.writes_into])
        # the steps _execute runs: `_steps` with views for reshapes (a native loop over
        # this module as its body reads `_steps`, one native call runs the program driver)
        self._run_steps, self._aliases = self._steps, {}
        if self.program is None:
            self._run_steps, self._aliases = self._with_views()
        # per step: (instr, runner, operands, multi-output?, values dead after it), made
        # once: a host-driven loop's body runs this walk every trip
        self._walk = [(instr, runner, instr.operands, is_multi_output(instr), dead)
                      for (instr, runner), dead in zip(self._run_steps, self._dead_after)]
        self._places = self._plan_places()
        self._arena = Scratch()
        self._views = None       # (arena buffer, its views per step)

    def _with_views(self):
        """The steps with each reshape-only kernel over a compiled kernel's output run as
        a view of it (the copy was a full pass over memory: `(A @ x).reshape(...)` at a
        program's end), and {view's key: its operand's key} for the buffer plan. Not
        where the optimizer placed either in a caller's array."""
        runners = {instr: r for instr, r in self._steps if r is not None}
        steps, aliases = list(self._steps), {}
        for s, (instr, runner) in enumerate(steps):
            if not is_reshape_only(instr) or (instr, 0) in self._in_place:
                continue
            source = BufferPlan.key(instr.operands[0])
            owner = runners.get(source[0]) if isinstance(source, tuple) else None
            if owner is None or not owner.writes_into or source in self._in_place:
                continue
            steps[s] = (instr, ViewRunner(instr.shape))
            aliases[(instr, 0)] = source
        return steps, aliases

    def _plan_places(self):
        """Per step, where its outputs go: [(offset, shape, dtype)] into the arena for
        intermediates a runner can write into, None for fresh memory (results)."""
        runners = {instr: r for instr, r in self._run_steps if r is not None}
        outputs_of = {f: output_types(f) for f in runners}
        plan = BufferPlan(self.optimized, outputs_of,
                          lambda f, j: runners[f].writes_into, self._aliases)
        self.arena_bytes = plan.arena_bytes
        places = {}
        for f, outputs in outputs_of.items():
            slots = [plan.slots.get((f, j)) for j in range(len(outputs))]
            places[f] = [(slot.at, *outputs[j]) if slot and slot.kind == "arena" else None
                         for j, slot in enumerate(slots)]
        # large results a runner writes itself (or whose view is a result) come from the
        # result pool (never one written into the caller's argument: the caller keeps it)
        roots = [plan.root(plan.key(r)) for r in self.optimized.results]
        self._recyclable = [
            (f, j, *outputs_of[f][j])
            for f, j in dict.fromkeys(k for k in roots if isinstance(k, tuple))
            if runners[f].writes_into and (f, j) not in self._in_place
            and dtypes.nbytes(*outputs_of[f][j]) >= RECYCLE_MIN_BYTES]
        # two results over one buffer would see each other's writes: the later is copied
        owners = {}
        self._shared_results = [owners.setdefault(k, r) is not r
                                for k, r in zip(roots, self.optimized.results)]
        return places

    def _driver(self):
        """A `Program` (one native call, GIL held, per run) where every kernel compiled and
        is small, else None: the steps run one by one, large ones on several threads."""
        runners = {instr: r for instr, r in self._steps if r is not None}
        if not program.eligible(self.optimized) or not all(
                type(r) is NativeRunner and r.small for r in runners.values()):
            return None
        driver = program.Program(self.optimized, runners)
        if logs.enabled("kernels"):
            logs.log("kernels", "llvm program driver:\n%s", driver.ir)
        return driver

    # A loop's body or a branch hands a parameter it returns as it is back as the array
    # it got (a weight a host-driven loop carries unchanged: copied every trip, 16 MB
    # of draws a trip for a random walk's stacked numbers), as a native loop does.
    passes_params = False

    def __call__(self, *arrays):
        driver = self.program
        if driver is not None and driver.accepts(arrays):
            return driver.run(arrays, self.passes_params)
        return super().__call__(*arrays)

    def _places_in(self, memory):
        """Per FUSION step, its outputs' arrays in `memory` (None: fresh), made once for
        the arena kept between calls."""
        cached = self._views
        if cached is not None and cached[0] is memory:
            return cached[1]
        views = {f: [None if p is None else _view(memory, *p) for p in places]
                 for f, places in self._places.items()}
        if memory is self._arena.buffer:
            self._views = (memory, views)
        return views

    def _execute(self, arrays):
        env = {}
        memory, owned = self._arena.acquire(self.arena_bytes)
        try:
            places = self._places_in(memory)
            if self._recyclable or self._in_place:
                places = dict(places)
                for f, j, shape, dtype in self._recyclable:
                    places[f] = list(places[f])
                    places[f][j] = RESULTS.array(shape, dtype)
                for (f, j), index in self._in_place.items():
                    target = arrays[index]
                    # the caller's own array, where the kernel can write it as it is
                    if isinstance(target, np.ndarray) and target.flags.c_contiguous \
                            and target.flags.writeable:
                        places[f] = list(places[f])
                        places[f][j] = target
            for instr, runner, operands, multi, dead in self._walk:
                if runner is not None:
                    outs = runner([env[o] for o in operands], places[instr])
                    env[instr] = outs if multi else outs[0]
                elif instr.op is Op.PARAMETER:
                    env[instr] = arrays[instr.attrs["index"]]
                elif instr.op is Op.CONSTANT:
                    env[instr] = instr.attrs["value"].array
                else:   # get_output
                    env[instr] = env[operands[0]][instr.attrs["index"]]
                for done in dead:
                    del env[done]
        finally:
            self._arena.release(owned)
        results = []
        for r, shared in zip(self.optimized.results, self._shared_results):
            value = env[r]
            # arguments and constants are not ours to hand out, except a region's
            # parameter handed on to the next trip (`passes_params`)
            fresh = not shared and (r.op is not Op.CONSTANT and value.flags.writeable) and (
                r.op is not Op.PARAMETER or self.passes_params)
            results.append(value if fresh else np.array(value, order="C"))
        return results


def _control_runner(instr):
    """The runner of a loop or conditional: a loop runs as one native call where
    native_loop.py can render it, else the host drives it (backends/control.py)."""
    executables = {}

    def compile_region(region):
        # a loop's or conditional's region (optimized already) as `run(arrays) -> arrays`
        with parallel.loop_body():
            executable = executables[id(region)] = LLVMExecutable(region, "cpu", region)
        executable.passes_params = True
        return lambda arrays: executable(*arrays)

    host = control.runner(instr, compile_region, lambda v: v.item())
    if instr.op is not Op.WHILE:
        return host
    loop = native_loop.build(instr, executables[id(instr.attrs["body"])],
                             executables.get(id(instr.attrs["cond"])), host)
    if loop is None:
        logs.log("compiles", "loop at %s runs one host call per trip: its body is not "
                 "all small compiled kernels", instr.loc)
        return host
    return loop


def _in_place_writes(optimized, writing_steps):
    """{(kernel, output index): parameter index} for the kernels the optimizer marked to
    overwrite a written parameter (fusion/in_place.py) that run as compiled code here."""
    found = {}
    for kernel in writing_steps:
        for j, i in overwritten(kernel).items():
            operand = kernel.operands[i]
            if operand.op is Op.PARAMETER:
                found[(kernel, j)] = operand.attrs["index"]
        for j, index in filled(kernel).items():
            found[(kernel, j)] = index
    return found


def _view(memory, offset, shape, dtype):
    return memory[offset:offset + dtypes.nbytes(shape, dtype)].view(dtype).reshape(shape)


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
