"""What a call leaves in its arguments: NumPy code that writes into an argument array.

The traced program returns the new contents of every parameter the function wrote into
(`Module.writes`); after the call they are copied into the caller's arrays, so the caller
sees what eager NumPy would have left there. Before the call, the arguments are checked
the way NumPy's first write would check them: a read-only array raises NumPy's error, and
a written array that shares memory with another argument (which the trace took as two
independent arrays) is refused rather than replayed wrongly.
"""
import numpy as np

from jitlib import errors
from jitlib.array import Array


class ReadOnlyArgumentError(errors.JitlibError, ValueError):
    """The function writes into an argument the caller passed read-only, as NumPy refuses."""


class SharedMemoryArgumentError(errors.JitlibError, ValueError):
    """A written argument overlaps another argument's memory, which jit cannot replay."""


class Effects:
    """A traced function's effects on its arguments, beyond its results.

    `writes`: the parameters written (as `Module.writes`), `locations`: where each was
    first written, `returned`: (output index, parameter index) for each output that is
    an argument array itself (`return out`), which the call hands back as the same object.
    `names`: each parameter's name, for messages. `steps`: (parameter index or None,
    step(env)) in trace order, run on the host before each call: they give the parameters
    past the arguments their values (a global array read at call time, numbers drawn from
    np.random) or change host state (np.random.seed). `guards`: (description, check)
    pairs that must hold for the trace to stay valid (trace/free_values.py)."""

    __slots__ = ("writes", "locations", "returned", "names", "steps", "guards", "n_args")

    def __init__(self, writes, locations, returned, names, n_args, steps=(), guards=()):
        self.writes, self.locations = tuple(writes), dict(locations)
        self.returned, self.names = tuple(returned), tuple(names)
        self.n_args, self.steps, self.guards = n_args, tuple(steps), tuple(guards)

    def __bool__(self):
        return bool(self.writes or self.returned or self.steps or self.guards)

    def call_inputs(self):
        """The values of the parameters past the arguments, for one call (in order)."""
        env, values = {}, []
        for index, step in self.steps:
            value = step(env)
            if index is not None:
                values.append(value)
        return values

    def broken_guard(self):
        """The description of the first guard that no longer holds, or None."""
        for description, holds in self.guards:
            if not holds():
                return description
        return None

    def describe(self, n_out):
        """One comment line per effect, as `Lowered.as_text` prints them."""
        lines = []
        for k, i in enumerate(self.writes):
            where = self.locations.get(i)
            lines.append(f"# argument {self.names[i]!r} is written"
                         + (f" (first at {where.short()})" if where else "")
                         + f": the caller's array receives result {n_out + k}")
        lines += [f"# output {k} is argument {self.names[i]!r} itself"
                  for k, i in self.returned]
        lines += [f"# parameter {self.names[i]!r} is computed on the host at each call (a "
                  "global or closure variable read then, or numbers drawn from np.random)"
                  for i in range(self.n_args, len(self.names))]
        return lines

    # -- around a call

    def check(self, args):
        """Refuse, before running, what NumPy's writes would refuse or jit cannot replay."""
        for i in self.writes:
            target = args[i]
            if isinstance(target, np.ndarray):
                if not target.flags.writeable:
                    raise ReadOnlyArgumentError(
                        f"assignment destination is read-only: argument "
                        f"{self.names[i]!r} is a read-only array, and the function writes "
                        f"into it here (NumPy raises the same)",
                        location=self.locations.get(i),
                        hint="pass a writeable array (arr.copy()), or copy it inside the "
                             "function before writing")
            elif not isinstance(target, Array):
                raise errors.JitlibTypeError(
                    f"the function writes into argument {self.names[i]!r}, a "
                    f"{type(target).__name__}: jit can hand writes back only to NumPy "
                    "arrays and jitlib.Arrays", location=self.locations.get(i),
                    hint="pass a NumPy array (np.asarray(x)), or copy it inside the "
                         "function before writing")
            for j, other in enumerate(args):
                if j != i and isinstance(other, np.ndarray) and isinstance(target, np.ndarray) \
                        and np.may_share_memory(target, other) \
                        and np.shares_memory(target, other):
                    raise SharedMemoryArgumentError(
                        f"the function writes into argument {self.names[i]!r}, which "
                        f"shares memory with argument {self.names[j]!r}: jit traces them as "
                        "separate arrays, so the write would not show through the other as "
                        "it does in NumPy", location=self.locations.get(i),
                        hint="pass separate arrays (a .copy() of one), or pass the array "
                             "once and take the views inside the function")

    def finish(self, args, outs, n_out):
        """Copy the written parameters' new contents into the caller's arrays; the
        function's own outputs, with returned arguments as the caller's objects."""
        for i, new in zip(self.writes, outs[n_out:]):
            target = args[i]
            if new is target:
                continue   # the program wrote into the caller's array itself
            if isinstance(target, Array):
                target.device.copy_into(target, new)
            else:
                np.copyto(target, new if isinstance(new, np.ndarray) else np.asarray(new),
                          casting="unsafe")
        outs = list(outs[:n_out])
        for k, i in self.returned:
            if isinstance(args[i], (np.ndarray, Array)):
                outs[k] = args[i]
        return outs


class ContainerMutationError(errors.UnsupportedError):
    """The function changed a list or dict passed in, which a compiled call cannot replay."""


def snapshot_containers(args):
    """(container, its items) for every list and dict in the traced arguments, to find
    after the trace which ones the function changed (appended to, assigned into)."""
    found, stack = [], [args]
    while stack:
        x = stack.pop()
        if type(x) is list or type(x) is tuple:
            if type(x) is list:
                found.append((x, list(x)))
            stack.extend(x)
        elif type(x) is dict:
            found.append((x, dict(x)))
            stack.extend(x.values())
    return found


def check_containers(snapshot, fn_name, location):
    """Raise if a list or dict the function was given changed during its trace."""
    for container, items in snapshot:
        if type(container) is list:
            same = len(container) == len(items) and all(
                a is b for a, b in zip(container, items))
        else:
            same = container.keys() == items.keys() and all(
                container[k] is v for k, v in items.items())
        if not same:
            raise ContainerMutationError(
                f"{fn_name} changed a {type(container).__name__} it was passed (an append, "
                "an item assignment, a pop...): jit runs the compiled program on later "
                "calls and cannot replay changes to Python containers",
                location=location,
                hint="build a new list or dict and return it, or keep the container outside "
                     "the jitted function and pass arrays in")
