"""The bucket layer of a jitted function: pad, run the bucket's program, slice back.

A call whose bucketed axes have lengths n_i runs the program compiled for the bucket
sizes B_i (one compile per bucket, not per size). The program is the user's function
traced at B_i and made safe by `safety.prove` (masks, lengths as runtime scalars).
The proof walks traces taken at the bucket size, one below it and at the smallest
length the bucket serves (per bucketed axis): code whose structure changes with the
length shows up as a difference there, and is refused. A parity test or a threshold
anywhere inside the bucket is caught by those ends; a test for one exact length in the
middle is not. A rule with verify = "each_size" traces each new tuple of true lengths
once more (no compile) and checks it against the proof before it runs.

Lengths 0 and 1 run their exact shape, unpadded: NumPy broadcasts a size-1 axis, so
a program traced at B may not mean the same thing at 1.
"""
import logging
import threading
from typing import NamedTuple

import numpy as np

from jitlib import errors, tree
from jitlib.buckets import config, safety
from jitlib.hlo import dtypes

log = logging.getLogger("jitlib")


class BucketSizeError(errors.JitlibError):
    """A bucketed length is past the rule's max and the rule says beyond_max = "error"."""


class _Axis(NamedTuple):
    rule: config.Rule
    name: str          # the parameter
    axis: int          # normalised for this call's array


class _Entry(NamedTuple):
    program: safety.PaddedProgram
    out_tree: object
    executable: object
    traces: list          # the bucket trace and the probes the proof was built from
    verified: set         # true-length tuples checked against the proof


def qualified_names(fn):
    qual = getattr(fn, "__qualname__", getattr(fn, "__name__", ""))
    return qual, f"{getattr(fn, '__module__', '')}.{qual}"


def bucket_layer(jitted, inline):
    """The Bucketed layer for `jitted` (its inline rules, then JITLIB_BUCKETS's that match
    its qualified name), or None when no rule applies."""
    rules = config.from_inline(inline)
    names = qualified_names(jitted.fn)
    rules += [r for r in config.from_env() if any(r.matches(n) for n in names)]
    return Bucketed(jitted, rules) if rules else None


class Bucketed:
    def __init__(self, jitted, rules):
        self.jitted = jitted
        self.rules = rules
        self._lock = threading.Lock()
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
            self._params.append(name)

    def __call__(self, args, kwargs):
        j = self.jitted
        bound = j._bind(args, kwargs)
        padded_axes, lengths, buckets = self._plan(bound)
        if not padded_axes:
            return self._exact(bound)
        padded = _Bound(bound, {a.name: _pad(bound.arguments[a.name], a.axis, b,
                                             a.rule.pad_value)
                                for a, b in zip(padded_axes, buckets)})
        key, dynamic, flat = j._key(padded)
        key = key._replace(static=key.static + (
            ("<buckets>", tuple((a.name, a.axis) for a in padded_axes)),))
        entry = j._entry(key, lambda: self._compile(key, padded, dynamic, padded_axes,
                                                     buckets))
        if lengths not in entry.verified and any(
                a.rule.verify == "each_size" for a in padded_axes):
            self._verify(entry, bound, padded_axes, lengths, buckets)
        _record(j, key, padded_axes, lengths)
        arrays = [np.asarray(x, dtype=leaf[1]) for x, leaf in zip(flat, key.leaves)]
        arrays += [np.array(n, dtype=dtypes.INDEX) for n in lengths]
        outs = entry.executable(*arrays)
        outs = [_slice(o, axes, lengths) for o, axes in zip(outs, entry.program.out_axes)]
        return tree.unflatten(entry.out_tree, outs)

    # -- which axes pad to which bucket

    def _plan(self, bound):
        padded_axes, lengths, buckets = [], [], []
        for rule, name in zip(self.rules, self._params):
            value = bound.arguments.get(name)
            ndim = np.ndim(value)
            if not -ndim <= rule.axis < ndim:
                raise rule.source.error("axis", f"axis {rule.axis} is out of range for "
                                        f"argument {name!r} with {ndim} dimensions")
            axis = rule.axis % ndim
            n = np.shape(value)[axis]
            bucket = rule.bucket_for(n)
            if bucket is None:
                if rule.beyond_max == "error":
                    raise BucketSizeError(
                        f"argument {name!r} axis {axis} has length {n}, past the bucket "
                        f"rule's max = {rule.max}", location=rule.source.location("max"),
                        hint="raise max, or set beyond_max = \"compile\" to compile "
                             "such sizes exactly")
                log.info("jitlib: %s: %s axis %d length %d is past max = %d: compiling the "
                         "exact shape", self.jitted.__name__, name, axis, n, rule.max)
                continue
            if n <= 1:
                continue   # size 0 and 1 run exactly (NumPy broadcasts size 1)
            padded_axes.append(_Axis(rule, name, axis))
            lengths.append(n)
            buckets.append(bucket)
        return padded_axes, tuple(lengths), tuple(buckets)

    def _exact(self, bound):
        j = self.jitted
        key, dynamic, flat = j._key(bound)
        entry = j._entry(key, lambda: j._compile(key, bound, dynamic))
        arrays = [np.asarray(x, dtype=leaf[1]) for x, leaf in zip(flat, key.leaves)]
        return tree.unflatten(entry.out_tree, list(entry.executable(*arrays)))

    # -- compile a bucket, verify a size

    def _compile(self, key, padded, dynamic, axes, buckets):
        from jitlib.backends import get_backend
        from jitlib.cache import hooks
        j = self.jitted
        hooks.before_compile(j, key, what="bucket " + ", ".join(
            f"{a.name}[axis {a.axis}]={b}" for a, b in zip(axes, buckets)))
        module, out_tree = j._trace(padded, dynamic, key)
        traces = [safety.Traced(module, buckets)]
        for i, (a, b) in enumerate(zip(axes, buckets)):
            # the first probe (one below the bucket) fits the length-affine constants;
            # the bottom of the bucket checks that fit, and any threshold in between
            bottom = a.rule.smallest_in(b)
            probes = [b - 1 if b - 1 >= 2 else b + 1] + ([bottom] if bottom < b - 1 else [])
            for probe in probes:
                sizes = buckets[:i] + (probe,) + buckets[i + 1:]
                traces.append(safety.Traced(self._trace_at(padded, a, probe), sizes))
        program = safety.prove(traces, [f"{a.name}{a.axis}" for a in axes])
        if program.masked:
            log.info("jitlib: %s: masked %s for the bucket", j.__name__,
                     ", ".join(f"{b.op.value}" for b in program.masked))
        executable = get_backend(key.backend).compile(program.module)
        return _Entry(program, out_tree, executable, traces, {buckets})

    def _trace_at(self, bound, axis, size):
        """The function traced with `axis` resized to `size` (no data needed)."""
        value = bound.arguments[axis.name]
        shape = list(np.shape(value))
        shape[axis.axis] = size
        probe = _Bound(bound, {axis.name: np.empty(shape, np.asarray(value).dtype)})
        key, dynamic, _ = self.jitted._key(probe)
        # probes are only walked beside the verified bucket trace: any difference refuses
        return self.jitted._trace(probe, dynamic, key, check=False)[0]

    def _verify(self, entry, bound, axes, lengths, buckets):
        """Check the proof at these true lengths: trace them and walk beside the rest."""
        j = self.jitted
        key, dynamic, _ = j._key(bound)
        module, _ = j._trace(bound, dynamic, key, check=False)
        with self._lock:
            safety.prove(entry.traces + [safety.Traced(module, lengths)],
                         [f"{a.name}{a.axis}" for a in axes])
            entry.verified.add(lengths)


def _record(jitted, key, axes, lengths):
    """The call's true shapes, for the bucket planner."""
    from jitlib.cache import explain, shapes
    names = explain.leaf_names(key)
    true = dict(zip((a.name for a in axes), zip((a.axis for a in axes), lengths)))
    leaves = []
    for name, (shape, dtype, _) in zip(names, key.leaves):
        if name in true:
            axis, n = true[name]
            shape = shape[:axis] + (n,) + shape[axis + 1:]
        leaves.append((shape, dtype))
    shapes.record(jitted.fn, names, leaves)


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
