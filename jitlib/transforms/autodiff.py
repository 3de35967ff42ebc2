"""The Python-level derivatives: jvp, vjp, grad, value_and_grad, jacfwd, jacrev, hessian.

Each one traces the user's function into a Module (core.trace), rewrites it with
jvp_module or vjp_module, and runs the result with core.call: inlined into the
active trace under jit or another transform (so they compose: jit(grad(f)),
grad(grad(f)), jvp(grad(f), ...)), evaluated by the reference interpreter otherwise.

Only floating-point leaves are differentiated. As in JAX, grad and the Jacobians
refuse integer or bool inputs (JitlibTypeError); jvp and vjp accept them and give
them zero (co)tangents of their own dtype, where JAX would give float0 zeros.
"""
from typing import Any, Callable, Literal, Sequence, overload

import numpy as np

from jitlib import errors, tree
from jitlib.hlo import build, dtypes
from jitlib.trace.tracer import Tracer, as_instr
from jitlib.transforms import core
from jitlib.transforms.batching_api import vmap
from jitlib.transforms.jvp import jvp_module
from jitlib.transforms.vjp import vjp_module

__all__ = ["jvp", "vjp", "grad", "value_and_grad", "jacfwd", "jacrev", "hessian"]


# -- shared plumbing

class _Outputs:
    """Filled in while tracing: the structure of a function's output and aux value."""
    out_tree: Any = None
    aux_tree: Any = None


def _flat_outputs(fun, has_aux):
    """`fun` returning one flat list, output leaves then aux leaves; the structures
    are left on the returned _Outputs."""
    shapes = _Outputs()

    def flat_fun(*args):
        result = fun(*args)
        if has_aux:
            if not (isinstance(result, (tuple, list)) and len(result) == 2):
                raise errors.JitlibTypeError(
                    f"{_name(fun)} was given has_aux=True, so it must return a pair "
                    f"(output, aux), not a {type(result).__name__}")
            out, aux = result
        else:
            out, aux = result, None
        out_leaves, shapes.out_tree = tree.flatten(out)
        aux_leaves, shapes.aux_tree = tree.flatten(aux)
        return list(out_leaves) + list(aux_leaves)
    return flat_fun, shapes


def _name(fun):
    return getattr(fun, "__name__", None) or type(fun).__name__


def _argnums(argnums, nargs, fun):
    many = isinstance(argnums, (tuple, list))
    nums = tuple(argnums) if many else (argnums,)
    for n in nums:
        if not isinstance(n, (int, np.integer)) or not -nargs <= n < nargs:
            raise errors.JitlibTypeError(
                f"argnums={argnums!r} does not name arguments of {_name(fun)}, which was "
                f"called with {nargs} positional arguments")
    return tuple(int(n) % nargs for n in nums), many


def _leaf_ranges(args):
    """For each positional argument, (its leaves' range in the flattened args, its tree)."""
    ranges, start = [], 0
    for a in args:
        leaves, td = tree.flatten(a)
        ranges.append((range(start, start + len(leaves)), td))
        start += len(leaves)
    return ranges


def _float_leaves(module, ranges, nums, what):
    """The parameter indices of the arguments `nums`, all of which must be floats."""
    wrt = []
    for n in nums:
        for i in ranges[n][0]:
            p = module.params[i]
            if not dtypes.is_inexact(p.dtype):
                raise errors.JitlibTypeError(
                    f"{what} requires floating-point or complex inputs, but argument {n} has dtype "
                    f"{p.dtype}",
                    hint="convert it with .astype(np.float32), or leave it out of argnums; "
                         "jitlib.vjp and jitlib.jvp accept integer inputs")
            wrt.append(i)
    return wrt


def _zero_like_param(p):
    return np.zeros(p.shape, p.dtype)


def _check_like(values, params, what):
    for v, p in zip(values, params):
        if tuple(np.shape(v)) != p.shape:
            raise errors.ShapeError(
                f"{what} has shape {tuple(np.shape(v))}, but its primal has shape {p.shape}")


_Fun = Callable[..., Any]
_Argnums = int | Sequence[int]


# -- forward mode

@overload
def jvp(fun: _Fun, primals: Sequence[Any], tangents: Sequence[Any],
        has_aux: Literal[False] = False) -> tuple[Any, Any]: ...
@overload
def jvp(fun: _Fun, primals: Sequence[Any], tangents: Sequence[Any],
        has_aux: Literal[True]) -> tuple[Any, Any, Any]: ...
def jvp(fun: _Fun, primals: Sequence[Any], tangents: Sequence[Any],
        has_aux: bool = False) -> tuple[Any, ...]:
    """(fun(*primals), the directional derivative of fun at primals along tangents).

    `primals` and `tangents` are tuples (or lists) of the same structure; with
    has_aux, fun returns (output, aux) and the result is (output, tangent, aux).

    >>> import numpy as np, jitlib
    >>> jitlib.jvp(lambda x: x ** 3, (np.array([1.0, 2.0]),), (np.array([1.0, 0.5]),))
    (array([1., 8.]), array([3., 6.]))
    """
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise errors.JitlibTypeError("jvp takes primals and tangents as tuples or lists",
                                     hint="write jitlib.jvp(f, (x,), (t,))")
    flat_fun, shapes = _flat_outputs(fun, has_aux)
    traced = core.trace(flat_fun, tuple(primals), name=_name(fun))
    flat_primals = tree.leaves(tuple(primals))
    flat_tangents, t_tree = tree.flatten(tuple(tangents))
    if t_tree != traced.in_tree:
        raise errors.JitlibTypeError(
            f"jvp: tangents have structure {t_tree}, primals {traced.in_tree}",
            hint="pass one tangent per primal, in the same containers")
    module = traced.module
    _check_like(flat_tangents, module.params, "a tangent")
    wrt = [i for i, p in enumerate(module.params) if dtypes.is_inexact(p.dtype)]
    results = core.call(jvp_module(module, wrt),
                        list(flat_primals) + [flat_tangents[i] for i in wrt])
    n_out, n_res = shapes.out_tree.num_leaves, len(module.results)
    out = tree.unflatten(shapes.out_tree, results[:n_out])
    tangent = tree.unflatten(shapes.out_tree, results[n_res:n_res + n_out])
    if has_aux:
        return out, tangent, tree.unflatten(shapes.aux_tree, results[n_out:n_res])
    return out, tangent


# -- reverse mode

_VjpFn = Callable[[Any], tuple[Any, ...]]


@overload
def vjp(fun: _Fun, *primals: Any, has_aux: Literal[False] = False) -> tuple[Any, _VjpFn]: ...
@overload
def vjp(fun: _Fun, *primals: Any, has_aux: Literal[True]) -> tuple[Any, _VjpFn, Any]: ...
def vjp(fun: _Fun, *primals: Any, has_aux: bool = False) -> tuple[Any, ...]:
    """(fun(*primals), vjp_fn): vjp_fn(cotangent) pulls a cotangent of the output back
    to a tuple of cotangents, one per primal. With has_aux: (output, vjp_fn, aux).

    >>> import numpy as np, jitlib
    >>> out, vjp_fn = jitlib.vjp(lambda x, y: x * y, np.array([1.0, 2.0]), np.array([3.0, 4.0]))
    >>> vjp_fn(np.ones(2))
    (array([3., 4.]), array([1., 2.]))
    """
    flat_fun, shapes = _flat_outputs(fun, has_aux)
    traced = core.trace(flat_fun, primals, name=_name(fun))
    module = traced.module
    flat_primals = tree.leaves(tuple(primals))
    results = core.call(module, flat_primals)
    n_out = shapes.out_tree.num_leaves
    out_tree = shapes.out_tree
    wrt = [i for i, p in enumerate(module.params) if dtypes.is_inexact(p.dtype)]
    seeded = [i for i in range(n_out) if dtypes.is_inexact(module.results[i].dtype)]
    backward = vjp_module(module, wrt, seeded)

    def vjp_fn(cotangent: Any) -> tuple[Any, ...]:
        flat_ct, ct_tree = tree.flatten(cotangent)
        if ct_tree != out_tree:
            raise errors.JitlibTypeError(
                f"the cotangent has structure {ct_tree}, but {_name(fun)}'s output has "
                f"structure {out_tree}", hint="pass one cotangent per output leaf")
        _check_like(flat_ct, module.results, "a cotangent")
        grads = core.call(backward, list(flat_primals) + [flat_ct[i] for i in seeded])
        grads = dict(zip(wrt, grads[len(module.results):]))
        flat = [grads[i] if i in grads else _zero_like_param(p)
                for i, p in enumerate(module.params)]
        cotangents: tuple[Any, ...] = tree.unflatten(traced.in_tree, flat)
        return cotangents

    out = tree.unflatten(out_tree, results[:n_out])
    if has_aux:
        return out, vjp_fn, tree.unflatten(shapes.aux_tree, results[n_out:])
    return out, vjp_fn


def value_and_grad(fun: _Fun, argnums: _Argnums = 0,
                   has_aux: bool = False) -> Callable[..., tuple[Any, Any]]:
    """A function returning (fun(*args), the gradient of fun's scalar output with
    respect to the arguments `argnums`); with has_aux, ((output, aux), gradient).

    >>> import numpy as np, jitlib
    >>> jitlib.value_and_grad(lambda x: np.sum(x ** 2))(np.array([1.0, 2.0]))
    (array(5.), array([2., 4.]))
    """

    def value_and_grad_fun(*args: Any, **kwargs: Any) -> tuple[Any, Any]:
        nums, many = _argnums(argnums, len(args), fun)
        flat_fun, shapes = _flat_outputs(_with_kwargs(fun, kwargs), has_aux)
        traced = core.trace(flat_fun, args, name=_name(fun))
        module = traced.module
        ranges = _leaf_ranges(args)
        wrt = _float_leaves(module, ranges, nums, "grad")
        out = _scalar_output(module, shapes, fun)
        backward = vjp_module(module, wrt, seeded=[0])
        results = core.call(backward, tree.leaves(tuple(args)) + [np.ones((), out.dtype)])
        n_res = len(module.results)
        grads = dict(zip(wrt, results[n_res:]))
        per_arg = tuple(tree.unflatten(ranges[n][1], [grads[i] for i in ranges[n][0]])
                        for n in nums)
        value = results[0]
        if has_aux:
            value = (value, tree.unflatten(shapes.aux_tree, results[1:n_res]))
        return value, per_arg if many else per_arg[0]

    value_and_grad_fun.__name__ = f"value_and_grad_{_name(fun)}"
    return value_and_grad_fun


def grad(fun: _Fun, argnums: _Argnums = 0, has_aux: bool = False) -> _Fun:
    """The gradient of fun's scalar output with respect to the arguments `argnums`
    (an int, or a tuple giving a tuple of gradients); with has_aux, (gradient, aux).

    >>> import numpy as np, jitlib
    >>> loss = lambda w, x: np.mean((x @ w) ** 2)
    >>> jitlib.grad(loss)(np.array([1.0, -1.0]), np.array([[1.0, 2.0], [3.0, 5.0]]))
    array([ -7., -12.])
    >>> jitlib.jit(jitlib.grad(loss, argnums=(0, 1)))(np.ones(2), np.eye(2))[1]
    array([[1., 1.],
           [1., 1.]])
    """
    both = value_and_grad(fun, argnums, has_aux)

    def grad_fun(*args: Any, **kwargs: Any) -> Any:
        value, g = both(*args, **kwargs)
        return (g, value[1]) if has_aux else g

    grad_fun.__name__ = f"grad_{_name(fun)}"
    return grad_fun


def _with_kwargs(fun, kwargs):
    if not kwargs:
        return fun

    def bound(*args):
        return fun(*args, **kwargs)
    bound.__name__ = _name(fun)
    return bound


def _scalar_output(module, shapes, fun):
    if shapes.out_tree.num_leaves != 1:
        raise errors.JitlibTypeError(
            f"grad needs {_name(fun)} to return one scalar, but it returned "
            f"{shapes.out_tree.num_leaves} arrays ({shapes.out_tree})",
            hint="use jitlib.vjp or jitlib.jacrev for several outputs, or has_aux=True "
                 "to return extra values")
    out = module.results[0]
    if out.shape != ():
        raise errors.JitlibTypeError(
            f"grad is defined only for scalar-output functions; {_name(fun)} returned "
            f"shape {out.shape}",
            hint="reduce the output (np.sum, np.mean), or use jitlib.jacrev / jitlib.vjp")
    if not dtypes.is_float(out.dtype):
        raise errors.JitlibTypeError(
            f"grad requires a floating-point output, but {_name(fun)} returned "
            f"{out.dtype}",
            hint="for a complex output, differentiate its real part (np.real(f(z))), or "
                 "use jitlib.vjp with a complex cotangent, as JAX does")
    return out


# -- Jacobians

def jacfwd(fun: _Fun, argnums: _Argnums = 0, has_aux: bool = False) -> _Fun:
    """The Jacobian of fun by forward mode: a jvp vmapped over the input's basis. Each
    output leaf maps to arrays of shape out.shape + in.shape (per argnums argument).

    >>> import numpy as np, jitlib
    >>> jitlib.jacfwd(lambda x: x[:2] * x[1:])(np.array([1.0, 2.0, 3.0]))
    array([[2., 1., 0.],
           [0., 3., 2.]])
    """
    jacobian: _Fun = _jacobian(fun, argnums, has_aux, forward=True)
    return jacobian


def jacrev(fun: _Fun, argnums: _Argnums = 0, has_aux: bool = False) -> _Fun:
    """The Jacobian of fun by reverse mode: a vjp vmapped over the output's basis.

    >>> import numpy as np, jitlib
    >>> jitlib.jacrev(lambda x: np.cumsum(x))(np.array([1.0, 2.0]))
    array([[1., 0.],
           [1., 1.]])
    """
    jacobian: _Fun = _jacobian(fun, argnums, has_aux, forward=False)
    return jacobian


def hessian(fun: _Fun, argnums: _Argnums = 0, has_aux: bool = False) -> _Fun:
    """The Hessian of a scalar function: jacfwd of jacrev, as in JAX.

    >>> import numpy as np, jitlib
    >>> jitlib.hessian(lambda x: x[0] ** 2 * x[1])(np.array([1.0, 3.0]))
    array([[6., 2.],
           [2., 0.]])
    """
    return jacfwd(jacrev(fun, argnums, has_aux), argnums, has_aux)


def _jacobian(fun, argnums, has_aux, forward):
    what = "jacfwd" if forward else "jacrev"

    def jacobian_fun(*args):
        nums, many = _argnums(argnums, len(args), fun)
        flat_fun, shapes = _flat_outputs(fun, has_aux)
        ranges = _leaf_ranges(args)

        def blocks(*traced_args):
            # Traced as one Module, so an eager call evaluates it once.
            traced = core.trace(flat_fun, traced_args, name=_name(fun))
            wrt = _float_leaves(traced.module, ranges, nums, what)
            flat = tree.leaves(tuple(traced_args))
            n_out = shapes.out_tree.num_leaves
            pieces = (_forward_blocks if forward else _reverse_blocks)(
                traced.module, flat, wrt, n_out)
            aux = core.call(traced.module, flat)[n_out:]
            return [pieces[o][i] for o in range(n_out) for i in wrt] + list(aux)

        outer = core.trace(blocks, args, name=f"{what}_{_name(fun)}")
        results = core.call(outer.module, tree.leaves(tuple(args)))
        n_out = shapes.out_tree.num_leaves
        n_wrt = sum(len(ranges[n][0]) for n in nums)
        per_out = []
        for o in range(n_out):
            row = iter(results[o * n_wrt:(o + 1) * n_wrt])
            per_arg = tuple(tree.unflatten(ranges[n][1], [next(row) for _ in ranges[n][0]])
                            for n in nums)
            per_out.append(per_arg if many else per_arg[0])
        jac = tree.unflatten(shapes.out_tree, per_out)
        if has_aux:
            return jac, tree.unflatten(shapes.aux_tree, results[n_out * n_wrt:])
        return jac

    jacobian_fun.__name__ = f"{what}_{_name(fun)}"
    return jacobian_fun


def _basis(shape, dtype):
    """The one-hot arrays of `shape` stacked along a new leading axis, in row-major order."""
    size = int(np.prod(shape, dtype=np.int64))
    return np.eye(size, dtype=dtype).reshape((size,) + tuple(shape))


def _forward_blocks(module, flat, wrt, n_out):
    """J[o][i] (out_o.shape + in_i.shape): a jvp of each input i, vmapped over the
    basis of its tangent space, the batch axis landing last."""
    pieces: list[dict[int, Any]] = [{} for _ in range(n_out)]
    n_res = len(module.results)
    for i in wrt:
        p = module.params[i]
        pushed = jvp_module(module, [i])

        def push(tangent):
            return core.call(pushed, list(flat) + [tangent])[n_res:n_res + n_out]

        columns = _mapped(push, _basis(p.shape, p.dtype), module.results[:n_out], -1)
        for o, column in enumerate(columns):
            shape = module.results[o].shape + p.shape
            pieces[o][i] = Tracer(build.reshape(as_instr(column), shape))
    return pieces


def _reverse_blocks(module, flat, wrt, n_out):
    """J[o][i] (out_o.shape + in_i.shape): a vjp of each output o, vmapped over the
    basis of its cotangent space."""
    pieces: list[dict[int, Any]] = [{} for _ in range(n_out)]
    n_res = len(module.results)
    for o in range(n_out):
        out = module.results[o]
        if not dtypes.is_float(out.dtype):
            for i in wrt:
                p = module.params[i]
                pieces[o][i] = Tracer(build.full(0, out.shape + p.shape, p.dtype))
            continue
        pulled = vjp_module(module, wrt, [o])

        def pull(cotangent):
            return core.call(pulled, list(flat) + [cotangent])[n_res:]

        rows = _mapped(pull, _basis(out.shape, out.dtype), [module.params[i] for i in wrt], 0)
        for i, row in zip(wrt, rows):
            pieces[o][i] = Tracer(build.reshape(as_instr(row), out.shape + module.params[i].shape))
    return pieces


def _mapped(fn, basis, likes, out_axis):
    """vmap(fn)(basis), stacked at `out_axis`; zeros shaped like `likes` when the basis
    is empty (there is nothing to map over)."""
    if len(basis) == 0:
        return [Tracer(build.full(0, like.shape + (0,) if out_axis == -1 else (0,) + like.shape,
                                  like.dtype)) for like in likes]
    return vmap(fn, out_axes=out_axis)(basis)
