"""The rewrite engine: rules as data, applied bottom-up to an immutable, interned IR.

A rule is a pair `(op or ops, fn)`; `fn(instr, options)` returns the instruction that
replaces `instr`, or None. It must keep the shape and dtype, and it builds its answer
through `jitlib.hlo.build` (so the answer is type-checked and interned), passing
`loc=instr.loc` on. A `RuleTable` indexes rules by root op; tables compose with `+`.

`rewrite_module` walks the module in topological order. Each instruction is first
rebuilt on its already-rewritten operands, then its op's rules are tried in table order
until none fires. Instructions a rule creates are rewritten the same way before the
rule's answer is settled, so one walk reaches a fixed point of the table.

Because instructions are interned, rebuilding a duplicate gives back the very same
object (CSE), and a Module holds only what its results reach (DCE): `cse` and `dce`
below are those two facts, spelled as passes.
"""
import numpy as np

from jitlib.fusion.options import UNSAFE_MATH_RULES, Options
from jitlib.hlo import build
from jitlib.hlo.ops import Op

# One position rewritten this many times in a row means the rules never settle.
MAX_FIRINGS = 100


class RuleError(RuntimeError):
    """A rule broke the engine's contract (changed a type, or rules loop)."""


class RuleTable:
    """Rules indexed by root op; `a + b` tries a's rules for an op before b's."""

    def __init__(self, rules=()):
        self.rules = tuple(rules)
        self.by_op = {}
        for ops, fn in self.rules:
            for op in ({ops} if isinstance(ops, Op) else ops):
                self.by_op.setdefault(Op(op), []).append(fn)

    def __add__(self, other):
        return RuleTable(self.rules + other.rules)

    def __iter__(self):
        return iter(self.rules)

    def for_op(self, op):
        return self.by_op.get(op, ())

    def names(self):
        """Every rule's name (its function's name), in table order."""
        return list(dict.fromkeys(fn.__name__ for _, fn in self.rules))


def unsafe(name):
    """Decorate an opt-in rule: it fires only when `name` is in `options.unsafe_math`."""
    if name not in UNSAFE_MATH_RULES:
        raise KeyError(f"opt-in rule {name!r} must be listed in options.UNSAFE_MATH")

    def wrap(fn):
        def rule(instr, options):
            return fn(instr, options) if options.allows(name) else None
        rule.__name__ = name
        rule.__doc__ = fn.__doc__
        rule.unsafe_math = name
        return rule
    return wrap


# -- matching helpers

def is_constant(x) -> bool:
    """A constant, or a broadcast of one."""
    if x.op is Op.BROADCAST_IN_DIM:
        x = x.operands[0]
    return x.op is Op.CONSTANT


def scalar_constant(x):
    """The 0-d constant `x` is or broadcasts, else None.

    Its value reaches the interpreter as a 0-d array or a stride-0 view, the layout in
    which NumPy's power takes its scalar-exponent fast paths (the pow rules rely on it).
    """
    if x.op is Op.BROADCAST_IN_DIM:
        x = x.operands[0]
    return x if x.op is Op.CONSTANT and x.shape == () else None


def splat(x):
    """The 0-d value every element of `x` has, if `x` is a constant (or a broadcast of
    one) whose elements are bitwise equal; None otherwise, and for empty constants."""
    if x.op is Op.BROADCAST_IN_DIM:
        x = x.operands[0]
    if x.op is not Op.CONSTANT:
        return None
    flat = x.attrs["value"].array.reshape(-1)
    if flat.size == 0:
        return None
    raw = flat.view(np.uint8).reshape(flat.size, -1)   # any width, complex included
    return flat[0][()] if (raw == raw[0]).all() else None


def has_value(x, value) -> bool:
    """Whether every element of `x` is bitwise `value` (so -0.0 is not 0.0)."""
    v = splat(x)
    if v is None:
        return False
    with np.errstate(all="ignore"):
        want = np.array(value).astype(x.dtype)
    return np.asarray(v).tobytes() == want.tobytes()


def full_like(x, value, loc=None):
    """`value` in `x`'s dtype, broadcast to `x`'s shape (kept a scalar underneath)."""
    return build.full(value, x.shape, x.dtype, loc=loc)


# -- the engine

def rebuild(instr, operands):
    """`instr` on new operands; the same object when the operands are unchanged."""
    operands = tuple(operands)
    if len(operands) == len(instr.operands) and all(
            a is b for a, b in zip(operands, instr.operands)):
        return instr
    return build.make(instr.op, operands, instr.attrs, loc=instr.loc)


def rewrite_module(module, rules, options=None):
    """A new Module with `rules` applied everywhere until none fires; same params."""
    options = options if options is not None else Options()
    engine = _Engine(rules, options)
    # Locations come only from the instructions rewritten, never from an active trace.
    with build.locations(lambda: None):
        for instr in module.instructions:
            engine.settle(instr)
        results = [engine.done[r] for r in module.results]
    return module.with_results(results)


class _Engine:
    def __init__(self, rules, options):
        self.rules, self.options = rules, options
        # value -> its rewritten form; rewritten forms map to themselves
        self.done = {}
        # (instruction, rule) pairs being rewritten: a rule answer among them is a cycle
        self.active = []

    def settle(self, instr):
        """Rewrite `instr`, whose operands are all settled already."""
        if instr not in self.done:
            node = self._apply(rebuild(instr, [self.done[o] for o in instr.operands]))
            self.done[instr] = self.done[node] = node
        return self.done[instr]

    def _apply(self, node):
        """`node` after its rules: unchanged if none fires, else the settled answer."""
        for fn in self.rules.for_op(node.op):
            if fn.__name__ in self.options.disabled:
                continue
            out = fn(node, self.options)
            if out is not None and out is not node:
                break
        else:
            return node
        if (out.shape, out.dtype) != (node.shape, node.dtype):
            raise RuleError(f"rule {fn.__name__} turned {node.type_str} {node.op} "
                            f"into {out.type_str} {out.op}")
        if len(self.active) >= MAX_FIRINGS:
            raise RuleError("rules keep firing: "
                            + ", ".join(name for _, name in self.active[-6:]))
        self.active.append((node, fn.__name__))
        try:
            return self._settle_new(out)
        finally:
            self.active.pop()

    def _settle_new(self, out):
        """Rewrite what a rule built: its new instructions, operands before users."""
        stack = [(out, False)]
        while stack:
            node, expanded = stack.pop()
            if node in self.done:
                continue
            if expanded:
                self.settle(node)
                continue
            for pending, name in self.active:
                if node is pending:
                    raise RuleError(f"rules cycle: {name} rebuilt the {node.op} it "
                                    f"replaced, via " + ", ".join(n for _, n in self.active))
            stack.append((node, True))
            stack.extend((o, False) for o in node.operands if o not in self.done)
        return self.done[out]


# -- CSE and DCE

NO_RULES = RuleTable()


def cse(module, options=None):
    """Common-subexpression elimination.

    Instructions are interned, so two structurally equal instructions are already one
    object: rebuilding the module bottom-up (which is all this does) merges any
    duplicates an earlier pass could have made. It exists so the pipeline reads like
    XLA's and has a place to verify.
    """
    return rewrite_module(module, NO_RULES, options)


def dce(module, options=None):
    """Dead-code elimination: a Module holds only what its results reach.

    Rewrites leave replaced instructions behind only as garbage, never in a module,
    because `Module.instructions` is computed from the results. Parameters stay: they
    are the signature.
    """
    return module.with_results(module.results)
