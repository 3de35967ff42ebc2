"""Trace a call's function on the blocks of its Dask arguments, prove it, plan it.

Chunked axes with the same chunks, in different arguments, are one chunked axis (a
*group*); the function is traced at the longest block of each group, once more per group
at another length (the probe), and at each other combination of block lengths the
arrays have; proof.py walks the traces, stages.py cuts the program. A plan is kept per
function, keyed by the chunks, dtypes and the other arguments' signature, so a second
call with the same chunking traces nothing.
"""
import itertools
from typing import NamedTuple

import numpy as np

from jitlib import config, errors, logs, tree
from jitlib.buckets import safety
from jitlib.dask import stages
from jitlib.dask.proof import ChunkCouplingError, prove, rechunk_hint
from jitlib.trace import host_random


class _Call(NamedTuple):
    key: object
    out_tree: object
    plan: object
    proof: object
    arrays: dict        # flat leaf index -> Dask array
    values: dict        # flat leaf index -> NumPy value of the other leaves
    group_of: dict
    group_chunks: list
    lengths: list       # the traces' block lengths per group
    described: list
    effects: object     # the first trace's writeback.Effects: globals it read (guards)
    chunks: dict        # flat leaf index -> the chunks planned for (rechunked: "auto")


def planned(jitted, args, kwargs, is_dask):
    """The call's plan: from the function's plan cache when a call with the same chunks,
    dtypes and other arguments' signature traced already (and the globals it read are
    unchanged), else traced and proven here."""
    bound = jitted._bind(args, kwargs)
    names = [n for n, v in bound.arguments.items()
             if n not in jitted._static and not isinstance(v, host_random.GENERATOR_TYPES)]
    flat, in_tree = tree.flatten(tuple(bound.arguments[n] for n in names))
    arrays = {j: _no_single_rows(x) for j, x in enumerate(flat) if is_dask(x)}
    cache = jitted.__dict__.setdefault("_dask_plans", {})
    key = _plan_key(jitted, bound, names, in_tree, flat, arrays)
    found = cache.get(key)
    if found is None or (found.effects is not None and found.effects.broken_guard()):
        found = cache[key] = _rechunked_plan(jitted, bound, names, arrays)
        while len(cache) > PLANS_KEPT:
            cache.pop(next(iter(cache)))
    arrays = {j: x if x.chunks == found.chunks[j] else x.rechunk(found.chunks[j])
              for j, x in arrays.items()}
    values = {j: np.asarray(x, dtype=found.key.leaves[j][1]) for j, x in enumerate(flat)
              if j not in arrays}
    return found._replace(arrays=arrays, values=values)


# plans kept per jitted function (distinct chunkings and argument signatures)
PLANS_KEPT = 16


def _plan_key(jitted, bound, names, in_tree, flat, arrays):
    """What a plan depends on: the chunks and dtype of each Dask leaf, the signature of
    the others (Python scalars by value: a trace may read an int's value), the static
    arguments and the backend."""
    from jitlib.trace.context import abstract_leaf
    leaves = []
    for j, x in enumerate(flat):
        if j in arrays:
            leaves.append(("dask", arrays[j].chunks, arrays[j].dtype.str))
        elif isinstance(x, (bool, int, float, complex)):
            leaves.append((type(x).__name__, x))
        else:
            shape, dtype, weak = abstract_leaf(x, "")
            leaves.append((shape, dtype.str, weak is None))
    static = tuple((n, v) for n, v in bound.arguments.items() if n not in names)
    return (tuple(names), in_tree, tuple(leaves), static,
            jitted.backend or config.default_backend(), jitted._int_values)


def _rechunked_plan(jitted, bound, names, arrays):
    """The plan; with the setting dask_rechunk = "auto", an axis an op couples is
    rechunked to one chunk (in every argument chunked alike) until none is."""
    while True:
        try:
            return _plan(jitted, bound, names, arrays)
        except ChunkCouplingError as e:
            if config.get("dask_rechunk") != "auto":
                raise
            group_of, _ = _groups(arrays)
            groups = getattr(e, "groups", None) or set(group_of.values())
            if not groups:
                raise
            whole = {}
            for (j, axis), g in group_of.items():
                if g in groups:
                    whole.setdefault(j, {})[axis] = -1
            logs.log("compiles", "%s: rechunking %s to one chunk: %s", jitted.__name__,
                     ", ".join(f"leaf {j} axis {list(a)}" for j, a in whole.items()),
                     e.message.splitlines()[0])
            arrays = dict(arrays)
            for j, axes in whole.items():
                arrays[j] = arrays[j].rechunk(axes)


def _plan(jitted, bound, names, arrays):
    group_of, group_chunks = _groups(arrays)
    lengths = _trace_lengths(group_chunks)
    traced = [_trace(jitted, bound, names, arrays, group_of, n, i > 0)
              for i, n in enumerate(lengths)]
    (key, out_tree), modules = traced[0][0], [m for _, m in traced]
    described = _describe_groups(names, bound, arrays, group_of, len(group_chunks))
    proof = prove([safety.Traced(m, n) for m, n in zip(modules, lengths)], described)
    ragged = any(len(set(c)) > 1 for c in group_chunks)
    totals = [sum(c) for c in group_chunks]
    plan = stages.plan(proof, ragged, totals, jitted.__name__, rechunk_hint(described))
    return _Call(key, out_tree, plan, proof, None, None, group_of, group_chunks,
                 lengths, described, modules[0].effects,
                 {j: x.chunks for j, x in arrays.items()})


def _describe_groups(names, bound, arrays, group_of, n_groups):
    """Per group, the first argument axis in it: "argument 'x' axis 0 (chunks 3)"."""
    where = {}
    j0 = 0
    for name in names:
        n = len(tree.flatten(bound.arguments[name])[0])
        for (j, axis), g in sorted(group_of.items()):
            if j0 <= j < j0 + n and g not in where:
                label = name if n == 1 else f"{name}[{j - j0}]"
                where[g] = f"argument {label!r} axis {axis} (chunks of " \
                           f"{arrays[j].chunks[axis][0]})"
        j0 += n
    return [where[g] for g in range(n_groups)]


def _no_single_rows(x):
    """`x`, with each block of length 1 along a chunked axis merged into its neighbour:
    NumPy broadcasts a length-1 axis, so a trace there may not line up with the rest."""
    chunks = tuple(_merge_ones(c) for c in x.chunks)
    return x if chunks == x.chunks else x.rechunk(chunks)


def _merge_ones(chunks):
    if len(chunks) < 2 or 1 not in chunks:
        return chunks
    out = []
    for n in chunks:
        if n == 1 and out:
            out[-1] += 1
        elif out and out[-1] == 1:
            out[-1] += n
        else:
            out.append(n)
    return tuple(out)


def _groups(arrays):
    """Each chunked axis's group: axes with the same chunks share one (x and y chunked
    alike line up), except two axes of one array (a square matrix's rows and columns).
    Returns ({(leaf, axis): group}, [chunks per group])."""
    group_of, by_key, group_chunks = {}, {}, []
    for j, x in arrays.items():
        seen = {}
        for axis, chunks in enumerate(x.chunks):
            if len(chunks) < 2:
                continue
            nth = seen.get(chunks, 0)
            seen[chunks] = nth + 1
            g = by_key.setdefault((chunks, nth), len(group_chunks))
            if g == len(group_chunks):
                group_chunks.append(chunks)
            group_of[(j, axis)] = g
    return group_of, group_chunks


def _trace_lengths(group_chunks):
    """Lengths per group to trace at: the longest block's, one probe per group (another
    block length where there is one), then every other combination the blocks have
    (each is checked against the proof, though the edges run the padded program)."""
    main = tuple(max(c) for c in group_chunks)   # the shape edge blocks pad up to
    out = [main]
    for g, chunks in enumerate(group_chunks):
        others = [n for n in sorted(set(chunks)) if n != main[g] and n >= 2]
        n = main[g]
        probe = others[0] if others else (n - 1 if n - 1 >= 2 else n + 1)
        out.append(main[:g] + (probe,) + main[g + 1:])
    for combo in itertools.product(*[sorted(set(c)) for c in group_chunks]):
        if combo not in out:
            out.append(combo)
    return list(dict.fromkeys(out))


def _trace(jitted, bound, names, arrays, group_of, lengths, probe):
    """((key, out tree), Module) of the function with each Dask leaf a block of `lengths`."""
    from jitlib.buckets.runtime import _Bound
    j0, replace = 0, {}
    for name in names:
        leaves, td = tree.flatten(bound.arguments[name])
        for i, x in enumerate(leaves):
            if j0 + i in arrays:
                shape = [lengths[group_of[(j0 + i, a)]] if (j0 + i, a) in group_of else n
                         for a, n in enumerate(x.shape)]
                leaves[i] = np.empty(shape, x.dtype)
        replace[name] = tree.unflatten(td, leaves)
        j0 += len(leaves)
    block = _Bound(bound, replace)
    key, dynamic, _ = jitted._key(block)
    try:
        module, out_tree = jitted._trace(block, dynamic, key, check=not probe)
    except errors.JitlibError as e:
        if probe:
            what = f"but not with a chunked axis at another length {lengths}"
        elif isinstance(e, errors.ShapeError):
            what = f"(lengths {lengths} along the chunked axes)"
        else:
            raise
        raise ChunkCouplingError(
            f"{jitted.__name__} does not trace on the blocks of its Dask arguments "
            f"{what}: {e.message}", location=e.location,
            hint="a NumPy argument reaches every block whole: an array whose axis lines up "
                 "with a chunked one must be a Dask array chunked alike along it "
                 "(dask.array.unify_chunks), or rechunk that axis to one chunk") from e
    effects = module.effects
    if module.writes or (effects is not None and effects.steps):
        raise errors.UnsupportedError(
            f"{jitted.__name__} writes into its arguments or reads global arrays or "
            "np.random at call time, which jitlib does not run on Dask blocks",
            hint="return new arrays and pass globals and random numbers as arguments")
    return (key, out_tree), module
