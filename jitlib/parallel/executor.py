"""Running a per-device Module on N virtual devices in one process.

backend="interpreter": hlo.collectives.evaluate, the reference, op by op.
backend="cpu": the module is cut at its collectives (stages.py); each stage is
compiled once by the cpu backend and run for each device in turn; between stages the
collectives combine the devices' values by the reference's rules, in device order.
"""
from typing import Any

import numpy as np

from jitlib.hlo import collectives as C
from jitlib.hlo.ops import Op
from jitlib.parallel import stages as S

BACKENDS = ("interpreter", "cpu")


class Executor:
    """A per-device Module made runnable on `size` devices along `axis_name`."""

    def __init__(self, module: Any, axis_name: str, size: int, backend: str) -> None:
        C.check_axis(module, axis_name, size)
        self.module, self.axis_name, self.size = module, axis_name, size
        self.backend = backend
        self.stages = None
        if backend == "cpu":
            from jitlib.backends import get_backend
            cpu = get_backend("cpu")
            self.stages = S.split(module)
            self.compiled = [cpu.compile(s.module) if s.module is not None else None
                             for s in self.stages]

    def __call__(self, args_per_device: list[list[Any]]) -> list[list[Any]]:
        if self.stages is None:
            return C.evaluate(self.module, args_per_device, self.axis_name)
        envs = [dict(zip(self.module.params, args)) for args in args_per_device]
        for stage, exe in zip(self.stages, self.compiled):
            for instr in stage.collectives:
                if instr.op is Op.AXIS_INDEX:
                    outs = [np.array(k, np.int32) for k in range(self.size)]
                else:
                    outs = C.combine_rules[instr.op](
                        instr, [env[instr.operands[0]] for env in envs])
                for env, out in zip(envs, outs):
                    env[instr] = out
            if exe is None:
                continue
            for env in envs:
                results = exe(*[env[o] for o in stage.inputs])
                for o, value in zip(stage.outputs, results):
                    env[o] = np.asarray(value)
        return [[np.array(env[r], order="C") for r in self.module.results] for env in envs]
