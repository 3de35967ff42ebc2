"""Loops and conditionals on the compiled backends: the host drives, the regions run as
programs of their own.

Each region of a `while` or `conditional` is an optimized module, compiled by the same
backend into a `run(values) -> values` (values are whatever the backend passes between
kernels: host arrays on the CPU, device buffers on the GPU). A loop with a known trip
count runs its body that many times and never evaluates its condition, so a GPU loop
never waits on the device to decide; otherwise the condition's one bool is read back
each trip.
"""


class LoopRunner:
    """A `while`: `__call__(values)` gives the final carry."""

    writes_into = False   # the body's programs allocate their own results

    def __init__(self, instr, compile_region, truth):
        """`compile_region(module) -> run`; `truth(value) -> bool` reads the condition."""
        self.trips = instr.attrs.get("trip_count")
        self._body = compile_region(instr.attrs["body"])
        self._cond = None if self.trips is not None else compile_region(instr.attrs["cond"])
        self._truth = truth

    def __call__(self, values, outs=None):
        carry = list(values)
        if self.trips is not None:
            for _ in range(self.trips):
                carry = self._body(carry)
        else:
            while self._truth(self._cond(carry)[0]):
                carry = self._body(carry)
        return carry


class BranchRunner:
    """A `conditional`: runs the branch its index picks (clamped into range, as
    lax.switch does) on the other operands."""

    writes_into = False

    def __init__(self, instr, compile_region, integer):
        """`integer(value) -> int` reads the index."""
        self._branches = [compile_region(b) for b in instr.attrs["branches"]]
        self._integer = integer

    def __call__(self, values, outs=None):
        k = min(max(self._integer(values[0]), 0), len(self._branches) - 1)
        return list(self._branches[k](list(values[1:])))


def runner(instr, compile_region, read_scalar):
    """The runner of control-flow instruction `instr`; `read_scalar(value)` gives a
    0-d value's Python number."""
    from jitlib.hlo.ops import Op
    if instr.op is Op.WHILE:
        return LoopRunner(instr, compile_region, lambda v: bool(read_scalar(v)))
    return BranchRunner(instr, compile_region, lambda v: int(read_scalar(v)))
