"""A jitted call with Dask arrays among its arguments: trace on blocks, build the graph.

The function is traced once per distinct block shape (at most two lengths per chunked
axis: the chunk size and the ragged edge), plus one probe per chunked axis; proof.py
finds what is blockwise, stages.py cuts the program into stages, and here each stage
becomes one `blockwise` layer, each reduction a tree of combine tasks, and the
results that carry no chunked axis one finalize task. Every task runs a compiled
jitlib program (programs.py); the graph holds no Python of the user's.
"""
import itertools
from typing import NamedTuple

import numpy as np

from jitlib import config, errors, logs, tree
from jitlib.buckets import safety
from jitlib.dask import programs, stages
from jitlib.dask.proof import ChunkCouplingError, prove, rechunk_hint
from jitlib.hlo import ops as O
from jitlib.trace import host_random

# how many partials one combine task folds
SPLIT_EVERY = 8


def call(jitted, args, kwargs, is_dask):
    """`jitted(*args, **kwargs)` where some leaves are Dask arrays: Dask results."""
    c = _planned(jitted, args, kwargs, is_dask)
    builder = _Builder(c.plan, c.key.backend, c.arrays, c.values, c.group_of,
                       c.group_chunks, c.lengths[0], c.proof)
    builder.jitted_programs = jitted.__dict__.setdefault("_dask_programs", set())
    return tree.unflatten(c.out_tree, builder.results())


def explain(jitted, args, kwargs, is_dask):
    """The stages of the call as text: per stage its program at the longest block's shape,
    each combine, and the finalize."""
    from jitlib.hlo.printer import print_module
    c = _planned(jitted, args, kwargs, is_dask)
    chunked = ", ".join(c.described) or "none"
    lines = [f"# {jitted.__name__}: chunked axes {chunked}; "
             f"{len(c.plan.stages)} blockwise stage(s), {len(c.plan.crosses)} tree "
             f"reduction(s), finalize: {'yes' if c.plan.final.results else 'no'}"]
    for s, stage in enumerate(c.plan.stages):
        edge = " (and a masked one for the ragged edges)" if "masked" in stage.modules \
            else ""
        lines.append(f"# stage {s}: per block, one program{edge}")
        lines.append(print_module(stage.modules["full"], short_locs=True))
    for combine in c.plan.combines:
        lines.append(print_module(combine, short_locs=True))
    if c.plan.final.results:
        lines.append(print_module(c.plan.final.modules["full"], short_locs=True))
    return "\n".join(lines)


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


def _planned(jitted, args, kwargs, is_dask):
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


class _Builder:
    """The Dask collections of one call's results, stage by stage."""

    def __init__(self, plan, backend, arrays, values, group_of, group_chunks, main, proof):
        import dask.base
        self.plan, self.arrays, self.values = plan, arrays, values
        self.group_of, self.group_chunks = group_of, group_chunks
        self.main, self.proof = main, proof
        modules = [m for s in plan.stages for m in s.modules.values()] + \
            list(plan.combines) + [plan.final.modules["full"]]
        # the programs, the Dask inputs and the other arguments' values name the layers
        self.token = dask.base.tokenize(
            [programs.Program(m, backend).digest for m in modules],
            [a.name for a in arrays.values()], [(j, values[j]) for j in sorted(values)])
        self.backend = backend
        self.name = plan.final.modules["full"].name.rsplit("_", 1)[0]   # the function's
        self.crossed = [None] * len(plan.crosses)   # combined reductions, one chunk each
        self.out = [None] * len(proof.results)

    def results(self):
        for s, stage in enumerate(self.plan.stages):
            self._stage(s, stage)
        for i, c in self.plan.direct.items():
            self.out[i] = self.crossed[c]
        if self.plan.final.results:
            self._final()
        return self.out

    def _compile(self, program):
        program.executable()
        self.jitted_programs.add(program.digest)

    # -- blockwise stages

    def _index(self, source):
        if source.kind == "cross":   # chunked along the axes the reduction keeps
            kept = self.proof.padded[self.plan.crosses[source.index]]
            return tuple(f"g{kept[a]}" if a in kept else f"c{source.index}_{a}"
                         for a in range(len(self._cross_shape(source))))
        j = source.index
        x = self.arrays[j]
        return tuple(f"g{self.group_of[(j, a)]}" if (j, a) in self.group_of else f"l{j}_{a}"
                     for a in range(x.ndim))

    def _cross_shape(self, source):
        return self.plan.crosses[source.index][0].shape

    def _stage(self, s, stage):
        """Stage `s` as one blockwise layer; its chunked results, and a tree per
        reduction it starts."""
        import dask.array as da
        pairs, letters, task = self._stage_task(stage)
        results = [self.proof.results[i] for i in stage.results]
        name = f"{self.name}-stage{s}-{self.token}"
        if not stage.partials and len(results) == 1:
            out_ind, new_axes = self._result_index(results[0])
            if set(letters) <= set(out_ind):   # one layer: the blocks are the result
                task.single = True
                self.out[stage.results[0]] = da.blockwise(
                    task, out_ind, *pairs, new_axes=new_axes, concatenate=True,
                    name=name, meta=np.empty((0,) * len(out_ind), results[0][0].dtype))
                return
        blocks = da.blockwise(task, letters, *pairs, concatenate=True, name=name,
                              meta=np.empty((0,) * len(letters), object))
        slots = [2 if self._is_arg(c) else 1 for c in stage.partials]
        for pos, i in enumerate(stage.results, sum(slots)):
            out_ind, new_axes = self._result_index(self.proof.results[i])
            self.out[i] = da.blockwise(
                _Pick(pos), out_ind, blocks, letters, new_axes=new_axes,
                name=f"{name}-out{i}",
                meta=np.empty((0,) * len(out_ind), self.proof.results[i][0].dtype))
        for c, pos in zip(stage.partials, itertools.accumulate([0] + slots)):
            self._reduce(c, blocks, letters, pos, name)

    def _stage_task(self, stage):
        """(blockwise's (argument, index) pairs flattened, the stage's block index,
        the task running the stage's programs), the programs compiled here."""
        import dask.array as da
        pairs, locator, letters = [], {}, set()
        starts, lengths, pads = [], [], {}
        for p, src in enumerate(stage.inputs):
            if src.kind == "leaf" and src.index not in self.arrays:
                pairs += [self.values[src.index], None]
            elif src.kind == "length":   # the task passes the block's true length
                pairs += [0, None]
                lengths.append((p, src.index))
            elif src.kind == "start":   # each block's first position along the axis
                chunks = self.group_chunks[src.index]
                pairs += [da.arange(sum(chunks), chunks=(chunks,)), (f"g{src.index}",)]
                starts.append(p)
            else:
                index = self._index(src)
                pairs += [self.crossed[src.index] if src.kind == "cross"
                          else self.arrays[src.index], index]
                for a, letter in enumerate(index):
                    if letter.startswith("g"):
                        locator.setdefault(int(letter[1:]), (p, a))
                        letters.add(letter)
                        pads.setdefault(p, []).append((a, int(letter[1:])))
        results = [self.proof.results[i] for i in stage.results]
        out_axes = [()] * sum(2 if self._is_arg(c) else 1 for c in stage.partials) + \
            [tuple(sorted(self.proof.padded[t].items())) for t in results]
        task = _StageTask({k: programs.Program(m, self.backend)
                           for k, m in stage.modules.items()},
                          sorted(locator.items()), self.main, starts,
                          _Ragged(pads, lengths, out_axes))
        for program in task.programs.values():
            self._compile(program)   # on the client: errors surface here
        return pairs, tuple(sorted(letters, key=lambda name: int(name[1:]))), task

    def _reduce(self, c, blocks, letters, pos, name):
        """Reduction `c`: one tree per block of the chunked axes it keeps, over the blocks
        along the axes it reduces (the first block along the stage's other axes, whose
        blocks repeat the same partial); the trees' results, cut to each block's true
        lengths, are the reduced array's blocks."""
        import dask.array as da
        t = self.plan.crosses[c]
        reduced = {f"g{g}" for axes in self.proof.crosses[t] for _, g in axes}
        kept = self.proof.padded[t]   # axis -> group
        grid = blocks.to_delayed()
        trees = {}
        for where in itertools.product(*[range(len(self.group_chunks[g]))
                                         for g in kept.values()]):
            at = dict(zip((f"g{g}" for g in kept.values()), where))
            index = tuple(at[letter] if letter in at else
                          slice(None) if letter in reduced else 0 for letter in letters)
            trees[where] = self._tree(c, grid[index].ravel(), pos,
                                      "-".join([name, *map(str, where)]))
        b = t[0]
        if not kept:
            self.crossed[c] = da.from_delayed(trees[()], b.shape, dtype=b.dtype,
                                              name=f"{name}-reduced{c}")
        else:
            self.crossed[c] = da.block(self._grid(trees, kept, b, f"{name}-reduced{c}"))

    def _grid(self, trees, kept, b, name):
        """The reduced blocks as nested lists in axis order, for da.block."""
        import dask
        import dask.array as da
        axes, order = sorted(kept), list(kept)   # trees are keyed in kept's own order

        def block(where):
            true = {a: self.group_chunks[kept[a]][where[order.index(a)]] for a in axes}
            shape = tuple(true.get(a, n) for a, n in enumerate(b.shape))
            cut = dask.delayed(_Cut(shape), pure=True)(trees[where])
            return da.from_delayed(cut, shape, dtype=b.dtype,
                                   name="-".join([name, *map(str, where)]))

        def nest(prefix):
            if len(prefix) == len(axes):
                return block(tuple(prefix[axes.index(a)] for a in order))
            return [nest(prefix + [i]) for i in range(len(self.group_chunks[kept[axes[len(prefix)]]]))]
        return nest([])

    def _is_arg(self, c):
        return self.plan.crosses[c][0].op in O.ARG_REDUCE

    def _result_index(self, t):
        padded = self.proof.padded[t]
        out_ind, new_axes = [], {}
        for a, n in enumerate(t[0].shape):
            if a in padded:
                out_ind.append(f"g{padded[a]}")
            else:
                out_ind.append(f"n{a}")
                new_axes[f"n{a}"] = n
        return tuple(out_ind), new_axes

    # -- reductions: a tree of combine tasks

    def _tree(self, c, blocks, pos, name):
        """The Delayed reduction of `blocks`' partials of reduction `c` (its index, for
        an arg-reduction), folded by the combine program SPLIT_EVERY at a time."""
        import dask
        fold = _Fold(programs.Program(self.plan.combines[c], self.backend))
        self._compile(fold.program)
        arg = self._is_arg(c)
        pick = _Slots(pos, 2 if arg else 1)
        parts = [dask.delayed(pick, pure=True)(b) for b in blocks]
        level = 0
        while len(parts) > 1:
            parts = [dask.delayed(fold, pure=True)(
                parts[i:i + SPLIT_EVERY], dask_key_name=f"{name}-combine{c}-{level}-{i}")
                for i in range(0, len(parts), SPLIT_EVERY)]
            level += 1
        return parts[0][1 if arg else 0]

    # -- the results without a chunked axis

    def _final(self):
        import dask
        import dask.array as da
        final = self.plan.final
        program = programs.Program(final.modules["full"], self.backend)
        self._compile(program)
        args = [self.crossed[s.index] if s.kind == "cross" else
                self.arrays.get(s.index, self.values.get(s.index)) for s in final.inputs]
        name = f"{final.modules['full'].name}-{self.token}"
        done = dask.delayed(_Final(program), pure=True)(*args, dask_key_name=name)
        for pos, i in enumerate(final.results):
            b = self.proof.results[i][0]
            self.out[i] = da.from_delayed(done[pos], b.shape, dtype=b.dtype,
                                          name=f"{name}-out{i}")


class _StageTask:
    """One block of a stage: the stage's program, or for a ragged edge its masked
    program on the block padded to the longest block's shape, sliced back."""

    def __init__(self, programs, locator, main, starts, ragged):
        self.programs, self.locator, self.main = programs, locator, main
        self.starts = starts   # argument positions of blocks of positions: pass the first
        self.ragged = ragged
        self.single = False
        self.dtypes = {k: [p.dtype for p in program.module.params]
                       for k, program in programs.items()}

    def __call__(self, *args):
        lengths = list(self.main)
        for g, (p, a) in self.locator:
            lengths[g] = args[p].shape[a]
        args = [x[0] if p in self.starts else x for p, x in enumerate(args)]
        which = "full" if tuple(lengths) == tuple(self.main) else "masked"
        if which == "masked":
            args = self.ragged.pad(args, lengths, self.main)
        dtypes = self.dtypes[which]
        outs = self.programs[which](*[np.asarray(x, dtype=dt)
                                      for x, dt in zip(args, dtypes)])
        if which == "masked":
            outs = self.ragged.cut(outs, lengths)
        return outs[0] if self.single else tuple(outs)


class _Ragged:
    """How an edge block is padded to the longest block's shape, and its results cut."""

    def __init__(self, pads, lengths, out_axes):
        self.pads = pads           # argument position -> ((axis, group), ...)
        self.lengths = lengths     # (argument position, group) of each length parameter
        self.out_axes = out_axes   # per output: ((axis, group), ...) to cut back

    def pad(self, args, lengths, main):
        args = list(args)
        for p, axes in self.pads.items():
            block = np.asarray(args[p])
            shape = list(block.shape)
            for a, g in axes:
                shape[a] = main[g]
            if tuple(shape) != block.shape:
                padded = np.zeros(shape, block.dtype)
                padded[tuple(slice(0, n) for n in block.shape)] = block
                args[p] = padded
        for p, g in self.lengths:
            args[p] = np.int64(lengths[g])
        return args

    def cut(self, outs, lengths):
        outs = list(outs)
        for i, axes in enumerate(self.out_axes):
            if axes:
                index = [slice(None)] * outs[i].ndim
                for a, g in axes:
                    index[a] = slice(0, lengths[g])
                outs[i] = outs[i][tuple(index)]
        return outs


class _Pick:
    """Result `pos` of a stage's block (nested lists: a group the result lacks)."""

    def __init__(self, pos):
        self.pos = pos

    def __call__(self, block):
        while isinstance(block, list):
            block = block[0]
        return block[self.pos]


class _Cut:
    """A reduced block computed at the longest block's shape, cut to its own."""

    def __init__(self, shape):
        self.shape = shape

    def __call__(self, value):
        return value[tuple(slice(0, n) for n in self.shape)]


class _Slots:
    """A block's partial: `n` values of its stage's tuple from `pos`, as a tuple."""

    def __init__(self, pos, n):
        self.pos, self.n = pos, n

    def __call__(self, block):
        return tuple(block[self.pos:self.pos + self.n])


class _Fold:
    """Partials (tuples: one value, or value and index) folded by a combine program,
    left to right (the blocks' order, which an arg-reduction's ties depend on)."""

    def __init__(self, program):
        self.program = program

    def __call__(self, parts):
        acc = parts[0]
        for part in parts[1:]:
            acc = tuple(self.program(*acc, *part))
        return acc


class _Final:
    def __init__(self, program):
        self.program = program

    def __call__(self, *args):
        dtypes = [p.dtype for p in self.program.module.params]
        return tuple(self.program(*[np.asarray(x, dtype=dt) for x, dt in zip(args, dtypes)]))
