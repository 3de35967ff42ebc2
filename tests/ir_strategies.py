"""Hypothesis strategies for random, well-typed IR modules, and inputs to run them on.

    modules(ops=None, dtypes=None)         -> Module (with source locations)
    programs(ops=None, dtypes=None)        -> (Module, [one np.ndarray per parameter])
    fused_modules(...), fused_programs(...) -> the same, cut into fusions by fusions_of
    fusions_of(module)                     -> `module` cut into fusions
    unfuse(module)                         -> `module` with its fusions inlined

A module grows step by step: each step applies an op from `ops` (every op but FUSION and
GET_OUTPUT by default) to values made so far or to fresh leaves: parameters always,
constants and iotas when `ops` allows them. Its results are the values no other
instruction uses, so every step is reachable. Everything is built with
`jitlib.hlo.build`; parameters are named p0, p1... When `ops` names FUSION or GET_OUTPUT,
a step may build a kernel: a small random body over the other ops of `ops` (all ops when
there are none), whose results become values in the pool (GET_OUTPUT's kernels have two or
more results).

fusions_of cuts a module's topological order into consecutive chunks, each a convex group
of instructions, and makes each chunk one fusion: its inputs are the values it uses from
outside, its outputs those used outside or returned (in a random order; several make a
multi-output fusion). Parameters, and now and then constants, stay at the top level.

`dtypes` restricts the element types of data values. Operands that must be of another
kind are made anyway: bool predicates and convert sources, integer indices and starts
(the integer dtypes of `dtypes` when it has any, else i32/i64), argmax's index dtype.

modules() draws constants of any bit pattern (subnormals, NaN, inf, -0.0) for the text
format. programs() is for running: its constants are halves and specials (NaN, inf,
-0.0, no subnormals), and it steers clear of corners where backends are likely to
disagree: float-to-integer converts read bounded leaves (no NaN, no overflow), integer
pow has exponents in [0, 3], gather never reads an empty axis. Inputs come from a NumPy
generator seeded by hypothesis: gather indices are in range; scatter indices may be one
past either end (they are dropped) and dynamic_slice starts one past (they are clamped).
"""
import math

import numpy as np
from hypothesis import strategies as st

from jitlib.errors import SourceLocation
from jitlib.hlo import build
from jitlib.hlo import dtypes as D
from jitlib.hlo import ops as O
from jitlib.hlo.ir import Module, is_multi_output
from jitlib.hlo.ops import Op
from jitlib.hlo.printer import sanitize

_NONBOOL = (Op.NEG, Op.ABS, Op.SIGN, Op.SUB, Op.DIV, Op.REM, Op.POW)
# Dims to draw from; shrinking goes towards the front. About one in ten is empty.
_DIMS = (2, 1, 3, 4, 1, 2, 3, 5, 4, 0)
_FLOAT_SPECIALS = (0.0, -0.0, 1.0, -1.5, 0.1, 2.5, np.nan, np.inf, -np.inf, 1e-8, 3e38,
                   65504.0, 1e300)
_LOCS = (None, None, SourceLocation("/src/model.py", 12, "layernorm"),
         SourceLocation("C:\\odd dir\\\"q\".py", 3, "<lambda>"),
         SourceLocation("/tmp/ünï cödé.py", 7000, "f (x)"))


def accepts(op, dtype) -> bool:
    """Whether `op` takes data operands of `dtype`."""
    if op in O.COMPLEX_PARTS or op in O.COMPLEX_ONLY or op is Op.FFT:
        return False   # random modules are real: complex values have tests of their own
    if op in O.FLOAT_ONLY:
        return D.is_float(dtype)
    if op in O.BITWISE or op in (Op.REDUCE_AND, Op.REDUCE_OR):
        return not D.is_float(dtype)
    if op in _NONBOOL:
        return not D.is_bool(dtype)
    if op is Op.IOTA:
        return not D.is_bool(dtype)
    return True


def _usable(op, dts):
    if op in O.KERNEL:
        return True   # a body can always be made of ops that take dts
    if op is Op.CONVERT:
        return len(set(dts) | {D.BOOL}) > 1
    return any(accepts(op, dt) for dt in dts)


def _setup(ops, dtypes):
    dts = tuple(D.REAL if dtypes is None else (D.canonicalize(d) for d in dtypes))
    if not dts:
        raise ValueError("dtypes is empty")
    # linear algebra is left out by default: LAPACK builds may pivot and sign factors
    # differently on arbitrary inputs (tests/trace/test_linalg.py checks it on fit ones);
    # collectives always: they need the devices of a pmap, a single-device program has none
    plain = tuple(op for op in Op
                  if op not in O.KERNEL | O.CONTROL | O.LINALG | O.COLLECTIVE)
    chosen = plain if ops is None else tuple(
        Op(op) for op in ops if Op(op) not in O.COLLECTIVE)
    usable = tuple(op for op in chosen if _usable(op, dts))
    if not usable:
        raise ValueError(f"none of the ops {[str(o) for o in chosen]} takes dtypes "
                         f"{[D.name(d) for d in dts]}")
    leaves = {op for op in (Op.CONSTANT, Op.IOTA) if ops is None or op in chosen}
    return usable, dts, leaves


def modules(ops=None, dtypes=None, max_steps=12):
    """Random well-typed Modules (with source locations) using `ops` over `dtypes`."""
    usable, dts, leaves = _setup(ops, dtypes)

    @st.composite
    def draw_module(draw):
        gen = _Gen(draw, usable, dts, leaves, wild=True)
        with build.locations(lambda: draw(st.sampled_from(_LOCS))):
            return gen.module(max_steps)

    return draw_module()


def programs(ops=None, dtypes=None, max_steps=8):
    """Random (Module, inputs): `inputs[i]` is an ndarray for parameter i, seeded."""
    usable, dts, leaves = _setup(ops, dtypes)

    @st.composite
    def draw_program(draw):
        gen = _Gen(draw, usable, dts, leaves, wild=False)
        module = gen.module(max_steps)
        rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
        return module, [gen.example(p, rng) for p in module.params]

    return draw_program()


def fused_modules(ops=None, dtypes=None, max_steps=12):
    """`modules()`, each cut into fusions by `fusions_of`."""
    return modules(ops, dtypes, max_steps).flatmap(fusions_of)


def fused_programs(ops=None, dtypes=None, max_steps=8):
    """`programs()`, each module cut into fusions by `fusions_of`; the inputs are the same."""
    return programs(ops, dtypes, max_steps).flatmap(
        lambda program: fusions_of(program[0]).map(lambda fused: (fused, program[1])))


_KERNEL_NAMES = ("fused_0", "fused_exp_1", "k", "loc", "two words", "")


def fusions_of(module):
    """`module` with its instructions cut into random convex groups, each one fusion.

    Fusions already in `module` are inlined first (fusions do not nest).
    """
    module = unfuse(module)

    @st.composite
    def draw_fused(draw):
        new = {p: p for p in module.params}
        keep_constants = draw(st.booleans())
        todo = []
        for instr in module.instructions:
            if instr.op is Op.CONSTANT and keep_constants:
                new[instr] = instr
            elif instr not in new:
                todo.append(instr)
        # Consecutive runs of a topological order are convex: no path leaves and re-enters.
        cuts = draw(st.lists(st.booleans(), min_size=len(todo), max_size=len(todo)))
        chunks = []
        for instr, cut in zip(todo, cuts):
            if cut or not chunks:
                chunks.append([])
            chunks[-1].append(instr)
        chunk_of = {instr: k for k, chunk in enumerate(chunks) for instr in chunk}
        escapes = set(module.results) | {
            x for instr in todo for x in instr.operands if chunk_of.get(x) != chunk_of[instr]}
        for chunk in chunks:
            members = set(chunk)
            inputs = list(dict.fromkeys(
                x for instr in chunk for x in instr.operands if x not in members))
            outputs = draw(st.permutations([i for i in chunk if i in escapes]))
            name = draw(st.sampled_from(_KERNEL_NAMES))
            body = _body(sanitize(name), chunk, inputs, outputs)
            kernel = build.fusion([new[x] for x in inputs], body,
                                  draw(st.sampled_from(O.FUSION_KINDS)), name, chunk[0].loc)
            new.update(zip(outputs, build.outputs(kernel)))
        return Module(module.name, module.params, [new[r] for r in module.results])

    return draw_fused()


def _body(name, chunk, inputs, outputs):
    """A Module computing `outputs` from `inputs` by the instructions of `chunk`."""
    params = [build.parameter(i, x.shape, x.dtype) for i, x in enumerate(inputs)]
    env = dict(zip(inputs, params))
    for instr in chunk:
        env[instr] = build.make(instr.op, [env[x] for x in instr.operands], instr.attrs,
                                instr.loc)
    return Module(name, params, [env[x] for x in outputs])


def unfuse(module):
    """`module` with every fusion's body inlined: the same interned instructions as before
    `fusions_of` cut it."""
    env = {p: p for p in module.params}
    for instr in module.instructions:
        if instr in env:
            continue
        operands = [env[x] for x in instr.operands]
        if instr.op is Op.FUSION:
            body = instr.attrs["body"]
            inner = dict(zip(body.params, operands))
            for b in body.instructions:
                if b not in inner:
                    inner[b] = build.make(b.op, [inner[x] for x in b.operands], b.attrs, b.loc)
            values = [inner[r] for r in body.results]
            env[instr] = tuple(values) if is_multi_output(instr) else values[0]
        elif instr.op is Op.GET_OUTPUT:
            (value,) = operands
            multi = is_multi_output(instr.operands[0])
            env[instr] = value[instr.attrs["index"]] if multi else value
        else:
            env[instr] = build.make(instr.op, operands, instr.attrs, instr.loc)
    return Module(module.name, module.params, [env[r] for r in module.results])


def _bounds_for(dtype):
    """Float values that convert to integer `dtype` without overflow."""
    info = D.iinfo(dtype)
    return max(info.min, -100), min(info.max, 100)


class _Gen:
    """The state of one draw: parameters, the pool of values, and input bounds."""

    def __init__(self, draw, ops, dts, leaves, wild):
        self.draw, self.ops, self.dts, self.leaves = draw, ops, dts, leaves
        # Wild constants are any bit pattern (subnormals too); tame ones are halves.
        self.wild = wild
        self.index_dts = tuple(d for d in dts if D.is_integer(d)) or (
            np.dtype(np.int32), np.dtype(np.int64))
        self.params, self.bounds, self.pool, self.used = [], {}, [], set()

    # -- drawing

    def integer(self, lo, hi):
        return self.draw(st.integers(lo, hi))

    def choice(self, seq):
        return self.draw(st.sampled_from(tuple(seq)))

    def chance(self, percent):
        return self.integer(0, 99) < percent

    def dim(self, nonzero=False):
        d = self.choice(_DIMS)
        return d or (1 if nonzero else 0)

    def shape(self, min_ndim=0, max_ndim=3, nonzero=False):
        ndim = self.integer(min_ndim, max(min_ndim, max_ndim))
        return tuple(self.dim(nonzero) for _ in range(ndim))

    def subset(self, n):
        return tuple(i for i in range(n) if self.chance(50))

    def dtype(self, op=None, among=None):
        cands = [d for d in (among or self.dts) if op is None or accepts(op, d)]
        return self.choice(cands or [d for d in D.REAL if accepts(op, d)])

    # -- values

    def operand(self, op=None, shape=None, dtype=None, min_ndim=0, max_ndim=4,
                nonzero=False):
        """A value from the pool that fits, or now and then (or if none does) a new leaf."""
        def fits(v):
            return ((op is None or accepts(op, v.dtype))
                    and (shape is None or v.shape == shape)
                    and (dtype is None or v.dtype == dtype)
                    and min_ndim <= v.ndim <= max_ndim
                    and (not nonzero or 0 not in v.shape))
        cands = [v for v in self.pool if fits(v)]
        if cands and self.chance(75):
            return self.choice(cands)
        if shape is None:
            shape = self.shape(min_ndim, min(max_ndim, 3), nonzero)
        return self.leaf(shape, dtype if dtype is not None else self.dtype(op))

    def leaf(self, shape, dtype, bounds=None):
        """A new parameter, constant or iota; with `bounds`, its values lie in them."""
        kinds = ["parameter"] * 3
        if Op.CONSTANT in self.leaves:
            kinds.append("constant")
        if Op.IOTA in self.leaves and shape and bounds is None and accepts(Op.IOTA, dtype):
            kinds.append("iota")
        kind = self.choice(kinds)
        if kind == "constant":
            return self.add(self.constant(shape, dtype, bounds))
        if kind == "iota":
            return self.add(build.iota(shape, dtype, self.integer(0, len(shape) - 1)))
        return self.parameter(shape, dtype, bounds)

    def parameter(self, shape, dtype, bounds=None):
        p = build.parameter(len(self.params), shape, dtype)
        self.params.append(p)
        self.bounds[p] = bounds
        return self.add(p)

    def index(self, shape, lo, hi):
        dtype = self.choice(self.index_dts)
        if D.is_unsigned(dtype):
            lo = max(lo, 0)
        return self.leaf(shape, dtype, (lo, max(lo, hi)))

    def constant(self, shape, dtype, bounds=None):
        size = math.prod(shape)
        if bounds is not None:
            values = self.draw(st.lists(st.integers(*bounds), min_size=size, max_size=size))
            return build.constant(np.array(values).astype(dtype).reshape(shape))
        if size > 16:   # too many to draw one by one
            rng = np.random.default_rng(self.integer(0, 2**32 - 1))
            if self.wild:
                raw = rng.integers(0, 256, size * dtype.itemsize, dtype=np.uint8)
                array = raw.view(dtype) if dtype != D.BOOL else raw % 2 == 1
            else:
                array = self._tame(rng.integers(-16, 16, size, endpoint=True), dtype)
        else:
            array = np.array([self.scalar(dtype) for _ in range(size)], dtype=dtype)
        return build.constant(_canonical_nans(array.reshape(shape)))

    def scalar(self, dtype):
        if D.is_bool(dtype):
            return self.draw(st.booleans())
        if D.is_integer(dtype):
            info = D.iinfo(dtype)
            return self.draw(st.one_of(st.integers(max(info.min, -3), 3),
                                       st.integers(info.min, info.max)))
        if self.chance(50):
            with np.errstate(over="ignore"):
                return np.array(self.choice(_FLOAT_SPECIALS)).astype(dtype)
        if not self.wild:
            return self._tame(self.integer(-16, 16), dtype)
        bits = self.integer(0, 2 ** (8 * dtype.itemsize) - 1)
        return np.array(bits, dtype=f"u{dtype.itemsize}").view(dtype)

    @staticmethod
    def _tame(ints, dtype):
        # Halves for floats (exact in every float dtype), the integers as they are.
        if D.is_float(dtype):
            return (np.asarray(ints) / 2).astype(dtype)
        if D.is_bool(dtype):
            return np.asarray(ints) % 2 == 1
        return np.asarray(ints).astype(dtype)

    def add(self, instr):
        if instr not in self.pool:
            self.pool.append(instr)
        return instr

    # -- the module

    def module(self, max_steps, name="f"):
        steps = self.integer(1, max_steps)
        made = []
        for _ in range(steps):
            op = self.choice(self.ops)
            instr = _GENERATORS[op](self, op)
            self.used.update(instr.operands)
            if instr.op is Op.GET_OUTPUT:   # its fusion's inputs are used too
                self.used.update(instr.operands[0].operands)
            # A multi-output fusion is no value of its own: its get_outputs are.
            for value in build.outputs(instr) if instr.op is Op.FUSION else [instr]:
                self.used.update(value.operands)
                made.append(self.add(value))
        results = [v for v in dict.fromkeys(made) if v not in self.used] or [made[-1]]
        if self.chance(20):
            results.append(self.choice(self.pool))
        if self.chance(10):
            results.append(results[0])
        return Module(name, self.params, results)

    def kernel(self, min_results):
        """A fusion of a random body with at least `min_results` results, on pool values."""
        # Bodies are made of the other ops asked for, or of every op.
        plain = [op for op in self.ops if op not in O.KERNEL and op not in O.CONTROL] or None
        sub = _Gen(self.draw, *_setup(plain, self.dts), wild=self.wild)
        name = self.choice(_KERNEL_NAMES)
        body = sub.module(4, sanitize(name))
        results = list(body.results)
        while len(results) < min_results:
            results.append(sub.choice(sub.pool))
        # A bounded body parameter (an index, a convert's source) needs an equally bounded input.
        operands = [self.operand(shape=p.shape, dtype=p.dtype) if sub.bounds[p] is None
                    else self.leaf(p.shape, p.dtype, sub.bounds[p]) for p in body.params]
        return build.fusion(operands, Module(body.name, body.params, results),
                            self.choice(O.FUSION_KINDS), name)

    def example(self, param, rng):
        """An input for `param`: within its bounds if it has any."""
        return np.asarray(self._values(param, rng), dtype=param.dtype)

    def _values(self, param, rng):
        dtype, shape, bounds = param.dtype, param.shape, self.bounds[param]
        if bounds is not None:
            lo, hi = bounds
            if D.is_float(dtype):
                return rng.uniform(lo, hi, shape).astype(dtype)
            return rng.integers(lo, hi, shape, endpoint=True)
        if D.is_bool(dtype):
            return rng.random(shape) < 0.5
        if D.is_signed(dtype):
            return rng.integers(-10, 10, shape, endpoint=True)
        if D.is_unsigned(dtype):
            return rng.integers(0, 20, shape, endpoint=True)
        if rng.random() < 0.5:   # halves: ties for round, argmax and compare
            return rng.integers(-8, 8, shape, endpoint=True) / 2
        return rng.standard_normal(shape) * 2


def _canonical_nans(array):
    # The text form keeps NaN but not its payload or sign.
    if D.is_float(array.dtype) and np.isnan(array).any():
        array = array.copy()
        array[np.isnan(array)] = np.nan
    return array


# -- one generator per op: each returns an instruction of exactly that op

def _parameter(g, op):
    return g.parameter(g.shape(), g.dtype())


def _constant(g, op):
    shape = (g.integer(17, 80),) if g.chance(20) else g.shape()
    return g.constant(shape, g.dtype())


def _iota(g, op):
    shape = g.shape(min_ndim=1)
    return build.iota(shape, g.dtype(op), g.integer(0, len(shape) - 1))


def _unary(g, op):
    return build.unary(op, g.operand(op))


def _convert(g, op):
    among = tuple(dict.fromkeys(g.dts + (D.BOOL,)))
    target = g.dtype(among=among)
    source = g.choice([d for d in among if d != target])
    if D.is_float(source) and not D.is_float(target) and not D.is_bool(target):
        x = g.leaf(g.shape(), source, _bounds_for(target))
    else:
        x = g.operand(dtype=source)
    return build.convert(x, target)


def _binary(g, op):
    x = g.operand(op)
    if op is Op.POW and D.is_integer(x.dtype):
        y = g.leaf(x.shape, x.dtype, (0, 3))
    else:
        y = g.operand(shape=x.shape, dtype=x.dtype)
    if op is Op.COMPARE:
        return build.compare(x, y, g.choice(O.COMPARE_DIRECTIONS))
    return build.binary(op, x, y)


def _select(g, op):
    x = g.operand()
    pred = g.operand(shape=x.shape, dtype=D.BOOL)
    return build.select(pred, x, g.operand(shape=x.shape, dtype=x.dtype))


def _clamp(g, op):
    x = g.operand()
    lo, hi = (g.operand(shape=g.choice([(), x.shape]), dtype=x.dtype) for _ in range(2))
    return build.clamp(lo, x, hi)


def _broadcast_in_dim(g, op):
    x = g.operand()
    out_ndim = g.integer(x.ndim, min(x.ndim + 2, 4))
    dims = tuple(sorted(g.draw(st.permutations(range(out_ndim)))[:x.ndim]))
    shape = [g.dim() for _ in range(out_ndim)]
    for d, out in zip(x.shape, dims):
        if d != 1 or g.chance(50):
            shape[out] = d
    return build.make(op, (x,), dict(shape=tuple(shape), dims=dims))


def _reshape(g, op):
    x = g.operand()
    return build.make(op, (x,), dict(shape=_factor_shape(g, x.size)))


def _factor_shape(g, size):
    if size == 0:
        shape = list(g.shape(max_ndim=2)) + [0]
    else:
        shape = []
        for p in _prime_factors(size):
            if shape and g.chance(50):
                shape[g.integer(0, len(shape) - 1)] *= p
            else:
                shape.append(p)
        shape += [1] * g.integer(0, 1)
    return tuple(g.draw(st.permutations(shape)))


def _prime_factors(n):
    out, p = [], 2
    while n > 1:
        while n % p == 0:
            out.append(p)
            n //= p
        p += 1
    return out


def _transpose(g, op):
    x = g.operand()
    return build.make(op, (x,), dict(perm=tuple(g.draw(st.permutations(range(x.ndim))))))


def _slice(g, op):
    x = g.operand()
    start, limit, strides = [], [], []
    for d in x.shape:
        start.append(g.integer(0, d))
        limit.append(g.integer(start[-1], d))
        strides.append(g.integer(1, 3))
    return build.make(op, (x,), dict(start=tuple(start), limit=tuple(limit),
                                     strides=tuple(strides)))


def _pad(g, op):
    x = g.operand()
    value = g.operand(shape=(), dtype=x.dtype)
    low, high, interior = [], [], []
    for d in x.shape:
        interior.append(g.integer(0, 2))
        n = d + max(d - 1, 0) * interior[-1]
        low.append(g.integer(-min(n, 2), 2))
        high.append(g.integer(-min(n + low[-1], 2), 2))
    return build.pad(x, value, low, high, interior)


def _concatenate(g, op):
    x = g.operand(min_ndim=1)
    dim = g.integer(0, x.ndim - 1)
    xs = [x]
    for _ in range(g.integer(0, 2)):
        shape = x.shape[:dim] + (g.dim(),) + x.shape[dim + 1:]
        xs.append(g.operand(shape=shape, dtype=x.dtype))
    return build.make(op, xs, dict(dim=dim))


def _reverse(g, op):
    x = g.operand()
    return build.make(op, (x,), dict(dims=g.subset(x.ndim)))


def _starts(g, shape):
    return [g.index((), -1, d + 1) for d in shape]


def _dynamic_slice(g, op):
    x = g.operand()
    sizes = [g.integer(0, d) for d in x.shape]
    return build.dynamic_slice(x, _starts(g, x.shape), sizes)


def _dynamic_update_slice(g, op):
    x = g.operand()
    update = g.operand(shape=tuple(g.integer(0, d) for d in x.shape), dtype=x.dtype)
    return build.dynamic_update_slice(x, update, _starts(g, x.shape))


def _gather(g, op):
    x = g.operand(min_ndim=1, nonzero=True)
    axis = g.integer(0, x.ndim - 1)
    idx = g.index(g.shape(max_ndim=2), 0, x.shape[axis] - 1)
    return build.gather(x, idx, axis)


def _scatter(g, op):
    x = g.operand(min_ndim=1)
    axis = g.integer(0, x.ndim - 1)
    idx = g.index(g.shape(max_ndim=2), -1, x.shape[axis])
    upd = g.operand(shape=x.shape[:axis] + idx.shape + x.shape[axis + 1:], dtype=x.dtype)
    return build.scatter(x, idx, upd, axis, g.choice(O.SCATTER_MODES))


def _reduce(g, op):
    x = g.operand(op)
    return build.reduce(op, x, g.subset(x.ndim))


def _arg_reduce(g, op):
    x = g.operand(min_ndim=1, nonzero=True)
    axis = g.integer(0, x.ndim - 1)
    return build.arg_reduce(op, x, axis, g.choice(g.index_dts))


def _sort(g, op):
    x = g.operand(min_ndim=1)
    keys = [x] + [g.operand(shape=x.shape) for _ in range(g.integer(0, 2))]
    indices = len(keys) > 1 or g.chance(50)
    return build.sort(keys, g.integer(0, x.ndim - 1), indices)


def _fusion(g, op):
    return g.kernel(1)


def _get_output(g, op):
    kernel = g.kernel(2)
    return build.get_output(kernel, g.integer(0, len(kernel.attrs["body"].results) - 1))


def _while(g, op):
    """A counted loop: x <- x op x (or not x) for a few trips, cond on a carried counter."""
    x = g.operand()
    trips = g.integer(0, 3)
    i64 = D.INDEX
    px, pi = build.parameter(0, x.shape, x.dtype, "x"), build.parameter(1, (), i64, "i")
    step = build.make(Op.NOT if D.is_bool(x.dtype) else Op.ADD,
                      [px] if D.is_bool(x.dtype) else [px, px])
    cond = Module("cond", [px, pi], [build.make(
        Op.COMPARE, [pi, build.constant(np.int64(trips))], dict(direction="LT"))])
    body = Module("body", [px, pi], [step, build.make(Op.ADD, [pi, build.constant(
        np.int64(1))])])
    attrs = dict(cond=cond, body=body)
    if g.chance(50):
        attrs["trip_count"] = trips
    loop = build.make(Op.WHILE, [x, build.constant(np.int64(0))], attrs)
    return build.get_output(loop, 0)


def _conditional(g, op):
    """x, or x op x (not x), picked by a bool scalar."""
    x = g.operand()
    pred = g.operand(shape=(), dtype=D.BOOL)
    p = build.parameter(0, x.shape, x.dtype, "x")
    other = build.make(Op.NOT, [p]) if D.is_bool(x.dtype) else build.make(Op.ADD, [p, p])
    return build.make(Op.CONDITIONAL, [pred, x], dict(
        branches=(Module("no", [p], [p]), Module("yes", [p], [other]))))


def _cumulative(g, op):
    x = g.operand(min_ndim=1)
    return build.cumulative(op, x, g.integer(0, x.ndim - 1), g.chance(50))


def _dot_general(g, op):
    lhs = g.operand(max_ndim=3)
    roles = [g.choice("bcf") for _ in range(lhs.ndim)]   # batch, contract, free
    lb = [i for i, r in enumerate(roles) if r == "b"]
    lc = [i for i, r in enumerate(roles) if r == "c"]
    paired = lb + lc
    rhs_dims = [lhs.shape[i] for i in paired] + [g.dim() for _ in range(g.integer(0, 2))]
    order = g.draw(st.permutations(range(len(rhs_dims))))   # rhs dim order[k] holds rhs_dims[k]
    rhs_shape = [0] * len(rhs_dims)
    for k, pos in enumerate(order):
        rhs_shape[pos] = rhs_dims[k]
    rhs = g.operand(shape=tuple(rhs_shape), dtype=lhs.dtype)
    rb = [order[k] for k in range(len(lb))]
    rc = [order[k] for k in range(len(lb), len(paired))]
    return build.dot_general(lhs, rhs, lc, rc, lb, rb)


def _linalg(g, op):
    """A linear-algebra op on a fresh f32/f64 (batch of) matrix."""
    dt = D.canonicalize(g.choice(["f32", "f64"]))
    batch = tuple(g.dim() for _ in range(g.integer(0, 1)))
    m = g.integer(1, 3)
    n = m if op in (Op.CHOLESKY, Op.TRIANGULAR_SOLVE, Op.LU, Op.EIGH) else g.integer(1, 3)
    x = g.leaf(batch + (m, n), dt)
    if op is Op.CHOLESKY:
        return build.cholesky(x)
    if op is Op.TRIANGULAR_SOLVE:
        left = g.chance(50)
        b = g.leaf(batch + ((m, g.integer(1, 3)) if left else (g.integer(1, 3), m)), dt)
        return build.triangular_solve(x, b, left, g.chance(50), g.chance(50), g.chance(50))
    output = g.choice(O.LINALG_OUTPUTS[op])
    if op in (Op.QR, Op.SVD):
        return build.make(op, (x,), dict(output=output, full_matrices=g.chance(50)))
    return build.make(op, (x,), dict(output=output))


_GENERATORS = {Op.PARAMETER: _parameter, Op.CONSTANT: _constant, Op.IOTA: _iota,
               Op.CONVERT: _convert, Op.SELECT: _select, Op.CLAMP: _clamp,
               Op.BROADCAST_IN_DIM: _broadcast_in_dim, Op.RESHAPE: _reshape,
               Op.TRANSPOSE: _transpose, Op.SLICE: _slice, Op.PAD: _pad,
               Op.CONCATENATE: _concatenate, Op.REVERSE: _reverse,
               Op.DYNAMIC_SLICE: _dynamic_slice,
               Op.DYNAMIC_UPDATE_SLICE: _dynamic_update_slice, Op.GATHER: _gather,
               Op.SCATTER: _scatter, Op.DOT_GENERAL: _dot_general, Op.FUSION: _fusion,
               Op.GET_OUTPUT: _get_output, Op.WHILE: _while, Op.CONDITIONAL: _conditional,
               Op.SORT: _sort}
_GENERATORS.update({op: _unary for op in O.UNARY - {Op.CONVERT}})
_GENERATORS.update({op: _binary for op in O.BINARY})
_GENERATORS.update({op: _reduce for op in O.REDUCE})
_GENERATORS.update({op: _arg_reduce for op in O.ARG_REDUCE})
_GENERATORS.update({op: _cumulative for op in O.CUMULATIVE})
_GENERATORS[Op.FFT] = _unary   # never drawn (accepts): complex results
_GENERATORS.update({op: _linalg for op in O.LINALG})
_GENERATORS.update({op: None for op in O.COLLECTIVE})   # never drawn (see _setup)
assert set(_GENERATORS) == set(Op), sorted(set(Op) - set(_GENERATORS))
