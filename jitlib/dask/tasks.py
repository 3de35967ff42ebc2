"""What each task of a jitted call's Dask graph runs: small picklable callables around
the stage programs (programs.py), so a graph shipped to workers holds plain data and
references to these classes, never the user's Python. Blocks may live on a GPU
(blocks.py): nothing here copies them.
"""
import numpy as np

from jitlib.dask import blocks


class StageTask:
    """One block of a stage: the stage's program, or for a ragged edge its masked
    program on the block padded to the longest block's shape, sliced back."""

    def __init__(self, programs, locator, main, starts, ragged):
        self.programs, self.locator, self.main = programs, locator, main
        self.starts = starts   # argument positions of blocks of positions: pass the first
        self.ragged = ragged
        self.single = False

    def __call__(self, *args):
        # an axis the stage does not keep has one chunk (every axis of two or more is a
        # group), so blockwise hands its block as a list of one: unwrapped, not joined
        # (blockwise's concatenate=True copies even a lone block)
        args = [_lone(x) for x in args]
        lengths = list(self.main)
        for g, (p, a) in self.locator:
            lengths[g] = args[p].shape[a]
        args = [x[0] if p in self.starts else x for p, x in enumerate(args)]
        which = "full" if tuple(lengths) == tuple(self.main) else "masked"
        if which == "masked":
            args = self.ragged.pad(args, lengths, self.main)
        outs = self.programs[which](*args)
        if which == "masked":
            outs = self.ragged.cut(outs, lengths)
        return outs[0] if self.single else tuple(outs)


def _lone(x):
    while isinstance(x, list):
        (x,) = x
    return x


class Ragged:
    """How an edge block is padded to the longest block's shape, and its results cut."""

    def __init__(self, pads, lengths, out_axes):
        self.pads = pads           # argument position -> ((axis, group), ...)
        self.lengths = lengths     # (argument position, group) of each length parameter
        self.out_axes = out_axes   # per output: ((axis, group), ...) to cut back

    def pad(self, args, lengths, main):
        args = list(args)
        for p, axes in self.pads.items():
            shape = list(args[p].shape)
            for a, g in axes:
                shape[a] = main[g]
            if tuple(shape) != tuple(args[p].shape):
                args[p] = blocks.pad_to(args[p], shape)
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


class Pick:
    """Result `pos` of a stage's block (nested lists: a group the result lacks)."""

    def __init__(self, pos):
        self.pos = pos

    def __call__(self, block):
        while isinstance(block, list):
            block = block[0]
        return block[self.pos]


class Cut:
    """A reduced block computed at the longest block's shape, cut to its own."""

    def __init__(self, shape):
        self.shape = shape

    def __call__(self, value):
        return value[tuple(slice(0, n) for n in self.shape)]


class Slots:
    """A block's partial: `n` values of its stage's tuple from `pos`, as a tuple."""

    def __init__(self, pos, n):
        self.pos, self.n = pos, n

    def __call__(self, block):
        return tuple(block[self.pos:self.pos + self.n])


class Fold:
    """Partials (tuples: one value, or value and index) folded by a combine program,
    left to right (the blocks' order, which an arg-reduction's ties depend on)."""

    def __init__(self, program):
        self.program = program

    def __call__(self, parts):
        acc = parts[0]
        for part in parts[1:]:
            acc = tuple(self.program(*acc, *part))
        return acc


class Final:
    def __init__(self, program):
        self.program = program

    def __call__(self, *args):
        return tuple(self.program(*args))
