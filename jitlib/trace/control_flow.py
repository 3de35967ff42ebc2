"""Control flow with JAX's signatures: fori_loop, while_loop, scan, cond, switch.

Inside a trace, each function passed in (a loop's body and condition, a conditional's
branches) is traced once, as a *region*: a Module of its own whose parameters are the
carry (or the operands). Values the function reads from the enclosing trace (closures,
arguments of the jitted function) are not parameters of the user's function, so they
are found after tracing and passed in as extra operands: a region is closed, as XLA's
are. What a region computes from those values alone is computed once, outside it (the
loop-invariant part of a body runs before the loop). The region's values exist only
inside it: a tracer made there and kept outside is an escaped tracer, and writing from
a region into an array of the enclosing trace is an error at the user's line, since the
write would happen once, not once per trip.

Outside a trace these functions run plain Python over NumPy values, so the same code
works eagerly, as jax's do under `jax.disable_jit()`.

The carry keeps its types from trip to trip. A Python scalar in the initial carry is
weakly typed (NEP 50), as in JAX: where the body turns it into another dtype (a 0.0
summed with float32 arrays), the carry takes the body's dtype.
"""
import numpy as np

from jitlib import errors, tree
from jitlib.hlo import build, dtypes
from jitlib.hlo.ir import Module, toposort
from jitlib.hlo.ops import Op
from jitlib.trace.context import Trace, current_trace, result_instr
from jitlib.trace.tracer import Tracer, as_instr, is_weak


class RegionTrace(Trace):
    """The trace of one region inside an enclosing trace. Values it makes die with it;
    parameters for global arrays and host steps belong to the enclosing jit trace."""

    region = True

    def __init__(self, name, outer):
        super().__init__(name)
        self.outer = outer
        self.depth = getattr(outer, "depth", 0) + 1
        self.known = outer.known

    def new_parameter(self, *args, **kwargs):
        return self.outer.new_parameter(*args, **kwargs)

    def note_write(self, index):
        self.outer.note_write(index)

    def active(self):
        return _pushed(self)


class _pushed:
    def __init__(self, trace):
        self.trace = trace

    def __enter__(self):
        from jitlib.trace.context import _stack
        _stack().append(self.trace)
        # a region's instructions belong to its own module, not to the enclosing trace's
        # sequence of steps that the loop roller reads
        self._log = build.swap_log(None)
        return self.trace

    def __exit__(self, *exc):
        from jitlib.trace.context import _stack
        build.swap_log(self._log)
        _stack().pop()
        self.trace.live[0] = False


# -- leaves, types and carries

def _leaf_type(x, what):
    """(shape, dtype, weak) of a carry leaf: a tracer, an array or a Python scalar."""
    if isinstance(x, Tracer):
        return x.shape, x.dtype, x._weak
    if isinstance(x, (bool, int, float, complex)) and not isinstance(x, np.generic):
        arr = np.asarray(x)
        weak = True
        if isinstance(x, int) and not isinstance(x, bool):
            # a Python int carried from trip to trip: its values are not known, so (as
            # JAX does) it is taken to stay in int32's range, where int64 arithmetic is
            # Python's
            weak = _CARRIED_INT
        return (), dtypes.canonicalize(arr.dtype), weak
    try:
        arr = np.asarray(x)
        return tuple(arr.shape), dtypes.canonicalize(arr.dtype), False
    except (TypeError, ValueError):
        raise errors.JitlibTypeError(
            f"{what} is a {type(x).__name__}, not an array",
            hint="carry arrays, scalars, or tuples, lists and dicts of them") from None


_CARRIED_INT = (-(2 ** 31), 2 ** 31 - 1)


def _as_value(x, dtype):
    return as_instr(x, dtype=dtype)


class _Region:
    """A function traced on fresh parameters: its results (IR values that may reach the
    parameters and values of the enclosing trace) and their structure."""

    def __init__(self, fn, types, in_tree, name):
        """`types`: (shape, dtype, weak) per leaf of the pytree `in_tree` fn takes."""
        outer = current_trace()
        self.trace = RegionTrace(name, outer)
        self.params = [build.parameter(i, shape, dtype, f"r{self.trace.depth}_{i}")
                       for i, (shape, dtype, _) in enumerate(types)]
        with self.trace.active():
            tracers = [Tracer(p, weak=weak) for p, (_, _, weak) in zip(self.params, types)]
            out = fn(tree.unflatten(in_tree, tracers))
            flat, self.out_tree = tree.flatten(out)
            self.out_weak = [x._weak if isinstance(x, Tracer) else is_weak(x) for x in flat]
            self.results = [result_instr(x, name, i) for i, x in enumerate(flat)]
        if self.trace.call_inputs:
            raise errors.UnsupportedError(
                f"{name} draws numbers from np.random (or reads state made on the host): "
                "that happens once when jit traces it, not once per trip",
                hint="use jitlib.random with a key carried through the loop, or draw the "
                     "numbers before the loop and index them")

    @property
    def out_types(self):
        return [(r.shape, r.dtype) for r in self.results]


def _closed(regions, name, extra_params=0):
    """Close `regions` (each a _Region with the same parameters) over the values they
    read from the enclosing trace: ([Module], captured outer values). Every module
    takes its region's parameters, then one parameter per captured value."""
    params = regions[0].params
    captured, seen = [], set()
    dependent_sets = []
    for region in regions:
        dependent = set(region.params)
        for instr in toposort(region.params, region.results):
            if instr not in dependent and any(o in dependent for o in instr.operands):
                dependent.add(instr)
        dependent_sets.append(dependent)
        for instr in toposort(region.params, region.results):
            if instr in dependent and instr not in region.params:
                for o in instr.operands:
                    if o not in dependent and not _stays_inside(o) and o not in seen:
                        seen.add(o)
                        captured.append(o)
        for r in region.results:
            if r not in dependent and not _stays_inside(r) and r not in seen:
                seen.add(r)
                captured.append(r)
    depth = regions[0].trace.depth
    inner = [build.parameter(len(params) + j, c.shape, c.dtype, f"r{depth}_{len(params) + j}")
             for j, c in enumerate(captured)]
    modules = []
    for k, (region, dependent) in enumerate(zip(regions, dependent_sets)):
        value_of = dict(zip(captured, inner))
        value_of.update(zip(region.params, region.params))
        with build.locations(lambda: None):
            for instr in toposort(region.params, region.results):
                if instr in value_of or instr not in dependent:
                    continue
                operands = [value_of.get(o, o) for o in instr.operands]
                value_of[instr] = build.make(instr.op, operands, instr.attrs, loc=instr.loc)
        results = [value_of.get(r, r) for r in region.results]
        label = name if len(regions) == 1 else f"{name}{k}"
        modules.append(Module(label, list(params) + inner, results))
    return modules, captured


def _stays_inside(instr):
    """A value made of constants alone, cheaper to remake inside a region than to pass."""
    while instr.op is Op.BROADCAST_IN_DIM:
        instr = instr.operands[0]
    return instr.op is Op.IOTA or (instr.op is Op.CONSTANT and instr.size <= 1)


def _multi(instr, n):
    """The n values of a control-flow instruction."""
    if n == 1:
        return [instr]
    return [build.make(Op.GET_OUTPUT, [instr], dict(index=i)) for i in range(n)]


def _mismatch(what, path, got, want):
    return errors.JitlibTypeError(
        f"{what}: {path} is {_type_text(got)} after one trip but {_type_text(want)} "
        "before it; a loop's carry keeps its shape and dtype",
        hint="convert the initial value to the type the body gives (np.float32(0), "
             "np.zeros(shape, dtype)), or give the body's result the carry's type")


def _type_text(t):
    shape, dtype = t[:2]
    return f"{dtypes.name(dtype)}[{','.join(map(str, shape))}]"


def _carry_types(init_flat, what):
    return [_leaf_type(x, f"{what}'s initial value") for x in init_flat]


def _settle_carry(types, trace_once, what, names):
    """Trace the body with carry `types`; where a weakly typed scalar comes back with
    another dtype, take that dtype and trace again (JAX's rule). Returns the region."""
    for _ in range(2):
        region = trace_once(types)
        out = region.out_types
        if len(out) != len(types):
            raise errors.JitlibTypeError(
                f"{what} returns {len(out)} arrays for a carry of {len(types)}",
                hint="return the carry with the structure it came in with")
        changed = False
        new_types = []
        for (shape, dtype, weak), (oshape, odtype), name in zip(types, out, names):
            if (shape, dtype) != (oshape, odtype):
                if weak and shape == oshape == () or weak and shape == oshape:
                    new_types.append((shape, odtype, False))
                    changed = True
                    continue
                raise _mismatch(what, name, (oshape, odtype), (shape, dtype))
            new_types.append((shape, dtype, weak))
        if not changed:
            return region, types
        types = new_types
    raise _mismatch(what, names[0], out[0], types[0])


def _leaf_names(count, label):
    return [f"{label} leaf {i}" for i in range(count)] if count > 1 else [label]


def _tracing(*values):
    if current_trace() is not None:
        return True
    return any(isinstance(v, Tracer) for v in tree.leaves(values))


def _wrap(values, weak=None):
    weak = weak or [False] * len(values)
    return [Tracer(v, weak=w) for v, w in zip(values, weak)]


# -- while_loop and fori_loop

def while_loop(cond_fun, body_fun, init_val):
    """`val = init_val; while cond_fun(val): val = body_fun(val)`, as one loop in the
    IR (jax.lax.while_loop). `cond_fun` returns a bool scalar."""
    if not _tracing(init_val):
        val = init_val
        while bool(cond_fun(val)):
            val = body_fun(val)
        return val
    return _loop(lambda val: cond_fun(val), lambda val: body_fun(val), init_val, None,
                 "while_loop's body")


def fori_loop(lower, upper, body_fun, init_val):
    """`val = init_val; for i in range(lower, upper): val = body_fun(i, val)`, as one
    loop in the IR (jax.lax.fori_loop). With int bounds the trip count is known, which
    reverse-mode differentiation needs."""
    if not _tracing(lower, upper, init_val):
        val = init_val
        for i in range(int(lower), int(upper)):
            val = body_fun(i, val)
        return val
    static = all(isinstance(b, (int, np.integer)) and not isinstance(b, bool)
                 for b in (lower, upper))
    trips = max(0, int(upper) - int(lower)) if static else None
    if static:
        counter = (lower, max(int(lower), int(upper) - 1))
        i0 = build.constant(np.int64(lower))
        end = int(upper)
    else:
        counter = _CARRIED_INT
        i0 = as_instr(lower, dtype=dtypes.INDEX)
        end = Tracer(as_instr(upper, dtype=dtypes.INDEX))

    def cond(state):
        i, _ = state
        return i < end

    def body(state):
        i, val = state
        return i + 1, body_fun(i, val)

    i_value = Tracer(i0, weak=counter)
    return _loop(cond, body, (i_value, init_val), trips, "fori_loop's body")[1]


def _loop(cond_fun, body_fun, init_val, trips, what):
    init_flat, in_tree = tree.flatten(init_val)
    types = _carry_types(init_flat, what)
    names = _leaf_names(len(init_flat), "the carry")

    def trace_body(types):
        return _Region(body_fun, types, in_tree, "body")

    body, types = _settle_carry(types, trace_body, what, names)
    if body.out_tree != in_tree:
        raise errors.JitlibTypeError(
            f"{what} returns a {body.out_tree} for a carry of {in_tree}",
            hint="return the carry with the structure it came in with")
    cond = _Region(cond_fun, types, in_tree, "cond")
    if len(cond.results) != 1 or cond.results[0].shape != ():
        raise errors.JitlibTypeError(
            "a while_loop's condition must return one scalar (a bool), got "
            + ", ".join(_type_text(t) for t in cond.out_types),
            hint="reduce it: np.all(...), np.any(...), or compare a scalar")
    if cond.results[0].dtype != dtypes.BOOL:
        cond.results[0] = build.make(Op.COMPARE, [cond.results[0], build.constant(
            np.zeros((), cond.results[0].dtype))], dict(direction="NE"))
    (cond_module, body_module), captured = _closed_pair(cond, body)
    init = [_as_value(x, dtype) for x, (_, dtype, _) in zip(init_flat, types)]
    attrs = dict(cond=cond_module, body=body_module)
    if trips is not None:
        attrs["trip_count"] = trips
    loop = build.make(Op.WHILE, init + captured, attrs)
    values = _multi(loop, len(init) + len(captured))[:len(init)]
    out_weak = [w if isinstance(w, tuple) else False for (_, _, w) in types]
    return tree.unflatten(in_tree, _wrap(values, out_weak))


def _closed_pair(cond, body):
    """cond and body closed over the same captured values; the body passes them on."""
    (cond_module, body_module), captured = _closed([cond, body], "loop")
    n = len(body.params)
    passed = body_module.params[n:]
    body_module = Module("body", body_module.params,
                         list(body_module.results) + list(passed))
    cond_module = Module("cond", cond_module.params, cond_module.results)
    return (cond_module, body_module), captured


# -- scan

def scan(f, init, xs=None, length=None, reverse=False):
    """jax.lax.scan: `carry, y = f(carry, x)` for each x along xs' leading axis; returns
    (final carry, the ys stacked). As one loop in the IR, with its trip count known."""
    xs_flat, xs_tree = tree.flatten(xs)
    lengths = {int(np.shape(x)[0]) for x in xs_flat if np.ndim(x) > 0}
    if any(np.ndim(x) == 0 for x in xs_flat):
        raise errors.ShapeError("scan's xs must be arrays with a leading axis to scan over")
    if length is not None:
        lengths.add(int(length))
    if len(lengths) != 1:
        raise errors.ShapeError(
            "scan needs one length: " + (f"xs have leading axes {sorted(lengths)}"
                                         if lengths else "give length= when xs is None"))
    n = lengths.pop()
    if not _tracing(init, xs):
        carry, ys = init, []
        order = range(n - 1, -1, -1) if reverse else range(n)
        for k in order:
            x = tree.unflatten(xs_tree, [a[k] for a in xs_flat]) if xs is not None else None
            carry, y = f(carry, x)
            ys.append(y)
        if reverse:
            ys.reverse()
        if not ys:
            return carry, None
        flat_ys, ys_tree = zip(*[tree.flatten(y) for y in ys])
        stacked = [np.stack(col) for col in zip(*flat_ys)]
        return carry, tree.unflatten(ys_tree[0], stacked)

    def one_step(carry, x):
        out = f(carry, x)
        if not (isinstance(out, tuple) and len(out) == 2):
            raise errors.JitlibTypeError("scan's function must return a pair (carry, y)")
        return out

    # a first trace, thrown away, gives the ys' types (their buffers start the loop)
    x0 = tree.unflatten(xs_tree, [Tracer(as_instr(a))[0] for a in xs_flat]) \
        if xs is not None else None
    probe = _Region(lambda c: one_step(c, x0)[1], _carry_types(tree.leaves(init), "scan"),
                    tree.structure(init), "scan's function")
    ys_tree = probe.out_tree
    import jitlib.numpy as jnp
    ys0 = tree.unflatten(ys_tree, [jnp.zeros((n,) + shape, dtype)
                                   for shape, dtype in probe.out_types])

    def body(k, state):
        carry, ys = state
        index = as_instr(n - 1 - k if reverse else k)
        # the step's row read and written at the counter itself: it lies in [0, n), so
        # no wrapping of a negative index (a kernel a trip on the GPU)
        x = tree.unflatten(xs_tree, [Tracer(build.gather(as_instr(a), index, 0))
                                     for a in xs_flat]) if xs is not None else None
        carry, y = one_step(carry, x)
        y_flat = tree.leaves(y)
        ys_flat = tree.leaves(ys)
        new = [Tracer(build.scatter(buf.instr, index,
                                    build.convert(as_instr(value), buf.dtype), 0, mode="set"))
               for buf, value in zip(ys_flat, y_flat)]
        return carry, tree.unflatten(ys_tree, new)

    carry, ys = fori_loop(0, n, body, (init, ys0))
    return carry, (ys if probe.results else None)


# -- cond and switch

def cond(pred, true_fun, false_fun, *operands):
    """`true_fun(*operands) if pred else false_fun(*operands)`, as one conditional in
    the IR (jax.lax.cond). Only the branch taken runs."""
    if not _tracing(pred, operands):
        return true_fun(*operands) if bool(pred) else false_fun(*operands)
    pred_value = as_instr(pred)
    if pred_value.shape != ():
        raise errors.ShapeError(
            f"cond's predicate must be a scalar, got {_type_text((pred_value.shape, pred_value.dtype))}",
            hint="reduce it (np.any, np.all), or use np.where for an elementwise choice")
    if pred_value.dtype != dtypes.BOOL:
        pred_value = build.make(Op.COMPARE, [pred_value, build.constant(
            np.zeros((), pred_value.dtype))], dict(direction="NE"))
    return _branches(pred_value, [false_fun, true_fun], operands, "cond")


def switch(index, branches, *operands):
    """`branches[index](*operands)`, the index clamped into range, as one conditional in
    the IR (jax.lax.switch)."""
    branches = list(branches)
    if not branches:
        raise errors.JitlibTypeError("switch needs at least one branch")
    if not _tracing(index, operands):
        k = min(max(int(index), 0), len(branches) - 1)
        return branches[k](*operands)
    value = as_instr(index)
    if value.shape != () or not (dtypes.is_integer(value.dtype) or value.dtype == dtypes.BOOL):
        raise errors.JitlibTypeError(
            f"switch's index must be an integer scalar, got "
            f"{_type_text((value.shape, value.dtype))}")
    return _branches(build.convert(value, dtypes.INDEX), branches, operands, "switch")


def _branches(index, functions, operands, what):
    flat, in_tree = tree.flatten(tuple(operands))
    types = _carry_types(flat, f"{what}'s operands")
    traced = []
    for k, fn in enumerate(functions):
        traced.append(_Region(lambda args, fn=fn: fn(*args), types, in_tree, f"branch{k}"))
    first = traced[0]
    for k, region in enumerate(traced[1:], 1):
        if region.out_tree != first.out_tree or region.out_types != first.out_types:
            raise errors.JitlibTypeError(
                f"{what}'s branches return different types: branch 0 gives "
                f"{', '.join(map(_type_text, first.out_types))}, branch {k} "
                f"{', '.join(map(_type_text, region.out_types))}",
                hint="make every branch return the same structure, shapes and dtypes")
    modules, captured = _closed(traced, what)
    args = [_as_value(x, dtype) for x, (_, dtype, _) in zip(flat, types)]
    instr = build.make(Op.CONDITIONAL, [index] + args + captured,
                       dict(branches=tuple(modules)))
    values = _multi(instr, len(first.results))
    weak = [w if isinstance(w, tuple) or w is True else False for w in first.out_weak]
    return tree.unflatten(first.out_tree, _wrap(values, weak))
