"""A pmap'ed Module cut at its collectives, so a backend compiles what lies between.

Each instruction's stage is the number of collectives on its longest path from the
parameters. Stage p is a Module of its own: its parameters are the values it reads
from outside (program arguments, collective results, earlier stages' values), its
results the values something later reads. Running the stages in order, with the
collectives of stage p done across devices before stage p runs, is the program.
"""
from dataclasses import dataclass, field

from jitlib.hlo import build
from jitlib.hlo.ir import Module
from jitlib.hlo.ops import COLLECTIVE


@dataclass
class Stage:
    collectives: list = field(default_factory=list)   # run across devices first
    module: Module = None                             # then this, on each device
    inputs: tuple = ()                                # original values: its parameters
    outputs: tuple = ()                               # original values: its results


def split(module):
    """The stages of `module`, in order."""
    phase = {p: 0 for p in module.params}
    for instr in module.instructions:
        if instr in phase:
            continue
        before = max((phase[o] for o in instr.operands), default=0)
        phase[instr] = before + 1 if instr.op in COLLECTIVE else before
    count = max(phase.values(), default=0) + 1
    stages = [Stage() for _ in range(count)]
    members = [[] for _ in range(count)]
    for instr in module.instructions:
        if instr.op in COLLECTIVE:
            stages[phase[instr]].collectives.append(instr)
        elif instr not in module.params:
            members[phase[instr]].append(instr)
    # who reads each value from outside its stage
    read_outside = set(module.results)
    for instr in module.instructions:
        for o in instr.operands:
            if instr.op in COLLECTIVE or phase[o] != phase[instr]:
                read_outside.add(o)
    for p, (stage, body) in enumerate(zip(stages, members)):
        _close(stage, body, read_outside, p)
    return stages


def _close(stage, body, read_outside, p):
    inside = set(body)
    inputs = []
    for instr in body:
        for o in instr.operands:
            if o not in inside and o not in inputs:
                inputs.append(o)
    new = {o: build.parameter(k, o.shape, o.dtype, f"s{p}_{k}") for k, o in enumerate(inputs)}
    with build.locations(lambda: None):
        for instr in body:
            new[instr] = build.make(instr.op, [new[o] for o in instr.operands], instr.attrs,
                                    loc=instr.loc)
    outputs = tuple(i for i in body if i in read_outside)
    stage.inputs, stage.outputs = tuple(inputs), outputs
    if outputs:
        stage.module = Module(f"stage{p}", [new[o] for o in inputs],
                              [new[o] for o in outputs])
