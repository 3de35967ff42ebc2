"""Dask arrays as arguments of jitted functions (docs/dask.md).

`jit(f)(x)` with a `dask.array.Array` among the arguments traces `f` on the block
shapes and returns Dask arrays whose tasks run compiled jitlib programs: blockwise
stages, tree reductions, a finalize (graph.py). Dask is never imported here: an
argument is a Dask array only if `dask.array` was imported by the caller already.
"""
import sys

from jitlib import tree


def dask_arrays_in(args, kwargs):
    """The predicate `is a Dask array` when some leaf of the call is one, else None."""
    module = sys.modules.get("dask.array")
    if module is None:
        return None
    array = module.Array
    if not any(isinstance(x, array) for x in tree.leaves((args, kwargs))):
        return None
    return lambda x: isinstance(x, array)


def call(jitted, args, kwargs, is_dask):
    from jitlib.dask import graph
    return graph.call(jitted, args, kwargs, is_dask)


def stage_compiles():
    """Compiles per stage program in this process: `{"f_stage0": 2, ...}` (a stage has
    one program per distinct block shape: the chunk and the ragged edge)."""
    from jitlib.dask import programs
    return programs.compiles()
