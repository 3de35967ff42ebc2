"""The bucket layer of a jitted function: pad, run the bucket's program, slice back.

A call whose bucketed axes have lengths n_i runs the program compiled for the bucket
sizes B_i (one compile per bucket, not per size). The program is the user's function
traced at B_i and made safe by `safety.prove` (masks, lengths as runtime scalars).
The proof walks traces taken at the bucket size, one below it and at the smallest
length the bucket serves (per bucketed length; axes of equal length under rules with
equal sizes share one, see `_plan`): code whose structure changes with the length
shows up as a difference there, and is refused. A parity test or a threshold
anywhere inside the bucket is caught by those ends; a test for one exact length in the
middle is not. A rule with verify = "each_size" traces each new tuple of true lengths
once more (no compile) and checks it against the proof before it runs; the first call
of a bucket is checked so in any case.

With the disk cache on, that first call's own trace also keys a saved entry naming the
program that runs it (saved.py): a new process whose first call traces the same way
runs the saved program after one trace, and proves the bucket only when a length comes
that no process saved.

Lengths 0 and 1 run their exact shape, unpadded: NumPy broadcasts a size-1 axis, so
a program traced at B may not mean the same thing at 1.
"""
import functools
import math
import os
import warnings
from typing import NamedTuple

import numpy as np

from jitlib import errors, forksafe, logs, tree
from jitlib.buckets import config, safety, saved
from jitlib.hlo import dtypes
from jitlib.trace.int_ranges import NeedsIntValues


class BucketSizeError(errors.JitlibError):
    """A bucketed length is past the rule's max and the rule says beyond_max = "error",
    or its bucket is too large to allocate."""


class BucketShapeError(safety.BucketRefusedError):
    """The function traces at the call's own shapes but fails once an argument is padded
    (another argument's length must agree with the padded one)."""


class _Axis(NamedTuple):
    rule: config.Rule
    name: str          # the parameter
    axis: int          # normalised for this call's array
    group: int         # its index in the call's lengths and buckets (see _plan)


class _Entry:
    """A bucket's compiled program. `traces` (the bucket trace and the probes the proof
    was built from) is empty for a program found through a saved call (saved.py) until
    a length it was not saved for proves it here; `verified` holds the true-length
    tuples checked against the proof, or saved with the program."""

    __slots__ = ("run", "out_tree", "traces", "verified", "effects")

    def __init__(self, program, out_tree, executable, traces, verified, effects=None):
        self.run = (program, executable)   # one attribute: swapped whole, read whole
        self.out_tree = out_tree
        self.traces = traces
        self.verified = verified
        self.effects = effects   # the call's trace's writeback.Effects (globals read)

    @property
    def program(self):
        return self.run[0]

    @property
    def executable(self):
        return self.run[1]


def qualified_names(fn):
    qual = getattr(fn, "__qualname__", getattr(fn, "__name__", ""))
    return qual, f"{getattr(fn, '__module__', '')}.{qual}"


def bucket_layer(jitted, inline):
    """The Bucketed layer for `jitted` (its inline rules, then JITLIB_BUCKETS's that match
    its qualified name), or None when no rule applies (`_Unmatched` when a JITLIB_BUCKETS
    rule matched no function so far: its first call says so)."""
    rules = config.from_inline(inline)
    names = qualified_names(jitted.fn)
    env = config.from_env()
    matched = [r for r in env if any(r.matches(n) for n in names)]
    if env:
        _jitted_names.setdefault(names[1])
        _matched_rules.update(matched)
    unmatched = env if env and not matched else None
    if rules or matched:
        return Bucketed(jitted, rules + matched, unmatched)
    return _Unmatched(jitted, unmatched) if unmatched else None


# JITLIB_BUCKETS rules against the functions jitted in this process. A rule that matches
# none is most likely a typo; said once, at the first call of a function no rule matched
# (decorators have run by then, so the names it lists are the ones the user meant)
_jitted_names = {}       # module.qualname -> None, in the order they were jitted
_matched_rules = set()
_warned_rules = set()


def _warn_unmatched(env_rules):
    for rule in env_rules:
        if rule in _matched_rules or rule in _warned_rules:
            continue
        _warned_rules.add(rule)
        names = list(_jitted_names)
        shown = ", ".join(names[:12]) + (f" and {len(names) - 12} more" if len(names) > 12
                                         else "")
        warnings.warn_explicit(
            f"bucket rule function = {rule.function!r} matches no jitted function (its "
            f"glob is matched against qualname and module.qualname); jitted so far: "
            f"{shown}", config.BucketRuleWarning, rule.source.file,
            rule.source.lines.get("function", rule.source.header_line))


class _Unmatched:
    """The layer of a function no rule matched while some JITLIB_BUCKETS rule matched
    nothing: the first call warns, then takes itself out of the jitted function."""

    def __init__(self, jitted, env_rules):
        self.jitted, self.env_rules = jitted, env_rules

    def __call__(self, args, kwargs, verify=False):
        _warn_unmatched(self.env_rules)
        self.jitted._buckets = None   # later calls take jit's own path
        return self.jitted(*args, **kwargs)


class Bucketed:
    def __init__(self, jitted, rules, unmatched=None):
        self.jitted = jitted
        self.rules = rules
        self._unmatched = unmatched   # JITLIB_BUCKETS rules to warn about at the first call
        self._lock = forksafe.lock()
        params = list(jitted._signature.parameters) if jitted._signature else []
        self._params = []
        for rule in rules:
            name = rule.arg
            if isinstance(name, int):
                if not -len(params) <= name < len(params):
                    raise rule.source.error("arg", f"position {name} is not a parameter of "
                                            f"{jitted.__name__}{jitted._signature}")
                name = params[name]
            elif name not in params:
                raise rule.source.error("arg", f"{name!r} is not a parameter of "
                                        f"{jitted.__name__}{jitted._signature}")
            if name in jitted._static:
                raise rule.source.error("arg", f"{name!r} is static; only array arguments "
                                        "can be bucketed")
            for other, other_name in zip(rules, self._params):
                if other_name == name and other.axis == rule.axis:
                    raise _conflict(jitted, other, rule, name, rule.axis)
            self._params.append(name)

    def __call__(self, args, kwargs, verify=False):
        """The call, padded to its buckets. `verify`: check its true lengths against the
        proof (and save them, with the disk cache on) as `verify = "each_size"` would:
        `python -m jitlib buckets warm` does so for every length a service recorded."""
        j = self.jitted
        if self._unmatched is not None:
            _warn_unmatched(self._unmatched)
            self._unmatched = None
        bound = j._bind(args, kwargs)
        padded_axes, lengths, buckets = self._plan(bound)
        if not padded_axes:
            return self._exact(bound, args, kwargs)
        replace = {}
        for a in padded_axes:   # two rules may pad two axes of one argument
            value = replace.get(a.name, bound.arguments[a.name])
            replace[a.name] = _pad(value, a.axis, buckets[a.group], a.rule.pad_value)
        padded = _Bound(bound, replace)
        key, dynamic, flat = j._key(padded)
        key = key._replace(static=key.static + (
            ("<buckets>", tuple((a.name, a.axis, a.group) for a in padded_axes)),))
        call = _Call(key, bound, padded, dynamic, padded_axes, lengths, buckets)
        entry = j._entry(key, lambda: self._compile(call))
        if lengths not in entry.verified and not entry.traces:
            self._adopt(entry, call)
        if lengths not in entry.verified and (verify or any(
                a.rule.verify == "each_size" for a in padded_axes)):
            self._verify(entry, call)
        _record(j, key, padded_axes, lengths)
        arrays = [np.asarray(x, dtype=leaf[1]) for x, leaf in zip(flat, key.leaves)]
        effects, targets = entry.effects, None
        if effects is not None:
            if j._drop_if_stale(effects):
                return self(args, kwargs, verify)
            inputs = effects.call_inputs()   # globals read at call time, draws
            arrays += inputs
            # writes land in the padded copies: their true part goes to the caller's arrays
            targets = list(tree.flatten(tuple(v for n, v in bound.arguments.items()
                                              if n not in j._static))[0]) + inputs
            effects.check(targets)
        arrays += [np.array(n, dtype=dtypes.INDEX) for n in lengths]
        program, executable = entry.run
        outs = executable(*arrays)
        outs = [_slice(o, axes, lengths) for o, axes in zip(outs, program.out_axes)]
        if effects is not None:
            outs = effects.finish(targets, outs, entry.out_tree.num_leaves)
        return tree.unflatten(entry.out_tree, outs)

    # -- which axes pad to which bucket

    def _plan(self, bound):
        """The padded axes, and per group of them the true length and the bucket. Axes of
        one length under rules with the same sizes are one group: they pad to one bucket
        and the proof's probes resize them together, so x and y whose lengths must agree
        stay in agreement (a program for a group serves only calls where they agree)."""
        padded_axes, lengths, buckets = [], [], []
        seen = {}   # (name, axis) -> rule: axis -1 and 1 may be one axis
        groups = {}  # (the rule's sizes, true length) -> group
        for rule, name in zip(self.rules, self._params):
            value = bound.arguments.get(name)
            ndim = np.ndim(value)
            if not -ndim <= rule.axis < ndim:
                raise rule.source.error("axis", f"axis {rule.axis} is out of range for "
                                        f"argument {name!r} with {ndim} dimensions")
            axis = rule.axis % ndim
            other = seen.setdefault((name, axis), rule)
            if other is not rule:
                raise _conflict(self.jitted, other, rule, name, axis)
            n = np.shape(value)[axis]
            bucket = rule.bucket_for(n)
            if bucket is None:
                if rule.beyond_max == "error":
                    raise BucketSizeError(
                        f"argument {name!r} axis {axis} has length {n}, past the bucket "
                        f"rule's max = {rule.max}", location=rule.source.location("max"),
                        hint="raise max, or set beyond_max = \"compile\" to compile "
                             "such sizes exactly")
                logs.log("buckets", "%s: %s axis %d length %d is past max = %d: compiling "
                         "the exact shape", self.jitted.__name__, name, axis, n, rule.max)
                continue
            if n <= 1:
                continue   # size 0 and 1 run exactly (NumPy broadcasts size 1)
            if bucket > n:
                _check_memory(rule, name, value, axis, n, bucket)
            group = groups.setdefault((rule.bucketing(), n), len(lengths))
            if group == len(lengths):
                lengths.append(n)
                buckets.append(bucket)
            padded_axes.append(_Axis(rule, name, axis, group))
        return padded_axes, tuple(lengths), tuple(buckets)

    def _exact(self, bound, args, kwargs):
        j = self.jitted
        key, dynamic, flat = j._key(bound)
        entry = j._entry(key, lambda: j._compile(key, bound, dynamic))
        arrays = [np.asarray(x, dtype=leaf[1]) for x, leaf in zip(flat, key.leaves)]
        if entry.effects is not None:
            return j._run_with_effects(entry, flat, arrays, kwargs, args)
        return tree.unflatten(entry.out_tree, list(entry.executable(*arrays)))

    # -- compile a bucket, verify a size

    def _compile(self, call):
        """The bucket's entry: the program saved for this call's own trace (saved.py),
        else proven, compiled and saved for the next process."""
        from jitlib.cache import hooks
        j = self.jitted
        hooks.before_compile(j, call.key, what="bucket " + ", ".join(
            f"{a.name}[axis {a.axis}]={call.buckets[a.group]}" for a in call.axes))
        true_trace, out_tree = self._trace_true(call)
        saved_call = self._saved_call(call, true_trace)
        found = saved_call.load()
        if found is not None:
            executable, out_axes = found
            program = safety.PaddedProgram(executable.module, out_axes, ())
            return _Entry(program, out_tree, executable, [], {call.lengths},
                          true_trace.effects)
        traces, program, executable = self._prove_and_compile(call, saved_call)
        return _Entry(program, out_tree, executable, traces, {call.buckets, call.lengths},
                      true_trace.effects)

    def _saved_call(self, call, true_trace):
        from jitlib.backends import get_backend
        return saved.SavedCall(true_trace, call.axes, call.buckets,
                               get_backend(call.key.backend))

    def _prove_and_compile(self, call, saved_call):
        """(traces, program, executable) of the call's bucket, proven and compiled here;
        saved for the call's own trace, for the next process."""
        traces, program = self._prove(call, saved_call.traced)
        executable = saved_call.backend.compile(program.module)
        saved_call.save(executable, program.out_axes)
        return traces, program, executable

    def _prove(self, call, true_trace):
        """(traces, PaddedProgram) for the call's bucket, the call's own trace checked
        against the proof (so that a saved call is one the proof covers, not a guess)."""
        j = self.jitted
        module, _ = self._explained(
            call, None, lambda: j._trace(call.padded, call.dynamic, call.key))
        traces = [safety.Traced(module, call.buckets)]
        for i, b in enumerate(call.buckets):
            group = [a for a in call.axes if a.group == i]
            # the first probe (one below the bucket) fits the length-affine constants;
            # the bottom of the bucket checks that fit, and any threshold in between
            bottom = group[0].rule.smallest_in(b)
            probes = [b - 1 if b - 1 >= 2 else b + 1] + ([bottom] if bottom < b - 1 else [])
            for probe in probes:
                sizes = call.buckets[:i] + (probe,) + call.buckets[i + 1:]
                traced = true_trace if sizes == call.lengths else self._explained(
                    call, (group, probe), lambda: self._trace_at(call.padded, group, probe))
                traces.append(safety.Traced(traced, sizes))
        names = _length_names(call)
        program = safety.prove(traces, names)
        if call.lengths not in [t.lengths for t in traces]:
            safety.prove(traces + [safety.Traced(true_trace, call.lengths)], names)
        if program.masked:
            logs.log("buckets", "%s: masked %s for the bucket", j.__name__,
                     ", ".join(f"{b.op.value}" for b in program.masked))
        return traces, program

    def _explained(self, call, probe, trace):
        """`trace()` of the padded call (or of a probe: (group's axes, size)). The call's own
        shapes traced already, so an error here comes from the padding: say which."""
        try:
            return trace()
        except (NeedsIntValues, errors.VerifierError):
            raise   # jit retraces by value; a verifier error is jitlib's own
        except Exception as e:
            raise _padding_error(self.jitted, call, probe, e) from e

    def _trace_true(self, call):
        """The function traced at the call's own (unpadded) shapes: (module, out tree)."""
        j = self.jitted
        key, dynamic, _ = j._key(call.bound)
        # read beside the verified traces, or as a disk key: the verifier adds nothing
        return j._trace(call.bound, dynamic, key, check=False)

    def _adopt(self, entry, call):
        """A length the saved program was not saved for: its own saved call, else the
        full proof here (which from then on covers the bucket as in a cold process)."""
        saved_call = self._saved_call(call, self._trace_true(call)[0])
        with self._lock:
            if call.lengths in entry.verified or entry.traces:
                return
            found = saved_call.load()
            _, executable = entry.run
            if found is not None and found[0].saved_key == executable.saved_key:
                entry.verified.add(call.lengths)
                return
            traces, program, executable = self._prove_and_compile(call, saved_call)
            entry.run = (program, executable)
            entry.verified = {call.buckets, call.lengths}
            entry.traces = traces

    def _trace_at(self, bound, axes, size):
        """The function traced with `axes` (one group) resized to `size` (no data needed)."""
        replace = {}
        for a in axes:
            value = replace.get(a.name, bound.arguments[a.name])
            shape = list(np.shape(value))
            shape[a.axis] = size
            replace[a.name] = np.empty(shape, np.asarray(value).dtype)
        probe = _Bound(bound, replace)
        key, dynamic, _ = self.jitted._key(probe)
        # probes are only walked beside the verified bucket trace: any difference refuses
        return self.jitted._trace(probe, dynamic, key, check=False)[0]

    def _verify(self, entry, call):
        """Check the proof at the call's true lengths: trace them and walk beside the
        rest; then a later process may run the program for them after one trace."""
        saved_call = self._saved_call(call, self._trace_true(call)[0])
        with self._lock:
            safety.prove(entry.traces + [safety.Traced(saved_call.traced, call.lengths)],
                         _length_names(call))
            entry.verified.add(call.lengths)
            program, executable = entry.run
            saved_call.save(executable, program.out_axes)


def _length_names(call):
    """The program's length parameters, one per group: x0, or x0_y0 for x and y together."""
    return ["_".join(f"{a.name}{a.axis}" for a in call.axes if a.group == i)
            for i in range(len(call.buckets))]


def _padding_error(jitted, call, probe, e):
    padded = [f"argument {a.name!r} axis {a.axis}: length {call.lengths[a.group]} padded "
              f"to {call.buckets[a.group]} by the bucket rule {a.rule.source.where()}"
              for a in call.axes]
    if probe is None:
        what = "padded to its bucket"
    else:
        group, size = probe
        resized = " and ".join(f"argument {a.name!r} axis {a.axis}" for a in group)
        what = (f"with {resized} resized to {size} (a trace the padding proof takes "
                f"inside the bucket) and the rest padded")
    cause = e.message if isinstance(e, errors.JitlibError) else f"{type(e).__name__}: {e}"
    names = " and ".join(f"{a.name!r} axis {a.axis}" for a in call.axes)
    return BucketShapeError(
        f"{jitted.__name__} traces at the shapes it was called with, but fails {what}:\n"
        + "".join(f"  {p}\n" for p in padded) + f"the error at those shapes: {cause}",
        location=getattr(e, "location", None),
        hint=f"an argument whose length must agree with {names} needs a bucket rule too, "
             f"with the same sizes (equal lengths under equal sizes pad together); code "
             f"that fails at other lengths of the bucket needs a higher min, or no rule")


def _check_memory(rule, name, value, axis, n, bucket):
    """Refuse a padded copy larger than the machine's memory before allocating it: a
    `sizes` entry or `min` written for another dtype or shape would otherwise be a
    MemoryError (or, under overcommit, an allocation that succeeds until it is filled)."""
    dtype = value.dtype if hasattr(value, "dtype") else np.asarray(value).dtype
    shape = list(np.shape(value))
    shape[axis] = bucket
    need = math.prod(shape) * dtype.itemsize
    have = _memory_bytes()
    if need <= have:
        return
    key = "sizes" if rule.sizes is not None else "min" if n < rule.min else "max"
    raise BucketSizeError(
        f"bucket rule {rule.source.where()} pads argument {name!r} axis {axis} from "
        f"length {n} to {bucket}: the padded {dtype} array of shape {tuple(shape)} "
        f"would need {need:,} bytes ({dtype.itemsize} per item), more than this "
        f"machine's {have:,} bytes of memory", location=rule.source.location(key),
        hint=f"lower the rule's {key} to a size that fits")


@functools.cache
def _memory_bytes():
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, OSError, ValueError):   # no sysconf: numpy's own limit
        return np.iinfo(np.intp).max


def _conflict(jitted, first, second, name, axis):
    return config.BucketConfigError(
        f"two bucket rules pad argument {name!r} axis {axis} of {jitted.__name__}:\n"
        f"  {first.describe()}  ({first.source.where()})\n"
        f"  {second.describe()}  ({second.source.where()})",
        location=second.source.location("arg"),
        hint="keep one of them (narrow a rule's function glob, or drop the inline rule)")


def _record(jitted, key, axes, lengths):
    """The call's true shapes, for the bucket planner."""
    from jitlib.cache import explain, shapes
    names = explain.leaf_names(key)
    true = {}   # name -> [(axis, length)]: rules may pad several axes of one argument
    for a in axes:
        true.setdefault(a.name, []).append((a.axis, lengths[a.group]))
    leaves = []
    for name, (shape, dtype, _) in zip(names, key.leaves):
        for axis, n in true.get(name, ()):
            shape = shape[:axis] + (n,) + shape[axis + 1:]
        leaves.append((shape, dtype))
    shapes.record(jitted.fn, names, leaves)


class _Call(NamedTuple):
    """One bucketed call: its key (padded shapes), arguments as given and padded, its
    padded axes, and per group of them (_Axis.group) the true length and the bucket."""
    key: object
    bound: object
    padded: object
    dynamic: object
    axes: list
    lengths: tuple
    buckets: tuple


class _Bound:
    """`bound` (jit's bound arguments) with some arguments replaced."""

    def __init__(self, bound, replace):
        self._base = bound
        self.arguments = dict(bound.arguments)
        self.arguments.update(replace)

    def call(self, fn, values):
        return self._base.call(fn, values)


def _pad(value, axis, size, pad_value):
    arr = np.asarray(value)
    n = arr.shape[axis]
    if n == size:
        return arr
    shape = list(arr.shape)
    shape[axis] = size
    out = np.empty(shape, arr.dtype)
    index = (slice(None),) * axis
    out[index + (slice(0, n),)] = arr
    out[index + (slice(n, size),)] = np.array(pad_value).astype(arr.dtype)
    return out


def _slice(out, axes, lengths):
    if not axes:
        return out
    index = [slice(None)] * out.ndim
    for axis, i in axes:
        index[axis] = slice(0, lengths[i])
    return out[tuple(index)]
