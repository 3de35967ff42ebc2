"""Control flow in the optimizer: loops and conditionals, whose regions are modules.

`optimize_regions` runs the whole optimizer (simplification, then fusion) on every region
of every loop and conditional, so a loop body reaches the backends as kernels, like a
top-level module. Before that, `simplify_control` removes what needs no control flow:

  - a loop known to run 0 times gives its initial carry; one known to run once is its
    body, inlined (a `fori_loop(0, 1, ...)`, or a rolled loop of one trip);
  - a conditional on a constant index is the branch it picks, inlined;
  - a carry that the loop reads only through reshapes and sets to a reshape of a value
    of another shape carries that value's shape instead (`R[i, j] = x` in a loop
    flattens R for its scatter and reshapes it back each trip: two copies of R a trip,
    and no update of the carry in place), reshaped once before and after the loop;
  - what a loop's body computes from values no trip changes, where that costs more than
    reading it (`np.exp(-nu * k**2 * dt)` in a time step, `A.T @ A` in an iteration), is
    computed once before the loop and carried unchanged (XLA's loop-invariant code
    motion). Cheap values (broadcasts, slices, sums and products of them) stay in the
    body, where fusion folds them into the kernels that read them.

Both passes rebuild the module in one walk; a value of a multi-output op is a tuple there
until its get_outputs pick from it.
"""
from jitlib.hlo import build
from jitlib.hlo import ops as O
from jitlib.hlo.ir import Module, is_multi_output
from jitlib.hlo.ops import Op


def inline(module, args):
    """`module`'s results computed on `args` (instructions, one per parameter) in the
    module that holds them: its instructions rebuilt on those operands."""
    value_of = dict(zip(module.params, args))
    return [_walk(module, value_of, lambda instr, operands: None)[r] for r in module.results]


def _walk(module, value_of, replace):
    """Rebuild `module`'s instructions in order into `value_of` (instr -> new value, a
    tuple for a multi-output op), calling `replace(instr, operands)` first on each; its
    non-None answer is the new value."""
    for instr in module.instructions:
        if instr in value_of:
            continue
        if instr.op is Op.GET_OUTPUT:
            source = value_of.get(instr.operands[0], instr.operands[0])
            if isinstance(source, tuple):
                value_of[instr] = source[instr.attrs["index"]]
                continue
        operands = [value_of.get(o, o) for o in instr.operands]
        new = replace(instr, operands)
        if new is None:
            if all(a is b for a, b in zip(operands, instr.operands)):
                new = instr
            else:
                new = build.make(instr.op, operands, instr.attrs, loc=instr.loc)
        value_of[instr] = new
    return value_of


def _rebuild(module, replace):
    if not any(i.op in O.CONTROL for i in module.instructions):
        return module
    with build.locations(lambda: None):
        value_of = _walk(module, dict(zip(module.params, module.params)), replace)
    results = [value_of[r] for r in module.results]
    if all(a is b for a, b in zip(results, module.results)):
        return module
    return module.with_results(results)


def _as_value(values, instr):
    """What a rebuilt control op stands for: its one value, or the tuple of them."""
    return tuple(values) if is_multi_output(instr) else values[0]


def _simplified(instr, operands):
    if instr.op is Op.WHILE:
        trips = instr.attrs.get("trip_count")
        if trips == 0:
            return _as_value(operands, instr)
        if trips == 1:
            return _as_value(inline(instr.attrs["body"], operands), instr)
        changed = _reshaped_carries(instr, operands)
        return changed if changed is not None else _hoisted_invariants(instr, operands)
    elif instr.op is Op.CONDITIONAL:
        index = operands[0]
        if index.op is Op.CONSTANT:
            branches = instr.attrs["branches"]
            k = min(max(int(index.attrs["value"].array), 0), len(branches) - 1)
            return _as_value(inline(branches[k], operands[1:]), instr)
    return None


def _reshaped_carries(instr, operands):
    """The loop `instr` carrying each carry in the shape its body computes it in, where
    the body and the condition read the carry only through reshapes and the body returns
    it as a reshape; None where no carry changes (nor a loop inside the body)."""
    # the loops inside first: the reshapes they move out are what this one sees
    body = _rebuild(instr.attrs["body"], _simplified)
    cond = instr.attrs["cond"]
    shapes = {}
    for k, (param, result) in enumerate(zip(body.params, body.results)):
        inner = result.operands[0] if result.op is Op.RESHAPE else None
        if inner is not None and inner.shape != param.shape \
                and _read_as_reshapes(body, param) and _read_as_reshapes(cond, cond.params[k]):
            shapes[k] = inner.shape
    if not shapes:
        return None if body is instr.attrs["body"] else _as_value(
            build.outputs(build.make(Op.WHILE, operands, dict(instr.attrs, body=body),
                                     loc=instr.loc)), instr)
    inits = [build.reshape(x, shapes[k], loc=instr.loc) if k in shapes else x
             for k, x in enumerate(operands)]
    results = [r.operands[0] if k in shapes else r for k, r in enumerate(body.results)]
    loop = build.make(Op.WHILE, inits, dict(instr.attrs, body=_with_carry_shapes(
        body, shapes, results), cond=_with_carry_shapes(cond, shapes, cond.results)),
        loc=instr.loc)
    return _as_value([build.reshape(out, operands[k].shape, loc=instr.loc) if k in shapes
                      else out for k, out in enumerate(build.outputs(loop))], instr)


# Ops not worth a carried buffer of their own: recomputing them from what they read costs
# no more than reading their result back from memory.
_CHEAP = (O.LEAF | O.MOVEMENT | {
    Op.ADD, Op.SUB, Op.MUL, Op.NEG, Op.ABS, Op.SIGN, Op.MAX, Op.MIN, Op.SELECT, Op.CLAMP,
    Op.COMPARE, Op.AND, Op.OR, Op.XOR, Op.NOT, Op.CONVERT, Op.REAL, Op.IMAG, Op.CONJ,
    Op.COMPLEX, Op.FLOOR, Op.CEIL, Op.ROUND, Op.IS_FINITE, Op.GET_OUTPUT}) - {
    Op.GATHER, Op.SCATTER}


def _hoisted_invariants(instr, operands):
    """The loop `instr` with the costly values its body computes from carries no trip
    changes computed once before it, as carries of their own; None where there are
    none. A loop that may run no trips keeps its linear algebra inside (a factorization
    of a matrix the loop never reaches must not fail before it)."""
    body, cond = instr.attrs["body"], instr.attrs["cond"]
    fixed = {p for p, r in zip(body.params, body.results) if p is r}
    may_skip = not instr.attrs.get("trip_count")
    invariant, costly = set(), set()
    for i in body.instructions:
        if i.op is Op.PARAMETER:
            if i in fixed:
                invariant.add(i)
            continue
        if i.op in O.CONTROL or i.op in O.COLLECTIVE or is_multi_output(i) \
                or (may_skip and i.op in O.LINALG):
            continue
        if all(o in invariant for o in i.operands):
            invariant.add(i)
            if i.op not in _CHEAP or any(o in costly for o in i.operands):
                costly.add(i)
    hoisted = list(dict.fromkeys(
        [o for i in body.instructions if i not in invariant for o in i.operands
         if o in costly] + [r for r in body.results if r in costly]))
    if not hoisted:
        return None
    outside = inline(Module(body.name, body.params, hoisted), operands)
    n = len(body.params)
    extra = [build.parameter(n + j, h.shape, h.dtype, f"hoisted{j}", loc=h.loc)
             for j, h in enumerate(hoisted)]

    def widened(module, results_of):
        value_of = dict(zip(module.params, module.params))
        value_of.update(zip(hoisted, extra) if module is body else ())
        with build.locations(lambda: None):
            value_of = _walk(module, value_of, lambda i, operands: None)
        return Module(module.name, list(module.params) + extra,
                      [value_of[r] for r in module.results] + results_of, module.writes)

    loop = build.make(Op.WHILE, list(operands) + outside, dict(
        instr.attrs, body=widened(body, extra), cond=widened(cond, [])), loc=instr.loc)
    return _as_value(build.outputs(loop)[:n], instr)


def _read_as_reshapes(module, param):
    """Whether every reader of `param` in `module` is a reshape (none a result)."""
    return param not in module.results and all(
        i.op is Op.RESHAPE for i in module.instructions if param in i.operands)


def _with_carry_shapes(module, shapes, results):
    """`module` (a loop's region) with parameter k of shape `shapes[k]`, its reshapes of
    that parameter now of the new one, and `results` (in `module`'s values)."""
    params = [build.parameter(k, shapes[k], p.dtype, p.attrs["name"], loc=p.loc)
              if k in shapes else p for k, p in enumerate(module.params)]
    value_of = dict(zip(module.params, params))

    def replace(instr, operands):
        if instr.op is Op.RESHAPE and operands[0] is not instr.operands[0] \
                and instr.operands[0] in module.params:
            return build.reshape(operands[0], instr.shape, loc=instr.loc)
        return None

    with build.locations(lambda: None):
        value_of = _walk(module, value_of, replace)
    return Module(module.name, params, [value_of[r] for r in results], module.writes)


def simplify_control(module, options):
    """Loops of 0 or 1 known trips and conditionals on a constant index, inlined."""
    return _rebuild(module, _simplified)


def optimize_regions(module, options):
    """Every region of every loop and conditional, optimized as a module of its own."""
    from jitlib.fusion.pipeline import optimize
    done = {}

    def optimized(region):
        if region not in done:
            done[region] = optimize(region, options)
        return done[region]

    def replace(instr, operands):
        if instr.op is Op.WHILE:
            attrs = dict(instr.attrs, cond=optimized(instr.attrs["cond"]),
                         body=optimized(instr.attrs["body"]))
        elif instr.op is Op.CONDITIONAL:
            attrs = dict(instr.attrs, branches=tuple(map(optimized, instr.attrs["branches"])))
        else:
            return None
        return build.make(instr.op, operands, attrs, loc=instr.loc)

    return _rebuild(module, replace)
