"""What the cpu (LLVM) and gpu (Triton) elemental generators share.

Each backend emits an op's value at an index from two tables: scalar rules (elementwise
math, written in the backend's own language) and index rules (leaves and movement).
A movement op only moves positions: the element of its output at an index is its
operand's element at another index. Those rules are integer arithmetic on the index,
the same for both backends, and live here once (`INDEX_RULES`; only iota, a conversion
of a position, stays with each backend), written against what each backend's
`Elemental` provides:

    el.im.add(a, b), .sub(a, b), .mul(a, c), .clamp(a, lo, hi)   # folded where known
    el.im.digit(lin, stride, n, outermost)   # one dim's position from a linear one
    el.im.divmod(a, k)                       # (a // k, a % k); a < 0: a lane outside
    el.im.ge(a, b), .lt(a, b), .eq(a, b)     # conditions on positions
    el.im.in_range(a, n)                     # [conditions] that 0 <= a < n
    el.im.all(conditions)                    # their conjunction
    el._select(cond, a, b, dtype)            # a where cond (not known) holds, else b
    el.as_index(value, dtype, hi)            # an integer scalar, clamped into [0, hi]
    el.literal(value, dtype)                 # a constant value
    el.value(instr, index)                   # the operand's value there

A position is a Python int where it is known when the kernel is generated (constant
folded here), else the backend's expression: an LLVM i64 value (one element) or a
Triton int64 tile (a block of elements). A condition is True or False where it is known,
and `select` then picks its operand without emitting anything.

Ops that can reach outside their operand (pad, concatenate, dynamic_update_slice) clamp
the position they read at and select: every read stays inside its buffer, even in lanes
whose value is not taken.
"""
from jitlib.hlo.ops import ELEMENTWISE, Op


def strides(shape):
    """C-order strides of `shape`, in elements."""
    out, step = [], 1
    for d in reversed(shape):
        out.append(step)
        step *= d
    return tuple(reversed(out))


class Index:
    """A position in `shape`: per-dim positions, or the linear one (either may be known
    first; `ElementalBase.dims` and `.linear` derive the other)."""

    __slots__ = ("shape", "dims", "lin")

    def __init__(self, shape, dims=None, lin=None):
        self.shape = tuple(shape)
        if dims is not None:
            # size-1 dims are always 0: keeps keys canonical and folds index math
            dims = tuple(0 if n == 1 else d for n, d in zip(self.shape, dims))
        self.dims = dims
        self.lin = lin

    @classmethod
    def zero(cls, shape):
        return cls(shape, (0,) * len(shape), 0)

    @property
    def key(self):
        return ("d",) + self.dims if self.dims is not None else ("l", self.lin)


# how deep the walk recurses before it computes an elementwise chain bottom-up instead
# (shallower chains keep the walk's order, and so their generated code)
_DEEP = 64


class ElementalBase:
    """Values of a kernel body's instructions at indices, memoised per (instr, index)
    inside a scope: kernels open a scope per loop body, since a value computed inside a
    loop is not available after it. Subclasses pass their index math (`im`), define
    `_compute`, and set `index_rules` (INDEX_RULES and their iota), `unsupported` (the
    exception for what they cannot emit) and the methods of the module docstring.

    `inputs` maps an instruction to the pointer argument holding it (C order); `fixed`
    maps an instruction to a value that holds at every index the kernel asks for (a
    reduction's result for the current row). `raw` (Triton's dot operands) reads the
    memory type and bypasses `fixed`; the LLVM generator never sets it.
    """

    raw = False

    def __init__(self, im, inputs):
        self.im = im
        self.inputs = dict(inputs)
        self.fixed = {}
        self.scopes = [{}]
        self._depth = 0   # values being computed, one inside another

    def push(self):
        self.scopes.append({})

    def pop(self):
        self.scopes.pop()

    def linear(self, index):
        if index.lin is None:
            lin = 0
            for d, s in zip(index.dims, strides(index.shape)):
                lin = self.im.add(lin, self.im.mul(d, s))
            index.lin = lin
        return index.lin

    def dims(self, index):
        if index.dims is None:
            dims, lin = [], index.lin
            for i, (n, s) in enumerate(zip(index.shape, strides(index.shape))):
                if n <= 1 or s == 0:   # a size-1 dim, or an empty shape (no element)
                    dims.append(0)
                elif isinstance(lin, int):
                    dims.append((lin // s) % n)
                else:   # the outermost quotient is already < n
                    dims.append(self.im.digit(lin, s, n, outermost=i == 0))
            index.dims = tuple(dims)
        return index.dims

    def value(self, instr, index):
        """`instr`'s value at `index` (an Index into instr.shape)."""
        if instr in self.fixed and not self.raw:
            return self.fixed[instr]
        if instr.size == 1:
            index = Index.zero(instr.shape)
        key = self._key(instr, index)
        for scope in reversed(self.scopes):
            if key in scope:
                return scope[key]
        if self._depth > _DEEP and instr.op in ELEMENTWISE and instr not in self.inputs:
            self._operands_first(instr, index)
        self._depth += 1
        try:
            v = self._compute(instr, index)
        finally:
            self._depth -= 1
        self.scopes[-1][key] = v
        return v

    def _operands_first(self, instr, index):
        """Compute the elementwise chain under `instr` at `index` bottom-up, so that a long
        fused chain (a loop's thousand steps) needs no recursion as deep as itself."""
        order, stack, seen = [], [(instr, False)], set()
        while stack:
            node, expanded = stack.pop()
            if expanded:
                order.append(node)
                continue
            if node in seen:
                continue
            seen.add(node)
            stack.append((node, True))
            for o in reversed(node.operands):   # the first operand's chain first, as before
                if o.shape == node.shape and o.op in ELEMENTWISE and o not in self.inputs \
                        and o not in self.fixed and o not in seen \
                        and not self._known(self._key(o, index)):
                    stack.append((o, False))
        for node in order[:-1]:   # the last is `instr` itself
            self.value(node, index)

    def _known(self, key):
        return any(key in scope for scope in self.scopes)

    def remember(self, instr, index, value):
        """Make `value` (one the kernel has, such as a reload of what it stored) the
        value of `instr` at `index` for the rest of the current scope."""
        self.scopes[-1][self._key(instr, index)] = value

    def _key(self, instr, index):
        return instr, index.key, self.raw

    def _compute(self, instr, index):
        raise NotImplementedError

    def operand_values(self, instr, index):
        """The values of an elementwise op's operands at `index` (a scalar operand at
        its one element)."""
        return [self.value(o, index if o.shape == instr.shape else Index.zero(o.shape))
                for o in instr.operands]

    def select(self, cond, a, b, dt):
        """`a` where `cond` holds, else `b`: picked here where the condition is known."""
        if isinstance(cond, bool):
            return a if cond else b
        return self._select(cond, a, b, dt)

    def _select(self, cond, a, b, dt):
        raise NotImplementedError

    def index_rule(self, instr, index):
        """The value of a leaf or movement op at `index`, by the backend's table."""
        rule = self.index_rules.get(instr.op)
        if rule is None:
            raise self.unsupported(f"{instr.op} has no elemental rule")
        return rule(self, instr, index)


# -- index rules: which operand element an output element is (leaves and movement)

def _broadcast_in_dim(el, instr, index):
    (x,) = instr.operands
    if x.size == 1:
        return el.value(x, Index.zero(x.shape))
    dims = el.dims(index)
    return el.value(x, Index(x.shape, [0 if n == 1 else dims[d]
                                       for n, d in zip(x.shape, instr.attrs["dims"])]))


def _reshape(el, instr, index):
    (x,) = instr.operands
    return el.value(x, Index(x.shape, lin=el.linear(index)))


def _transpose(el, instr, index):
    (x,) = instr.operands
    dims, sub = el.dims(index), [0] * x.ndim
    for i, p in enumerate(instr.attrs["perm"]):
        sub[p] = dims[i]
    return el.value(x, Index(x.shape, sub))


def _slice(el, instr, index):
    (x,) = instr.operands
    a, im = instr.attrs, el.im
    sub = [im.add(s, im.mul(d, st))
           for d, s, st in zip(el.dims(index), a["start"], a["strides"])]
    return el.value(x, Index(x.shape, sub))


def _reverse(el, instr, index):
    (x,) = instr.operands
    sub = [el.im.sub(n - 1, d) if i in instr.attrs["dims"] else d
           for i, (n, d) in enumerate(zip(x.shape, el.dims(index)))]
    return el.value(x, Index(x.shape, sub))


def _dynamic_slice(el, instr, index):
    x, *starts = instr.operands
    sub = []
    for d, s, size, n in zip(el.dims(index), starts, instr.attrs["sizes"], x.shape):
        start = el.as_index(el.value(s, Index.zero(())), s.dtype, n - size)
        sub.append(el.im.add(start, d))
    return el.value(x, Index(x.shape, sub))


def _gather(el, instr, index):
    x, idx = instr.operands
    axis = instr.attrs["axis"]
    dims = el.dims(index)
    i = el.value(idx, Index(idx.shape, dims[axis:axis + idx.ndim]))
    at = el.as_index(i, idx.dtype, max(x.shape[axis] - 1, 0))
    sub = list(dims[:axis]) + [at] + list(dims[axis + idx.ndim:])
    return el.value(x, Index(x.shape, sub))


def _constant(el, instr, index):
    value = instr.attrs["value"].array
    if value.size != 1:
        raise el.unsupported(f"a constant of {value.size} elements inside a kernel")
    return el.literal(value.reshape(-1)[0], instr.dtype)


def _pad(el, instr, index):
    x, pad_value = instr.operands
    a, im = instr.attrs, el.im
    pv = el.value(pad_value, Index.zero(()))
    if x.size == 0:
        return pv
    inside, sub = [], []
    for d, n, lo, it in zip(el.dims(index), x.shape, a["low"], a["interior"]):
        t = im.sub(d, lo)
        q = t
        inside.append(im.ge(t, 0))
        if it:   # t may be negative: its lanes are outside anyway, clamped below
            q, r = im.divmod(t, it + 1)
            inside.append(im.eq(r, 0))
        inside.append(im.lt(q, n))
        sub.append(im.clamp(q, 0, n - 1))
    xv = el.value(x, Index(x.shape, sub))
    return el.select(im.all(inside), xv, pv, instr.dtype)


def _concatenate(el, instr, index):
    axis, im = instr.attrs["dim"], el.im
    dims = el.dims(index)
    pos, out, offset = dims[axis], None, 0
    for x in instr.operands:
        n = x.shape[axis]
        if x.size == 0:
            offset += n
            continue
        sub = list(dims)
        sub[axis] = im.clamp(im.sub(pos, offset), 0, n - 1)
        v = el.value(x, Index(x.shape, sub))
        out = v if out is None else el.select(im.ge(pos, offset), v, out, instr.dtype)
        offset += n
    return out


def _dynamic_update_slice(el, instr, index):
    x, update, *starts = instr.operands
    xv = el.value(x, index)
    if update.size == 0:
        return xv
    im, inside, sub = el.im, [], []
    for d, s, u, n in zip(el.dims(index), starts, update.shape, x.shape):
        start = el.as_index(el.value(s, Index.zero(())), s.dtype, n - u)
        t = im.sub(d, start)
        inside += im.in_range(t, u)
        sub.append(im.clamp(t, 0, u - 1))
    uv = el.value(update, Index(update.shape, sub))
    return el.select(im.all(inside), uv, xv, instr.dtype)


INDEX_RULES = {
    Op.CONSTANT: _constant, Op.BROADCAST_IN_DIM: _broadcast_in_dim, Op.RESHAPE: _reshape,
    Op.TRANSPOSE: _transpose, Op.SLICE: _slice, Op.REVERSE: _reverse, Op.PAD: _pad,
    Op.CONCATENATE: _concatenate, Op.DYNAMIC_SLICE: _dynamic_slice,
    Op.DYNAMIC_UPDATE_SLICE: _dynamic_update_slice, Op.GATHER: _gather,
}
