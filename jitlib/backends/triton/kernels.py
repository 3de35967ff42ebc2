"""Triton source per kernel kind: one `@triton.jit` function per FUSION kernel.

Every kernel takes pointers (one per input, then one per output) and its block sizes as
constexprs; shapes are static, so every extent and stride is a literal in the source.

  loop       flat, masked BLOCK tiles over the output's index space, offsets in int64;
             outputs of another (smaller) shape get their own mask in the same program.
  reduction  one program per ROWS kept positions; the whole reduced extent of each row
             is one register tile [ROWS, BLOCK_R] (BLOCK_R = the row length rounded up
             to a power of two), so softmax, layernorm and logsumexp read their input
             once. Reductions run in body order with keep_dims, their row values then
             broadcast into the S-shaped outputs. Rows longer than MAX_ROW elements
             are not generated yet (they would spill): the kernel falls back.
  dot        `tl.dot` tiles [BM, BK] x [BK, BN] accumulating in f32 (f64 for f64), the
             operands read through their views as index arithmetic, the epilogue applied
             to the accumulator tile before the one store. f32 tiles run on the
             tensor cores as split products (tf32x3, each tile checked after; f32 x bf16
             as two bf16 products) or on the FMA path (input_precision="ieee"), or hold
             both behind the config's TF32X3 constexpr for the tuner: f32_products.py;
             f16/bf16 use the tensor cores with f32 accumulation and round the
             product once, as the interpreter does. An f32 dot of operands widened
             from one 16-bit type reads the 16-bit sources and runs on the tensor
             cores too (exact products, f32 sums).
  opaque     a scatter of integer add/max/min: one program of atomics (scatter.py); a
             sort of one key of at most 32 bits along the last axis, rows up to
             sort.MAX_ROW: a bitonic sort of packed (key, position) words (sort.py);
             scans, ordered (float) scatters and other sorts are not generated: the
             interpreter runs them.
"""
import dataclasses
import hashlib
import re

import numpy as np

from jitlib.backends.elemental import Index
from jitlib.backends.triton import configs, f32_products, scan, scatter, sort
from jitlib.backends.triton.elemental import Elemental, store_value
from jitlib.backends.triton.source import (
    F64, Unsupported, Writer, compute_type, literal, memory_type, narrow, pointer_signature,
    spread)
from jitlib.fusion.fuse import OPERAND_VIEWS, is_widening_float_convert
from jitlib.fusion.reduction_form import plan_reduction
from jitlib.hlo import dtypes
from jitlib.hlo import ops as O
from jitlib.hlo.ops import Op

MAX_ROW = 16384
DOT_DTYPES = ("f16", "bf16", "f32", "f64")


@dataclasses.dataclass
class TritonKernel:
    """One generated kernel: its module source, arguments and launch configuration."""
    name: str               # the fusion's name in the optimized module
    fn_name: str            # the Python identifier of the @triton.jit function
    kind: str
    source: str
    inputs: list            # fusion operand positions, one pointer each
    outputs: list           # (shape, dtype) per body result, one pointer each
    config: configs.Config  # the heuristic launch configuration
    grid: object            # config -> grid tuple
    signature: dict = dataclasses.field(default_factory=dict)   # for ahead-of-time compiles
    problem: dict = dataclasses.field(default_factory=dict)     # extents the tuner sizes by
    # a kernel of complex values generated over their real parts (complex_lowering.py):
    # per input, then per output, the complex (shape, dtype) its real pairs are, or None
    complex_views: tuple = ()

    @property
    def digest(self):
        return hashlib.sha256(self.source.encode()).hexdigest()[:16]


def identifier(name):
    name = re.sub(r"\W", "_", name)
    return name if name and not name[0].isdigit() else f"k_{name}"


def _module_text(fn_name, kind, summary, params, body, helpers=()):
    head = [f"# jitlib {kind} kernel `{fn_name}`, generated from the optimized module.",
            f"# {summary}" if summary else None,
            "import triton", "import triton.language as tl",
            "from triton.language.extra import libdevice", ""]
    out = [h for h in head if h is not None]
    for helper in sorted(helpers):   # sorted: the same source (and hash) every time
        out += ["", helper]
    out += ["", "@triton.jit", f"def {fn_name}({', '.join(params)}):", body, ""]
    return "\n".join(out)


def _signature(params, inputs, outputs):
    sig = {}
    for p, (_, dt) in zip(params, list(inputs) + list(outputs)):
        sig[p] = pointer_signature(dt)
    return sig


def _pointer_params(n_in, n_out):
    return [f"in{i}" for i in range(n_in)] + [f"out{j}" for j in range(n_out)]


def _cdiv(a, b):
    return -(-a // b)


# -- loop kernels

# ops that cost an instruction or two per element: a float32 loop body of these alone
# is nothing but its loads and stores, and runs best with more, thinner threads
# (configs.loop_config)
_LIGHT_OPS = frozenset({Op.PARAMETER, Op.CONSTANT, Op.ADD, Op.SUB, Op.MUL, Op.MAX, Op.MIN,
                        Op.NEG, Op.ABS, Op.COMPARE, Op.SELECT, Op.CLAMP})


def _light(body):
    def cheap(instr):   # a scalar broadcast is a splat: no index arithmetic
        return instr.op in _LIGHT_OPS or (instr.op is Op.BROADCAST_IN_DIM
                                          and instr.operands[0].shape == ())
    values = list(body.params) + list(body.results)
    return (all(cheap(i) for i in body.instructions)
            and all(np.dtype(v.dtype) == np.float32 for v in values))


def _stores(out, lin, parts=None):
    """(offset, value) per store of output `out` at flat position `lin`: the value
    itself, or for a complex output written as its `parts` (re, im), each part at 2 lin
    and 2 lin + 1."""
    if parts is None:
        return ((lin, out),)
    return ((f"2 * {lin}", parts[0]), (f"2 * {lin} + 1", parts[1]))


def render_loop(name, body, summary="", interleaved=None):
    """`interleaved`: {output number: (re, im)} for an output that is a complex value's
    parts side by side (complex_lowering.py): each program evaluates both parts of its
    elements once and stores them at 2i and 2i + 1."""
    interleaved = interleaved or {}
    fn = identifier(name)
    w = Writer()
    el = Elemental(w, {p: f"in{i}" for i, p in enumerate(body.params)})
    w.line("# flat output positions of this program, int64 so huge outputs stay exact")
    w.line("i = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)")
    by_shape = {}
    for j, out in enumerate(body.results):
        shape = interleaved[j][0].shape if j in interleaved else out.shape
        by_shape.setdefault(shape, []).append((j, out))
    for shape, group in by_shape.items():
        n = int(np.prod(shape, dtype=np.int64))
        if n == 0:
            continue
        w.line(f"# outputs of shape {list(shape)}")
        el.mask = w.let(f"i < {n}", "mask")
        el.push()
        index = Index(shape, lin="i")
        for j, out in group:
            for at, value in _stores(out, "i", interleaved.get(j)):
                v = el.value(value, index)
                w.line(f"tl.store(out{j} + {at}, {store_value(v, value.dtype)}, "
                       f"mask={el.mask})")
        el.pop()
    params = _pointer_params(len(body.params), len(body.results)) + ["BLOCK: tl.constexpr"]
    largest = max([int(np.prod(shape, dtype=np.int64)) for shape in by_shape] + [0])
    return TritonKernel(
        name, fn, "loop", _module_text(fn, "loop", summary, params, w.text(), w.helpers),
        list(range(len(body.params))), [(r.shape, r.dtype) for r in body.results],
        configs.loop_config(largest, light=_light(body)),
        lambda c, n=largest: (_cdiv(n, c.constexprs["BLOCK"]),),
        _signature(params, [(p.shape, p.dtype) for p in body.params],
                   [(r.shape, r.dtype) for r in body.results]))


# -- reduction kernels

def _identity(op, dt):
    return {Op.REDUCE_SUM: 0, Op.REDUCE_PROD: 1, Op.REDUCE_MAX: dtypes.lowest(dt),
            Op.REDUCE_MIN: dtypes.highest(dt), Op.ARGMAX: dtypes.lowest(dt),
            Op.ARGMIN: dtypes.highest(dt), Op.REDUCE_OR: 0,
            Op.REDUCE_AND: True if dt == dtypes.BOOL else -1}[op]


# combine functions for reductions Triton's standard library lacks
_COMBINERS = {
    "mul": "@triton.jit\ndef _mul_combine(a, b):\n    return a * b\n",
    "and": "@triton.jit\ndef _and_combine(a, b):\n    return a & b\n",
    "or": "@triton.jit\ndef _or_combine(a, b):\n    return a | b\n",
    "max_nan": "@triton.jit\ndef _max_nan_combine(a, b):\n"
               "    return tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL)\n",
    "min_nan": "@triton.jit\ndef _min_nan_combine(a, b):\n"
               "    return tl.minimum(a, b, propagate_nan=tl.PropagateNan.ALL)\n",
}


def _emit_reduction(w, red, x, smask, r, row_len, helpers):
    """The row result of `red` over tile value `x` (keep_dims: shape [ROWS, 1])."""
    op, dt = red.op, np.dtype(red.operands[0].dtype)
    ident = literal(_identity(op, dt), dt)
    xs = w.let(f"tl.where({smask}, {x}, {ident})", "t")
    is_bool, is_float = dt == dtypes.BOOL, dtypes.is_float(dt)
    if is_bool and op in (Op.REDUCE_SUM, Op.REDUCE_OR, Op.REDUCE_MAX):
        return w.let(f"tl.max({xs}.to(tl.int32), axis=1, keep_dims=True) != 0", "red")
    if is_bool and op in (Op.REDUCE_PROD, Op.REDUCE_AND, Op.REDUCE_MIN):
        return w.let(f"tl.min({xs}.to(tl.int32), axis=1, keep_dims=True) != 0", "red")
    ct = compute_type(dt)
    if op is Op.REDUCE_SUM:
        # f16/bf16 accumulate in f32 (their compute type) and round once
        return w.let(narrow(f"tl.sum({xs}, axis=1, keep_dims=True).to({ct})", dt), "red")
    if op in (Op.REDUCE_PROD, Op.REDUCE_AND, Op.REDUCE_OR):
        kind = {Op.REDUCE_PROD: "mul", Op.REDUCE_AND: "and", Op.REDUCE_OR: "or"}[op]
        helpers.add(_COMBINERS[kind])
        return w.let(narrow(f"tl.reduce({xs}, 1, _{kind}_combine, keep_dims=True)", dt),
                     "red")
    is_max = op in (Op.REDUCE_MAX, Op.ARGMAX)
    if is_float:
        # NaN anywhere in the row wins, as np.max: one reduction whose combine propagates
        # NaN (max.NaN on sm_80+), not a max plus a second "any NaN" reduction
        kind = "max_nan" if is_max else "min_nan"
        helpers.add(_COMBINERS[kind])
        m = w.let(f"tl.reduce({xs}, 1, _{kind}_combine, keep_dims=True)", "red")
    else:
        m = f"tl.{'max' if is_max else 'min'}({xs}, axis=1, keep_dims=True)"
        if dt.itemsize < 4:   # Triton widens 8/16-bit ints to int32 to reduce them
            m += f".to({ct})"
        m = w.let(m, "red")
    if op in O.ARG_REDUCE:
        # the first position holding the extreme (the first NaN when there is one)
        hit = f"({xs} == {m})" + (f" | (({xs} != {xs}) & ({m} != {m}))" if is_float else "")
        pos = w.let(f"tl.min(tl.where({smask} & ({hit}), {r}, {row_len}), axis=1, "
                    f"keep_dims=True)", "red")
        return w.let(f"{pos}.to({compute_type(red.dtype)})", "red")
    return m


def _decompose(w, expr, sizes):
    """Per-dim index expressions of a flat index `expr` over `sizes` (row-major)."""
    if 0 in sizes:   # an empty extent: every lane is masked off
        return [0] * len(sizes)
    out, step = [], int(np.prod(sizes, dtype=np.int64))
    for i, n in enumerate(sizes):
        step //= n
        if n == 1:
            out.append(0)
            continue
        d = expr if step == 1 else f"{expr} // {step}"
        if i > 0:
            d = f"({d}) % {n}"
        out.append(d if d == expr else w.let(d, "i"))
    return out


def render_reduction(name, body, summary=""):
    fn = identifier(name)
    S, R, reductions, s_out, k_out = plan_reduction(body, Unsupported)
    kept = [d for d in range(len(S)) if d not in R]
    n_rows = int(np.prod([S[d] for d in kept], dtype=np.int64))
    row_len = int(np.prod([S[d] for d in R], dtype=np.int64))
    if row_len > MAX_ROW:
        raise Unsupported(f"rows of {row_len} elements exceed the in-register limit "
                          f"({MAX_ROW}); the looped reduction kernel is not built yet")
    block_r = configs.next_pow2(max(row_len, 1))
    w = Writer()
    el = Elemental(w, {p: f"in{i}" for i, p in enumerate(body.params)})
    helpers = set()
    w.line("# the kept positions (rows) of this program, as a column")
    w.line("k = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)[:, None]")
    # `| (n % ROWS == 0)` is a compile-time true when the blocks tile the rows exactly:
    # Triton then folds the mask away and the loads and reductions run unguarded
    kmask = w.let(f"(k < {n_rows}) | ({n_rows} % ROWS == 0)", "kmask")
    w.line(f"# each row's whole reduced extent ({row_len} elements) in registers: "
           "the input is read once")
    w.line(f"r = tl.arange(0, {block_r})[None, :].to(tl.int64)")
    smask = kmask if block_r == row_len else w.let(f"{kmask} & (r < {row_len})", "smask")
    kdims = _decompose(w, "k", [S[d] for d in kept])
    rdims = _decompose(w, "r", [S[d] for d in R])
    dims = [0] * len(S)
    for d, v in zip(kept, kdims):
        dims[d] = v
    for d, v in zip(R, rdims):
        dims[d] = v
    trailing = list(R) == list(range(len(S) - len(R), len(S)))
    s_lin = w.let(f"k * {row_len} + r", "i") if trailing and row_len else None
    s_index = Index(S, dims, s_lin)
    el.mask = smask
    for red in reductions:
        if row_len == 0:   # an empty reduction is its identity
            el.fixed[red] = literal(_identity(red.op, red.operands[0].dtype),
                                    red.operands[0].dtype)
            continue
        x = el.value(red.operands[0], s_index)
        el.fixed[red] = _emit_reduction(w, red, x, smask, "r", row_len, helpers)
    if row_len and s_out:
        w.line("# the row-shaped outputs")
        lin = el.linear(s_index)
        if w.is_uniform(lin):   # one element (a 1x1 row)
            lin = spread(lin, smask)
        for j, out in s_out:
            v = el.value(out, s_index)
            w.line(f"tl.store(out{j} + {lin}, {store_value(v, out.dtype)}, mask={smask})")
    if k_out:
        w.line("# the per-row outputs")
        el.mask = kmask
        live = [v for d, v in zip(kept, kdims) if S[d] != 1]
        for j, out in k_out:
            it = iter(live)
            index = Index(out.shape, [0 if n == 1 else next(it) for n in out.shape])
            v = el.value(out, index)
            w.line(f"tl.store(out{j} + k, {store_value(v, out.dtype)}, mask={kmask})")
    params = _pointer_params(len(body.params), len(body.results)) + ["ROWS: tl.constexpr"]
    return TritonKernel(
        name, fn, "reduction",
        _module_text(fn, "reduction", summary, params, w.text(), helpers | w.helpers),
        list(range(len(body.params))), [(r.shape, r.dtype) for r in body.results],
        configs.reduction_config(n_rows, row_len, row_outputs=bool(row_len and s_out)),
        lambda c: (_cdiv(n_rows, c.constexprs["ROWS"]),),
        _signature(params, [(p.shape, p.dtype) for p in body.params],
                   [(r.shape, r.dtype) for r in body.results]),
        {"rows": n_rows, "row_len": row_len, "block_r": block_r})


# -- dot kernels

DOT_GROUP_M = 8    # row tiles per group of the dot kernels' program order


def _source_dtype(x):
    """The dtype a dot operand is read in: through its views and widening converts (which
    fuse.py admits into the dot kernel) down to what memory holds."""
    while x.op in OPERAND_VIEWS or is_widening_float_convert(x):
        x = x.operands[0]
    return np.dtype(x.dtype)


def _tile_dtype(lhs, rhs, dt):
    """The dtype `tl.dot` multiplies in. Operands widened from the same 16-bit type stay
    16-bit: their products are exact in f32 and the tensor cores accumulate in f32, which
    is the widened dot's result up to the order of the f32 sums. Otherwise the dot's own."""
    src = {_source_dtype(lhs), _source_dtype(rhs)}
    if len(src) == 1 and dtypes.name(next(iter(src))) in ("f16", "bf16"):
        return next(iter(src))
    return dt


def _full_tile(w, el, x, value):
    """`value` as a tile of the mask's shape. A dot operand that is a broadcast scalar (the
    ones that d/dx sum(x @ w) multiplies by) is a literal or a one-element load, a rank-0
    value that tl.dot refuses; loaded tiles are already full (see Elemental.load). Past the
    mask (the tile's rows, columns and contraction steps beyond the operand) it is zero,
    as a masked load is: the K padding of a tile must add nothing to the sum."""
    if not w.is_uniform(value):   # a loaded tile
        return value
    zeros = f"tl.zeros({el.mask}.shape, {memory_type(_source_dtype(x))})"
    return w.let(f"tl.where({el.mask}, {value}, {zeros})", "bc")


def _as_tile(w, value, src, tile_dt):
    """An operand tile loaded as `src`, in the dot's tile type."""
    if src == tile_dt:
        return value
    return w.let(f"{value}.to({memory_type(tile_dt)})", "tile")


def _bound(index, extent, block):
    """`index < extent`, or a compile-time true when `block` tiles `extent` exactly: Triton
    folds `x | True` and then drops the mask, so the tile loads and stores unguarded."""
    return f"(({index} < {extent}) | ({extent} % {block} == 0))"


def operand_tile(w, el, x, batch, free, contract, tile_dt):
    """The tile of dot operand `x` under `el.mask`, in `tile_dt`: its batch and free dims at
    the given index expressions (`(dims, exprs)`), its contracted dims decomposed from the
    flat contraction index (`(dims, name)`). `el` must be in raw mode."""
    sub = [0] * x.ndim
    for dims, exprs in (batch, free):
        for d, v in zip(dims, exprs):
            sub[d] = v
    dims, kname = contract
    for d, v in zip(dims, _decompose(w, kname, [x.shape[i] for i in dims])):
        sub[d] = v
    value = el.value(x, Index(x.shape, sub))
    return _as_tile(w, _full_tile(w, el, x, value), _source_dtype(x), tile_dt)


def dot_dims(dot):
    """(lhs batch, lhs contract, lhs free, rhs batch, rhs contract, rhs free) dims."""
    lhs, rhs = dot.operands
    a = dot.attrs
    lc, rc, lb, rb = a["lhs_contract"], a["rhs_contract"], a["lhs_batch"], a["rhs_batch"]
    lfree = [i for i in range(lhs.ndim) if i not in lc + lb]
    rfree = [i for i in range(rhs.ndim) if i not in rc + rb]
    return lb, lc, lfree, rb, rc, rfree


def render_dot(name, body, summary="", interleaved=None):
    """`interleaved`: as render_loop's, for a complex epilogue output."""
    interleaved = interleaved or {}
    fn = identifier(name)
    dots = [i for i in body.instructions if i.op is Op.DOT_GENERAL]
    if len(dots) != 1:
        raise Unsupported(f"a dot kernel with {len(dots)} dot_generals")
    (dot,) = dots
    lhs, rhs = dot.operands
    dt = np.dtype(lhs.dtype)
    if dtypes.name(dt) not in DOT_DTYPES or rhs.dtype != dt:
        raise Unsupported(f"tl.dot of {dtypes.name(dt)} operands (floats only: "
                          f"{', '.join(DOT_DTYPES)})")
    if not dot.attrs["lhs_contract"]:
        # the optimizer rewrites these into products (simplify/movement.py); a fused
        # module may still hold one, and tl.dot has no rank-0 or rank-1 form
        raise Unsupported("a dot_general that sums nothing")
    tile_dt = _tile_dtype(lhs, rhs, dt)
    if dt == F64 and any(_source_dtype(x).itemsize == 2 for x in (lhs, rhs)):
        # Triton 3.6 fails to lower an f16/bf16 -> f64 widening in an f64 mma operand
        # (ConvertTritonGPUToLLVM; found by the fuzzer): the interpreter runs these
        raise Unsupported("an f64 dot of 16-bit operands widened inside the kernel")
    # an operand converted to the tile type inside the K loop (see configs.dot_config)
    widened = _source_dtype(lhs) != _source_dtype(rhs) or tile_dt != _source_dtype(lhs)
    for j, out in enumerate(body.results):
        if (interleaved[j][0] if j in interleaved else out).shape != dot.shape:
            raise Unsupported(f"a dot epilogue output {out.type_str} of another shape")
    lb, lc, lfree, rb, rc, rfree = dot_dims(dot)
    size = lambda x, ds: int(np.prod([x.shape[i] for i in ds], dtype=np.int64))
    B, M, N, K = size(lhs, lb), size(lhs, lfree), size(rhs, rfree), size(lhs, lc)
    acc_t = "tl.float64" if dt == F64 else "tl.float32"

    w = Writer()
    el = Elemental(w, {p: f"in{i}" for i, p in enumerate(body.params)})
    w.line(f"# output tile (pid_m, pid_n) of batch b: [{M}, {N}] = [{M}, {K}] @ [{K}, {N}]")
    w.line("pid = tl.program_id(0)")
    # grouped order: consecutive programs sweep GROUP_M row tiles for each column tile, so
    # the B columns (and A rows) they share are still in L2 when the next one reads them
    w.line(f"n_m = tl.cdiv({M}, BM)")
    w.line(f"per_group = {DOT_GROUP_M} * tl.cdiv({N}, BN)")
    w.line(f"first_m = (pid // per_group) * {DOT_GROUP_M}")
    w.line(f"group_m = tl.minimum(n_m - first_m, {DOT_GROUP_M})")
    w.line("pid_m = first_m + (pid % per_group) % group_m")
    w.line("pid_n = (pid % per_group) // group_m")
    w.line("b = tl.program_id(1).to(tl.int64)")
    w.line("rm = (pid_m.to(tl.int64) * BM + tl.arange(0, BM))[:, None]")
    w.line("rn = (pid_n.to(tl.int64) * BN + tl.arange(0, BN))[None, :]")
    bdims = _decompose(w, "b", [lhs.shape[i] for i in lb])
    mdims = _decompose(w, "rm", [lhs.shape[i] for i in lfree])
    ndims = _decompose(w, "rn", [rhs.shape[i] for i in rfree])
    src_l, src_r = _source_dtype(lhs), _source_dtype(rhs)
    f32_mode = f32_products.mode(src_l, src_r, tile_dt, dot.attrs.get("precision"))
    # bf16x2 reads its bf16 operand as bf16 (the tensor cores' type), its f32 one as f32
    tile_l = src_l if f32_mode == "bf16x2" else tile_dt
    tile_r = src_r if f32_mode == "bf16x2" else tile_dt

    def k_loop(update, comment):
        """The loop over contraction blocks; `update(a_tile, b_tile)` emits its body."""
        w.line(f"for k0 in range(0, {K}, BK):  # {comment}")
        w.indent += 1
        w.line("rk_col = (k0 + tl.arange(0, BK)).to(tl.int64)[:, None]")
        w.line("rk_row = (k0 + tl.arange(0, BK)).to(tl.int64)[None, :]")
        el.push()
        el.raw = True
        el.mask = w.let(f"{_bound('rm', M, 'BM')} & {_bound('rk_row', K, 'BK')}", "mask")
        a_tile = operand_tile(w, el, lhs, (lb, bdims), (lfree, mdims), (lc, "rk_row"), tile_l)
        el.mask = w.let(f"{_bound('rk_col', K, 'BK')} & {_bound('rn', N, 'BN')}", "mask")
        b_tile = operand_tile(w, el, rhs, (rb, bdims), (rfree, ndims), (rc, "rk_col"), tile_r)
        update(a_tile, b_tile)
        el.pop()
        el.raw = False
        w.indent -= 1

    def product(precision):
        more = f', input_precision="{precision}"' if precision else ""
        return lambda a, b: w.line(f"acc = tl.dot({a}, {b}, acc{more}, out_dtype={acc_t})")

    w.line(f"acc = tl.zeros([BM, BN], {acc_t})")
    if f32_mode in ("tf32x3", "either"):
        def tf32x3_then_recheck():
            k_loop(product("tf32x3"), "tf32x3 products on the tensor cores")
            w.line("# an inf, NaN or overflowed sum: the split may have made it (inf's low "
                   "part is NaN), so this tile runs again with exact IEEE products")
            w.line(f"if {f32_products.recheck('acc')}:")
            w.indent += 1
            w.line(f"acc = tl.zeros([BM, BN], {acc_t})")
            k_loop(product("ieee"), "IEEE products, inf and NaN as NumPy has them")
            w.indent -= 1
        if f32_mode == "tf32x3":
            tf32x3_then_recheck()
        else:
            w.line("if TF32X3:   # the launch config's choice (JITLIB_GPU_F32_DOT=auto)")
            w.indent += 1
            tf32x3_then_recheck()
            w.indent -= 1
            w.line("else:")
            w.indent += 1
            k_loop(product("ieee"), "IEEE products on the FMA units")
            w.indent -= 1
    elif f32_mode == "bf16x2":
        w.line("acc_lo = tl.zeros([BM, BN], tl.float32)  # the low halves' products")
        split_lhs = dtypes.name(src_l) == "f32"

        def two_products(a, b):
            hi, lo = f32_products.split_bf16(w, a if split_lhs else b)
            pairs = ((hi, b), (lo, b)) if split_lhs else ((a, hi), (a, lo))
            w.line(f"acc = tl.dot({pairs[0][0]}, {pairs[0][1]}, acc, out_dtype=tl.float32)")
            w.line(f"acc_lo = tl.dot({pairs[1][0]}, {pairs[1][1]}, acc_lo, "
                   "out_dtype=tl.float32)")
        k_loop(two_products, "f32 operand as two bf16 halves on the tensor cores")
        w.line(f"acc = {f32_products.merge_low('acc', 'acc_lo')}")
    elif f32_mode == "tf32":
        k_loop(product("tf32"), "TF32 products on the tensor cores (matmul_precision)")
    else:
        ieee = dtypes.name(tile_dt) in ("f32", "f64")
        k_loop(product("ieee" if ieee else None),
               "IEEE products" if ieee else "16-bit tensor-core products")
    w.line("# the epilogue, on the accumulator tile before the one store")
    product = w.let("acc" if dt == F64 or dtypes.name(dt) == "f32" else narrow("acc", dt),
                    "prod")
    el.fixed[dot] = product
    el.mask = w.let(f"{_bound('rm', M, 'BM')} & {_bound('rn', N, 'BN')}", "mask")
    odims = list(bdims) + list(mdims) + list(ndims)
    out_index = Index(dot.shape, odims, w.let(f"b * {M * N} + rm * {N} + rn", "i"))
    for j, out in enumerate(body.results):
        for at, value in _stores(out, out_index.lin, interleaved.get(j)):
            v = el.value(value, out_index)
            w.line(f"tl.store(out{j} + {at}, {store_value(v, value.dtype)}, mask={el.mask})")
    params = _pointer_params(len(body.params), len(body.results)) + [
        "BM: tl.constexpr", "BN: tl.constexpr", "BK: tl.constexpr"]
    if f32_mode == "either":
        params.append("TF32X3: tl.constexpr")
    return TritonKernel(
        name, fn, "dot", _module_text(fn, "dot", summary, params, w.text(), w.helpers),
        list(range(len(body.params))), [(r.shape, r.dtype) for r in body.results],
        configs.dot_config(M, N, K, tile_dt.itemsize, widened, f32_mode, B),
        lambda c: (_cdiv(M, c.constexprs["BM"]) * _cdiv(N, c.constexprs["BN"]), B),
        _signature(params, [(p.shape, p.dtype) for p in body.params],
                   [(r.shape, r.dtype) for r in body.results]),
        {"B": B, "M": M, "N": N, "K": K, "itemsize": tile_dt.itemsize, "widened": widened,
         "mode": f32_mode})


def render(fusion):
    """The Triton kernel of one FUSION instruction; raises Unsupported where it cannot."""
    from jitlib.fusion.fuse import kernel_summary
    from jitlib.backends.complex_values import first_complex
    kind, name, body = fusion.attrs["kind"], fusion.attrs["name"], fusion.attrs["body"]
    summary = kernel_summary(fusion)
    if first_complex(body) is not None:
        return _render_complex(name, kind, body, summary)
    if kind == "loop":
        return render_loop(name, body, summary)
    if kind == "reduction":
        return render_reduction(name, body, summary)
    if kind == "dot":
        return render_dot(name, body, summary)
    if any(i.op in O.LINALG for i in body.instructions):
        # no cuSOLVER call or Triton factorization yet: NumPy's LAPACK on the host
        raise Unsupported("linear algebra is not generated; it runs on the interpreter "
                          "(LAPACK on the host)")
    if kind == "opaque" and any(i.op is Op.SORT for i in body.instructions):
        return render_sort(name, body, summary)
    if kind == "opaque" and any(i.op in O.CUMULATIVE for i in body.instructions):
        return render_scan(name, body, summary)
    if kind == "opaque":
        return render_scatter(name, body, summary)
    raise Unsupported(f"{kind} kernels are not generated; they run on the interpreter")


def _render_complex(name, kind, body, summary):
    """A loop, reduction or dot kernel with complex values, generated over their real
    parts: it reads and writes each complex buffer as real pairs (the runner
    reinterprets, no copy)."""
    from jitlib.backends import complex_lowering
    real, parts = complex_lowering.lower_kernel(kind, body, ("loop", "reduction", "dot"),
                                                Unsupported, "it runs on the interpreter")
    if kind == "reduction":
        kernel = render_reduction(name, real, summary)
    elif kind == "loop":
        kernel = render_loop(name, real, summary, interleaved=parts)
    else:
        kernel = render_dot(name, real, summary, interleaved=parts)
    views = tuple((v.shape, v.dtype) if dtypes.is_complex(v.dtype) else None
                  for v in list(body.params) + list(body.results))
    return dataclasses.replace(kernel, complex_views=views)


# -- opaque kernels: scatters (scatter.py), sorts (sort.py), scans (scan.py)

def _opaque_kernel(name, kind, summary, body, w, config, programs, constexprs=("BLOCK",)):
    """The TritonKernel of an opaque body whose source `w` takes every body parameter and
    then its outputs as pointers, then `constexprs`; launched on `programs` programs."""
    fn = identifier(name)
    inputs = [(p.shape, p.dtype) for p in body.params]
    outputs = [(r.shape, r.dtype) for r in body.results]
    params = _pointer_params(len(inputs), len(outputs)) + [f"{c}: tl.constexpr"
                                                            for c in constexprs]
    return TritonKernel(
        name, fn, kind, _module_text(fn, kind, summary, params, w.text(), w.helpers),
        list(range(len(inputs))), outputs, config, lambda c: (programs,),
        _signature(params, inputs, outputs))


def render_scatter(name, body, summary=""):
    """One program, atomics."""
    w, config = scatter.source(body)   # raises Unsupported for scans and ordered scatters
    return _opaque_kernel(name, "scatter", summary, body, w, config, 1)


def render_sort(name, body, summary=""):
    """One program per tile of rows, tl.sort of packed words."""
    w, config, programs = sort.source(body)   # raises Unsupported for the sorts it leaves
    return _opaque_kernel(name, "sort", summary, body, w, config, programs,
                          ("BLOCK", "ROWS", "LOG"))


def render_scan(name, body, summary=""):
    """Each lane walks its axis in order."""
    w, config, programs = scan.source(body)   # raises Unsupported for the scans it leaves
    return _opaque_kernel(name, "scan", summary, body, w, config, programs)
