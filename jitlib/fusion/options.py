"""The optimizer's options, and the one list of rules allowed to change a float's bits.

Every simplification rule is exact (the reference interpreter gives the same bits before
and after it, NaN payloads aside) unless its name is in `UNSAFE_MATH`. Those rules run
only when named in `Options.unsafe_math`, like XLA's `set_enable_fast_math`.
"""
import dataclasses

# Opt-in rules: name -> why the rule is not exact.
UNSAFE_MATH = {
    "add_pos_zero": "x + 0.0 -> x is wrong for x = -0.0 (-0.0 + 0.0 is +0.0)",
    "mul_zero": "x * 0.0 -> 0.0 is wrong for NaN, inf (NaN) and negative x (-0.0)",
    "sub_self": "x - x -> 0.0 is wrong for NaN and inf (NaN)",
    "sum_of_broadcast": "reduce_sum of n copies of x -> x * n: the n-term sum rounds "
                        "differently from one product",
    "reassociate": "(x + c1) + c2 -> x + (c1 + c2) (and *): float rounding depends on order",
}
UNSAFE_MATH_RULES = frozenset(UNSAFE_MATH)


@dataclasses.dataclass(frozen=True)
class Options:
    """What the optimizer may do.

    unsafe_math: names from `UNSAFE_MATH` to enable (none by default).
    fold_limit: constant folding never makes a constant with more elements than this,
        nor reads an operand larger than this.
    max_iters: the bound on the simplify/fold fixed point.
    disabled: names of passes (see pipeline.BY_NAME, and "fuse") and of rewrite rules
        (their function names) that must not run: how the check mode bisects the
        optimizer, turning one off at a time.
    """

    unsafe_math: frozenset = frozenset()
    fold_limit: int = 1024
    max_iters: int = 8
    disabled: frozenset = frozenset()

    def __post_init__(self):
        names = frozenset(self.unsafe_math)
        unknown = sorted(names - UNSAFE_MATH_RULES)
        if unknown:
            raise ValueError(f"unknown unsafe_math rule(s) {', '.join(unknown)}; known: "
                             f"{', '.join(sorted(UNSAFE_MATH_RULES))}")
        object.__setattr__(self, "unsafe_math", names)
        object.__setattr__(self, "disabled", frozenset(self.disabled))

    @classmethod
    def fast_math(cls, **kwargs):
        """Options with every opt-in rule enabled."""
        return cls(unsafe_math=UNSAFE_MATH_RULES, **kwargs)

    def allows(self, rule: str) -> bool:
        """Whether the opt-in rule `rule` may run."""
        if rule not in UNSAFE_MATH_RULES:
            raise KeyError(f"{rule!r} is not an opt-in rule (see options.UNSAFE_MATH)")
        return rule in self.unsafe_math
