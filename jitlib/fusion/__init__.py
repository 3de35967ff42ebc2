"""The optimizer: simplification passes, then fusion into kernels.

    optimize(module, options=None) -> Module     the whole optimizer
    run_pipeline(module, passes=None, ...)       chosen passes, verified and logged
    Options(unsafe_math=..., fold_limit=...)     what the optimizer may do

`pipeline.py` lists the passes in order with the reasons for that order; `rewrite.py` is
the rule engine; `simplify/` holds the rules, by family.
"""
from jitlib.fusion.options import Options
from jitlib.fusion.pipeline import optimize, run_pipeline

__all__ = ["Options", "optimize", "run_pipeline"]
