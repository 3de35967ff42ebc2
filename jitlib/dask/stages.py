"""Cut a proven program (proof.py) into per-block stages, combines and a finalize.

A value's *level* is the number of reductions over a chunked axis on its way from the
inputs. Blockwise stage s computes, per block, the chunked results of level s and the
per-block partials of the reductions of level s + 1 (the same reduce or dot, on the
block); earlier reductions' combined values come in as parameters (so softmax along
the chunked axis is three passes: the max, the sum of exponentials, the quotient).
A combine folds two partials with the reduction's associative step; the finalize
computes the results that carry no chunked axis from the combined reductions.

A stage has at most two programs: one for blocks of the longest block's shape, and one
for the ragged edges, padded to that shape. The edge program is the same with the
padding masked out of each partial (`select(iota < length, x, identity)`, the bucket
padding's rule, buckets/safety.py), the true lengths as parameters; the task slices
its chunked results back.
Every stage, combine and finalize is a Module of its own, compiled by jitlib.
"""
from typing import NamedTuple

import numpy as np

from jitlib.dask.proof import ChunkCouplingError
from jitlib.hlo import build, dtypes
from jitlib.hlo import ops as O
from jitlib.hlo.ir import Module
from jitlib.hlo.ops import Op


class Source(NamedTuple):
    kind: str     # "leaf": the user's flat argument `index`; "cross": a combined
    index: int    # reduction (its position in Plan.crosses); "start": where the block
    #               starts along chunked axis (group) `index`, for an arg-reduction


class Stage(NamedTuple):
    inputs: list      # Source per parameter
    partials: list    # positions in Plan.crosses whose per-block partials it returns
    #                   first: one value each, or (value, index) for an arg-reduction
    results: list     # positions in the user's flat results it returns after them
    modules: dict     # "full": the Module at the longest block's shape; "masked": the same
    #                   for blocks padded to it, its lengths as parameters (ragged edges)


class Plan(NamedTuple):
    stages: list      # blockwise stages, in order
    crosses: list     # aligned tuples of the reductions over a chunked axis
    combines: list    # Module per cross: two partials -> one
    final: Stage      # the results without a chunked axis (modules: {"full": Module})
    chunked: list     # per user result: its {axis: group}, empty if it has none
    direct: dict      # user result -> the cross it is (a reduction keeping chunked axes)


def plan(proof, ragged, totals, name, hint):
    """The Plan of `proof`; `ragged`: whether some block is shorter than the longest
    along a chunked axis (then each stage has a masked program too); `totals`: the
    whole array's length per group."""
    levels = _levels(proof)
    crosses = [t for t in proof.order if t in proof.crosses]
    for t in crosses:
        _check_cross(proof, t, hint)
    cross_at = {t: i for i, t in enumerate(crosses)}
    chunked = [dict(proof.padded[t]) for t in proof.results]
    n_stages = max([levels[t] + 1 for t, c in zip(proof.results, chunked)
                    if c and t not in cross_at]
                   + [levels[t] for t in crosses], default=0)
    emit = _Emitter(proof, cross_at, totals, name)
    stages = []
    for s in range(n_stages):
        partials = [i for i, t in enumerate(crosses) if levels[t] == s + 1]
        results = [i for i, (t, c) in enumerate(zip(proof.results, chunked))
                   if c and levels[t] == s and t not in cross_at]
        roots = [(crosses[i], True) for i in partials] + \
                [(proof.results[i], False) for i in results]
        modules = {"full": emit.module(f"{name}_stage{s}", roots)[0]}
        module, inputs = emit.module(f"{name}_stage{s}", roots, masked=True)
        if ragged:
            modules["masked"] = module
        stages.append(Stage(inputs, partials, results, modules))
    combines = [(_combine_arg if t[0].op in O.ARG_REDUCE else _combine)(
        t[0], f"{name}_combine{i}") for i, t in enumerate(crosses)]
    # a chunked result that is a reduction itself (x.sum(axis=0), x chunked by rows and
    # columns) is the tree's output, chunked along the axes it keeps
    direct = {i: cross_at[t] for i, (t, c) in enumerate(zip(proof.results, chunked))
              if c and t in cross_at}
    results = [i for i, c in enumerate(chunked) if not c]
    module, inputs = emit.module(f"{name}_final", [(proof.results[i], False)
                                                   for i in results])
    final = Stage(inputs, [], results, {"full": module})
    return Plan(stages, crosses, combines, final, chunked, direct)


def _levels(proof):
    levels = {}
    for t in proof.order:
        below = max((levels[c] for c in zip(*(x.operands for x in t))), default=0)
        levels[t] = below + (1 if t in proof.crosses else 0)
    return levels


def _check_cross(proof, t, hint):
    b = t[0]
    if b.op not in O.REDUCE and b.op not in O.ARG_REDUCE and b.op is not Op.DOT_GENERAL:
        raise _refusal(b, "reduces along the chunked axis in a way with no tree form", hint)


def _refusal(b, why, hint, groups=None):
    from jitlib.buckets.safety import _user_loc
    error = ChunkCouplingError(f"cannot split into blocks: {b.op.value} {why}",
                               location=_user_loc(b), hint=hint)
    error.groups = groups   # the chunked axes to rechunk under "auto" (None: all)
    return error


def _combine(b, name):
    """Two partials of reduction `b` -> their combination."""
    a = build.parameter(0, b.shape, b.dtype, "partial_a")
    c = build.parameter(1, b.shape, b.dtype, "partial_b")
    step = Op.ADD if b.op is Op.DOT_GENERAL else O.REDUCE_COMBINER[b.op]
    return Module(name, [a, c], [build.binary(step, a, c, loc=b.loc)])


def _combine_arg(b, name):
    """Two (value, index) partials of argmax/argmin `b` -> the winner; on a tie the first
    (earlier blocks come first), and a NaN wins as NumPy's first NaN does."""
    x = b.operands[0]
    va, ia, vb, ib = (build.parameter(i, shape, dtype, label) for i, (shape, dtype, label)
                      in enumerate([(b.shape, x.dtype, "value_a"), (b.shape, b.dtype, "index_a"),
                                    (b.shape, x.dtype, "value_b"), (b.shape, b.dtype, "index_b")]))
    loc = b.loc
    take_b = build.compare(vb, va, "GT" if b.op is Op.ARGMAX else "LT", loc=loc)
    if dtypes.is_float(x.dtype):
        nan_b = build.compare(vb, vb, "NE", loc=loc)
        not_nan_a = build.compare(va, va, "EQ", loc=loc)
        take_b = build.binary(Op.OR, take_b, build.binary(Op.AND, nan_b, not_nan_a, loc=loc),
                              loc=loc)
        take_b = build.binary(Op.AND, take_b, not_nan_a, loc=loc)
    return Module(name, [va, ia, vb, ib], [build.select(take_b, vb, va, loc=loc),
                                           build.select(take_b, ib, ia, loc=loc)])


def _reduced_axes(b, operand):
    if b.op is Op.DOT_GENERAL:
        return b.attrs["lhs_contract" if operand == 0 else "rhs_contract"]
    return (b.attrs["axis"],) if b.op in O.ARG_REDUCE else b.attrs["dims"]


def _identity(b):
    """What padding must read as in reduction `b`: its identity (a dot's is 0)."""
    from jitlib.buckets.safety import _REDUCE_IDENTITY
    if b.op is Op.DOT_GENERAL:
        return 0
    return _REDUCE_IDENTITY[b.op](b.operands[0].dtype)


class _Emitter:
    """Rebuilds the instructions one stage needs from one trace of the proof."""

    def __init__(self, proof, cross_at, totals, name):
        self.proof, self.cross_at, self.totals, self.name = proof, cross_at, totals, name
        self.leaf_at = {t: j for j, t in enumerate(proof.params)}

    def module(self, name, roots, masked=False):
        """(Module, [Source per parameter]) computing `roots` ((tuple, as partial)) on
        blocks of the longest block's shape; `masked`: blocks padded to it, with each
        chunked axis's true length a parameter after the others."""
        k = 0
        root_set = {t for t, partial in roots if partial}
        inputs = self._inputs(roots, root_set)
        new = {}
        params = []
        for i, t in enumerate(inputs):
            b = t[k]
            p = build.make(Op.PARAMETER, (), dict(b.attrs, index=i), loc=b.loc) \
                if b.op is Op.PARAMETER else build.parameter(i, b.shape, b.dtype, f"r{i}")
            params.append(p)
            new[t] = p
        sources = [Source("leaf", self.leaf_at[t]) if t in self.leaf_at
                   else Source("cross", self.cross_at[t]) for t in inputs]
        starts = {}   # group -> the parameter of its block's start
        for t, partial in roots:
            if partial and t[0].op in O.ARG_REDUCE:
                (_, group), = self.proof.crosses[t][0]
                if group not in starts:
                    starts[group] = build.parameter(len(params), (), dtypes.INDEX,
                                                    f"start{group}")
                    params.append(starts[group])
                    sources.append(Source("start", group))
        self.lengths = None
        if masked:
            groups = len(self.totals)
            self.lengths = [build.parameter(len(params) + g, (), dtypes.INDEX, f"len{g}")
                            for g in range(groups)]
            params += self.lengths
            sources += [Source("length", g) for g in range(groups)]
        for t in self.proof.order:
            if t in new or not self._needed(t, new, root_set):
                continue
            new[t] = self._rebuild(t, k, new)
        results = []
        for t, partial in roots:
            if partial and t[0].op in O.ARG_REDUCE:
                results += self._arg_partial(t, k, new, starts)
            elif partial:
                results.append(self._partial(t, k, new))
            else:
                results.append(new[t])
        return Module(name, params, results), sources

    def _partial(self, t, k, new):
        """Reduction `t` on one block: as traced, its operands masked on padded blocks."""
        b = t[k]
        ops = [self._mask(c, new[c], _reduced_axes(b, i), _identity(b))
               for i, c in enumerate(zip(*(x.operands for x in t)))]
        return build.make(b.op, ops, dict(b.attrs), loc=b.loc)

    def _mask(self, c, value, axes, fill):
        """`value` with positions past each chunked axis's true length set to `fill`."""
        padded = self.proof.padded[c]
        if self.lengths is None:
            return value
        shape, loc = value.shape, c[0].loc
        for axis in sorted(set(axes) & set(padded)):
            index = build.iota(shape, dtypes.INDEX, axis, loc=loc)
            length = build.broadcast_in_dim(self.lengths[padded[axis]], shape, (), loc=loc)
            keep = build.compare(index, length, "LT", loc=loc)
            value = build.select(keep, value, build.full(fill, shape, value.dtype, loc=loc),
                                 loc=loc)
        return value

    def _arg_partial(self, t, k, new, starts):
        """(the block's max or min, its first position as an index into the array)."""
        b = t[k]
        (_, group), = self.proof.crosses[t][0]
        c = next(zip(*(i.operands for i in t)))
        x = self._mask(c, new[c], (b.attrs["axis"],), _identity(b))
        axis, loc = b.attrs["axis"], b.loc
        value = build.reduce(Op.REDUCE_MAX if b.op is Op.ARGMAX else Op.REDUCE_MIN, x,
                             (axis,), loc=loc)
        local = build.arg_reduce(b.op, x, axis, b.dtype, loc=loc)
        start = build.broadcast_in_dim(build.convert(starts[group], b.dtype, loc=loc),
                                       local.shape, (), loc=loc)
        return [value, build.binary(Op.ADD, local, start, loc=loc)]

    def _inputs(self, roots, root_set):
        """The parameters and combined reductions the roots read, in program order."""
        found, stack, seen = set(), [t for t, _ in roots], set()
        while stack:
            t = stack.pop()
            if t in seen:
                continue
            seen.add(t)
            if t in self.leaf_at or (t in self.cross_at and t not in root_set):
                found.add(t)
                continue
            stack.extend(zip(*(x.operands for x in t)))
        return [t for t in self.proof.order if t in found]

    def _needed(self, t, new, root_set):
        # everything reachable was found by _inputs; a value is built once its
        # operands are, in program order
        operands = list(zip(*(x.operands for x in t)))
        if t in self.cross_at and t not in root_set:
            return False
        return all(c in new for c in operands) and (operands or t[0].op is not Op.PARAMETER)

    def _rebuild(self, t, k, new):
        b = t[k]
        affine = self.proof.affine.get(t)
        if affine is not None:
            n = self.totals[affine.group]
            value = (int(affine.slope) * n + int(affine.offset) if affine.integral
                     else affine.slope * n + affine.offset)
            return build.constant(np.array(value).astype(b.dtype), loc=b.loc)
        operands = [new[c] for c in zip(*(x.operands for x in t))]
        if all(n is o for n, o in zip(operands, b.operands)):
            return b
        return build.make(b.op, operands, dict(b.attrs), loc=b.loc)
