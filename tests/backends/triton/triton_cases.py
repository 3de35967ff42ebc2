"""Shared pieces of the Triton backend tests: kernels of workloads, sample inputs."""
import numpy as np

import jitlib
from jitlib.backends.triton import kernels
from jitlib.fusion import optimize
from jitlib.hlo import dtypes
from jitlib.hlo.ops import Op
from jitlib.testing import TOLERANCES


def fusions(module):
    return [i for i in optimize(module).instructions if i.op is Op.FUSION]


def traced(fn, args, static_argnums=()):
    return jitlib.make_ir(fn, static_argnums=static_argnums)(*args)


def rendered(module):
    """(fusion, TritonKernel or the Unsupported reason) per kernel of `module`."""
    out = []
    for f in fusions(module):
        try:
            out.append((f, kernels.render(f)))
        except kernels.Unsupported as e:
            out.append((f, str(e)))
    return out


def flat_args(module, args, static_argnums=()):
    flat = jitlib.tree.leaves([a for n, a in enumerate(args) if n not in static_argnums])
    return [np.asarray(a, dtype=p.dtype) for a, p in zip(flat, module.params)]


def working_tolerance(module):
    """(rtol, atol) for a module's results: the loosest of the float types it computes in.

    A float64 result computed from float32 intermediates carries their rounding: the GPU's
    powf (libdevice) and its tree-ordered f32 sums differ from NumPy's by an f32 ulp, and
    that ulp survives the widening. Parameters and converts round nothing, so a module that
    only widens its f32 inputs keeps the f64 tolerance."""
    computed = {np.dtype(i.dtype) for i in module.instructions
                if i.op not in (Op.PARAMETER, Op.CONVERT) and dtypes.is_float(i.dtype)}
    tols = [TOLERANCES[d] for d in computed if d in TOLERANCES]
    if not tols:
        return None, None
    return max(t[0] for t in tols), max(t[1] for t in tols)
