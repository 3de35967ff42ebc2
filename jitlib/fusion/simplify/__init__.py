"""Simplification rule tables, split by family (rules are data: `(op or ops, fn)` pairs).

    arith     elementwise algebra: identities, powers, converts, select, compare
    movement  reshape/transpose/broadcast/slice chains, reductions of broadcasts, dot
    fold      constant folding through the reference interpreter

`ALGEBRAIC` is what the `simplify` pass applies; `FOLD` is `constant_fold`'s.

Exact means the reference interpreter gives the same bits before and after, NaN payloads
aside; rules that are not exact run only when `Options.unsafe_math` names them. One caveat
comes from NumPy under the interpreter: a few float kernels round differently depending
on memory layout (power takes fast paths for a stride-0 exponent; f32 tan, expm1, log1p
and f64 exp, log take a scalar path on reversed views). Folding keeps the layouts the
interpreter sees, but for scalars folded into a stride-0 broadcast (fold.py); a rule that
returns an operand as it is (x*1 -> x) hands its consumer that operand's layout. Either
can change a last bit in those kernels only; the fix belongs in the interpreter, which
should not depend on layout (tests/fusion/test_simplify.py has an xfail that shows it).
"""
from jitlib.fusion.simplify import arith, fold, movement

ALGEBRAIC = arith.RULES + movement.RULES
FOLD = fold.RULES

__all__ = ["ALGEBRAIC", "FOLD", "arith", "fold", "movement"]
