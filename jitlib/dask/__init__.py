"""Dask arrays as arguments of jitted functions (docs/dask.md).

`jit(f)(x)` with a `dask.array.Array` among the arguments traces `f` on the block
shapes and returns Dask arrays whose tasks run compiled jitlib programs: blockwise
stages, tree reductions, a finalize (graph.py). Dask is never imported here: an
argument is a Dask array only if `dask.array` was imported by the caller already.
"""
import sys

import numpy as np

from jitlib import tree


# argument types that are never Dask arrays nor hold one: a call of only these skips the
# pytree walk (a process that imported dask calls its NumPy-only jitted functions too)
_PLAIN = frozenset({np.ndarray, int, float, bool, complex, np.float32, np.float64})


def dask_arrays_in(args, kwargs):
    """The predicate `is a Dask array` when some leaf of the call is one, else None."""
    module = sys.modules.get("dask.array")
    array = getattr(module, "Array", None)
    if array is None or (not kwargs and all(type(a) in _PLAIN for a in args)):
        return None
    if not any(isinstance(x, array) for x in tree.leaves((args, kwargs))):
        return None
    return lambda x: isinstance(x, array)


def call(jitted, args, kwargs, is_dask):
    from jitlib.dask import graph
    # a trace that needs a Python int's value keys ints by value from then on, as jit does
    return jitted._with_int_values(lambda: graph.call(jitted, args, kwargs, is_dask))


def explain(jitted, *args, **kwargs):
    """How `jitted(*args, **kwargs)` runs on these Dask arrays, as text: the chunked
    axes, then each stage's program (blockwise stages at the longest block's shape, tree
    reductions' combines, the finalize). Traces, builds no graph, compiles nothing."""
    is_dask = dask_arrays_in(args, kwargs)
    if is_dask is None:
        from jitlib import errors
        raise errors.JitlibTypeError(
            "jitlib.dask.explain needs a Dask array among the arguments",
            hint="pass the dask.array.Array arguments the call will get "
                 "(jitted.lower(...) shows the program of a NumPy call)")
    from jitlib.dask import graph
    return jitted._with_int_values(lambda: graph.explain(jitted, args, kwargs, is_dask))


def cache_info(jitted):
    """Compiles per stage of `jitted`'s Dask calls in this process (the client):
    `{"f_stage0": 2, "f_combine0": 1, "f_final": 1}`. A stage has one program per
    distinct block shape (the chunk and the ragged edge); a program shared with another
    function (the same Module) shows its one compile under both."""
    from jitlib.dask import programs
    return programs.counts(jitted.__dict__.get("_dask_programs", set()))["compiled"]


def worker_info():
    """How this process got each stage program: `{"compiled": {name: n}, "mapped":
    {name: n}}`; on a cluster, `client.run(jitlib.dask.worker_info)` asks every worker.
    A worker maps the client's object code; it compiles only on another CPU, or when
    the client saved no program (its disk cache off)."""
    from jitlib.dask import programs
    return programs.counts()
