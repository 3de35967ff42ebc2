"""Which values of a traced program are blockwise along the chunked axes.

The padding proof (buckets/safety.py) walks traces of one function taken at different
lengths side by side and finds, per value, the axes that carry each length. A chunked
axis of a Dask array is such a length: the function is traced at each distinct block
shape, plus one probe per chunked axis, and the same walk tells which values are
computed block by block. On top of the padding proof's rules:

- a reduction, arg-reduction or dot contraction over a chunked axis couples blocks
  through one associative step: it is recorded (`crosses`) and becomes a tree
  reduction (stages.py), never a mask;
- a constant affine in a block length (a mean's count) is recorded (`affine`) and
  replaced by its value at the whole array's length;
- ops that read positions along a chunked axis, or carry values along it (a scan, an
  iota, a constant array that grows with the block), are refused: each block would
  see only itself. So is all the padding proof refuses (a reverse, a slice, a sort).
"""
import re
from typing import NamedTuple

from jitlib.errors import ChunkCouplingError
from jitlib.buckets import safety
from jitlib.hlo import ops as O
from jitlib.hlo.ops import Op
from jitlib.hlo.printer import print_instr


class Affine(NamedTuple):
    group: int
    slope: float
    offset: float
    integral: bool


class BlockProof(NamedTuple):
    order: list        # aligned tuples, one instruction per trace, operands first
    params: list       # aligned tuples of the parameters
    results: list      # aligned tuples of the results
    padded: dict       # tuple -> {axis: group}
    crosses: dict      # tuple -> [((axis, group), ...) per operand reduced over a chunk]
    affine: dict       # tuple -> Affine


def prove(traces, group_names):
    """The BlockProof of `traces` (safety.Traced, the first at the main block shape),
    or ChunkCouplingError naming the op that couples blocks. `group_names` describe
    each chunked axis for messages ("argument 'x' axis 0")."""
    return _BlockProver(traces, group_names).prove()


def rechunk_hint(group_names):
    return (f"the chunked axes are {', '.join(group_names)}; rechunk so the coupled "
            f"axis is one chunk before the call (x.rechunk({{axis: -1}})), see docs/dask.md")


class _BlockProver(safety._Prover):
    def __init__(self, traces, group_names):
        super().__init__(traces, [f"chunks{g}" for g in range(len(group_names))])
        self.hint = rechunk_hint(group_names)
        self.crosses, self.affine = {}, {}
        self.current = None

    def prove(self):
        modules = [t.module for t in self.traces]
        params, results, order = safety._align(modules, self._refuse_mismatch)
        for t in order:
            self.current = t
            self.padded[t] = self._padded_axes(t)
            self.new[t] = self._rule(t)
        return BlockProof(order, params, results, self.padded, self.crosses, self.affine)

    def _rule(self, t):
        b = t[0]
        pads = [self.padded[c] for c in zip(*(x.operands for x in t))]
        if b.op in O.CUMULATIVE and b.attrs["axis"] in pads[0]:
            self._refuse(b, "accumulates along the chunked axis (each block would start "
                            "from the identity)")
        if b.op is Op.IOTA and b.attrs["dimension"] in self.padded[t]:
            self._refuse(b, "numbers positions along the chunked axis (each block would "
                            "start from 0)")
        groups = list(self.padded[t].values())
        if len(set(groups)) < len(groups):
            self._refuse(b, "puts one chunked axis on two axes (an outer product pairs "
                            "every block with every other)")
        if b.op is Op.CONSTANT and self.padded[t]:
            self._refuse(b, "is a constant array as long as the chunked axis")
        return super()._rule(t)

    # the padding proof's hooks: record instead of masking or recomputing

    def _mask(self, b, value, axes, fill):
        if axes:
            self.crosses.setdefault(self.current, []).append(tuple(axes))
        return value

    def _affine_instr(self, b, i, slope, offset, integral):
        self.affine[self.current] = Affine(i, slope, offset, integral)
        return b

    def _refuse(self, b, why):
        groups = self._coupled_groups(self.current)
        why = re.sub(r"\s*\((the )?padding[^)]*\)", "", why)
        why = why.replace("padded", "chunked").replace("bucketed length", "block length")
        error = ChunkCouplingError(
            f"cannot split into blocks: {b.op.value} {why}, so one block's result "
            f"depends on other blocks:\n  "
            f"{print_instr(b, self.names, short_locs=True).strip()}",
            location=safety._user_loc(b),
            hint=self.hint)
        error.groups = groups   # the chunked axes it couples: what "auto" rechunks
        raise error

    def _coupled_groups(self, t):
        """The chunked axes the refused op couples: those of its operand along the axis
        it names (a scan's, a reverse's...), else every chunked axis it touches."""
        b = t[0]
        operands = list(zip(*(x.operands for x in t)))
        pads = self.padded[operands[0]] if operands else self.padded.get(t, {})
        named = [b.attrs[k] for k in ("axis", "dimension", "dim", "dims") if k in b.attrs]
        axes = [a for v in named for a in (v if isinstance(v, tuple) else (v,))]
        groups = {pads[a] for a in axes if a in pads}
        if groups:
            return groups
        groups = set(self.padded.get(t, {}).values())
        for c in operands:
            groups |= set(self.padded[c].values())
        return groups

    def _refuse_mismatch(self, tup):
        b = tup[0]
        raise ChunkCouplingError(
            f"cannot split into blocks: the program's structure changes with the block "
            f"size ({b.op.value} {b.type_str} at one block shape differs at another)",
            location=safety._user_loc(b),
            hint="code that branches on an array's length cannot run block by block; "
                 + self.hint)
