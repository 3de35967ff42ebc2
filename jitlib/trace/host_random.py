"""np.random inside jit: the numbers eager NumPy would draw, drawn at each call.

A draw cannot be traced into the program (NumPy's streams are its own), and a draw made
while tracing would freeze one set of numbers into every later call. So a draw in traced
code is recorded as a *call step*: each call runs the same draws, in the same order, on
the real generator before the program starts, and feeds the numbers in as parameters.
The generator's state advances exactly as eager NumPy advances it.

Covered: the legacy functions of `np.random` (the global RandomState), and the methods
of a `np.random.Generator` or `RandomState` passed in (as an argument: jit keys it as a
static value), captured from a global or closure, or made inside with
`np.random.default_rng(seed)` (made again at each call,
as eager NumPy makes it). `shuffle`, `permutation` and `choice` of a traced array draw the
indices on the host and gather on the device. A traced `loc`, `scale`, `low`, `p`... is
refused with a hint: the draw's arguments must be known on the host.

A Python `for` loop traced once (loop_capture.py) draws in each trip: its body's draws
become stacked parameters, one row a trip, filled by one call step that makes the same
calls in the same order as the loop would (`LoopDraws`). Any other region (a body of
`jnp.fori_loop`, a branch) runs its draws once while traced, not once per trip, so a
draw there is refused.
"""
import contextlib
import copy
import threading

import numpy as np

from jitlib import errors

SAMPLERS = frozenset({
    # legacy module functions and RandomState methods
    "rand", "randn", "random", "random_sample", "ranf", "sample", "randint",
    "random_integers", "normal", "uniform", "standard_normal", "exponential",
    "standard_exponential", "gamma", "standard_gamma", "beta", "binomial", "poisson",
    "lognormal", "laplace", "logistic", "gumbel", "geometric", "chisquare",
    "multivariate_normal", "dirichlet", "multinomial", "bytes",
    # Generator methods
    "integers", "choice", "permutation", "permuted", "shuffle",
})
STATE = frozenset({"seed", "set_state"})


class RecordingGenerator:
    """Stands for a generator inside a trace: each sampling call becomes a call step."""

    def __init__(self, trace, resolve, label):
        self._trace, self._resolve, self._label = trace, resolve, label
        self._probe = None

    def _probe_generator(self):
        # a private copy that follows the draws made so far, to learn each result's type
        from jitlib.trace import numpy_hooks
        if self._probe is None:
            with numpy_hooks.host_work():
                self._probe = copy.deepcopy(self._resolve({}))
        return self._probe

    def _probe_call(self, name, *args, **kwargs):
        from jitlib.trace import numpy_hooks
        with numpy_hooks.host_work():
            return getattr(self._probe_generator(), name)(*args, **kwargs)

    def __getattr__(self, name):
        if name in SAMPLERS:
            return lambda *args, **kwargs: self._draw(name, args, kwargs)
        if name in STATE:
            return lambda *args, **kwargs: self._state_step(name, args, kwargs)
        raise errors.UnsupportedError(
            f"{self._label}.{name} is not supported inside jit",
            hint="jit replays np.random's sampling methods at each call; draw outside the "
                 "jitted function and pass the numbers in")

    def _state_step(self, name, args, kwargs):
        _refuse_tracers(f"{self._label}.{name}", args, kwargs)
        _refuse_in_region(f"{self._label}.{name}", loop_draws_here())
        self._probe_call(name, *args, **kwargs)
        resolve = self._resolve
        self._trace.call_inputs.append(
            (None, lambda env: getattr(resolve(env), name)(*args, **kwargs)))

    def _draw(self, name, args, kwargs):
        from jitlib.trace.tracer import Tracer
        if name in ("shuffle", "permutation", "choice") and args \
                and isinstance(args[0], Tracer):
            return self._index_draw(name, args[0], args[1:], kwargs)
        _refuse_tracers(f"{self._label}.{name}", args, kwargs)
        sample = self._probe_call(name, *args, **kwargs)
        return self._parameter(name, sample,
                               lambda gen: getattr(gen, name)(*args, **kwargs))

    def _parameter(self, name, sample, draw):
        from jitlib.hlo import dtypes
        weak = isinstance(sample, (float, int)) and not isinstance(sample, np.generic)
        value = np.asarray(sample)
        if not dtypes.is_supported(value.dtype):
            raise errors.UnsupportedError(
                f"{self._label}.{name} returns {value.dtype} values, which jit cannot pass "
                "to a compiled program", hint="draw outside the jitted function")
        dtype = dtypes.canonicalize(value.dtype)
        # a Python float drawn (np.random.rand()) promotes as one; ints are kept strong
        weak = weak and isinstance(sample, float)
        draws = loop_draws_here()
        _refuse_in_region(f"{self._label}.{name}", draws)
        if draws is not None:
            return draws.draw(self._resolve, name, value.shape, dtype, weak, draw)
        tracer = self._trace.new_parameter(value.shape, dtype, f"{name}_draw", weak=weak)
        resolve = self._resolve
        self._trace.call_inputs.append(
            (len(self._trace.params) - 1,
             lambda env: np.asarray(draw(resolve(env)), dtype=dtype)))
        return tracer

    def _index_draw(self, name, x, rest, kwargs):
        """shuffle/permutation/choice of a traced array: the same draws on its length."""
        from jitlib.trace.tracer import Tracer
        if not x.shape:
            raise errors.JitlibTypeError(f"{self._label}.{name} of a 0-d array")
        _refuse_tracers(f"{self._label}.{name}", rest, kwargs)
        n = x.shape[0]
        index_call = "choice" if name == "choice" else "permutation"
        sample = self._probe_call(index_call, n, *rest, **kwargs)
        index = self._parameter(name, sample,
                                lambda gen: getattr(gen, index_call)(n, *rest, **kwargs))
        taken = x[index]
        if name == "shuffle":
            x[...] = taken
            return None
        return Tracer(taken.instr)


class LoopDraws:
    """The draws of a loop body traced once for `trips` trips: the k-th draw of a trip
    reads row `row` (the trip's number) of a stacked parameter, which one call step
    fills by making every trip's draws in order. `region`: the body's trace (a draw in
    a region inside it, a loop or branch of its own, is refused)."""

    def __init__(self, trace, trips):
        self.trace, self.trips = trace, trips
        self.stacked = []   # per draw position: (parameter tracer, shape, dtype, weak)
        self.draws = []     # per draw position of the last trace: (resolve, draw, name)
        self.region = self.row = None

    def start_trip(self, region, row):
        """A trace of the body begins (a carry whose type settles traces it again)."""
        self.region, self.row, self.draws = region, row, []

    def draw(self, resolve, name, shape, dtype, weak, draw):
        from jitlib.trace.tracer import Tracer
        k = len(self.draws)
        if k == len(self.stacked):
            param = self.trace.new_parameter((self.trips, *shape), dtype, f"{name}_draws")
            self.stacked.append((param, shape, dtype, weak))
        param, *kind = self.stacked[k]
        if kind != [shape, dtype, weak]:
            raise errors.UnsupportedError(f"the {k + 1}-th draw of a trip changed its type")
        self.draws.append((resolve, draw, name))
        row = param[self.row]
        return Tracer(row.instr, weak=True) if weak else row

    def register(self):
        """The call steps: all trips' draws in the loop's order, then one stacked
        parameter each."""
        trips, draws = self.trips, list(self.draws)
        types = [(shape, dtype) for _, shape, dtype, _ in self.stacked]
        slot = object()

        def run(env):
            generators = [resolve(env) for resolve, _, _ in draws]
            out = [np.empty((trips, *shape), dtype) for shape, dtype in types]
            for t in range(trips):
                for rows, generator, (_, draw, _) in zip(out, generators, draws):
                    rows[t] = np.asarray(draw(generator), dtype=rows.dtype)
            env[slot] = out
        self.trace.call_inputs.append((None, run))
        for k, (param, *_) in enumerate(self.stacked):
            self.trace.call_inputs.append(
                (param.instr.attrs["index"], lambda env, k=k: env[slot][k]))


_state = threading.local()


def loop_draws_here():
    """The LoopDraws of the loop body being traced, if the current trace is one."""
    from jitlib.trace.context import current_trace
    draws = getattr(_state, "draws", None)
    return draws if draws is not None and draws.region is current_trace() else None


@contextlib.contextmanager
def drawing_per_trip(draws):
    """Draws in the body `draws` is started for are made per trip (None: refused)."""
    previous = getattr(_state, "draws", None)
    _state.draws = draws
    try:
        yield
    finally:
        _state.draws = previous


def nested_loop():
    """Whether a loop body drawing per trip is being traced: a loop inside it cannot
    stack its own draws (the outer trips would repeat them)."""
    return getattr(_state, "draws", None) is not None


def _refuse_in_region(what, draws):
    """A draw inside a loop body or branch that is not a per-trip loop's: refused."""
    from jitlib.trace.context import current_trace
    if draws is None and getattr(current_trace(), "outer", None) is not None:
        raise errors.UnsupportedError(
            f"{what} inside a loop body or branch traced once would draw once, when jit "
            "traces it, not once per trip",
            hint="write the loop as a plain Python `for` over a range (jit then draws "
                 "every trip's numbers), use jitlib.random with a key carried through "
                 "the loop, or draw the numbers before the loop and index them")


def _refuse_tracers(what, args, kwargs):
    from jitlib.trace.tracer import Tracer
    for value in list(args) + list(kwargs.values()):
        if isinstance(value, Tracer):
            raise errors.UnsupportedError(
                f"{what} with a traced argument cannot be replayed: jit draws NumPy's "
                "random numbers on the host at each call, before the program runs",
                hint="draw with known arguments and transform on the traced side, e.g. "
                     "loc + scale * rng.standard_normal(size)")


def global_recorder(trace):
    """The recorder of NumPy's legacy global RandomState (what np.random.rand draws
    from), one per trace so that its probe follows every draw of the trace."""
    recorder = getattr(trace, "global_random", None)
    if recorder is None:
        recorder = trace.global_random = RecordingGenerator(
            trace, lambda env: np.random.mtrand._rand, "np.random")
    return recorder


GENERATOR_TYPES = (np.random.Generator, np.random.RandomState)


def made_inside(trace, make, args, kwargs, label):
    """A generator the function makes (`np.random.default_rng(seed)`): made again at each
    call from the same arguments, as eager NumPy makes it."""
    _refuse_tracers(label, args, kwargs)
    slot = object()

    def create(env):
        env[slot] = make(*args, **kwargs)
        return None
    trace.call_inputs.append((None, create))
    recorder = RecordingGenerator(
        trace, lambda env: env[slot] if slot in env else make(*args, **kwargs), label)
    return recorder
