"""Functions that map a user function over an array: apply_along_axis and vectorize.

Both trace the user's function once, on one slice (a 1-D row, or scalars), and map it
with `jitlib.vmap`, so the loop NumPy runs in Python becomes one batched program. The
function must therefore be traceable: no Python `if` on the values (use np.where).
"""
import numpy as np

from jitlib import errors
from jitlib.hlo import build as B
from jitlib.trace import tracer as T
from jitlib.trace.functions import shapes
from jitlib.trace.functions._common import canonical_dtype, tracer
from jitlib.trace.registry import implements


def _vmap(fn, rows):
    from jitlib.transforms.batching_api import vmap   # transforms import the tracer
    return vmap(fn)(*rows)


@implements(np.apply_along_axis)
def apply_along_axis(func1d, axis, arr, *args, **kwargs):
    """vmap of func1d over the rows along `axis`; its result's axes replace that axis."""
    x = tracer(arr)
    ax = T.normalize_axis(axis, x.ndim)
    rows = shapes.moveaxis(x, ax, -1)
    outer, n = rows.shape[:-1], rows.shape[-1]
    if 0 in outer:
        raise errors.ShapeError("Cannot apply_along_axis when any iteration dimensions are 0",
                                hint="the axes other than `axis` must be non-empty")
    count = int(np.prod(outer))
    flat = T.Tracer(B.reshape(rows.instr, (count, n)))
    res = tracer(_vmap(lambda row: func1d(row, *args, **kwargs), [flat]))
    core = res.shape[1:]
    res = T.Tracer(B.reshape(res.instr, outer + core))
    # NumPy puts the result's own axes where `axis` was
    k = len(outer)
    perm = list(range(ax)) + list(range(k, k + len(core))) + list(range(ax, k))
    return T.Tracer(B.transpose(res.instr, perm))


# -- np.vectorize objects called on tracers (numpy_hooks routes the call here)

def _split(vec, args, kwargs):
    """(positions and values that are mapped, a function rebuilding the full call)."""
    excluded = vec.excluded
    mapped = [(i, a) for i, a in enumerate(args) if i not in excluded]
    mapped += [(k, v) for k, v in kwargs.items() if k not in excluded]

    def call(*values):
        pos, kw = list(args), dict(kwargs)
        for (key, _), v in zip(mapped, values):
            if isinstance(key, int):
                pos[key] = v
            else:
                kw[key] = v
        return vec.pyfunc(*pos, **kw)
    return [v for _, v in mapped], call


def _core_dims(vec, n_inputs):
    if vec.signature is None:
        return [()] * n_inputs, None
    from numpy.lib._function_base_impl import _parse_gufunc_signature
    ins, outs = _parse_gufunc_signature(vec.signature)
    if len(ins) != n_inputs:
        raise errors.JitlibTypeError(
            f"wrong number of positional arguments: expected {len(ins)}, got {n_inputs}",
            hint="pass one argument per input of the signature")
    return ins, outs


def _loop_shape(values, core):
    """The broadcast shape of the loop (non-core) dims; checks core sizes agree."""
    sizes, loops = {}, []
    for v, dims in zip(values, core):
        if v.ndim < len(dims):
            raise errors.ShapeError(
                f"input with shape {v.shape} does not have enough dimensions for all core "
                f"dimensions {dims!r}", hint="check the arguments against the signature")
        for name, size in zip(dims, v.shape[v.ndim - len(dims):]):
            if sizes.setdefault(name, size) != size:
                raise errors.ShapeError(
                    f"inconsistent size for core dimension {name!r}: {size} vs "
                    f"{sizes[name]}", hint="check the arguments against the signature")
        loops.append(v.shape[:v.ndim - len(dims)])
    return T.broadcast_shapes(*loops)


def vectorize_call(vec, args, kwargs):
    """`vec(*args, **kwargs)` for an np.vectorize object: pyfunc traced on one element
    (or core block, with signature=) and vmapped over the broadcast loop dims."""
    values, call = _split(vec, args, kwargs)
    values = [tracer(v) for v in values]
    core, out_core = _core_dims(vec, len(values))
    loop = _loop_shape(values, core)
    count = int(np.prod(loop))
    if not values:
        return call()
    if count == 0:
        raise errors.UnsupportedError(
            "np.vectorize on size-0 inputs is not supported inside jit",
            hint="skip the call when the input is empty (its shape is static)")
    flat = []
    for v, dims in zip(values, core):
        own = v.shape[v.ndim - len(dims):]
        wide = T.broadcast(v.instr, loop + own)
        flat.append(T.Tracer(B.reshape(wide, (count,) + own)))
    out = _vmap(call, flat)
    single = not isinstance(out, tuple)
    outs = (out,) if single else out
    if out_core is not None and len(out_core) != len(outs):
        raise errors.JitlibTypeError(
            f"wrong number of outputs from pyfunc: expected {len(out_core)}, got {len(outs)}",
            hint="return one value per output of the signature")
    otypes = vec.otypes
    results = []
    for i, o in enumerate(outs):
        o = tracer(o)
        r = B.reshape(o.instr, loop + o.shape[1:])
        if otypes:
            r = B.convert(r, canonical_dtype(otypes[i]))
        results.append(T.Tracer(r))
    return results[0] if single else tuple(results)


@implements(name="vectorize")
def vectorize(pyfunc=np._NoValue, otypes=None, doc=None, excluded=None, cache=False,
              signature=None):
    """np.vectorize; on tracers pyfunc is traced on one element and vmapped over the rest.

    With signature=, on one core block and vmapped over the loop dims."""
    return np.vectorize(pyfunc, otypes=otypes, doc=doc, excluded=excluded, cache=cache,
                        signature=signature)


@implements(np.apply_over_axes)
def apply_over_axes(func, a, axes):
    """func(a, axis) for each axis in turn, a dropped axis put back (NumPy's loop)."""
    val = tracer(a)
    for axis in ((axes,) if np.ndim(axes) == 0 else axes):
        axis = axis + val.ndim if axis < 0 else axis
        res = func(val, axis)
        if res.ndim != val.ndim:
            res = np.expand_dims(res, axis)
            if res.ndim != val.ndim:
                raise errors.JitlibValueError(
                    "function is not returning an array of the correct shape",
                    hint="func(a, axis) must keep the axis or drop just that one")
        val = res
    return val
