"""Fusion: partition a module into kernels, each a FUSION instruction.

A kernel reads each input once and writes each output once. Kinds:

  loop       elementwise and movement ops over one iteration space (the outputs' shape);
             every op is computed inline, at the index its consumer needs.
  reduction  reductions over the same dims R of one shape S, with their elementwise
             producers and the consumers that reuse the reduced values: per kept index
             k, the backend computes each reduction (a loop over R) in order, then the
             S-shaped outputs (a loop over R) and the K-shaped ones. Row softmax,
             layernorm and logsumexp are one kernel each.
  dot        one dot_general, the movement ops (transpose, reshape, broadcast, slice)
             that lay out its operands, read as strided views, the widening float
             converts of its operands (read in their narrow type), and an elementwise
             epilogue on its output.
  opaque     an op no other kernel can hold (scatter, cumulative ops), run as is.

The algorithm is producer-into-consumer fusion, as in XLA: walking consumers before
producers, a producer joins its consumers' kernel when all of them are in one kernel
and `can_fuse` says yes; a cheap producer whose consumers sit in several kernels is
duplicated into each when the cost model (bytes moved) says that pays. Then sibling
kernels of the same space that read a common input merge into one multi-output kernel.
Every decision carries a reason (`FusionDecision`), logged with JITLIB_LOG=passes.
"""
import dataclasses
import heapq
import os

import numpy as np

from jitlib import logs
from jitlib.fusion import cost
from jitlib.hlo import build as B
from jitlib.hlo import dtypes
from jitlib.hlo import ops as O
from jitlib.hlo.ir import Module
from jitlib.hlo.ops import Op


# ops a loop kernel computes per output element from operand elements at mapped indices
ELEMENTAL = O.ELEMENTWISE | {
    Op.IOTA, Op.BROADCAST_IN_DIM, Op.RESHAPE, Op.TRANSPOSE, Op.SLICE, Op.PAD,
    Op.CONCATENATE, Op.REVERSE, Op.GATHER, Op.DYNAMIC_SLICE, Op.DYNAMIC_UPDATE_SLICE,
}
REDUCING = O.REDUCE | O.ARG_REDUCE
# movement that re-reads its operand at most once per output element: free to duplicate
CHEAP = frozenset({Op.IOTA, Op.BROADCAST_IN_DIM, Op.RESHAPE, Op.TRANSPOSE, Op.SLICE,
                   Op.REVERSE, Op.CONVERT})
# how a dot kernel may read an operand: a strided view, no arithmetic
OPERAND_VIEWS = frozenset({Op.BROADCAST_IN_DIM, Op.RESHAPE, Op.TRANSPOSE, Op.SLICE})


def is_widening_float_convert(instr):
    """A convert to a wider float (bf16/f16 -> f32, f32 -> f64): every value is exact in
    the wider type, so a dot kernel may read the narrow source as its operand (on the GPU:
    16-bit tiles on the tensor cores, accumulating in f32) instead of a widened copy."""
    if instr.op is not Op.CONVERT:
        return False
    src, dst = instr.operands[0].dtype, instr.dtype
    return (dtypes.is_float(src) and dtypes.is_float(dst)
            and np.dtype(dst).itemsize > np.dtype(src).itemsize)
# a kernel holds at most this many ops: past it, LLVM's compile time grows faster than the
# work saved by not writing one more intermediate (docs/performance.md), and registers
# run out
MAX_KERNEL_OPS = 512
# constants up to this many elements are baked into each kernel instead of passed in
INLINE_CONSTANT_LIMIT = 1
# names that say little about a kernel; left out of kernel names
_QUIET = frozenset({Op.BROADCAST_IN_DIM, Op.RESHAPE, Op.CONVERT, Op.CONSTANT, Op.IOTA})


@dataclasses.dataclass(frozen=True)
class FusionDecision:
    """Fusible, or the reason it is not (XLA's FusionDecision)."""
    ok: bool
    reason: str = ""

    @classmethod
    def no(cls, reason):
        return cls(False, reason)

    def __bool__(self):
        return self.ok


YES = FusionDecision(True)


def _reduced(instr):
    if instr.op in O.ARG_REDUCE:
        return (instr.attrs["axis"],)
    return tuple(instr.attrs["dims"])


def _squeeze(shape):
    return tuple(d for d in shape if d != 1)


class Group:
    """One kernel being formed."""

    _ids = 0

    def __init__(self, root):
        self.members = {root}
        self.prologue = set()     # a dot kernel's operand views
        self.id = Group._ids
        Group._ids += 1
        self.hero = root
        # (S, R, member count) when the members as they are passed `_check_reduction`
        # for reduction space (S, R); None when unknown (fuse's incremental check)
        self.reduction_checked = None
        if root.op in REDUCING:
            self.kind, self.space = "reduction", (root.operands[0].shape, _reduced(root))
        elif root.op is Op.DOT_GENERAL:
            self.kind, self.space = "dot", root.shape
        elif root.op in ELEMENTAL:
            self.kind, self.space = "loop", root.shape
        else:
            self.kind, self.space = "opaque", root.shape

    def __repr__(self):
        return f"<{self.kind} kernel {self.id}: {len(self.members)} ops>"


class _Fuser:
    def __init__(self, module):
        self.module = module
        self.order = [i for i in module.instructions if i.op not in (Op.PARAMETER, Op.CONSTANT)]
        self.position = {instr: n for n, instr in enumerate(module.instructions)}
        self.users = {i: [] for i in module.instructions}
        for instr in module.instructions:
            for operand in dict.fromkeys(instr.operands):
                self.users[operand].append(instr)
        self.results = set(module.results)
        self.groups_of = {}       # instr -> [Group]; several when duplicated
        # kernels the module already has (FUSION, GET_OUTPUT): kept as they are, in no group
        self.kept = []
        self.duplicated = set()   # computed inside each consumer kernel, never an output
        # (group, producer, S, R) of the last reduction check that passed, for `_join`
        self._reduction_passed = (None, None)
        self._spans = {}   # group -> (first, last, member count): `_span`
        self._kept_readers = {}   # value -> whether a kept op reads it: `_read_by_kept`
        self.decisions = []

    # -- deciding

    def run(self):
        for instr in reversed(self.order):
            self._place(instr)
        self._merge_siblings()

    def _place(self, instr):
        # fusions do not nest: an existing kernel stays one; loops and conditionals run
        # their regions' own kernels
        if instr.op in O.KERNEL or instr.op in O.CONTROL:
            self.groups_of[instr] = []
            self.kept.append(instr)
            return
        consumer_groups = []
        for user in self.users[instr]:
            for g in self.groups_of[user]:
                if g not in consumer_groups:
                    consumer_groups.append(g)
        if len(consumer_groups) == 1:
            decision = self.can_fuse(instr, consumer_groups[0])
            if decision and self._loops_back(instr, consumer_groups[0]):
                decision = FusionDecision.no("also feeds a loop, conditional or kernel "
                                             "whose result the consumer reads")
            self._note(instr, consumer_groups[0], decision)
            if decision:
                self._join(instr, consumer_groups[0])
                return
        elif len(consumer_groups) > 1:
            decision = self._should_duplicate(instr, consumer_groups)
            self._note(instr, None, decision)
            if decision:
                self.duplicated.add(instr)
                for g in consumer_groups:
                    self._join(instr, g)
                return
            host = self._output_host(instr, consumer_groups)
            if host is not None:
                self._join(instr, host)
                return
        self.groups_of[instr] = [Group(instr)]

    def _read_by_kept(self, instr):
        """Whether a loop, conditional or kept kernel reads `instr`; asked once per
        candidate host of a value with many readers, so kept (its readers are placed)."""
        found = self._kept_readers.get(instr)
        if found is None:
            found = self._kept_readers[instr] = any(
                not self.groups_of.get(u) for u in self.users[instr])
        return found

    def _loops_back(self, instr, group):
        """Whether a kept op reading `instr` (a loop, a conditional, a kernel, which
        belong to no group) leads back into `group`: `instr` joining it would make the
        kernel wait on itself."""
        for user in self.users[instr]:
            if self.groups_of.get(user):
                continue
            for g in self._reader_groups(user):
                if g is group or self._reaches(g, group):
                    return True
        return False

    def _output_host(self, instr, groups):
        """A consumer kernel that can compute `instr` and hand it to the others as an
        extra output (softmax's max, read again by a later kernel), if one exists."""
        for host in groups:
            others = [g for g in groups if g is not host]
            if any(self._reaches(g, host) for g in others):
                continue   # a kernel feeding the host cannot also read from it
            if not self._same_space_output(instr, host):
                continue   # a kernel's outputs live in its iteration space
            decision = self.can_fuse(instr, host)
            self._note(instr, host, FusionDecision(decision.ok, decision.reason
                                                   or "joins as an extra output"))
            if decision:
                return host
        return None

    def _join(self, instr, group):
        if group.kind == "dot" and all(u is group.hero or u in group.prologue
                                       for u in self.users[instr]):
            group.prologue.add(instr)
        new_kind, new_space = self._kind_after(instr, group)
        group.kind, group.space = new_kind, new_space
        if instr.op in REDUCING or instr.op is Op.DOT_GENERAL:
            group.hero = instr
        group.members.add(instr)
        self.groups_of.setdefault(instr, []).append(group)
        passed = self._reduction_passed
        group.reduction_checked = (passed[2:] + (len(group.members),)
                                   if passed[:2] == (group, instr) else None)
        self._reduction_passed = (None, None)

    def _kind_after(self, instr, group):
        if group.kind == "loop" and instr.op in REDUCING:
            return "reduction", (instr.operands[0].shape, _reduced(instr))
        if group.kind == "loop" and instr.op is Op.DOT_GENERAL:
            return "dot", instr.shape
        return group.kind, group.space

    def can_fuse(self, producer, group):
        """Whether `producer` may join `group`, whose members hold all its users."""
        op = producer.op
        if op not in ELEMENTAL and op not in REDUCING and op is not Op.DOT_GENERAL:
            return FusionDecision.no(f"{op} runs as its own kernel")
        if group.kind == "opaque":
            return FusionDecision.no(f"the consumer {group.hero.op} runs as its own kernel")
        if len(group.members) >= MAX_KERNEL_OPS:
            return FusionDecision.no(f"the kernel holds {MAX_KERNEL_OPS} ops already")
        if not self._same_space_output(producer, group):
            if producer in self.results:
                return FusionDecision.no("a module result of another shape than the "
                                         "kernel's")
            # a loop, conditional or kernel that reads it (these are in no group) reads
            # it from memory: an output, so of the kernel's shape too
            if self._read_by_kept(producer):
                return FusionDecision.no("read by a loop or kernel, of another shape than "
                                         "the kernel's")
        if group.kind == "dot":
            if op not in ELEMENTAL:
                return FusionDecision.no(f"a dot kernel holds one dot and its epilogue, not {op}")
            feeds_dot = [u is group.hero or u in group.prologue for u in self.users[producer]]
            if all(feeds_dot):
                if op not in OPERAND_VIEWS and not is_widening_float_convert(producer):
                    return FusionDecision.no(f"a dot reads its operands from memory; {op} "
                                             "is not a view it can read through")
                return YES
            if any(feeds_dot):
                return FusionDecision.no("feeds both the dot and its epilogue")
            return YES
        if group.kind == "loop":
            if op in ELEMENTAL:
                if op not in CHEAP and self._read_at_several_indices(producer):
                    # each distinct index recomputes it, and each of its own fused
                    # producers again: a stencil chain's work would grow exponentially
                    return FusionDecision.no("read at several indices: computed once "
                                             "instead of at each")
                return YES
            if op in REDUCING:
                space = (producer.operands[0].shape, _reduced(producer))
                return self._reduction_join(group, producer, *space)
            return self._check_epilogue(producer, group)
        # reduction kernel
        if op is Op.DOT_GENERAL:
            return FusionDecision.no("a reduction kernel cannot hold a dot")
        if op in REDUCING and (producer.operands[0].shape, _reduced(producer)) != group.space:
            return FusionDecision.no(
                f"reduces {_reduced(producer)} of {producer.operands[0].shape}, the kernel "
                f"reduces {group.space[1]} of {group.space[0]}")
        return self._reduction_join(group, producer, *group.space)

    def _reduction_join(self, group, producer, S, R):
        """`_check_reduction` of the group with `producer` added. Where the group as it
        is passed it for the same space, a producer that reduces nothing and reads
        nothing in the group leaves every member's level and output status as they
        were, so only the producer itself needs checking: a join costs O(its users),
        not O(kernel), on long chains."""
        members = group.members | {producer}
        if (producer.op not in REDUCING
                and group.reduction_checked == (S, R, len(group.members))
                and not any(o in group.members for o in producer.operands)):
            output = self._is_output(producer, members)
            if output and producer.shape != S:
                decision = FusionDecision.no(f"output {producer.type_str} is neither the "
                                             "kernel's shape nor a reduced value")
            elif output and dtypes.is_complex(producer.dtype):
                decision = FusionDecision.no(f"complex output {producer.type_str} beside "
                                             "a reduction")
            else:
                decision = YES
        else:
            decision = self._check_reduction(members, S, R)
        self._reduction_passed = (group, producer, S, tuple(R)) if decision else (None, None)
        return decision

    def _read_at_several_indices(self, producer):
        """Whether the users of `producer` read it at more than one index mapping (two
        slices at different offsets, a slice beside an elementwise use...)."""
        ways = set()
        for user in self.users[producer]:
            if user.op in O.ELEMENTWISE:
                ways.add(None)   # at the output's own index
            else:
                ways.add((user.op, tuple(sorted(
                    (k, v) for k, v in user.attrs.items() if k != "name")),
                    tuple(i for i, o in enumerate(user.operands) if o is producer)))
            if len(ways) > 1:
                return True
        return False

    def _same_space_output(self, producer, group):
        if group.kind == "reduction":
            S, R = group.space
            K = tuple(d for i, d in enumerate(S) if i not in R)
            return producer.shape == S or _squeeze(producer.shape) == _squeeze(K)
        return producer.shape == group.space

    def _check_epilogue(self, dot, group):
        """A loop kernel on a dot's output becomes that dot's epilogue."""
        for user in self.users[dot]:
            if user.op not in O.ELEMENTWISE or user.shape != dot.shape:
                return FusionDecision.no(f"{user.op} of the dot's output is not an "
                                         "elementwise epilogue")
        if any(m.op in REDUCING for m in group.members):
            return FusionDecision.no("the consumer kernel reduces")
        for out in self._outputs_of(group.members):
            if out.shape != dot.shape:
                return FusionDecision.no("an epilogue output differs from the dot's shape")
        return YES

    def _check_reduction(self, members, S, R):
        """Every reduction in `members` reduces R of S; values derived from reductions
        stay per kept index (K-level) until a broadcast takes them back to S."""
        K = tuple(d for i, d in enumerate(S) if i not in R)
        kept = [i for i in range(len(S)) if i not in R]
        if len({dtypes.is_complex(m.operands[0].dtype) for m in members if m.op in REDUCING}) > 1:
            # a complex sum compiles as a sum over (re, im) pairs: a trailing dim the real
            # reductions do not have
            return FusionDecision.no("complex and real reductions in one kernel")
        k_level = set()
        for m in sorted(members, key=self.position.get):
            if m.op in REDUCING:
                if (m.operands[0].shape, _reduced(m)) != (S, tuple(R)):
                    return FusionDecision.no(f"{m.op} reduces {_reduced(m)} of "
                                             f"{m.operands[0].shape}, not {R} of {S}")
                k_level.add(m)
                continue
            from_k = [o for o in m.operands if o in k_level]
            if not from_k:
                continue
            if any(dtypes.is_complex(o.dtype) for o in from_k):
                # compiled kernels store a complex sum's parts as they are: work on them
                # (a mean's division, abs) goes to a kernel of its own
                return FusionDecision.no(f"{m.op} of a complex reduced value")
            if m.op is Op.BROADCAST_IN_DIM:
                if m.shape != S or not _maps_kept_dims(m, kept):
                    return FusionDecision.no("a reduced value is broadcast other than back "
                                             "along the reduced dims")
            elif m.op in O.ELEMENTWISE or (m.op is Op.RESHAPE
                                          and _squeeze(m.shape) == _squeeze(K)):
                if _squeeze(m.shape) != _squeeze(K):
                    return FusionDecision.no(f"{m.op} mixes reduced values with others")
                k_level.add(m)
            else:
                return FusionDecision.no(f"{m.op} of a reduced value")
        for out in self._outputs_of(members):
            if out.shape != S and out not in k_level:
                return FusionDecision.no(f"output {out.type_str} is neither the kernel's "
                                         "shape nor a reduced value")
            if out.shape == S and out not in k_level and dtypes.is_complex(out.dtype):
                # a compiled reduction kernel writes no complex value of its full shape
                return FusionDecision.no(f"complex output {out.type_str} beside a reduction")
        return YES

    def _outputs_of(self, members):
        return [m for m in sorted(members, key=self.position.get)
                if self._is_output(m, members)]

    def _is_output(self, m, members):
        """Whether the kernel of `members` must write `m` (a result, or read elsewhere)."""
        return m not in self.duplicated and (
            m in self.results or any(self._reads_elsewhere(u, m, members)
                                     for u in self.users[m]))

    def _reads_elsewhere(self, user, value, members):
        if user not in members:
            return True
        # a duplicated user also runs in other kernels, which read `value` from memory
        return user in self.duplicated and any(value not in g.members
                                               for g in self.groups_of.get(user, ()))

    def _should_duplicate(self, instr, groups):
        if instr in self.results:
            return FusionDecision.no("a module result is computed once")
        if instr.op not in ELEMENTAL:
            return FusionDecision.no(f"{instr.op} is not elementwise; computed once")
        if any(not self.groups_of[u] for u in self.users[instr]):
            # a kept kernel or a loop reads it from memory, so some kernel must write it
            return FusionDecision.no("a loop, conditional or kept kernel reads it")
        self.duplicated.add(instr)   # as a copy it is no kernel's output
        try:
            for g in groups:
                decision = self.can_fuse(instr, g)
                if not decision:
                    return FusionDecision.no(f"cannot join every consumer: {decision.reason}")
        finally:
            self.duplicated.discard(instr)
        # materialised: written once, read by each consumer kernel;
        # duplicated: each consumer kernel reads the producer's operands instead
        materialised = cost.nbytes(instr) * (1 + len(groups))
        duplicated = len(groups) * sum(_read_bytes(o) for o in instr.operands)
        if instr.op not in CHEAP and instr.op not in (Op.ADD, Op.SUB, Op.MUL, Op.NEG, Op.MAX,
                                                      Op.MIN, Op.SELECT, Op.COMPARE):
            return FusionDecision.no(f"{instr.op} is too costly to compute twice")
        if duplicated >= materialised:
            return FusionDecision.no(f"duplicating reads {duplicated} bytes, "
                                     f"materialising moves {materialised}")
        return YES

    def _note(self, instr, group, decision):
        self.decisions.append((instr, group, decision))

    # -- multi-output: siblings that read one input

    def _merge_siblings(self):
        # a pair found not fusible stays so: merging only adds paths between kernels and
        # keeps each kernel's kind and space, so it is not tested again after each merge
        apart = set()
        settled = set()   # (value, its readers) whose every pair was found apart
        changed = True
        while changed:
            changed = False
            groups = self._groups()
            self._group_outputs = {}   # per group: its outputs, until the next merge
            readers = {}
            for g in groups:
                for value in self._inputs_of(g):
                    # kernels sharing a scalar (a step size, a learning rate) gain nothing
                    # from reading it once: only arrays make siblings
                    if value.size > 1:
                        readers.setdefault(value, []).append(g)
            reach = None   # kernel -> bitmask of the kernels it reaches, made on first use
            for value, gs in readers.items():
                key = (value, tuple(g.id for g in gs))
                if key in settled:   # unchanged since: no pair to test again
                    continue
                # only kernels of one kind and space can merge: pair within those, in the
                # order of the readers (the first fusible pair is the same as over all)
                alike, rank = {}, {}
                for g in gs:
                    if g.kind in ("loop", "reduction"):
                        same = alike.setdefault((g.kind, g.space, _complex_sums(g)), [])
                        rank[g] = len(same)
                        same.append(g)
                later = {}   # a -> bitmask of the kernels after it in its `alike` list
                for a in gs:
                    if a not in rank:
                        continue
                    same = alike[(a.kind, a.space, _complex_sums(a))]
                    if rank[a] + 1 == len(same):
                        continue
                    if reach is None:
                        reach = self._reach_masks(groups)
                        at = {bit: g for g, (bit, _, _) in reach.items()}
                    if a not in later:
                        after = 0
                        for g in reversed(same):
                            later[g] = after
                            after |= 1 << reach[g][0]
                    ra = reach[a]
                    # by bits: the kernels `a` reaches can only merge with it where `a`
                    # feeds them directly (an input read by every step of an unrolled
                    # loop: pairs of 1,200 readers cost 1.7 s one by one)
                    candidates = later[a] & (~ra[1] | ra[2])
                    while candidates:
                        low = candidates & -candidates
                        candidates ^= low
                        b = at[low.bit_length() - 1]
                        if (a, b) in apart:
                            continue
                        rb = reach[b]
                        if not (ra[1] >> rb[0] & 1 or rb[1] >> ra[0] & 1) \
                                or (ra[2] >> rb[0] & 1 or rb[2] >> ra[0] & 1) \
                                and self._feeds_directly(a, b, reach):
                            self._merge(a, b)
                            changed = True
                            break
                        apart.add((a, b))
                    if changed:
                        break
                if changed:
                    break
                settled.add(key)

    def _feeds_directly(self, a, b, reach):
        """Whether loop kernels `a` and `b` (siblings of one space) may merge although one
        reads the other: the reader reads its outputs elementwise, through no other
        kernel, loop or conditional, so the merged kernel computes them once, inline
        (XLA's producer-consumer multi-output fusion: Mandelbrot's `alive` mask, read by
        the count and by the masked update, no longer goes through memory)."""
        if a.kind != "loop" or len(a.members) + len(b.members) > MAX_KERNEL_OPS:
            return False
        producer, consumer = (a, b) if reach[a][1] >> reach[b][0] & 1 else (b, a)
        # by bits first: no other kernel the producer feeds leads to the consumer (the
        # caller saw the consumer read the producer)
        target = reach[consumer][0]
        others = reach[producer][2] & ~(1 << target)
        while others:
            low = others & -others
            if self._closure[low.bit_length() - 1] >> target & 1:
                return False
            others ^= low
        for out in self._group_outputs_of(producer):
            for user in self.users[out]:
                readers = self.groups_of.get(user)
                if not readers:        # a loop, conditional or kept kernel reads it
                    return False
                if consumer in readers and (user.op not in O.ELEMENTWISE
                                            or user.shape != out.shape):
                    return False
        return True

    def _reach_masks(self, groups):
        """{kernel: (its bit, bitmask of every kernel depending on it, bitmask of those
        reading its outputs)}, and `_closure` the second mask by bit: the transitive
        closure of `_reaches` for all of `groups` at once, so that testing all pairs of a
        value's many readers (an input read by every step of an unrolled loop) costs a
        bit test each instead of a walk over the kernels downstream."""
        index = {g: i for i, g in enumerate(groups)}
        succ = [[] for _ in groups]
        for g in groups:
            targets = {index[ug] for out in self._group_outputs_of(g)
                       for ug in self._reader_groups(out) if ug is not g and ug in index}
            succ[index[g]] = list(targets)
        mask = [None] * len(groups)
        for root in range(len(groups)):   # iterative post-order: kernels form a DAG
            if mask[root] is not None:
                continue
            stack, visiting = [root], set()
            while stack:
                node = stack[-1]
                visiting.add(node)   # (a cycle, which build() reports, must not hang here)
                pending = [s for s in succ[node] if mask[s] is None and s not in visiting]
                if pending:
                    stack.extend(pending)
                    continue
                stack.pop()
                if mask[node] is None:
                    bits = 0
                    for s in succ[node]:
                        bits |= mask[s] | (1 << s)
                    mask[node] = bits
        self._closure = mask
        return {g: (index[g], mask[index[g]], sum(1 << s for s in succ[index[g]]))
                for g in groups}

    def _reaches(self, src, dst):
        """Whether kernel `dst` depends, through any chain of kernels, on kernel `src`."""
        # a kernel reached from g has a member after g's first one (the order is
        # topological), so no kernel starting after dst's last member can lead to dst
        last = self._span(dst)[1]
        stack, seen = [src], {src}
        while stack:
            g = stack.pop()
            for out in self._group_outputs_of(g):
                for ug in self._reader_groups(out):
                    if ug is dst:
                        return True
                    if ug not in seen:
                        seen.add(ug)
                        if self._span(ug)[0] < last:
                            stack.append(ug)
        return False

    def _span(self, group):
        """(first, last) position of the group's members. Members only grow, so an
        entry made at the same member count is current."""
        entry = self._spans.get(group)
        if entry is None or entry[2] != len(group.members):
            positions = [self.position[m] for m in group.members]
            entry = self._spans[group] = (min(positions), max(positions), len(positions))
        return entry

    def _group_outputs_of(self, group):
        cache = getattr(self, "_group_outputs", None)
        if cache is None:
            return self._outputs_of(group.members)
        found = cache.get(group)
        if found is None:
            found = cache[group] = self._outputs_of(group.members)
        return found

    def _reader_groups(self, value):
        """The kernels that read `value`, looking through kept kernels, loops and
        conditionals to their readers (a kernel feeding a loop reaches the loop's readers)."""
        stack, seen = list(self.users[value]), set()
        while stack:
            user = stack.pop()
            if user in seen:
                continue
            seen.add(user)
            if user.op in O.KERNEL or user.op in O.CONTROL:
                stack.extend(self.users[user])
            else:
                yield from self.groups_of[user]

    def _merge(self, a, b):
        self._group_outputs = {}
        a.reduction_checked = None
        a.members |= b.members
        for m in b.members:
            self.groups_of[m] = [a if g is b else g for g in self.groups_of[m]]
            self.groups_of[m] = list(dict.fromkeys(self.groups_of[m]))
        self.decisions.append((b.hero, a, FusionDecision(True, "sibling: shares an input")))

    # -- building the fused module

    def _groups(self):
        seen = {}
        for instr in self.order:
            for g in self.groups_of[instr]:
                seen.setdefault(g.id, g)
        return list(seen.values())

    def _inputs_of(self, group):
        inputs, seen = [], set()
        for m in sorted(group.members, key=self.position.get):
            for o in m.operands:
                if o not in group.members and o not in seen and not _inline_constant(o):
                    seen.add(o)
                    inputs.append(o)
        return inputs

    def build(self):
        """The module with one fusion per group, emitted in dependency order (of the
        ready ones, the one whose first member comes first). Kahn's algorithm: each item's
        missing inputs are counted once and released as producers are emitted, so the
        cost is linear in the program, not in kernels times kernels."""
        items = self._groups() + self.kept
        value_of = {p: p for p in self.module.params}
        missing, waiting, ready = [], {}, []
        for k, item in enumerate(items):
            needs = {i for i in self._needs(item)
                     if i.op not in (Op.PARAMETER, Op.CONSTANT) and i not in value_of}
            missing.append(needs)
            for value in needs:
                waiting.setdefault(value, []).append(k)
            if not needs:
                heapq.heappush(ready, (self._first_position(item), k))
        kernels, emitted = [], 0
        while ready:
            _, k = heapq.heappop(ready)
            item = items[k]
            emitted += 1
            if isinstance(item, Group):
                kernel, made = self._emit(item, value_of, len(kernels))
                kernels.append(kernel)
            else:
                value_of[item] = B.make(item.op, [value_of.get(o, o) for o in item.operands],
                                        item.attrs, loc=item.loc)
                made = [item]
            for value in made:
                for j in waiting.pop(value, ()):
                    missing[j].discard(value)
                    if not missing[j]:
                        heapq.heappush(ready, (self._first_position(items[j]), j))
        if emitted != len(items):
            raise AssertionError("fusion formed a cycle between kernels")
        results = [value_of.get(r, r) for r in self.module.results]
        return self.module.with_results(results), kernels

    def _needs(self, item):
        return self._inputs_of(item) if isinstance(item, Group) else item.operands

    def _first_position(self, item):
        if isinstance(item, Group):
            return min(self.position[m] for m in item.members)
        return self.position[item]

    def _emit(self, group, value_of, index):
        members = sorted(group.members, key=self.position.get)
        inputs = self._inputs_of(group)
        outputs = self._outputs_of(group.members)
        name = _kernel_name(group, members, index)
        params, inner = [], {}
        for n, value in enumerate(inputs):
            label = value.attrs["name"] if value.op is Op.PARAMETER else f"p{n}"
            param = B.parameter(n, value.shape, value.dtype, label, loc=value.loc)
            params.append(param)
            inner[value] = param
        for m in members:
            operands = [inner[o] if o in inner else _copy_constant(o) for o in m.operands]
            inner[m] = B.make(m.op, operands, m.attrs, loc=m.loc)
        body = Module(name, params, [inner[o] for o in outputs])
        top_inputs = [value_of.get(v, v) for v in inputs]
        kernel = B.fusion(top_inputs, body, group.kind, name, loc=group.hero.loc)
        for out, value in zip(outputs, B.outputs(kernel)):
            value_of[out] = value
        return kernel, outputs


def _complex_sums(group):
    """Whether `group`'s reductions reduce complex values: a kernel holds one sort only
    (`_check_reduction`), so siblings of the other sort stay apart."""
    return any(m.op in REDUCING and dtypes.is_complex(m.operands[0].dtype)
               for m in group.members)


def _read_bytes(value):
    """Bytes a kernel reads to get `value`: a broadcast is read as its operand, since it
    is itself duplicated into its consumers (CHEAP)."""
    if cost._inlined(value):
        return 0
    if value.op is Op.BROADCAST_IN_DIM:
        return _read_bytes(value.operands[0])
    return cost.nbytes(value)


def _maps_kept_dims(bcast, kept):
    operand = bcast.operands[0]
    targets = [d for d, size in zip(bcast.attrs["dims"], operand.shape) if size != 1]
    return all(t in kept for t in targets)


def _inline_constant(value):
    return value.op is Op.CONSTANT and value.size <= INLINE_CONSTANT_LIMIT


def _copy_constant(value):
    assert _inline_constant(value), value
    return B.constant(value.attrs["value"], loc=value.loc)


def _kernel_name(group, members, index):
    names = []
    for m in members:
        label = m.op.value
        if m.op not in _QUIET and label not in names:
            names.append(label)
    if not names:
        names = [members[-1].op.value]
    return "fused_" + "_".join(names[:4]) + f"_{index}"


def _constant_like(instr):
    while instr.op is Op.BROADCAST_IN_DIM:
        instr = instr.operands[0]
    return instr.op in (Op.CONSTANT, Op.IOTA)


def kernel_summary(kernel):
    """`kernel NAME = file.py:12-18: op, op, ...`: which user lines a kernel covers."""
    body = kernel.attrs["body"]
    # Constants (and their broadcasts) are interned across functions: their loc is where
    # the first of them was built, maybe in another function. They say nothing here.
    locs = [i.loc for i in body.instructions if getattr(i, "loc", None) is not None
            and i.op is not Op.PARAMETER and not _constant_like(i)]
    ops = list(dict.fromkeys(i.op.value for i in body.instructions
                             if i.op not in (Op.PARAMETER, Op.CONSTANT) and i.op not in _QUIET))
    where = ""
    if locs:
        files = {os.path.basename(loc.file) for loc in locs}
        lines = [loc.line for loc in locs]
        span = f"{min(lines)}" if min(lines) == max(lines) else f"{min(lines)}-{max(lines)}"
        where = f" = {'/'.join(sorted(files))}:{span}"
    return f"kernel {kernel.attrs['name']}{where}: {', '.join(ops) or 'copy'}"


def fuse(module, options=None, explain=None):
    """Partition `module` into kernels; `explain`, if a list, receives every decision."""
    fuser = _Fuser(module)
    fuser.run()
    fused, kernels = fuser.build()
    if explain is not None:
        explain.extend(fuser.decisions)
    if logs.enabled("passes"):
        for instr, group, decision in fuser.decisions:
            verdict = "fused" if decision else f"not fused: {decision.reason}"
            logs.log("passes", "fusion: %s into %s: %s", instr.op.value, group, verdict)
    return fused
