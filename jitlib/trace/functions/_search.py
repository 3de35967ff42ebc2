"""Binary search of a sorted 1-D array with a static number of steps.

np.interp and np.isin need, for each query, where it falls in a sorted array. A
search of ceil(log2(n + 1)) halving steps, each a gather and a select, answers that
exactly for every query at once with no sort or loop op in the IR.
"""
import numpy as np

from jitlib.hlo import build as B
from jitlib.hlo import dtypes
from jitlib.trace import tracer as T
from jitlib.trace.functions._common import apply


def count_below(table, x, inclusive):
    """For each x, how many entries of the sorted 1-D Tracer `table` are < x (or <= x
    when `inclusive`). A NaN x counts 0, as no comparison with NaN holds."""
    n = table.shape[0]
    before = np.less_equal if inclusive else np.less
    lo = T.Tracer(B.full(0, x.shape, dtypes.INDEX))
    hi = T.Tracer(B.full(n, x.shape, dtypes.INDEX))
    for _ in range(int(n).bit_length()):
        mid = apply(np.right_shift, apply(np.add, lo, hi), 1)
        probe = T.Tracer(B.gather(table.instr, apply(np.minimum, mid, n - 1).instr, 0))
        go_right = apply(np.logical_and, apply(before, probe, x), apply(np.less, mid, hi))
        lo = T.Tracer(B.select(go_right.instr, apply(np.add, mid, 1).instr, lo.instr))
        hi = T.Tracer(B.select(go_right.instr, hi.instr, mid.instr))
    return lo
