"""The padding proof: padded positions cannot reach the kept part of any result.

Input: the user's function traced at the bucket sizes (`traces[0]`), traced once more
per bucketed length with only that length changed (the probes), and optionally at
further sizes to verify (each true size is verified before it first runs). The traces
are walked side by side, so whatever changes with a length shows up as a difference:

- an axis whose size differs carries that length: it is *padded* (kept part first,
  padding after). Elementwise ops, broadcasts, transposes, batch and free dims of a
  dot keep padding in padded positions, so they are safe as they are;
- a reduction, arg-reduction or dot contraction over a padded axis gets a mask: the
  operand is `select(iota < true_length, x, identity)`, with the true length passed as
  an extra int64 scalar parameter per bucketed axis (so one program serves every
  size in the bucket);
- a scalar constant that differs (NumPy's count in a mean, `n - ddof` in a var) must
  be affine in the length, and is recomputed from the length parameter;
- an update of a slice spanning the padded axis from 0 with an update padded alike
  (`y[:, 0] = x.sum(1)`, x and y bucketed together) keeps padding on padding;
- everything else that touches a padded axis (a reshape merging it with another
  axis, a slice or reverse of it, a cumulative op from the end, a gather or sort along it,
  a matrix dim of a linear-algebra op, a scatter, a concatenation, any other slice
  update) is refused with a `BucketRefusedError` at the user's line, and so is a
  program whose structure changes with the length.
"""
from typing import NamedTuple

import numpy as np

from jitlib import errors
from jitlib.hlo import build, dtypes
from jitlib.hlo import ops as O
from jitlib.hlo.ir import Module
from jitlib.hlo.ops import Op
from jitlib.hlo.printer import print_instr, value_names

# attributes that may differ between traces at different lengths (they hold sizes)
_SIZE_ATTRS = frozenset({"shape", "value", "limit", "start", "sizes", "low", "high"})

_REDUCE_IDENTITY = {
    Op.REDUCE_SUM: lambda dt: 0, Op.REDUCE_PROD: lambda dt: 1,
    Op.REDUCE_MAX: dtypes.lowest, Op.REDUCE_MIN: dtypes.highest,
    Op.REDUCE_AND: lambda dt: True, Op.REDUCE_OR: lambda dt: False,
    # first occurrence wins, and padding comes after the kept part
    Op.ARGMAX: dtypes.lowest, Op.ARGMIN: dtypes.highest,
}


class BucketRefusedError(errors.JitlibError):
    """Padding this axis could change the answer, so the bucket is not used."""


class Traced(NamedTuple):
    module: Module
    lengths: tuple      # one per bucketed axis, the sizes this module was traced at


class PaddedProgram(NamedTuple):
    module: Module      # the user's params, then one int64 length per bucketed axis
    out_axes: tuple     # per result: ((axis, length index), ...) to slice back
    masked: tuple       # the ops that got a mask, for logs and tests


def prove(traces, length_names):
    """The masked program for `traces[0]`'s bucket sizes, or BucketRefusedError."""
    return _Prover(traces, length_names).run()


class _Prover:
    def __init__(self, traces, length_names):
        self.traces = traces
        self.sizes = [t.lengths for t in traces]
        self.bucket = self.sizes[0]
        self.probe = {}   # length index -> the trace that changes only it
        for j, lengths in enumerate(self.sizes[1:], 1):
            changed = [i for i, (a, b) in enumerate(zip(lengths, self.bucket)) if a != b]
            if len(changed) == 1:
                self.probe.setdefault(changed[0], j)
        base = traces[0].module
        self.names = value_names(base)
        n_params = len(base.params)
        self.lengths = [build.parameter(n_params + i, (), dtypes.INDEX, f"len_{name}")
                        for i, name in enumerate(length_names)]
        self.padded = {}   # aligned tuple -> {axis: length index}
        self.new = {}      # aligned tuple -> instruction of the masked program
        self.masked = []

    def run(self):
        modules = [t.module for t in self.traces]
        params, results, order = _align(modules, self._refuse_mismatch)
        for t in order:
            self.padded[t] = self._padded_axes(t)
            self.new[t] = self._rule(t)
        base = modules[0]
        module = Module(base.name, [self.new[t] for t in params] + self.lengths,
                        [self.new[t] for t in results])
        out_axes = tuple(tuple(sorted(self.padded[t].items())) for t in results)
        return PaddedProgram(module, out_axes, tuple(self.masked))

    # -- what carries a length

    def _padded_axes(self, t):
        b = t[0]
        axes = {}
        for axis in range(b.ndim):
            varying = [i for i, j in self.probe.items() if t[j].shape[axis] != b.shape[axis]]
            if len(varying) > 1:
                self._refuse(b, f"axis {axis} depends on several bucketed lengths")
            if varying:
                axes[axis] = varying[0]
        for x, lengths in zip(t, self.sizes):   # every trace: padded axis == its length
            for axis in range(b.ndim):
                want = lengths[axes[axis]] if axis in axes else b.shape[axis]
                if x.shape[axis] != want:
                    self._refuse(b, f"axis {axis} has a size computed from the bucketed "
                                    f"length ({x.shape[axis]} at length {lengths})")
        return axes

    # -- per op: keep, mask, recompute, or refuse

    def _rule(self, t):
        b = t[0]
        ops = [self.new[c] for c in zip(*(x.operands for x in t))]
        pads = [self.padded[c] for c in zip(*(x.operands for x in t))]
        op = b.op
        if op is Op.PARAMETER or op is Op.IOTA:
            return b
        if op is Op.CONSTANT:
            return self._constant(t)
        if op in O.ELEMENTWISE or op in (Op.BROADCAST_IN_DIM, Op.TRANSPOSE):
            return self._same(b, ops)
        if op is Op.RESHAPE:
            self._check_reshape(b, pads[0], self.padded[t])
        elif op is Op.SLICE:
            for a in pads[0]:
                if (b.attrs["start"][a], b.attrs["strides"][a], b.attrs["limit"][a]) != \
                        (0, 1, b.operands[0].shape[a]):
                    self._refuse(b, f"slices the padded axis {a}")
        elif op is Op.PAD:
            for a in pads[0]:
                if (b.attrs["low"][a], b.attrs["high"][a], b.attrs["interior"][a]) != (0, 0, 0):
                    self._refuse(b, f"pads the padded axis {a} again")
        elif op is Op.CONCATENATE:
            if any(b.attrs["dim"] in p for p in pads):
                self._refuse(b, f"concatenates along the padded axis {b.attrs['dim']}")
        elif op is Op.REVERSE:
            if set(b.attrs["dims"]) & set(pads[0]):
                self._refuse(b, "reverses the padded axis (the padding would come first)")
        elif op is Op.DYNAMIC_SLICE:
            for a in pads[0]:
                if b.attrs["sizes"][a] != b.operands[0].shape[a]:
                    self._refuse(b, f"slices the padded axis {a} at a computed offset")
        elif op is Op.DYNAMIC_UPDATE_SLICE:
            # y[:, 0] = v with y and v padded alike: the update spans each padded axis
            # from 0, so its padding lands on y's padding and its kept part on y's
            spans = all(pads[1].get(a) == i and all(_is_zero(x.operands[2 + a]) for x in t)
                        for a, i in pads[0].items())
            if not spans or set(pads[1]) - set(pads[0]):
                self._refuse(b, "updates a slice of a padded array")
        elif op is Op.GATHER:
            if b.attrs["axis"] in pads[0]:
                self._refuse(b, "gathers along the padded axis (an index could land in the "
                                "padding)")
        elif op is Op.SCATTER:
            if b.attrs["axis"] in pads[0] or pads[1] or pads[2]:
                self._refuse(b, "scatters with padded indices or updates, or along the "
                                "padded axis")
        elif op in O.REDUCE:
            reduced = [(a, pads[0][a]) for a in b.attrs["dims"] if a in pads[0]]
            ops[0] = self._mask(b, ops[0], reduced, _REDUCE_IDENTITY[op](b.dtype))
        elif op in O.ARG_REDUCE:
            a = b.attrs["axis"]
            if a in pads[0]:
                x = b.operands[0]
                ops[0] = self._mask(b, ops[0], [(a, pads[0][a])], _REDUCE_IDENTITY[op](x.dtype))
        elif op in O.CUMULATIVE:
            if b.attrs["axis"] in pads[0] and b.attrs["reverse"]:
                self._refuse(b, "accumulates from the end of the padded axis (the padding "
                                "would flow into every kept element)")
        elif op is Op.SORT:
            if any(b.attrs["dimension"] in p for p in pads):
                self._refuse(b, "sorts along the padded axis (the padding would be sorted "
                                "in among the values)")
        elif op in O.LINALG:
            # each matrix is factored on its own: padding may only add whole matrices
            if any(a >= x.ndim - 2 for x, p in zip(b.operands, pads) for a in p):
                self._refuse(b, "factors or solves along the padded axis (the padding "
                                "would enter the matrix)")
        elif op is Op.DOT_GENERAL:
            for k, side in ((0, "lhs_contract"), (1, "rhs_contract")):
                contracted = [(a, pads[k][a]) for a in b.attrs[side] if a in pads[k]]
                ops[k] = self._mask(b, ops[k], contracted, 0)
        else:
            self._refuse(b, "is not understood by the padding proof")
        return self._same(b, ops)

    def _same(self, b, ops):
        if all(n is o for n, o in zip(ops, b.operands)):
            return b
        return build.make(b.op, ops, dict(b.attrs), loc=b.loc)

    def _mask(self, b, value, axes, fill):
        """`value` with the padding along `axes` ((axis, length index), ...) set to `fill`."""
        if not axes:
            return value
        self.masked.append(b)
        shape, loc = value.shape, b.loc
        for axis, i in axes:
            index = build.iota(shape, dtypes.INDEX, axis, loc=loc)
            length = build.broadcast_in_dim(self.lengths[i], shape, (), loc=loc)
            keep = build.compare(index, length, "LT", loc=loc)
            value = build.select(keep, value, build.full(fill, shape, value.dtype, loc=loc),
                                 loc=loc)
        return value

    def _check_reshape(self, b, pad_in, pad_out):
        """A reshape keeps a padded axis only if it stays whole, with the same elements
        before it: then the other axes regroup among themselves around it."""
        x = b.operands[0]
        by_var_in = {i: a for a, i in pad_in.items()}
        if sorted(pad_in.values()) != sorted(pad_out.values()):
            self._refuse(b, "merges the padded axis with another axis")
        for a_out, i in pad_out.items():
            a_in = by_var_in[i]
            if (int(np.prod(x.shape[:a_in])) != int(np.prod(b.shape[:a_out]))
                    or x.shape[a_in] != b.shape[a_out]):
                self._refuse(b, "merges the padded axis with another axis")

    # -- constants: the same in every trace, a padded leaf, or affine in a length

    def _constant(self, t):
        b = t[0]
        values = [x.attrs["value"].array for x in t]
        if self.padded[t]:
            for x, v in zip(t[1:], values[1:]):
                prefix = values[0][tuple(slice(0, d) for d in v.shape)]
                if not np.array_equal(prefix, v, equal_nan=v.dtype.kind in "fc"):
                    self._refuse(b, "is a constant array whose values change with the "
                                    "bucketed length")
            return b
        if all(np.array_equal(values[0], v, equal_nan=True) for v in values[1:]):
            return b
        if b.shape != () or dtypes.is_bool(b.dtype):
            self._refuse(b, "is a constant array whose values change with the bucketed length")
        return self._affine_constant(t, [float(v) for v in values])

    def _affine_constant(self, t, values):
        """c = slope * length + offset, fitted on the probe and checked on every trace."""
        b = t[0]
        varying = [i for i, j in self.probe.items() if values[j] != values[0]]
        if len(varying) != 1:
            self._refuse(b, "is a constant computed from several bucketed lengths")
        i = varying[0]
        j = self.probe[i]
        n0, n1 = self.bucket[i], self.sizes[j][i]
        slope = (values[0] - values[j]) / (n0 - n1)
        offset = values[0] - slope * n0
        integral = float(slope).is_integer() and float(offset).is_integer()
        if dtypes.is_integer(b.dtype) and not integral:
            self._refuse(b, "is an integer constant not affine in the bucketed length")
        for lengths, v in zip(self.sizes, values):
            predicted = np.array(slope * lengths[i] + offset).astype(b.dtype)
            if predicted != np.array(v, dtype=b.dtype):
                self._refuse(b, f"is a constant computed from the bucketed length that is "
                                f"not affine in it ({v} at length {lengths[i]})")
        return self._affine_instr(b, i, slope, offset, integral)

    def _affine_instr(self, b, i, slope, offset, integral):
        loc = b.loc
        work = dtypes.INDEX if integral else np.dtype(np.float64)
        n = build.convert(self.lengths[i], work, loc=loc)
        if slope != 1:
            n = build.binary(Op.MUL, n, build.constant(np.array(slope).astype(work), loc=loc),
                             loc=loc)
        if offset != 0:
            n = build.binary(Op.ADD, n, build.constant(np.array(offset).astype(work), loc=loc),
                             loc=loc)
        return build.convert(n, b.dtype, loc=loc)

    # -- errors

    def _refuse(self, b, why):
        raise BucketRefusedError(
            f"cannot pad to the bucket: {b.op.value} {why}:\n"
            f"  {print_instr(b, self.names, short_locs=True).strip()}",
            location=_user_loc(b),
            hint="drop the bucket rule for this argument (each size then compiles), or "
                 "rewrite the op so the bucketed axis only flows elementwise or is reduced")

    def _refuse_mismatch(self, tup):
        b = tup[0]
        other = next(x for x in tup[1:] if not _same_kind(b, x))
        raise BucketRefusedError(
            f"cannot pad to the bucket: the program's structure changes with the bucketed "
            f"length: {b.op.value} {b.type_str} at the bucket size is "
            f"{other.op.value} {other.type_str} at another size",
            location=_user_loc(b),
            hint="code that branches on the array's size cannot share one program; drop "
                 "the bucket rule, or make the code independent of the size")


def _is_zero(instr):
    return instr.op is Op.CONSTANT and not np.any(instr.attrs["value"].array)


def _user_loc(instr):
    loc = instr.loc
    return loc if isinstance(loc, errors.SourceLocation) else None


def _same_kind(a, b):
    if (a.op, a.dtype, a.ndim, len(a.operands)) != (b.op, b.dtype, b.ndim, len(b.operands)):
        return False
    keep_a = {k: v for k, v in a.attrs.items() if k not in _SIZE_ATTRS}
    keep_b = {k: v for k, v in b.attrs.items() if k not in _SIZE_ATTRS}
    return keep_a == keep_b


def _align(modules, on_mismatch):
    """Walk the modules side by side from their params and results: tuples of
    corresponding instructions, operands before users. Interning may share one
    instruction of one trace between two of another (a count equal to a user's
    literal), so tuples, not single instructions, are the nodes."""
    for m in modules[1:]:
        if len(m.params) != len(modules[0].params) or len(m.results) != len(modules[0].results):
            on_mismatch((modules[0].results[0], m.results[0]) if m.results else (None,))
    params = list(zip(*(m.params for m in modules)))
    results = list(zip(*(m.results for m in modules)))
    order, seen = [], set()
    for t in params:
        if not all(_same_kind(t[0], x) for x in t[1:]):
            on_mismatch(t)
        seen.add(t)
        order.append(t)
    for root in results:
        stack = [(root, False)]
        while stack:
            t, expanded = stack.pop()
            if t in seen:
                continue
            if expanded:
                seen.add(t)
                order.append(t)
                continue
            if not all(_same_kind(t[0], x) for x in t[1:]):
                on_mismatch(t)
            stack.append((t, True))
            for child in reversed(list(zip(*(x.operands for x in t)))):
                if child not in seen:
                    stack.append((child, False))
    return params, results, order
