"""What every transform shares: a Python function traced into a Module, and a Module
called on values.

A transform is `Module -> Module` (DESIGN.md). The Python-level transforms (`grad`,
`vmap`, ...) all work the same way:

1. `trace(fn, args)` traces `fn` on abstract copies of `args` into a fresh Module.
2. The transform rewrites that Module into another one.
3. `call(module, args)` runs the new Module on the actual arguments: inside an active
   trace (under `jit` or another transform) its instructions are inlined into that
   trace, so transforms compose by construction; outside any trace it runs on the
   reference interpreter, like an eager NumPy call.

Free values. `fn` may close over tracers of an enclosing trace (a `vmap` inside `jit`
capturing a weight, the inner function of `grad(grad(f))`). Such values reach the
traced Module as instructions that do not depend on its parameters, possibly even
outer PARAMETER instructions that are not among `module.params`. Transforms treat every
instruction that does not depend on the Module's own parameters as a constant (no
tangent, no cotangent, not batched); `call` inlines them unchanged.

Parameter names are made unique per trace (`x_t3`), because instructions are interned:
an inner parameter named like an outer one, with the same index and type, would be the
very same object, and the transform could not tell the captured outer value from its
own argument.
"""
import itertools
from typing import NamedTuple

import numpy as np

from jitlib import errors, tree
from jitlib.fusion.rewrite import rebuild
from jitlib.hlo.interpreter import evaluate
from jitlib.hlo.ops import Op
from jitlib.trace.context import Trace, abstract_leaf, current_trace, result_instr
from jitlib.trace.tracer import Tracer, as_instr

_trace_ids = itertools.count()


class Traced(NamedTuple):
    module: object          # hlo.Module: one parameter per input leaf, one result per output leaf
    in_tree: tree.TreeDef
    out_tree: tree.TreeDef
    weak: tuple             # per input leaf: is it a weak (Python scalar) value


def leaf_type(x):
    """(shape, dtype, weak) of an argument leaf: a tracer, an array or a Python scalar."""
    if isinstance(x, Tracer):
        return x.shape, x.dtype, x._weak
    return abstract_leaf(x, f"a {type(x).__name__} argument")


def trace(fn, args, name=None, leaf_types=None):
    """Trace `fn(*args)` into a fresh Module with one parameter per leaf of `args`.

    `leaf_types` overrides the (shape, dtype, weak) of each leaf (vmap traces on the
    per-example shape, not the batched one); by default each leaf's own type is used.
    """
    name = name or getattr(fn, "__name__", "fn")
    flat, in_tree = tree.flatten(tuple(args))
    types = list(leaf_types) if leaf_types is not None else [leaf_type(x) for x in flat]
    k = next(_trace_ids)
    t = Trace(name)
    tracers = [t.new_parameter(shape, dtype, f"a{i}_t{k}", weak=weak)
               for i, (shape, dtype, weak) in enumerate(types)]
    with t.active():
        out = fn(*tree.unflatten(in_tree, tracers))
        flat_out, out_tree = tree.flatten(out)
        results = [result_instr(x, name, i) for i, x in enumerate(flat_out)]
    return Traced(t.module(results), in_tree, out_tree, tuple(w for _, _, w in types))


def call(module, flat_args):
    """`module`'s results on `flat_args` (one per parameter), as a list.

    Inside an active trace: tracers, with the Module's instructions inlined into the
    trace. Outside: NumPy arrays computed by the reference interpreter.
    """
    if len(flat_args) != len(module.params):
        raise errors.JitlibTypeError(
            f"{module.name} takes {len(module.params)} arrays, got {len(flat_args)}")
    if current_trace() is not None or any(isinstance(a, Tracer) for a in flat_args):
        return [Tracer(r) for r in inline(module, flat_args)]
    arrays = [np.asarray(a, dtype=p.dtype) for p, a in zip(module.params, flat_args)]
    return evaluate(module, arrays)


def inline(module, flat_args):
    """The IR values of `module`'s results with its parameters replaced by `flat_args`."""
    env = {}
    for p, a in zip(module.params, flat_args):
        value = as_instr(a)
        if value.dtype != p.dtype:
            value = as_instr(a, dtype=p.dtype)
        if value.shape != p.shape:
            raise errors.ShapeError(
                f"{module.name}: argument {p.attrs['index']} has shape {value.shape}, "
                f"expected {p.shape}")
        env[p] = value
    for instr in module.instructions:
        if instr not in env:
            # A PARAMETER that is not the module's own is a free (captured) value.
            env[instr] = instr if instr.op is Op.PARAMETER else rebuild(
                instr, [env[o] for o in instr.operands])
    return [env[r] for r in module.results]


def depends_on_params(module):
    """The set of instructions of `module` that depend on one of its own parameters;
    everything else is a constant as far as a transform is concerned."""
    live = set(module.params)
    for instr in module.instructions:
        if instr.op is not Op.PARAMETER and any(o in live for o in instr.operands):
            live.add(instr)
    return live
