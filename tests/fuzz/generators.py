"""The fuzz generators by name: a hypothesis strategy each, and how to check what it draws.

    ir        random IR modules over every plain op (tests/ir_strategies.programs)
    ir_exact  the same without approximate ops: every result compared bit for bit
    fused     random modules already cut into fusions (ir_strategies.fused_programs)
    numpy     random NumPy programs (numpy_programs), traced by jitlib, and checked
              against eager NumPy as well as across the backends
    numpy_complex  the same with complex arguments among the others
"""
import copy
import dataclasses
import warnings
from typing import Callable

import numpy as np

import ir_strategies as irs
import jitlib
from jitlib.errors import UnsupportedError
from jitlib.hlo import ops as O
from jitlib.hlo.ops import Op

from . import oracle
from .exactness import APPROXIMATE_OPS
from .numpy_programs import COMPLEX_DTYPES, NumpyProgram, numpy_programs


@dataclasses.dataclass(frozen=True)
class Generator:
    name: str
    strategy: object
    check: Callable    # (case, variants) -> oracle.Verdict; raises oracle.Mismatch


def _check_ir(case, variants):
    module, inputs = case
    return oracle.check_program(module, inputs, variants)


def _check_numpy(program, variants):
    """Trace `program`, then compare eager NumPy and every variant with the interpreter."""
    fn = program.function()
    eager_args = copy.deepcopy(program.args)   # the program may write into its arguments
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)   # the mean of an empty slice
        eager = fn(*eager_args)
    try:
        module = jitlib.make_ir(fn)(*program.args)
    except UnsupportedError as e:
        verdict = oracle.Verdict()
        verdict.skipped["trace"] = f"unsupported: {e.message}"
        return verdict
    except Exception as e:   # noqa: BLE001 - NumPy ran it, so tracing must too
        raise oracle.Mismatch("trace", f"raised {type(e).__name__}: {e}", None, [],
                              program) from e
    inputs = [np.asarray(a, dtype=p.dtype) for a, p in zip(program.args, module.params)]
    # the module's results past the function's own are the arguments it writes into:
    # compared with what the eager call left in its arguments
    leaves = [np.asarray(x) for x in jitlib.tree.leaves(eager)]
    leaves += [eager_args[i] for i in module.writes]
    try:
        return oracle.check_program(module, inputs, variants, extra={"numpy": leaves})
    except oracle.Mismatch as m:
        if m.variant != "numpy":   # the IR alone shows it: keep the module as the case
            m.args = (f"{m.args[0]}\nfrom the NumPy program:\n{program}",)
            raise
        raise oracle.Mismatch(m.variant, m.what, m.module, m.inputs, program) from None


def check_numpy_source(source, args, variants=None):
    """Check a saved NumPy program (regressions/*.py) as the numpy generator would."""
    return _check_numpy(NumpyProgram(source, list(args)), variants)


# Linear algebra is neither exact nor continuous across LAPACKs (signs, pivots):
# tests/trace/test_linalg.py checks it through invariants instead. Collectives need
# a pmap's devices.
EXACT_OPS = [op for op in Op if op not in APPROXIMATE_OPS
             and op not in O.KERNEL | O.LINALG | O.COLLECTIVE]

GENERATORS = {g.name: g for g in (
    Generator("ir", irs.programs(), _check_ir),
    Generator("ir_exact", irs.programs(ops=EXACT_OPS), _check_ir),
    Generator("fused", irs.fused_programs(), _check_ir),
    Generator("numpy", numpy_programs(), _check_numpy),
    Generator("numpy_complex", numpy_programs(dtypes=COMPLEX_DTYPES), _check_numpy),
)}
