"""Batching rules for the indexing ops: gather, scatter, dynamic_slice and
dynamic_update_slice (see `batching.py` for the conventions).

When only the operand is batched, the op shifts one axis up. When the indices or
start positions vary per example, each example must read (or write) its own row of
the operand: the batch axis and the indexed axis are flattened into one axis of
`size * n` positions, and example b's index i becomes b * n + i. Indices are clamped
(gather) or dropped (scatter) against the per-example length n *before* the offset,
so the op's per-example semantics (ops.py) survive the flattening.
"""
import numpy as np

from jitlib.hlo import build, dtypes
from jitlib.hlo.ops import Op
from jitlib.transforms.batching import batch_rules, ensure_batched, move_axis

INDEX = dtypes.INDEX


def _scalar(value, like):
    return build.full(value, like.shape, like.dtype)


def _clamp_index(idx, hi):
    """Integer indices clamped into [0, hi], as int64. Clamped in their own dtype first,
    so a huge unsigned index does not wrap negative."""
    hi = max(min(hi, int(np.iinfo(idx.dtype).max)), 0)
    if dtypes.is_signed(idx.dtype):
        idx = build.binary(Op.MAX, idx, _scalar(0, idx))
    idx = build.binary(Op.MIN, idx, _scalar(hi, idx))
    return build.convert(idx, INDEX)


def _example_offsets(shape, n):
    """b * n at every position of a batched index array of `shape`."""
    return build.binary(Op.MUL, build.iota(shape, INDEX, 0), build.full(n, shape, INDEX))


def _flatten_rows(x, axis):
    """A batched `x` with its per-example `axis` folded into the batch axis:
    shape (size * n, rest...). Returns it and n."""
    x = move_axis(x, axis + 1, 1)
    n = x.shape[1]
    return build.reshape(x, (x.shape[0] * n,) + x.shape[2:]), n


def take_per_example(x, idx, axis):
    """gather(x[b], idx[b], axis) for every example b; both are batched."""
    flat, n = _flatten_rows(x, axis)
    rows = build.binary(Op.ADD, _clamp_index(idx, n - 1), _example_offsets(idx.shape, n))
    out = build.gather(flat, rows, 0)    # (size, *idx dims, *x dims but axis)
    k = idx.ndim - 1
    before = [1 + k + d for d in range(axis)]
    after = range(1 + k + axis, out.ndim)
    return build.transpose(out, [0] + before + list(range(1, 1 + k)) + list(after))


def gather(x, x_batched, idx, idx_batched, axis):
    """The batched gather, whichever of `x` and `idx` is batched."""
    if not idx_batched:
        return build.gather(x, idx, axis + 1)
    if not x_batched:
        # The batch axis of idx lands at `axis` of the result.
        return move_axis(build.gather(x, idx, axis), axis, 0)
    return take_per_example(x, idx, axis)


def _gather(instr, args, flags, size):
    (x, idx), (x_batched, idx_batched) = args, flags
    return gather(x, x_batched, idx, idx_batched, instr.attrs["axis"])


batch_rules[Op.GATHER] = _gather


def _drop_or_offset(idx, n):
    """Per-example indices as rows of the flattened axis; those outside [0, n) become
    -1, which scatter drops, as it would have dropped them per example."""
    inside = build.full(True, idx.shape, dtypes.BOOL)
    if n <= np.iinfo(idx.dtype).max:
        inside = build.compare(idx, _scalar(n, idx), "LT")
    if dtypes.is_signed(idx.dtype):
        inside = build.binary(Op.AND, inside, build.compare(idx, _scalar(0, idx), "GE"))
    rows = build.binary(Op.ADD, build.convert(idx, INDEX), _example_offsets(idx.shape, n))
    return build.select(inside, rows, build.full(-1, idx.shape, INDEX))


def _scatter(instr, args, flags, size):
    (x, idx, updates), (x_batched, idx_batched, updates_batched) = args, flags
    axis, mode = instr.attrs["axis"], instr.attrs["mode"]
    x = ensure_batched(x, x_batched, size)
    updates = ensure_batched(updates, updates_batched, size)
    if not idx_batched:
        return build.scatter(x, idx, updates, axis + 1, mode)
    flat, n = _flatten_rows(x, axis)
    rows = _drop_or_offset(idx, n)
    # updates: (size, *x dims before axis, *idx dims, *after) -> (size, *idx dims, *rest)
    k = idx.ndim - 1
    perm = [0] + [1 + axis + j for j in range(k)] + [1 + j for j in range(axis)] \
        + list(range(1 + axis + k, updates.ndim))
    out = build.scatter(flat, rows, build.transpose(updates, perm), 0, mode)
    out = build.reshape(out, (size, n) + flat.shape[1:])
    return move_axis(out, 1, axis + 1)


batch_rules[Op.SCATTER] = _scatter


def _start_type(starts):
    return starts[0].dtype if starts else INDEX


def _dynamic_slice(instr, args, flags, size):
    (x, *starts), (x_batched, *starts_batched) = args, flags
    sizes = instr.attrs["sizes"]
    per_example = instr.operands[0].shape
    if not all(starts_batched):
        # Dims with a shared start: one dynamic_slice; the others stay whole for now.
        zero = build.constant(np.zeros((), _start_type(starts)))
        fixed = [zero if b else s for s, b in zip(starts, starts_batched)]
        whole = [d if b else n for d, n, b in zip(per_example, sizes, starts_batched)]
        if x_batched:
            x = build.dynamic_slice(x, [zero] + fixed, [size] + whole)
        else:
            x = build.dynamic_slice(x, fixed, whole)
    # Dims with a start per example: gather each example's window.
    for d, (start, b) in enumerate(zip(starts, starts_batched)):
        if b:
            first = _clamp_index(start, per_example[d] - sizes[d])      # (size,)
            window = build.binary(
                Op.ADD, build.broadcast_in_dim(first, (size, sizes[d]), (0,)),
                build.iota((size, sizes[d]), INDEX, 1))
            x = gather(x, x_batched, window, True, d)
            x_batched = True
    return x


batch_rules[Op.DYNAMIC_SLICE] = _dynamic_slice


def _dynamic_update_slice(instr, args, flags, size):
    (x, update, *starts), (x_batched, update_batched, *starts_batched) = args, flags
    x = ensure_batched(x, x_batched, size)
    update = ensure_batched(update, update_batched, size)
    if not any(starts_batched):
        zero = build.constant(np.zeros((), _start_type(starts)))
        return build.dynamic_update_slice(x, update, [zero] + starts)
    per_example, window = instr.shape, instr.operands[1].shape
    if 0 in window:
        return x                # nothing to write
    # Each example writes at its own place: spread the update over the operand's
    # shape with a gather per dim, and select it inside the window.
    inside = build.full(True, x.shape, dtypes.BOOL)
    spread = update
    for d, (start, b) in enumerate(zip(starts, starts_batched)):
        first = _clamp_index(start, per_example[d] - window[d])
        first = build.broadcast_in_dim(first, (size, per_example[d]), (0,) if b else ())
        offset = build.binary(Op.SUB, build.iota((size, per_example[d]), INDEX, 1), first)
        spread = take_per_example(spread, offset, d)   # gather clamps outside the window
        hit = build.binary(Op.AND, build.compare(offset, build.full(0, offset.shape, INDEX), "GE"),
                           build.compare(offset, build.full(window[d], offset.shape, INDEX), "LT"))
        inside = build.binary(Op.AND, inside,
                              build.broadcast_in_dim(hit, x.shape, (0, d + 1)))
    return build.select(inside, spread, x)


batch_rules[Op.DYNAMIC_UPDATE_SLICE] = _dynamic_update_slice
