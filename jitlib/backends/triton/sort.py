"""A sort kernel for the GPU: one key along the last axis, rows that fit one program.

The sort op is stable, NaN last, -0.0 equal to 0.0 (the interpreter's `_sort`). tl.sort
is a bitonic network: not stable, and its float order is the hardware's. So, as
jitlib/hlo/fast_sort.py does on the host, each key becomes an order-preserving unsigned
integer (zeros and NaNs made equal first) joined with its position into one u64, key
high, position low. The u64s of a row are distinct, so any sorting network gives the
stable order; the position comes back out of the low word. Sorted values are a gather of
the original keys at those positions, so -0.0 and NaN payloads come out where a stable
sort puts them.

A 64-bit key leaves no room for the position in one word, so those rows run a bitonic
network written out here that compares (key, position) pairs, two tensors swapped
together; it is the same network tl.sort runs.

A row is padded to a power of two with all-ones keys, which sort after every real key
(after an all-ones one too, by position), and a program sorts ROWS such rows at once as
one [ROWS, BLOCK] tile. Not generated (the
interpreter runs them): several keys (lexsort), sorts along another axis, and rows
longer than MAX_ROW.
"""
import numpy as np

from jitlib.backends.triton import configs
from jitlib.backends.triton.source import F16, F32, Unsupported, Writer, literal
from jitlib.hlo import dtypes
from jitlib.hlo.ops import Op

MAX_ROW = 1 << 12    # the longest row one program sorts: BLOCK u64 words held in registers
MIN_TILE = 1024      # short rows share a program up to this many words
_FLOATS = {F16: 16, F32: 32}   # bits of the float keys packed with a position (bf16: 16)


def sort_of(body):
    """The body's one sort, or raise Unsupported saying why it is not generated."""
    ops = [i for i in body.instructions if i.op is not Op.PARAMETER]
    if len(ops) != 1 or ops[0].op is not Op.SORT or list(body.results) != ops:
        raise Unsupported("not one sort")
    (instr,) = ops
    key = instr.operands[0]
    dt, dim, n = np.dtype(key.dtype), instr.attrs["dimension"], key.shape[-1] if key.shape else 0
    if len(instr.operands) != 1:
        raise Unsupported("a sort of several keys (lexsort) runs on the interpreter")
    if dim != len(key.shape) - 1:
        raise Unsupported("a sort along an axis other than the last runs on the interpreter")
    if n > MAX_ROW:
        raise Unsupported(f"a sort of rows longer than {MAX_ROW} runs on the interpreter")
    if key.size == 0:
        raise Unsupported("an empty sort runs on the interpreter")
    return instr


def _order_key(w, dt, x):
    """A u64 expression ordered as the sort op orders the loaded keys `x` (below 2^32)."""
    if dt == dtypes.BOOL or dtypes.is_unsigned(dt):
        return f"{x}.to(tl.uint64)"
    if dtypes.is_integer(dt):   # shift the signed range up to start at 0
        return f"({x}.to(tl.int64) - ({int(np.iinfo(dt).min)})).to(tl.uint64)"
    bits = 16 if dtypes.is_bfloat16(dt) else _FLOATS[dt]
    sign, inf = 1 << (bits - 1), int(np.array(np.inf, dt).view(f"u{bits // 8}"))
    u = w.let(f"{x}.to(tl.uint{bits}, bitcast=True).to(tl.uint32)", "bits")
    mag = w.let(f"{u} & {sign - 1}", "mag")
    # -0.0 becomes 0.0, every NaN the one NaN just above +inf (sign clear)
    u = w.let(f"tl.where({mag} == 0, 0, tl.where({mag} > {inf}, {inf + 1}, {u}))", "bits")
    # negatives: flip every bit (larger magnitude, smaller key); the rest: set the sign
    flipped = f"{u} ^ {(1 << bits) - 1}"
    return f"tl.where(({u} & {sign}) != 0, {flipped}, {u} | {sign}).to(tl.uint64)"


def _u64(value):
    return literal(value, np.uint64)   # through int64 bits past int64's range


def _order_key64(w, dt, x):
    """The u64 ordered as the sort op orders 64-bit keys `x`."""
    sign = 1 << 63
    if dtypes.is_unsigned(dt):
        return x
    u = w.let(f"{x}.to(tl.uint64, bitcast=True)", "bits")
    if dtypes.is_integer(dt):
        return f"{u} ^ {_u64(sign)}"
    inf = int(np.array(np.inf, dt).view(np.uint64))
    mag = w.let(f"{u} & {_u64(sign - 1)}", "mag")
    u = w.let(f"tl.where({mag} == 0, {_u64(0)}, tl.where({mag} > {_u64(inf)}, {_u64(inf + 1)}, "
              f"{u}))", "bits")
    return f"tl.where(({u} & {_u64(sign)}) != 0, ~{u}, {u} | {_u64(sign)})"


def _pair_network(w):
    """Sort the tile by (k, p) pairs: a bitonic network, each step a compare-and-swap of
    elements `half` apart, runs of 2^level alternately ascending and descending."""
    # extents written inline: Triton's interpreter makes a named int a tensor, which
    # tl.reshape refuses; BLOCK = 2^LOG
    half = "(BLOCK >> (LOG - level + 1 + step))"   # 2^(level - 1 - step)
    split = f"[ROWS, BLOCK >> (level - step), 2, {half}]"
    w.line("i = tl.broadcast_to(lane, [ROWS, BLOCK])")
    w.line("for level in tl.static_range(1, LOG + 1):")
    w.line("    for step in tl.static_range(level):")
    w.line("        # the partner (i ^ half) of each element: xor of the pair, then out")
    w.line(f"        k4 = tl.reshape(k, {split})")
    w.line(f"        p4 = tl.reshape(p, {split})")
    w.line("        kp = tl.reshape(k4 ^ tl.xor_sum(k4, 2, keep_dims=True), [ROWS, BLOCK])")
    w.line("        pp = tl.reshape(p4 ^ tl.xor_sum(p4, 2, keep_dims=True), [ROWS, BLOCK])")
    w.line("        after = (k > kp) | ((k == kp) & (p > pp))")
    w.line(f"        flip = ((i & {half}) != 0) != ((i & (BLOCK >> (LOG - level))) != 0)")
    w.line("        swap = after != flip   # the left one of an ascending pair takes the less")
    w.line("        k = tl.where(swap, kp, k)")
    w.line("        p = tl.where(swap, pp, p)")
    w.line("position = p.to(tl.int64)")


def _body(instr, rows, n):
    dt = np.dtype(instr.operands[0].dtype)
    w = Writer()
    w.line("row = (tl.program_id(0) * ROWS + tl.arange(0, ROWS)[:, None]).to(tl.int64)")
    w.line("lane = tl.arange(0, BLOCK)[None, :]")
    w.line(f"live = (row < {rows}) & (lane < {n})")
    w.line(f"at = row * {n} + lane")
    w.line("x = tl.load(in0 + at, mask=live)")
    pad = "tl.full([ROWS, BLOCK], -1, tl.int64).to(tl.uint64, bitcast=True)"
    if dt.itemsize == 8:
        w.line(f"k = tl.where(live, {_order_key64(w, dt, 'x')}, {pad})   # padding sorts last")
        w.line("p = tl.broadcast_to(lane, [ROWS, BLOCK])")
        _pair_network(w)
    else:
        key = _order_key(w, dt, "x")
        w.line("# key high, position low: distinct words, so the bitonic sort is stable")
        w.line(f"word = ({key} << 32) | lane.to(tl.uint64)")
        w.line(f"word = tl.sort(tl.where(live, word, {pad}))   # padding sorts last")
        w.line("position = (word & 0xFFFFFFFF).to(tl.int64)")
    if instr.attrs["indices"]:
        w.line("tl.store(out0 + at, position, mask=live)")
    else:
        w.line("# the keys themselves, so -0.0 and NaN payloads keep their bits")
        w.line(f"tl.store(out0 + at, tl.load(in0 + row * {n} + position, mask=live), "
               "mask=live)")
    return w


def _pow2(n):
    return 1 << max(0, (n - 1).bit_length())


def source(body):
    """(the kernel body's Writer, its launch config, its program count) for an opaque
    fusion holding one sort this module generates; raises Unsupported otherwise."""
    instr = sort_of(body)
    shape = instr.operands[0].shape
    n = shape[-1]
    rows = int(np.prod(shape[:-1], dtype=np.int64))
    block = max(2, _pow2(n))   # tl.sort needs a row of two at least
    rows_per = max(1, min(MIN_TILE // block, _pow2(rows)))
    tile = block * rows_per
    config = configs.Config({"BLOCK": block, "ROWS": rows_per, "LOG": block.bit_length() - 1},
                            num_warps=4 if tile <= 2048 else 8)
    return _body(instr, rows, n), config, -(-rows // rows_per)
