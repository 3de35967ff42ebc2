"""NumPy indexing on tracers: `x[idx]`, `x[idx] = v`, and JAX-style `x.at[idx].op(v)`.

Shapes are static, so every index is resolved while tracing, with NumPy 2's rules:
- a basic index (ints, slices, None, Ellipsis) is one strided box of the array: `slice`,
  `reverse` for negative steps and a `reshape`. It returns a view, which writes back
  with `dynamic_update_slice` (contiguous boxes) or `pad` + `select` (strided ones);
- integer arrays, concrete or traced, become one `gather` (reads) or `scatter` (writes)
  along one axis: several indexed axes are transposed together and merged into one,
  their indices combined into a row-major linear index;
- a concrete boolean mask becomes integer arrays (np.nonzero). A traced mask's `x[mask]`
  has a data-dependent shape: reads give a lazy masked selection that reductions accept
  (trace/masked.py), and `x[mask] = v` is a `select`.

Traced integer indices wrap negatives like NumPy, but cannot raise when out of range as
NumPy does: reads clamp into range (gather's rule), writes drop the update (scatter's).
"""
import operator
from collections import namedtuple

import numpy as np

from jitlib import errors
from jitlib.hlo import build as B
from jitlib.hlo import dtypes
from jitlib.hlo.ir import Instr
from jitlib.hlo.ops import Op
from jitlib.trace import masked, windows
from jitlib.trace import tracer as T
from jitlib.trace.tracer import Tracer


JitlibIndexError = errors.JitlibIndexError


_INVALID = ("only integers, slices (`:`), ellipsis (`...`), numpy.newaxis (`None`) and "
            "integer or boolean arrays are valid indices")

# The entries of a parsed index; each covers the next dims of the array, in order.
# _Slice: the elements start + k*step for k < count (one dim).
# _Int: an index, in range and non-negative (one dim).
# _Array: an int64 ndarray (in range, non-negative) or a traced int64 Instr (negatives
#   wrapped); one dim, or, with new_dim, a size-1 dim inserted for a 0-d boolean index.
# _Mask: a bool ndarray or traced Instr, covering mask.ndim dims.
_Slice = namedtuple("_Slice", "start count step")
_Int = namedtuple("_Int", "index")
_NewAxis = namedtuple("_NewAxis", "")
_Array = namedtuple("_Array", "index new_dim")
_Mask = namedtuple("_Mask", "mask")


# -- parsing: an index becomes a list of entries over the dims of the array

def _parse(shape, index):
    """`index` as a list of entries covering every dim of `shape` (Ellipsis expanded)."""
    parts = [_classify(i) for i in (index if isinstance(index, tuple) else (index,))]
    ellipses = sum(p is Ellipsis for p in parts)
    if ellipses > 1:
        raise JitlibIndexError("an index can only have a single ellipsis ('...')")
    used = sum(_dims_used(p) for p in parts)
    if used > len(shape):
        raise JitlibIndexError(f"too many indices for array: array is {len(shape)}-dimensional,"
                               f" but {used} were indexed")
    fill = [slice(None)] * (len(shape) - used)
    if ellipses:
        at = next(k for k, p in enumerate(parts) if p is Ellipsis)
        parts[at:at + 1] = fill
    else:
        parts += fill
    entries, dim = [], 0
    for part in parts:
        entries.append(_entry(part, shape, dim))
        dim += _dims_used(part)
    return entries


def _classify(i):
    """An index component as None, Ellipsis, a slice, an int, an ndarray or a Tracer."""
    if i is None or i is Ellipsis or isinstance(i, slice):
        return i
    if isinstance(i, (bool, np.bool_)):
        return np.asarray(i)
    if isinstance(i, (int, np.integer)):
        return operator.index(i)
    if isinstance(i, Tracer):
        known = i._known()
        if known is not None:   # an index made inside the function: as NumPy's would be
            return _classify(known[()] if known.ndim == 0 else known)
        if not (dtypes.is_integer(i.dtype) or dtypes.is_bool(i.dtype)):
            raise JitlibIndexError(_INVALID, hint=f"this index is a traced {i.dtype} array; "
                                                  "convert it with .astype(int)")
        return i
    if isinstance(i, (list, tuple, range)):
        if _contains_tracer(i):
            return _classify(_asarray(i))
        arr = np.asarray(i)
        # NumPy reads an empty list as an empty integer index
        return _classify(arr.astype(dtypes.INDEX) if arr.size == 0 else arr)
    if isinstance(i, np.ndarray):
        if not (np.issubdtype(i.dtype, np.integer) or i.dtype == np.bool_):
            raise JitlibIndexError(_INVALID)
        return i.astype(dtypes.INDEX) if i.dtype != np.bool_ else i
    if hasattr(type(i), "__index__"):
        return operator.index(i)
    raise JitlibIndexError(_INVALID)


def _is_bool(part):
    return isinstance(part, (np.ndarray, Tracer)) and dtypes.is_bool(part.dtype)


def _dims_used(part):
    if part is None or part is Ellipsis:
        return 0
    return part.ndim if _is_bool(part) else 1


def _entry(part, shape, dim):
    if part is None:
        return _NewAxis()
    if isinstance(part, slice):
        return _slice_entry(part, shape[dim])
    if isinstance(part, int):
        return _Int(_check_in_range(np.asarray(part), shape[dim], dim).item())
    if _is_bool(part):
        _check_mask_shape(part.shape, shape, dim)
        return _Mask(part.instr if isinstance(part, Tracer) else part)
    if isinstance(part, Tracer):
        return _Array(_wrap_negative(part.instr, shape[dim]), False)
    return _Array(_check_in_range(part, shape[dim], dim), False)


def _slice_entry(s, n):
    if any(isinstance(bound, Tracer) for bound in (s.start, s.stop, s.step)):
        s = slice(*[operator.index(bound._concrete(
            "A slice bound (x[a:b:step])",
            "the bounds set the result's shape, which must be known while tracing: "
            "make the bound a Python int (static_argnums), or index with a traced "
            "integer array, or select with np.where"))
            if isinstance(bound, Tracer) else bound for bound in (s.start, s.stop, s.step)])
    start, stop, step = s.indices(n)
    return _Slice(start, len(range(start, stop, step)), step)


def _check_in_range(index, n, dim):
    """Concrete indices, checked like NumPy and with negatives wrapped."""
    bad = (index < -n) | (index >= n)
    if bad.any():
        raise JitlibIndexError(f"index {index[bad].flat[0]} is out of bounds for axis {dim} "
                               f"with size {n}")
    return np.where(index < 0, index + n, index).astype(dtypes.INDEX)


def _wrap_negative(index, n):
    """A traced index as int64 with negatives counted from the end, as NumPy does."""
    signed = dtypes.is_signed(index.dtype)
    index = B.convert(index, dtypes.INDEX)
    if not signed:
        return index
    negative = B.compare(index, _full(0, index.shape), "LT")
    return B.select(negative, B.binary(Op.ADD, index, _full(n, index.shape)), index)


def _check_mask_shape(mask_shape, shape, dim):
    for k, m in enumerate(mask_shape):
        if m != shape[dim + k]:
            raise JitlibIndexError(
                f"boolean index did not match indexed array along axis {dim + k}; size of "
                f"axis is {shape[dim + k]} but size of corresponding boolean axis is {m}")


def _contains_tracer(seq):
    return any(isinstance(v, Tracer) or (isinstance(v, (list, tuple)) and _contains_tracer(v))
               for v in seq)


def _asarray(seq):
    from jitlib.trace.registry import lookup
    return lookup("asarray")(seq)


def _full(value, shape, dtype=dtypes.INDEX):
    return B.full(value, shape, dtype)


def _has(entries, kind):
    return any(isinstance(e, kind) for e in entries)


def _lower_masks(entries):
    """Concrete boolean masks as integer arrays (np.nonzero); a 0-d mask indexes a new
    size-1 dim with [0] (True) or [] (False), as NumPy does."""
    out = []
    for e in entries:
        if not isinstance(e, _Mask):
            out.append(e)
        elif e.mask.ndim == 0:
            out.append(_Array(np.zeros(int(e.mask), dtypes.INDEX), True))
        else:
            out += [_Array(i.astype(dtypes.INDEX), False) for i in np.nonzero(e.mask)]
    return out


# -- basic indexing: a strided box

class _Box:
    """A strided box of an array: per dim (start, count, step); steps may be negative."""

    def __init__(self, shape, dims):
        self.full_shape = tuple(shape)
        self.shape = tuple(count for _, count, _ in dims)
        lo, hi, strides, self.flipped = [], [], [], []
        for d, (start, count, step) in enumerate(dims):
            if count == 0:
                start, step = 0, 1
            elif count == 1:
                step = 1
            elif step < 0:   # read the same elements in increasing order, then reverse
                start, step = start + (count - 1) * step, -step
                self.flipped.append(d)
            lo.append(start)
            hi.append(start + (count - 1) * step + 1 if count else start)
            strides.append(step)
        self.lo, self.hi, self.strides = lo, hi, strides

    def get(self, x):
        return B.reverse(B.slice(x, self.lo, self.hi, self.strides), self.flipped)

    def put(self, x, new):
        """`x` with the box replaced by `new` (of the box's shape)."""
        if 0 in self.shape:
            return x
        new = B.reverse(new, self.flipped)
        if self.shape == self.full_shape:
            return new
        if all(s == 1 for s in self.strides):
            return B.dynamic_update_slice(x, new, [B.constant(np.int64(s)) for s in self.lo])
        high = [n - h for n, h in zip(self.full_shape, self.hi)]
        interior = [s - 1 for s in self.strides]
        padded = B.pad(new, B.constant(np.zeros((), x.dtype)), self.lo, high, interior)
        inside = B.pad(B.full(True, new.shape, dtypes.BOOL), B.constant(np.False_),
                       self.lo, high, interior)
        return B.select(inside, padded, x)


def _basic(shape, entries):
    """The box of a basic index and the shape NumPy gives its result."""
    dims, out_shape = [], []
    for e in entries:
        if isinstance(e, _NewAxis):
            out_shape.append(1)
        elif isinstance(e, _Int):
            dims.append((e.index, 1, 1))
        else:
            dims.append(e)
            out_shape.append(e.count)
    return _Box(shape, dims), tuple(out_shape)


# -- advanced indexing: one gather or scatter along a merged axis

class _Advanced:
    """How an index with integer arrays reads and writes an array of `shape`.

    The slices make a box of the array (indexed dims kept whole). The indexed dims of the
    box are merged into one axis (transposed to the front first, when there are several)
    and addressed by one linear index of the broadcast index shape. `perm` then takes the
    gather's dims to NumPy's order: the index dims in place of the index arrays when those
    are adjacent, else first.
    """

    def __init__(self, shape, entries):
        sizes = iter(shape)
        # a 0-d boolean index addresses a size-1 dim inserted for it
        self.expanded = tuple(1 if isinstance(e, _Array) and e.new_dim else next(sizes)
                              for e in entries if not isinstance(e, _NewAxis))
        dims, indices, self.axes, labels, positions = [], [], [], [], []
        for pos, e in enumerate(entries):
            if isinstance(e, _NewAxis):
                labels.append("new")
                continue
            dim = len(dims)
            if isinstance(e, _Slice):
                dims.append(e)
                labels.append(("dim", dim))
                continue
            dims.append((0, self.expanded[dim], 1))
            indices.append(np.asarray(e.index, dtypes.INDEX) if isinstance(e, _Int)
                           else e.index)
            self.axes.append(dim)
            positions.append(pos)
            labels.append("index")
        self.box = _Box(self.expanded, dims)
        self.index_shape = _broadcast_index_shapes([i.shape for i in indices])
        self.indices = [_broadcast_index(i, self.index_shape) for i in indices]

        block = [("index", k) for k in range(len(self.index_shape))]
        rest = [("dim", d) for d in range(len(dims)) if d not in self.axes]
        if len(self.axes) == 1:
            current = rest[:self.axes[0]] + block + rest[self.axes[0]:]
        else:
            current = block + rest
        if positions == list(range(positions[0], positions[-1] + 1)):
            first = labels.index("index")
            final = labels[:first] + block + [lb for lb in labels[first:] if lb != "index"]
        else:
            final = block + [lb for lb in labels if lb != "index"]
        size = {("index", k): n for k, n in enumerate(self.index_shape)}
        size.update({("dim", d): n for d, n in enumerate(self.box.shape)})
        size["new"] = 1
        self.out_shape = tuple(size[lb] for lb in final)
        final = [lb for lb in final if lb != "new"]
        self.perm = [current.index(lb) for lb in final]
        self.permuted_shape = tuple(size[lb] for lb in final)
        self.merge_order = self.axes + [d for d in range(len(dims)) if d not in self.axes]

    def _merge(self, box):
        """The box with its indexed dims merged into one axis, and that axis."""
        if len(self.axes) == 1:
            return box, self.axes[0]
        box = B.transpose(box, self.merge_order)
        k = len(self.axes)
        merged = int(np.prod(box.shape[:k], dtype=np.int64))
        return B.reshape(box, (merged,) + box.shape[k:]), 0

    def _unmerge(self, merged):
        if len(self.axes) == 1:
            return merged
        merged = B.reshape(merged, [self.box.shape[d] for d in self.merge_order])
        return B.transpose(merged, np.argsort(self.merge_order))

    def _linear_index(self, for_write):
        """The index into the merged axis. Out-of-range traced indices clamp per axis for
        reads (gather's rule) and make the whole index -1 for writes (scatter drops it)."""
        if len(self.indices) == 1:
            (index,) = self.indices
            return index if isinstance(index, Instr) else B.constant(index)
        sizes = [self.expanded[a] for a in self.axes]
        strides = [int(np.prod(sizes[k + 1:], dtype=np.int64)) for k in range(len(sizes))]
        if not any(isinstance(i, Instr) for i in self.indices):
            return B.constant(sum(i * s for i, s in zip(self.indices, strides)))
        shape = self.index_shape
        total = valid = None
        for index, n, stride in zip(self.indices, sizes, strides):
            if not isinstance(index, Instr):
                index = B.constant(index)
            elif for_write:
                inside = B.binary(Op.AND, B.compare(index, _full(0, shape), "GE"),
                                  B.compare(index, _full(n, shape), "LT"))
                valid = inside if valid is None else B.binary(Op.AND, valid, inside)
            else:
                index = B.clamp(_full(0, ()), index, _full(max(n - 1, 0), ()))
            term = B.binary(Op.MUL, index, _full(stride, shape))
            total = term if total is None else B.binary(Op.ADD, total, term)
        if valid is not None:
            total = B.select(valid, total, _full(-1, shape))
        return total

    def get(self, x):
        y, axis = self._merge(self.box.get(B.reshape(x, self.expanded)))
        if y.shape[axis] == 0 and 0 not in self.out_shape:
            raise JitlibIndexError("index is out of bounds for an axis of size 0",
                                   hint="a traced index into an empty axis has nothing to read")
        r = B.gather(y, self._linear_index(for_write=False), axis)
        return B.reshape(B.transpose(r, self.perm), self.out_shape)

    def update(self, x, value, mode):
        """`x` with `value` (of `out_shape`) combined in by scatter `mode`."""
        expanded = B.reshape(x, self.expanded)
        y, axis = self._merge(self.box.get(expanded))
        upd = B.transpose(B.reshape(value, self.permuted_shape), np.argsort(self.perm))
        y = B.scatter(y, self._linear_index(for_write=True), upd, axis, mode)
        return B.reshape(self.box.put(expanded, self._unmerge(y)), x.shape)


def _broadcast_index_shapes(shapes):
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        raise JitlibIndexError("shape mismatch: indexing arrays could not be broadcast "
                               "together with shapes " + " ".join(map(str, shapes))) from None


def _broadcast_index(index, shape):
    if isinstance(index, Instr):
        return T.broadcast(index, shape)
    return np.broadcast_to(index, shape)


# -- writes

_COMBINE = {"add": (Op.ADD, Op.OR), "mul": (Op.MUL, Op.AND),
            "min": (Op.MIN, Op.AND), "max": (Op.MAX, Op.OR)}
_BOOL_SCATTER = {"add": "max", "mul": "min"}   # or, and


def _combine(mode, old, new):
    if mode == "set":
        return new
    op, bool_op = _COMBINE[mode]
    return B.binary(bool_op if dtypes.is_bool(old.dtype) else op, old, new)


def _value(value, dtype):
    """`value` as IR of `dtype`, cast as NumPy's setitem casts: arrays unsafely, while a
    Python or NumPy scalar must fit `dtype` (a float truncates into an integer type)."""
    if isinstance(value, Tracer):
        return B.convert(value.instr, dtype)
    if isinstance(value, (list, tuple)) and _contains_tracer(value):
        return B.convert(_asarray(value).instr, dtype)
    if isinstance(value, (bool, int, float, np.bool_, np.integer, np.floating)):
        if dtypes.is_integer(dtype) and isinstance(value, (float, np.floating)):
            value = int(value)
        elif isinstance(value, np.generic):
            value = value.item()
        return B.constant(np.asarray(value, dtype=dtype))
    return B.constant(T.concrete(value).astype(dtype))


def _strip(value, ndim):
    """Drop leading size-1 dims beyond `ndim`, which NumPy's setitem ignores."""
    while value.ndim > ndim and value.shape[0] == 1:
        value = B.reshape(value, value.shape[1:])
    return value


def _fit(value, shape):
    """`value` broadcast to `shape` as NumPy's setitem broadcasts it."""
    stripped = _strip(value, len(shape))
    try:
        fits = np.broadcast_shapes(stripped.shape, shape) == shape
    except ValueError:
        fits = False
    if not fits:
        raise errors.ShapeError(f"could not broadcast input array from shape {value.shape} "
                                f"into shape {shape}")
    return T.broadcast(stripped, shape)


def _masked_update(x, entries, value, mode):
    """`x` updated through a lone boolean mask (other dims whole) with a `select`, or None
    where that does not apply and a concrete mask takes the integer-array path."""
    at = [k for k, e in enumerate(entries) if isinstance(e, _Mask)]
    if not at:
        return None
    traced = any(isinstance(entries[k].mask, Instr) for k in at)
    mask = entries[at[0]].mask
    pre, post = x.shape[:at[0]], x.shape[at[0] + mask.ndim:]
    others = entries[:at[0]] + entries[at[0] + 1:]
    lone = len(at) == 1 and len(others) == len(pre + post) and all(
        _whole(e, n) for e, n in zip(others, pre + post))
    if not lone:
        if traced:
            raise errors.UnsupportedError(
                "writing through a traced boolean mask combined with other indices is not "
                "supported inside jit", hint="index with the mask alone, x[mask] = v (with "
                "`:` or `...` for whole dims), or use np.where(mask, v, x)")
        return None
    value = _strip(value, len(pre) + 1 + len(post))
    count_axis = value.ndim - len(post) - 1
    if count_axis >= 0 and value.shape[count_axis] != 1:
        if traced:
            raise errors.UnsupportedError(
                f"x[mask] = v with a traced mask needs v to broadcast against one selected "
                f"element (shape {post}), but v has shape {value.shape}: how many elements "
                f"the mask selects depends on the data",
                hint="assign a scalar or a value that broadcasts over the selected elements, "
                     "or use np.where(mask, v, x) with v of x's shape")
        return None
    value = _fit(value, pre + (1,) + post)
    value = T.broadcast(B.reshape(value, pre + (1,) * mask.ndim + post), x.shape)
    mask = mask if isinstance(mask, Instr) else B.constant(mask)
    mask = B.broadcast_in_dim(mask, x.shape, range(len(pre), len(pre) + mask.ndim))
    return B.select(mask, _combine(mode, x, value), x)


def _selection_update(x, entries, value, mode):
    """`x[mask] = f(x[mask])`: a selection by the same mask (over an array of x's shape)
    writes its values where the mask holds, which is exactly NumPy's assignment."""
    at = [k for k, e in enumerate(entries) if isinstance(e, _Mask)]
    if len(at) == 1 and isinstance(entries[at[0]].mask, Instr):
        probe = _masked_read(x, entries)
        if (probe._same_selection(value)
                and T.broadcast_shapes(value._data.shape, x.shape) == x.shape):
            new = T.broadcast(B.convert(value._data.instr, x.dtype), x.shape)
            mask = probe._full_mask().instr
            return B.select(mask, _combine(mode, x.instr, new), x.instr)
    raise errors.UnsupportedError(
        f"assigning {value._what} through a different index is not supported inside jit: "
        "how many values it holds depends on the data",
        hint="assign through the mask that made it (x[mask] = f(x[mask])), or use "
             "np.where(mask, v, x) with v of x's shape")


def _whole(entry, n):
    return isinstance(entry, _Slice) and entry.count == n and (
        n <= 1 or (entry.start == 0 and entry.step == 1))


def _updated(x, index, value, mode):
    """The value of `x` after `x[index] <mode>= value`, as IR; mode: set|add|mul|min|max."""
    index = masked.as_mask_index(index)
    entries = _parse(x.shape, index)
    if windows.is_window(value):
        value._escape("writing through bounds other than those of")
    if masked.is_masked(value):
        return _selection_update(x, entries, value, mode)
    value = _value(value, x.dtype)
    new = _masked_update(x.instr, entries, value, mode)
    if new is not None:
        return new
    entries = _lower_masks(entries)
    if _has(entries, _Array):
        plan = _Advanced(x.shape, entries)
        if dtypes.is_bool(x.dtype):
            mode = _BOOL_SCATTER.get(mode, mode)
        return plan.update(x.instr, _fit(value, plan.out_shape), mode)
    box, out_shape = _basic(x.shape, entries)
    new = _fit(value, out_shape)
    if mode != "set":
        new = _combine(mode, B.reshape(box.get(x.instr), out_shape), new)
    return box.put(x.instr, B.reshape(new, box.shape))


# -- the entry points

def getitem(x, index):
    """`x[index]` with NumPy's rules: a view for basic indices, a copy otherwise."""
    if windows.traced_bounds(index):
        return windows.read(x, index, errors.user_location())
    index = masked.as_mask_index(index)
    entries = _parse(x.shape, index)
    if any(isinstance(e, _Mask) and isinstance(e.mask, Instr) for e in entries):
        return _masked_read(x, entries)
    entries = _lower_masks(entries)
    if _has(entries, _Array):
        return Tracer(_Advanced(x.shape, entries).get(x.instr))
    box, out_shape = _basic(x.shape, entries)
    if not out_shape and not _has_ellipsis(index):
        # NumPy gives a scalar, not a view, for an element picked by integers alone
        return Tracer(B.reshape(box.get(x.instr), ()))
    return x._make_view(lambda base: B.reshape(box.get(base), out_shape),
                        lambda base, new: box.put(base, B.reshape(new, box.shape)),
                        what="a slice")


def _masked_read(x, entries):
    """`x[mask]` for a traced mask: a lazy selection that reductions and elementwise math
    accept (jitlib/trace/masked.py); other indices beside the mask must be whole dims."""
    at = [k for k, e in enumerate(entries) if isinstance(e, _Mask)]
    mask = entries[at[0]].mask
    pre = x.shape[:at[0]]
    others = entries[:at[0]] + entries[at[0] + 1:]
    dims = pre + x.shape[at[0] + mask.ndim:]
    if len(at) > 1 or len(others) != len(dims) or not all(
            _whole(e, n) for e, n in zip(others, dims)):
        raise errors.UnsupportedError(
            "indexing with a traced boolean mask combined with other indices is not "
            "supported inside jit: the result's shape depends on the data",
            hint="index with the mask alone (x[mask], x[:, mask]) and reduce it "
                 "(x[mask].sum(), .mean(), .max()), or use np.where(mask, x, 0)")
    return masked.select(x, len(pre), Tracer(mask))


def _has_ellipsis(index):
    return any(i is Ellipsis for i in (index if isinstance(index, tuple) else (index,)))


def setitem(x, index, value):
    """`x[index] = value` in place. Values cast as NumPy's setitem casts them; for repeated
    integer indices the last write wins."""
    if windows.traced_bounds(index):
        windows.write(x, index, value)
        return
    x._assign(_updated(x, index, value, "set"))


class AtIndexer:
    """`x.at`: `x.at[index].set(v)` and friends return updated copies, as in JAX."""

    __slots__ = ("_x",)

    def __init__(self, x):
        self._x = x

    def __getitem__(self, index):
        return _At(self._x, index)


class _At:
    """`x.at[index]`. Each method returns a new array of x's dtype (values cast to it) and
    leaves x alone; add, multiply, min and max combine every update into the result,
    repeated indices included (like np.add.at)."""

    __slots__ = ("_x", "_index")

    def __init__(self, x, index):
        self._x, self._index = x, index

    def get(self):
        """`x[index]`, always a copy."""
        return getitem(self._x, self._index).copy()

    def set(self, values):
        """`x[index] = values`; for repeated indices the last write wins."""
        return self._update("set", values)

    def add(self, values):
        return self._update("add", values)

    def multiply(self, values):
        return self._update("mul", values)

    def min(self, values):
        return self._update("min", values)

    def max(self, values):
        return self._update("max", values)

    def divide(self, values):
        """x divided at index by values (repeated indices divide repeatedly), as JAX does."""
        return self._scaled(np.true_divide, values)

    def power(self, values):
        """x raised at index to values (repeated indices compound), as JAX does."""
        return self._scaled(np.power, values)

    def _update(self, mode, values):
        return Tracer(_updated(self._x, self._index, values, mode))

    def _scaled(self, ufunc, values):
        from jitlib.trace import ufuncs
        x = self._x
        ones = Tracer(_full(1, x.shape, x.dtype))
        factor = Tracer(_updated(ones, self._index, values, "mul"))
        return Tracer(B.convert(ufuncs.apply(ufunc, (x, factor)).instr, x.dtype))
