"""A jitted call with Dask arrays among its arguments: trace on blocks, build the graph.

tracing.py traces and plans the call; here each stage becomes one `blockwise` layer
(its blocks run the stage's program, ragged edges the same program padded and masked),
each reduction a tree of combine tasks per block of the chunked axes it keeps, and the
results that carry no chunked axis one finalize task. Every task runs a compiled
jitlib program (programs.py) through a callable of tasks.py.
"""
import itertools

import numpy as np

from jitlib import tree
from jitlib.dask import programs
from jitlib.dask.tasks import Cut, Final, Fold, Pick, Ragged, Slots, StageTask
from jitlib.dask.tracing import planned
from jitlib.hlo import ops as O

# how many partials one combine task folds
SPLIT_EVERY = 8


def call(jitted, args, kwargs, is_dask):
    """`jitted(*args, **kwargs)` where some leaves are Dask arrays: Dask results."""
    c = planned(jitted, args, kwargs, is_dask)
    builder = _Builder(c.plan, c.key.backend, c.arrays, c.values, c.group_of,
                       c.group_chunks, c.lengths[0], c.proof)
    builder.jitted_programs = jitted.__dict__.setdefault("_dask_programs", set())
    return tree.unflatten(c.out_tree, builder.results())


def explain(jitted, args, kwargs, is_dask):
    """The stages of the call as text: per stage its program at the longest block's shape,
    each combine, and the finalize."""
    from jitlib.hlo.printer import print_module
    c = planned(jitted, args, kwargs, is_dask)
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
        # results are blocks of the arguments' kind: CuPy arrays for CuPy-backed arguments
        self.like = next(iter(arrays.values()))._meta

    def _meta(self, ndim, dtype):
        from dask.array.utils import meta_from_array
        return meta_from_array(self.like, ndim=ndim, dtype=dtype)

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
                    task, out_ind, *pairs, new_axes=new_axes, concatenate=False,
                    name=name, meta=self._meta(len(out_ind), results[0][0].dtype))
                return
        blocks = da.blockwise(task, letters, *pairs, concatenate=False, name=name,
                              meta=np.empty((0,) * len(letters), object))
        slots = [2 if self._is_arg(c) else 1 for c in stage.partials]
        for pos, i in enumerate(stage.results, sum(slots)):
            out_ind, new_axes = self._result_index(self.proof.results[i])
            self.out[i] = da.blockwise(
                Pick(pos), out_ind, blocks, letters, new_axes=new_axes,
                name=f"{name}-out{i}",
                meta=self._meta(len(out_ind), self.proof.results[i][0].dtype))
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
        task = StageTask({k: programs.Program(m, self.backend)
                           for k, m in stage.modules.items()},
                          sorted(locator.items()), self.main, starts,
                          Ragged(pads, lengths, out_axes))
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
                                              meta=self._meta(len(b.shape), b.dtype),
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
            cut = dask.delayed(Cut(shape), pure=True)(trees[where])
            return da.from_delayed(cut, shape, dtype=b.dtype,
                                   meta=self._meta(len(shape), b.dtype),
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
        fold = Fold(programs.Program(self.plan.combines[c], self.backend))
        self._compile(fold.program)
        arg = self._is_arg(c)
        pick = Slots(pos, 2 if arg else 1)
        parts = [dask.delayed(pick, pure=True)(b, dask_key_name=f"{name}-part{c}-{i}")
                 for i, b in enumerate(blocks)]
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
        done = dask.delayed(Final(program), pure=True)(*args, dask_key_name=name)
        for pos, i in enumerate(final.results):
            b = self.proof.results[i][0]
            self.out[i] = da.from_delayed(done[pos], b.shape, dtype=b.dtype,
                                          meta=self._meta(len(b.shape), b.dtype),
                                          name=f"{name}-out{i}")
