"""The active trace: parameters, constants, and the stack of traces in progress.

A trace turns the leaves of the user's arguments into parameter tracers, runs
the function, and collects the results into an `hlo.Module`. Traces nest
(a jitted function called inside another one's trace is inlined), so the
active one is the top of a per-thread stack.
"""
import bisect
import contextlib
import threading

import numpy as np

from jitlib import errors
from jitlib.array import Array
from jitlib.hlo import build, dtypes
from jitlib.hlo.ir import Module

_state = threading.local()


def _stack():
    stack = getattr(_state, "stack", None)
    if stack is None:
        stack = _state.stack = []
    return stack


def current_trace():
    """The innermost active Trace, or None outside of tracing."""
    stack = _stack()
    return stack[-1] if stack else None


def matmul_precision():
    """The precision the products being traced take ("highest", "high" or "default"):
    the outermost trace's (jit's option or the setting at its compile); loop bodies and
    branches share it."""
    stack = _stack()
    return stack[0].matmul_precision if stack else "highest"


def current_liveness():
    """The innermost active trace's liveness flag ([True] while it runs), or None."""
    stack = getattr(_state, "stack", None)
    return stack[-1].live if stack else None


class Trace:
    """One function being traced into one Module."""

    region = False   # a loop body's or branch's trace (control_flow.RegionTrace)
    # (instr, loc) per builder call while active, when jit rolls loops (trace/rolling.py)
    log: list | None = None

    def __init__(self, name, matmul_precision="highest"):
        self.name = name
        self.matmul_precision = matmul_precision
        self.params = []
        self.live = [True]  # shared with every tracer made here; False once it ends
        self.tracers = []   # each parameter's own tracer
        self.writes = {}   # parameter index -> where the function first wrote into it
        self.known = {}    # instr -> its value, for instructions no parameter reaches
        # (parameter index or None, step(env)) in trace order: what each call does on the
        # host before the program runs, a value for each parameter past the arguments
        # (a global array, numbers drawn from np.random) and steps that make none
        # (np.random.seed); `env` is a dict the steps of one call share
        self.call_inputs = []

    def new_parameter(self, shape, dtype, name, weak=False, array=False):
        """A tracer for the next parameter; `weak` marks a Python scalar argument,
        which promotes like the Python scalar it stands for (NEP 50). `array`: the
        argument is an array the caller holds, so the function's writes into it are
        recorded (`writes`) and reach the caller; any other argument is a value."""
        from jitlib.trace.tracer import Tracer
        instr = build.parameter(len(self.params), shape, dtype, name)
        self.params.append(instr)
        tracer = Tracer(instr, weak=weak, array0d=array)
        if array:
            tracer._param = len(self.params) - 1
        self.tracers.append(tracer)
        return tracer

    def note_write(self, index):
        """The function writes into the array of parameter `index` (first write kept)."""
        if index not in self.writes:
            self.writes[index] = errors.user_location()

    @contextlib.contextmanager
    def active(self):
        from jitlib.trace import numpy_hooks
        stack = _stack()
        stack.append(self)
        try:
            with build.locations(errors.user_location, self.log), numpy_hooks.installed():
                yield self
        finally:
            stack.pop()
            self.live[0] = False

    def module(self, results, writes=()):
        return Module(self.name, self.params, results, writes)


# Every integer dtype's bounds, as cuts of the line: a Python int between two cuts fits
# each integer dtype, or misses it, as a whole range (int8 holds [-128, 127], uint8
# [0, 255]...). A Python int argument keys the cache by its range, so tracing knows what
# NumPy would do with its value: convert it, raise OverflowError, or compare exactly.
_INT_CUTS = sorted({int(np.iinfo(t).min) for t in dtypes.INTEGERS}
                   | {int(np.iinfo(t).max) + 1 for t in dtypes.INTEGERS})


def int_range(value):
    """(lo, hi): the range between two cuts that holds the Python int `value`."""
    i = bisect.bisect_right(_INT_CUTS, value)
    lo = _INT_CUTS[i - 1] if i > 0 else None
    hi = _INT_CUTS[i] - 1 if i < len(_INT_CUTS) else None
    return lo, hi


def abstract_leaf(x, what):
    """(shape, dtype, weak) of an argument leaf, or a clear error for what cannot be traced.

    Python scalars are weak: they become 0-d parameters of NumPy's default type that
    promote like Python scalars, so `f(x, 2.0)` keeps float32 math float32. A Python
    int's `weak` is its `int_range` (a tuple, so still true); a NumPy scalar's is None
    (false: it promotes as its dtype, but `+=` rebinds it, as NumPy does).
    """
    weak = isinstance(x, (bool, int, float, complex)) and not isinstance(x, np.generic)
    if weak and isinstance(x, int) and not isinstance(x, bool):
        weak = int_range(x)
    elif isinstance(x, np.generic):
        weak = None   # a NumPy scalar: strong, but a value (not an array to write into)
    if weak:
        arr = np.asarray(x)
    elif isinstance(x, (np.ndarray, np.generic, Array)):
        arr = x   # a jitlib.Array has shape and dtype: asking np.asarray would copy it
    elif hasattr(x, "__array__") or hasattr(x, "__dlpack__"):
        arr = np.asarray(x)
    else:
        raise errors.JitlibTypeError(
            f"{what} is a {type(x).__name__}, which jitlib cannot trace",
            hint="pass NumPy arrays or Python scalars, or mark the argument static "
                 "with static_argnums/static_argnames")
    if not dtypes.is_supported(arr.dtype):
        raise errors.JitlibTypeError(
            f"{what} has dtype {arr.dtype}, which jitlib does not support",
            hint="supported dtypes: " + ", ".join(dtypes.SUPPORTED_NAMES))
    return tuple(arr.shape), dtypes.canonicalize(arr.dtype), weak


def result_instr(x, fn_name, index):
    """The IR value of output `index` of a traced function: a tracer's, or a constant's
    for a concrete value; anything else is an error naming the output."""
    from jitlib.trace.tracer import Tracer, as_instr
    if isinstance(x, Tracer):
        return x.instr
    if getattr(type(x), "_jitlib_masked", False):
        x.escaped_output(fn_name, index)
    try:
        return as_instr(x)
    except errors.JitlibError:
        raise errors.JitlibTypeError(
            f"output {index} of {fn_name} is a {type(x).__name__}, not an array",
            hint="return arrays, scalars, or pytrees (tuples, lists, dicts) of them") from None
