"""The collectives a pmap'ed function calls, named as jax.lax's (jnp.psum, ...).

Each traces one collective op over the named axis (hlo/collectives.py gives its
meaning). Inside pmap, a non-traced operand is traced too, so psum(1, 'i') is the
axis size, as in JAX.
"""
from jitlib import errors
from jitlib.hlo import build as B
from jitlib.parallel import axes
from jitlib.trace import tracer as T
from jitlib.trace.functions._common import tracer


def _operand(x, axis_name, what):
    n = axes.size_of(axis_name, what)
    return tracer(x).instr, n


def _reduce(x, axis_name, reduction, what):
    v, n = _operand(x, axis_name, what)
    return T.Tracer(B.all_reduce(v, reduction, axis_name, n))


def psum(x, axis_name):
    """The sum over the devices of `axis_name`, device 0 first."""
    return _reduce(x, axis_name, "sum", "psum")


def pmax(x, axis_name):
    return _reduce(x, axis_name, "max", "pmax")


def pmin(x, axis_name):
    return _reduce(x, axis_name, "min", "pmin")


def pmean(x, axis_name):
    """psum divided by the axis size (integers give floats, as np.mean)."""
    total = psum(x, axis_name)
    return total / axes.size_of(axis_name, "pmean")


def all_gather(x, axis_name, *, axis=0):
    """Every device's `x`, stacked along a new dim `axis`."""
    v, n = _operand(x, axis_name, "all_gather")
    return T.Tracer(B.all_gather(v, T.normalize_axis(axis, v.ndim + 1), axis_name, n))


def psum_scatter(x, axis_name, *, scatter_dimension=0):
    """The psum's slice k along `scatter_dimension` (of the axis size) on device k."""
    v, n = _operand(x, axis_name, "psum_scatter")
    dim = T.normalize_axis(scatter_dimension, v.ndim)
    if v.shape[dim] != n:
        raise errors.ShapeError(
            f"psum_scatter over {n} devices needs dim {dim} of size {n}, got shape "
            f"{v.shape}", hint="reshape so the scattered dim has the axis size")
    return T.Tracer(B.reduce_scatter(v, dim, axis_name, n))


def ppermute(x, axis_name, perm):
    """Send device src's `x` to device dst for each (src, dst) in `perm`; a device
    that receives nothing gets zeros."""
    v, n = _operand(x, axis_name, "ppermute")
    pairs = [(int(s), int(d)) for s, d in perm]
    for s, d in pairs:
        if not (0 <= s < n and 0 <= d < n):
            raise errors.JitlibError(f"ppermute pair ({s}, {d}) is outside the {n} "
                                     f"devices of axis {axis_name!r}")
    for k, end in ((0, "source"), (1, "destination")):
        if len({p[k] for p in pairs}) != len(pairs):
            raise errors.JitlibError(f"ppermute's perm names a {end} twice: {pairs}",
                                     hint="perm must be a partial permutation")
    return T.Tracer(B.collective_permute(v, pairs, axis_name, n))


def axis_index(axis_name):
    """This device's position along `axis_name` (int32, as JAX's)."""
    n = axes.size_of(axis_name, "axis_index")
    return T.Tracer(B.axis_index(axis_name, n))


__all__ = ["psum", "pmean", "pmax", "pmin", "all_gather", "psum_scatter", "ppermute",
           "axis_index"]
