"""What the cpu (LLVM) and gpu (Triton) elemental generators share.

Each backend emits an op's value at an index from two tables: scalar rules (elementwise
math, written in the backend's own language) and index rules (leaves and movement).
A movement op only moves positions: the element of its output at an index is its
operand's element at another index. Those rules are integer arithmetic on the index,
the same for both backends, and live here once, written against what each backend's
`Elemental` provides:

    el.im.add(a, b), .sub(a, b), .mul(a, c), .clamp(a, lo, hi)   # folded where known
    el.im.digit(lin, stride, n, outermost)   # one dim's position from a linear one
    el.as_index(value, dtype, hi)            # an integer scalar, clamped into [0, hi]
    el.value(instr, index)                   # the operand's value there

A position is a Python int where it is known when the kernel is generated (constant
folded here), else the backend's expression: an LLVM i64 value (one element) or a
Triton int64 tile (a block of elements).
"""
from jitlib.hlo.ops import Op


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


class ElementalBase:
    """Values of a kernel body's instructions at indices, memoised per (instr, index)
    inside a scope: kernels open a scope per loop body, since a value computed inside a
    loop is not available after it. Subclasses set `im` and define `_compute`.

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
        v = self._compute(instr, index)
        self.scopes[-1][key] = v
        return v

    def remember(self, instr, index, value):
        """Make `value` (one the kernel has, such as a reload of what it stored) the
        value of `instr` at `index` for the rest of the current scope."""
        self.scopes[-1][self._key(instr, index)] = value

    def _key(self, instr, index):
        return instr, index.key, self.raw

    def _compute(self, instr, index):
        raise NotImplementedError


# -- index rules of the ops that only move positions

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


MOVEMENT_RULES = {
    Op.BROADCAST_IN_DIM: _broadcast_in_dim, Op.RESHAPE: _reshape, Op.TRANSPOSE: _transpose,
    Op.SLICE: _slice, Op.REVERSE: _reverse, Op.DYNAMIC_SLICE: _dynamic_slice,
    Op.GATHER: _gather,
}
