"""Values a trace knows: an instruction that depends on no parameter has one value on
every call, so the tracer can answer `int(buf[3])`, `if table[0] > 0` or `range(int(n))`
on it the way eager NumPy would, while the instruction itself stays in the IR (where
the optimizer folds it) for whatever traced value is later written into or combined
with it.
"""
from jitlib.hlo.interpreter import evaluate_instr
from jitlib.hlo.ops import Op

_UNKNOWN = object()


def known_value(instr, memo=None):
    """The concrete value (an ndarray) of `instr`, where no parameter reaches it; else
    None. `memo` (instr -> value) carries what earlier questions found."""
    memo = {} if memo is None else memo
    found = memo.get(instr)
    if found is not None:
        return None if found is _UNKNOWN else found
    stack = [(instr, False)]   # iterative: a loop's trace makes long chains
    while stack:
        node, expanded = stack.pop()
        if node in memo:
            continue
        if node.op is Op.PARAMETER:
            memo[node] = _UNKNOWN
            continue
        if not expanded:
            stack.append((node, True))
            stack.extend((o, False) for o in node.operands if o not in memo)
            continue
        values = [memo[o] for o in node.operands]
        memo[node] = _UNKNOWN if any(v is _UNKNOWN for v in values) \
            else evaluate_instr(node, values)
    value = memo[instr]
    return None if value is _UNKNOWN else value
