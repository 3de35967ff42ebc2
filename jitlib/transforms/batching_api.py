"""`vmap`: map a function over an axis of its arguments, as one batched program.

    per_row = jitlib.vmap(lambda x, w: np.tanh(x @ w), in_axes=(0, None))

A call traces the function on one example's shapes, batches the traced Module
(`batching.batch_module`) and calls the result (`core.call`): inlined into the
enclosing trace under `jit` or another transform, run on the interpreter otherwise.

`in_axes` is an int, None, or a tuple with one entry per positional argument; an entry
may itself be a pytree prefix of its argument (`{"w": None, "b": 0}`). Keyword
arguments are mapped over axis 0. `out_axes` is a pytree prefix of the output. An
unmapped Python scalar is passed to the function as it is (usable as a shape).
"""
import functools
from typing import Any, Callable

import numpy as np

from jitlib import errors, tree
from jitlib.transforms import core
from jitlib.transforms.batching import batch_module


def vmap(fn: Callable[..., Any], in_axes: Any = 0, out_axes: Any = 0) -> Callable[..., Any]:
    """`fn` mapped over axis `in_axes` of its arguments, results stacked at `out_axes`.

    `in_axes`: an int, None (not mapped), or a tuple with one such entry (or pytree
    prefix of entries) per positional argument; `out_axes`: a pytree prefix of the output.

    >>> import numpy as np, jitlib
    >>> per_row = jitlib.vmap(lambda x, w: x @ w, in_axes=(0, None))
    >>> per_row(np.arange(6.0).reshape(3, 2), np.array([1.0, 10.0]))
    array([10., 32., 54.])
    """
    name = getattr(fn, "__name__", "fn")
    _check_spec(in_axes, "in_axes", name)
    _check_spec(out_axes, "out_axes", name)
    if not (in_axes is None or isinstance(in_axes, (int, tuple))):
        raise errors.JitlibTypeError(
            f"vmap({name}): in_axes must be an int, None, or a tuple with one entry per "
            f"positional argument, got a {type(in_axes).__name__}",
            hint="wrap it in a tuple: in_axes=(spec,) for one argument")

    @functools.wraps(fn)
    def batched(*args: Any, **kwargs: Any) -> Any:
        axes = _flat_in_axes(in_axes, args, kwargs, name)
        flat, in_tree = tree.flatten((args, kwargs))
        size, types = _per_example_types(flat, axes, name)
        # Unmapped Python scalars reach fn as they are, as in JAX: fn may use them as
        # shapes or loop bounds. Every other leaf becomes a parameter of the trace.
        traced_at = [i for i, (x, a) in enumerate(zip(flat, axes))
                     if a is not None or not _is_python_scalar(x)]

        def on_traced_leaves(*leaves):
            full = list(flat)
            for i, leaf in zip(traced_at, leaves):
                full[i] = leaf
            a, k = tree.unflatten(in_tree, full)
            return fn(*a, **k)
        traced = core.trace(on_traced_leaves, [flat[i] for i in traced_at], name=name,
                            leaf_types=[types[i] for i in traced_at])
        flat = [flat[i] for i in traced_at]
        axes = [axes[i] for i in traced_at]
        flat_out_axes = _broadcast_prefix(out_axes, traced.out_tree, "out_axes", name,
                                          "the output")
        out_ranks = [r.ndim + 1 for r in traced.module.results]
        flat_out_axes = [None if a is None else _normalize(a, rank, "out_axes", name)
                         for a, rank in zip(flat_out_axes, out_ranks)]
        module = batch_module(traced.module, axes, size, flat_out_axes)
        return tree.unflatten(traced.out_tree, core.call(module, flat))

    return batched


def _is_python_scalar(x):
    return isinstance(x, (bool, int, float)) and not isinstance(x, np.generic)


def _check_spec(spec, what, name):
    for axis in tree.leaves(spec, is_leaf=lambda x: x is None):
        if axis is not None and (isinstance(axis, bool) or not isinstance(axis, int)):
            raise errors.JitlibTypeError(
                f"vmap({name}): {what} must hold ints and None, got {axis!r}",
                hint=f"{what}=0 maps over the first axis; None leaves an argument unmapped")


def _flat_in_axes(in_axes, args, kwargs, name):
    """One axis (or None) per leaf of (args, kwargs), as the arguments flatten."""
    if isinstance(in_axes, tuple) and len(in_axes) != len(args):
        raise errors.JitlibTypeError(
            f"vmap({name}): in_axes has {len(in_axes)} entries but the function was "
            f"called with {len(args)} positional arguments",
            hint="give one in_axes entry per positional argument")
    spec = (in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(args),
            {k: 0 for k in kwargs})
    return _broadcast_prefix(spec, tree.structure((args, kwargs)), "in_axes", name,
                             "the arguments")


def _broadcast_prefix(spec, value_tree, what, name, of):
    """`spec`'s leaves repeated over the subtrees of `value_tree` they stand for."""
    dummy = tree.unflatten(value_tree, [0] * value_tree.num_leaves)
    flat = []
    try:
        # tree_map visits spec's leaves in flatten order, so `flat` follows the values'
        tree.tree_map(lambda axis, sub: flat.extend([axis] * len(tree.leaves(sub))),
                      spec, dummy, is_leaf=lambda x: x is None)
    except ValueError as e:
        raise errors.JitlibTypeError(
            f"vmap({name}): {what} {spec!r} is not a tree prefix of {of} "
            f"{value_tree!r}: {e}",
            hint=f"{what} must match the structure of {of}, with an int or None where "
                 "a whole subtree shares one axis") from None
    return flat


def _normalize(axis, rank, what, name, shape=None):
    if not -rank <= axis < rank:
        of = f" (its shape is {shape})" if shape is not None else ""
        raise errors.ShapeError(
            f"vmap({name}): {what} asks for axis {axis}, but the value has rank {rank}{of}",
            hint="axes count from 0 (or from -1 at the end) and must be below the rank")
    return axis % rank


def _per_example_types(flat, axes, name):
    """The batch size, and each leaf's (shape, dtype, weak) as one example sees it."""
    types, mapped = [], []
    for i, (x, axis) in enumerate(zip(flat, axes)):
        shape, dtype, weak = core.leaf_type(x)
        if axis is None:
            types.append((shape, dtype, weak))
            continue
        if not shape:
            raise errors.ShapeError(
                f"vmap({name}): argument leaf {i} is a scalar, which has no axis {axis} "
                "to map over", hint="pass None in in_axes for it, or pass an array")
        axis = _normalize(axis, len(shape), "in_axes", name, shape)
        mapped.append((i, shape, axis))
        types.append((shape[:axis] + shape[axis + 1:], dtype, weak))
    if not mapped:
        raise errors.JitlibTypeError(
            f"vmap({name}) needs at least one mapped argument, but in_axes is None for "
            "every argument", hint="give some argument an int in_axes")
    sizes = {shape[axis] for _, shape, axis in mapped}
    if len(sizes) > 1:
        described = "; ".join(f"leaf {i} has shape {shape}, mapped at axis {axis}"
                              for i, shape, axis in mapped)
        raise errors.ShapeError(
            f"vmap({name}) got inconsistent sizes for the mapped axes: {described}",
            hint="every mapped axis must have the same length (the batch size)")
    return sizes.pop(), types
