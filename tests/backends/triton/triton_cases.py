"""Shared pieces of the Triton backend tests: kernels of workloads, sample inputs."""
import numpy as np

import jitlib
from jitlib.backends.triton import kernels
from jitlib.fusion import optimize
from jitlib.hlo.ops import Op


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
