"""TritonExecutable: runs an optimised module's kernels in order on a device.

A device has `empty(shape, dtype)`, `from_numpy(a)` and `to_numpy(buf)` (buffers with
`data_ptr()`, `shape`, `dtype`): the CUDA device (device.py) or the host device
(host.py, kernels run by Triton's interpreter). Each FUSION kernel becomes a runner:
generated Triton source, launched with its chosen config, or the reference interpreter
for what is not generated yet (recorded in `fallbacks` with the reason, logged; on the
GPU that costs a round trip through host memory).
"""
import logging

import numpy as np

from jitlib import logs
from jitlib.backends.base import Executable
from jitlib.backends.triton import (attention, autotune, compiler, configs, cufft, cusolver,
                                    kernels)
from jitlib.backends.triton.source import Unsupported
from jitlib.hlo.interpreter import evaluate
from jitlib.backends import control
from jitlib.hlo import dtypes
from jitlib.hlo import ops as O
from jitlib.hlo.ir import is_multi_output, is_reshape_only
from jitlib.hlo.ops import Op

log = logging.getLogger("jitlib")


class KernelRunner:
    """A generated kernel: inputs, then freshly allocated outputs, as pointer arguments."""

    def __init__(self, kernel, device):
        self.kernel = kernel
        self.device = device
        self.config = configs.choose(kernel, compiler.cache_dir(),
                                     getattr(device, "name", "gpu"))
        host_launch = getattr(device, "launch", None)
        self._untuned = False
        self._prepared = {}    # config key -> CompiledLaunch
        if host_launch is not None:
            self._launch = lambda buffers: host_launch(kernel, self.config, buffers)
        else:
            self._launch = self._launcher(self.config)
            # not measured on this GPU yet: the first call times the candidates
            self._untuned = self.config is kernel.config and autotune.wanted(kernel)
        self._outputs = tuple(kernel.outputs)
        self._empty = not all(n > 0 for n in kernel.grid(self.config))
        if logs.enabled("kernels"):
            logs.log("kernels", "triton kernel %s (%s):\n%s", kernel.name,
                     compiler.source_path(kernel), kernel.source)

    def _launcher(self, config):
        launch = self._prepared.get(config.key())
        if launch is None:
            from jitlib.backends.triton.launch import CompiledLaunch
            launch = CompiledLaunch(self.kernel, config, self.device)
            self._prepared[config.key()] = launch
        return launch

    def launches(self):
        """What the first call compiles: the chosen config's launch and, where that call
        times the candidates, theirs (none on the host device, which interprets)."""
        if getattr(self.device, "launch", None) is not None:
            return []
        wanted = configs.candidates(self.kernel) if self._untuned else [self.config]
        return [self._launcher(config) for config in wanted]

    def __call__(self, buffers):
        empty = self.device.empty
        outs = [empty(shape, dtype) for shape, dtype in self._outputs]
        views = self.kernel.complex_views
        if views:   # generated over real parts: complex inputs go in as their real pairs
            buffers = self._reinterpreted(buffers, views[:len(buffers)], pairs=True)
        if not self._empty:
            if self._untuned:
                self._untuned = False
                config, launch = autotune.tune(self.kernel, list(buffers) + outs,
                                               self.device, self._launcher)
                if launch is not None:
                    self.config, self._launch = config, launch
            self._launch(list(buffers) + outs)
        return self._reinterpreted(outs, views[len(buffers):]) if views else outs

    def _reinterpreted(self, arrays, views, pairs=False):
        """`arrays` with each one `views` names (shape, complex dtype) seen as that complex
        value, or with `pairs` as its real pairs: the same bytes either way."""
        reinterpret = self.device.reinterpret
        return [a if v is None else
                reinterpret(a, v[0] + (2,), dtypes.part_type(v[1])) if pairs else
                reinterpret(a, *v) for a, v in zip(arrays, views)]


class ViewRunner:
    """A fusion that only reshapes its operand: the result is a view of the operand's
    memory (a C-contiguous buffer reshaped stays C-contiguous), not a copy kernel."""

    def __init__(self, shape, device):
        self.shape = shape
        self.device = device

    def __call__(self, buffers):
        return [self.device.view(buffers[0], self.shape)]


def storage_roots(instructions, results):
    """For each result, the instruction whose buffer it lives in: itself, or what a chain
    of reshape views starts from."""
    viewed = {i: i.operands[0] for i in instructions if is_reshape_only(i)}
    roots = []
    for r in results:
        while r in viewed:
            r = viewed[r]
        roots.append(r)
    return roots


class InterpretedRunner:
    """The kernel's body on the reference interpreter, through host memory."""

    def __init__(self, body, device):
        self.body = body
        self.device = device

    def __call__(self, buffers):
        arrays = [self.device.to_numpy(b) for b in buffers]
        return [self.device.from_numpy(r) for r in evaluate(self.body, arrays)]


def _attention_kernels(optimized):
    """{output fusion: AttentionKernel} for each dot -> softmax -> dot chain generated as
    one kernel (attention.py); a chain it cannot generate keeps its three kernels."""
    out, taken = {}, set()
    for chain in attention.chains(optimized):
        parts = {chain.scores, chain.softmax, chain.output}
        if parts & taken:   # stacked attention: one chain's output is the next's scores
            continue
        try:
            out[chain] = attention.render(chain)
            taken |= parts
        except Unsupported as e:
            log.debug("gpu: %s -> %s -> %s stay three kernels: %s",
                      *(f.attrs["name"] for f in (chain.scores, chain.softmax, chain.output)),
                      e)
    return out


class TritonExecutable(Executable):
    """A module compiled into Triton kernels. `kernels` maps each generated kernel's name
    to its TritonKernel (source, config); `fallbacks` maps the others to the reason;
    `absorbed` maps fusions computed inside another kernel (attention's scores and
    softmax) to that kernel's name."""

    def __init__(self, module, backend_name, optimized, device):
        super().__init__(module, backend_name)
        self.optimized = optimized
        self.device = device
        self.kernels, self.fallbacks, self.absorbed = {}, {}, {}
        self.library_calls = {}   # kernels run by a library on the device (cusolver.py)
        self.views = set()        # reshape-only fusions: views of their operand, no kernel
        self._steps = []     # (instruction, runner or None, the operands it reads)
        self.regions = []    # the executables of loops' and conditionals' regions
        fused = {}
        for chain, generated in _attention_kernels(optimized).items():
            fused[chain.output] = generated
            for part in (chain.scores, chain.softmax):
                self.absorbed[part.attrs["name"]] = generated.kernel.name
        for instr in optimized.instructions:
            runner, operands = None, instr.operands
            if instr.op is Op.FUSION and instr.attrs["name"] in self.absorbed:
                continue
            if instr in fused:
                kernel, operands = fused[instr].kernel, fused[instr].operands
                runner = KernelRunner(kernel, device)
                self.kernels[kernel.name] = kernel
            elif is_reshape_only(instr):
                runner = ViewRunner(instr.shape, device)
                self.views.add(instr.attrs["name"])
            elif instr.op is Op.FUSION:
                name = instr.attrs["name"]
                try:
                    kernel = kernels.render(instr)
                    runner = KernelRunner(kernel, device)
                    self.kernels[name] = kernel
                except Unsupported as e:
                    interpreted = InterpretedRunner(instr.attrs["body"], device)
                    runner = cusolver.runner(instr, device, interpreted)
                    library = "cuSOLVER"
                    if runner is None:
                        runner, library = cufft.runner(instr, device, interpreted), "cuFFT"
                    if runner is not None:
                        self.library_calls[name] = f"{runner.instr.op} through CuPy ({library})"
                    else:
                        self.fallbacks[name] = str(e)
                        log.debug("gpu: kernel %s runs on the interpreter: %s", name, e)
                        runner = interpreted
            elif instr.op in O.CONTROL:
                runner = control.runner(instr, self._region_program,
                                        lambda v: device.to_numpy(v).item())
                if instr.op is Op.WHILE and instr.attrs.get("trip_count") is not None \
                        and hasattr(device, "capture"):
                    from jitlib.backends.triton.graphs import GraphLoop
                    runner = GraphLoop(instr, runner, self.regions[-1], device)
            self._steps.append((instr, runner, operands))
        self._constants = {}
        self.results_to_copy = _results_to_copy(optimized)
        target = getattr(device, "target", None)
        if target is not None:
            compiler.compile_all([launch for _, runner, _ in self._steps
                                  if isinstance(runner, KernelRunner)
                                  for launch in runner.launches()], target)

    def _region_program(self, region):
        """A loop's or conditional's region (optimized already) on device buffers."""
        executable = TritonExecutable(region, self.backend_name, region, self.device)
        self.regions.append(executable)
        return executable.run_buffers

    def kernel_sources(self):
        """Every kernel as its path and source text, fallbacks as a comment line."""
        out = []
        for instr in self.optimized.instructions:
            if instr.op is not Op.FUSION:
                continue
            name = instr.attrs["name"]
            if name in self.absorbed:
                out.append(f"# ---- {name}: computed inside {self.absorbed[name]}\n")
            elif name in self.kernels:
                kernel = self.kernels[name]
                out.append(f"# ---- {compiler.source_path(kernel)}\n{kernel.source}")
            elif name in self.library_calls:
                out.append(f"# ---- {name}: {self.library_calls[name]}\n")
            elif name in self.views:
                out.append(f"# ---- {name}: a reshape, run as a view of its operand\n")
            else:
                out.append(f"# ---- {name}: not generated, runs on the interpreter "
                           f"({self.fallbacks[name]})\n")
        # a loop's or conditional's regions: their kernels, after the top level's
        out += [region.kernel_sources() for region in self.regions]
        return "\n".join(out)

    def run_buffers(self, buffers):
        """Run on device buffers (one per parameter); returns device buffers."""
        env = {}
        for instr, runner, operands in self._steps:
            if instr.op is Op.PARAMETER:
                env[instr] = buffers[instr.attrs["index"]]
            elif instr.op is Op.CONSTANT:
                if instr not in self._constants:
                    self._constants[instr] = self.device.from_numpy(instr.attrs["value"].array)
                env[instr] = self._constants[instr]
            elif instr.op is Op.GET_OUTPUT:
                env[instr] = env[instr.operands[0]][instr.attrs["index"]]
            else:
                outs = runner([env[o] for o in operands])
                env[instr] = outs if is_multi_output(instr) else outs[0]
        return [env[r] for r in self.optimized.results]

    def _execute(self, arrays):
        results = self.run_buffers([self.device.from_numpy(a) for a in arrays])
        out = []
        for copy, buf in zip(self.results_to_copy, results):
            value = self.device.to_numpy(buf)
            out.append(np.array(value, order="C") if copy else np.asarray(value))
        return out


def _results_to_copy(module):
    """Per result, whether the caller must get a copy of its buffer: one that is (a view
    of) an argument or a cached constant is not ours to hand out, and two results over
    one buffer would see each other's writes."""
    out, owners = [], {}
    for r, root in zip(module.results, storage_roots(module.instructions, module.results)):
        shared = owners.setdefault(root, r) is not r
        out.append(shared or root.op in (Op.PARAMETER, Op.CONSTANT))
    return out
