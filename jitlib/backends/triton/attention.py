"""Attention as one kernel: a dot, a row softmax and a dot, fused flash-attention style.

The optimizer leaves `softmax(f(q @ k^T)) @ v` as three kernels (a dot, a row softmax
reduction, a dot), and the [.., M, N] scores go to memory and back twice; the softmax
kernel alone took a third of what cuBLAS takes for both products. `chains` finds
that shape among the fused kernels of an optimized module and `render` writes one kernel
for it, in which each program owns BM query rows and streams the keys in blocks of BN:

    s = q @ k^T (the first kernel's epilogue applied)   x = f(s) (the softmax's input)
    m_new = max(m, rowmax(x))                           p = exp(x - m_new)
    l = l * exp(m - m_new) + rowsum(p)                  acc = acc * exp(m - m_new) + p @ v
    out = acc / l   (the second kernel's epilogue applied, then the one store)

The match is exact on the softmax kernel's body, `e = exp(x - max(x)); e / sum(e)` over
the keys (the last dim), and `x` may be any elementwise expression of the scores and other
operands (a scale, an additive mask). The scores and the probabilities must feed nothing
else (not outputs, no other users), else the three kernels run as before.

NumPy's answers are kept where they are not a rounding matter: a NaN score makes its row
NaN (the running max propagates NaN); a +inf score makes its row NaN (inf - inf); a row
whose scores are all -inf is NaN (0 / 0), and -inf scores otherwise weigh nothing, even in
blocks before the row's first finite score (there the max is -inf, and 0 is subtracted
instead, since -inf - -inf would be NaN). What differs is the order of roundings: exp(x -
m) against the running max rescaled later, exp as ex2 of (x - m) * log2(e), the division
after the product instead of before (within the dot tolerance of the tests).

The products run on the tensor cores: 16-bit tiles as they are; f32 tiles as tf32x3
(three tf32 products, ~2^-21 relative: `_product`) after one pass over the batch's keys
and values finds no inf or NaN, else the same loop with IEEE FMA products (the test sits
outside the loop: inside it, Triton stopped pipelining the loads); f32 probabilities
times bf16 values (NumPy's bf16 @ bf16 is f32) as two bf16 products of p's halves
(`_split_product`). JITLIB_GPU_F32_DOT=ieee (jitlib/config.py) keeps every f32 product
on the FMA path. What fusing gained on the H200: docs/performance.md.
"""
import dataclasses

import numpy as np

from jitlib import config
from jitlib.backends.elemental import Index
from jitlib.backends.triton import configs
from jitlib.backends.triton.elemental import Elemental, store_value
from jitlib.backends.triton.kernels import (
    DOT_DTYPES, TritonKernel, _bound, _cdiv, _decompose, _module_text, _pointer_params,
    _signature, _source_dtype, _tile_dtype, dot_dims, identifier, operand_tile)
from jitlib.backends.triton.source import (
    F32, Unsupported, Writer, literal, memory_type, narrow)
from jitlib.fusion.fuse import REDUCING
from jitlib.hlo import dtypes
from jitlib.hlo.ops import Op

MAX_HEAD = 256    # head dims (q's contraction, v's columns) held whole in registers

_MAX_NAN = ("@triton.jit\ndef _max_nan_combine(a, b):\n"
            "    return tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL)\n")


@dataclasses.dataclass(frozen=True)
class Chain:
    """Three FUSION instructions of an optimized module: scores -> softmax -> output."""
    scores: object    # kind=dot: q @ k^T (and its epilogue)
    softmax: object   # kind=reduction over the keys
    output: object    # kind=dot: probabilities @ v (and its epilogue)


def _kind(instr, kind):
    return instr.op is Op.FUSION and instr.attrs["kind"] == kind


def chains(module):
    """Every dot -> reduction -> dot chain of fusions in `module` whose two intermediates
    are read once, by the next kernel of the chain, and are not results."""
    users = {}
    for instr in module.instructions:
        for o in instr.operands:
            users.setdefault(o, []).append(instr)
    results = set(module.results)

    def only_user(x):
        us = users.get(x, [])
        return us[0] if len(us) == 1 and x not in results else None

    out = []
    for r in module.instructions:
        if not _kind(r, "reduction"):
            continue
        output = only_user(r)
        scores = [o for o in r.operands if _kind(o, "dot") and only_user(o) is r]
        if output is not None and _kind(output, "dot") and len(scores) == 1:
            out.append(Chain(scores[0], r, output))
    return out


def _only(items, what):
    if len(items) != 1:
        raise Unsupported(f"{what}: {len(items)} found, one expected")
    return items[0]


def softmax_input(body):
    """The `x` of a body computing exactly `e / sum(e)` with `e = exp(x - max(x))`, both
    reductions over the last dim; Unsupported (saying what differs) otherwise."""
    out = _only(body.results, "softmax kernel results")
    last, kept = out.ndim - 1, list(range(out.ndim - 1))

    def row_value(b, op):
        """The reduction `op` (over the last dim) that broadcast `b` spreads back."""
        if b.op is not Op.BROADCAST_IN_DIM or list(b.attrs["dims"]) != kept:
            raise Unsupported("the softmax's row value is not broadcast along the keys")
        (red,) = b.operands
        if red.op is not op or list(red.attrs["dims"]) != [last]:
            raise Unsupported(f"the softmax needs {op} over the last dim, not {red.op}")
        return red

    if out.op is not Op.DIV:
        raise Unsupported(f"the softmax kernel ends in {out.op}, not a div by the row sum")
    e, total = out.operands
    if row_value(total, Op.REDUCE_SUM).operands[0] is not e or e.op is not Op.EXP:
        raise Unsupported("not e / sum(e) with e = exp(...)")
    (shifted,) = e.operands
    if shifted.op is not Op.SUB:
        raise Unsupported("exp of something other than x - max(x)")
    x, peak = shifted.operands
    if row_value(peak, Op.REDUCE_MAX).operands[0] is not x:
        raise Unsupported("exp(x - max(y)) with y not x")
    if len([i for i in body.instructions if i.op in REDUCING]) != 2:
        raise Unsupported("the softmax kernel has reductions besides its max and sum")
    if dtypes.name(x.dtype) not in DOT_DTYPES[:3]:
        raise Unsupported(f"a {dtypes.name(x.dtype)} softmax")
    return x


def _product(a, b, acc, tile_dt, precision):
    """`a @ b (+ acc)` accumulated in f32. 16-bit tiles: the tensor cores. f32 tiles:
    `precision` "tf32x3" (each operand split in two tf32 parts, three tensor-core
    products; about 2^-21 relative per product, within the f32 dot tolerance), used only
    when every key and value is finite, else "ieee" (FMA). The queries and the
    probabilities need no test: an inf query makes NumPy's row NaN anyway (all its scores
    are inf or NaN), and probabilities are in [0, 1] or NaN."""
    more = f", {acc}" if acc else ""
    if tile_dt != F32:
        return f"tl.dot({a}, {b}{more}, out_dtype=tl.float32)"
    return f'tl.dot({a}, {b}{more}, input_precision="{precision}", out_dtype=tl.float32)'


def _split_product(w, prob, v_tile, alpha):
    """acc += p @ v for f32 p and bf16 v on the tensor cores: p = hi + lo, both bf16, and
    two bf16 products accumulated in f32. Each product of bf16 values is exact in f32 and
    hi + lo is p to ~2^-17 relative (lo is rounded from the exact p - hi), so the result
    stays within the f32 dot tolerance of the IEEE product that the FMA path computes,
    at tensor-core speed. p is in [0, 1] or NaN, so splitting it never makes inf - inf."""
    hi = w.let(f"{prob}.to(tl.bfloat16)", "p_hi")
    lo = w.let(f"({prob} - {hi}.to(tl.float32)).to(tl.bfloat16)", "p_lo")
    w.line(f"acc = tl.dot({hi}, {v_tile}, acc * {alpha}, out_dtype=tl.float32)")
    w.line(f"acc_lo = tl.dot({lo}, {v_tile}, acc_lo * {alpha}, out_dtype=tl.float32)")


def _param_of(fusion, operand, body):
    """The parameter of `body` that `operand` of `fusion` binds (one position only)."""
    where = [i for i, o in enumerate(fusion.operands) if o is operand]
    return body.params[_only(where, "positions of the intermediate")]


@dataclasses.dataclass
class AttentionKernel:
    """The rendered kernel and the outer instructions its input pointers read."""
    kernel: TritonKernel
    operands: list


def render(chain):
    """One Triton kernel for `chain`, or Unsupported saying why it keeps three."""
    s_body = chain.scores.attrs["body"]
    r_body = chain.softmax.attrs["body"]
    o_body = chain.output.attrs["body"]
    dot1 = _only([i for i in s_body.instructions if i.op is Op.DOT_GENERAL], "scores dots")
    dot2 = _only([i for i in o_body.instructions if i.op is Op.DOT_GENERAL], "output dots")
    scores = _only(s_body.results, "scores kernel results")
    s_param = _param_of(chain.softmax, chain.scores, r_body)
    p_param = _param_of(chain.output, chain.softmax, o_body)
    x = softmax_input(r_body)
    q, k = dot1.operands
    p, v = dot2.operands
    lb, lc, lfree, rb, rc, rfree = dot_dims(dot1)
    pb, pc, pfree, vb, vc, vfree = dot_dims(dot2)
    nb, nd = len(lb), dot1.ndim
    if scores.shape != dot1.shape or len(lfree) != 1 or len(rfree) != 1:
        raise Unsupported("scores other than one [.., M, N] product")
    if (p is not p_param or list(pb) != list(range(nb)) or list(pc) != [nd - 1]
            or len(vfree) != 1):
        raise Unsupported("the second dot does not read the probabilities as [.., M, N]")
    dt1 = np.dtype(q.dtype)
    if dtypes.name(dt1) not in DOT_DTYPES[:3] or k.dtype != dt1:
        raise Unsupported(f"scores of {dtypes.name(dt1)} operands")
    if any(o.shape != dot2.shape for o in o_body.results):
        raise Unsupported("an output epilogue of another shape")
    batch = [q.shape[i] for i in lb]
    M, N = q.shape[lfree[0]], k.shape[rfree[0]]
    D = int(np.prod([q.shape[i] for i in lc], dtype=np.int64))
    DV = v.shape[vfree[0]]
    if D > MAX_HEAD or DV > MAX_HEAD:
        raise Unsupported(f"head dims {D}, {DV} over {MAX_HEAD}")
    B = int(np.prod(batch, dtype=np.int64))
    block_d, block_v = configs._dot_fit(D), configs._dot_fit(DV)
    tile1 = _tile_dtype(q, k, dt1)
    tile2 = _tile_dtype(p, v, np.dtype(p.dtype))
    # f32 probabilities times bf16 values (NumPy's bf16 attention): see _split_product
    exact = config.gpu_f32_dot() == "ieee"   # JITLIB_GPU_F32_DOT: no split f32 products
    split = tile2 == F32 and dtypes.name(_source_dtype(v)) == "bf16" and not exact

    # one pointer per distinct outer operand, whichever bodies read it
    operands, pointers = [], {}

    def bind(fusion, body, skip):
        names = {}
        for param, outer in zip(body.params, fusion.operands):
            if param is skip:
                continue
            if outer not in pointers:
                pointers[outer] = f"in{len(operands)}"
                operands.append(outer)
            names[param] = pointers[outer]
        return names

    w = Writer()
    el_s = Elemental(w, bind(chain.scores, s_body, None))
    el_x = Elemental(w, bind(chain.softmax, r_body, s_param))
    el_o = Elemental(w, bind(chain.output, o_body, p_param))

    w.line(f"# query rows rm of batch b: [{M}, {DV}] = softmax(x) @ v, x from the scores "
           f"[{M}, {N}] = [{M}, {D}] @ [{D}, {N}], the keys streamed BN at a time")
    w.line("b = tl.program_id(1).to(tl.int64)")
    w.line("rm = (tl.program_id(0).to(tl.int64) * BM + tl.arange(0, BM))[:, None]")
    w.line(f"rd_row = tl.arange(0, {block_d}).to(tl.int64)[None, :]")
    w.line(f"rd_col = tl.arange(0, {block_d}).to(tl.int64)[:, None]")
    w.line(f"rv = tl.arange(0, {block_v}).to(tl.int64)[None, :]")
    bdims = _decompose(w, "b", batch)
    rows = w.let(_bound("rm", M, "BM"), "rows")
    el_s.raw = True
    el_s.mask = w.let(f"{rows} & {_bound('rd_row', D, block_d)}", "mask")
    q_tile = operand_tile(w, el_s, q, (lb, bdims), (lfree, ["rm"]), (lc, "rd_row"), tile1)
    neg_inf = w.let(literal(-np.inf, F32), "neg_inf")
    log2e = w.let(literal(1.0 / np.log(2.0), F32), "log2e")
    w.line(f"m = tl.zeros([BM, 1], tl.float32) + {neg_inf}  # running row max")
    w.line("l = tl.zeros([BM, 1], tl.float32)  # running sum of exp(x - m)")
    w.line(f"acc = tl.zeros([BM, {block_v}], tl.float32)  # running exp(x - m) @ v")
    if split:
        w.line(f"acc_lo = tl.zeros([BM, {block_v}], tl.float32)  # the low halves' part")

    def key_block_loads(tile_k, tile_v):
        """The loop head (key indices) and this key block's k and v tiles."""
        w.line("rn = (n0 + tl.arange(0, BN)).to(tl.int64)[None, :]")
        w.line("rn_col = (n0 + tl.arange(0, BN)).to(tl.int64)[:, None]")
        keys = w.let(_bound("rn", N, "BN"), "keys")
        el_s.raw = el_o.raw = True
        el_s.mask = w.let(f"{_bound('rd_col', D, block_d)} & {keys}", "mask")
        k_tile = operand_tile(w, el_s, k, (rb, bdims), (rfree, ["rn"]), (rc, "rd_col"),
                              tile_k)
        el_o.mask = w.let(f"{_bound('rn_col', N, 'BN')} & {_bound('rv', DV, block_v)}",
                          "mask")
        v_tile = operand_tile(w, el_o, v, (vb, bdims), (vfree, ["rv"]), (vc, "rn_col"),
                              tile_v)
        return keys, k_tile, v_tile

    def stream_keys(precision):
        """The loop over key blocks, its f32 products in `precision` (tf32x3 or ieee)."""
        w.line(f"for n0 in range(0, {N}, BN):")
        w.indent += 1
        for el in (el_s, el_x, el_o):
            el.push()
        keys, k_tile, v_tile = key_block_loads(tile1, _source_dtype(v) if split else tile2)
        w.line("# the scores' tile, their epilogue, the softmax's input")
        dot = w.let(_product(q_tile, k_tile, None, tile1, precision), "s")
        el_s.raw = el_o.raw = False
        product = narrow(dot, dot1.dtype)   # the scores kernel's rounding of its product
        el_s.fixed[dot1] = product if product == dot else w.let(product, "s")
        tile = Index(dot1.shape, list(bdims) + ["rm", "rn"])
        el_s.mask = el_x.mask = w.let(f"{rows} & {keys}", "mask")
        el_x.fixed[s_param] = el_s.value(scores, tile)
        xv = el_x.value(x, Index(x.shape, tile.dims))
        xv = w.let(f"tl.where({keys}, {xv}, {neg_inf})", "x",
                   comment="keys past the end weigh 0")
        w.line("# the online softmax: NaN anywhere in a row makes its max NaN, as np.max")
        peak = w.let(f"tl.reduce({xv}, 1, _max_nan_combine, keep_dims=True)", "red")
        m_new = w.let(f"tl.maximum(m, {peak}, propagate_nan=tl.PropagateNan.ALL)", "m_new")
        shift = w.let(f"tl.where({m_new} == {neg_inf}, 0.0, {m_new})", "shift",
                      comment="no finite score yet: -inf - -inf would be NaN")
        # exp(d) as 2^(d * log2(e)) on the SFU's ex2.approx (~2 ulp; weights under 2^-126
        # flush to 0, below any f32 sum they join): libdevice's exp
        # spends a range reduction on accuracy this does not need, since d = x - max
        # is exact near 0 and the product rounds once (~1e-6 relative where p matters),
        # and it is an eighth faster. The softmax scale is not folded
        # into log2(e): s * (scale * log2(e)) - max would round before the subtraction,
        # an error growing with |scores| (2.6e-4 relative at scores ~3000)
        alpha = w.let(f"tl.math.exp2((m - {shift}) * {log2e})", "alpha")
        prob = w.let(f"tl.math.exp2(({xv} - {shift}) * {log2e})", "p")
        w.line(f"l = l * {alpha} + tl.sum({prob}, axis=1, keep_dims=True)")
        if split:
            _split_product(w, prob, v_tile, alpha)
        else:
            if tile2 != F32:   # 16-bit probabilities: the tensor cores, as the output's dot
                prob = w.let(f"{prob}.to({memory_type(tile2)})", "tile")
            w.line(f"acc = {_product(prob, v_tile, f'acc * {alpha}', tile2, precision)}")
        w.line(f"m = {m_new}")
        for el in (el_s, el_x, el_o):
            el.pop()
        w.indent -= 1

    checked = [t for t, dt in (("k", tile1), ("v", None if split else tile2)) if dt == F32]
    if not checked:
        stream_keys(None)
    elif exact:
        stream_keys("ieee")
    else:
        # tf32x3 splits each f32 operand in two tf32 parts, and an inf's low part is
        # inf - inf = NaN: one pass over the keys and values first, which picks the loop
        w.line(f"# any inf or NaN among {' and '.join(checked)}? (tf32x3 would make it NaN)")
        w.line("bad = tl.zeros([], tl.int32)")
        w.line(f"for n0 in range(0, {N}, BN):")
        w.indent += 1
        for el in (el_s, el_o):
            el.push()
        _, k_tile, v_tile = key_block_loads(tile1, tile2)
        for name, value in (("k", k_tile), ("v", v_tile)):
            if name in checked:
                w.line(f"bad += tl.sum(tl.where(tl.abs({value}) < {literal(np.inf, F32)}, "
                       "0, 1))")
        for el in (el_s, el_o):
            el.pop()
        w.indent -= 1
        w.line("if bad == 0:   # all finite: the f32 products as tf32x3 on the tensor cores")
        w.indent += 1
        stream_keys("tf32x3")
        w.indent -= 1
        w.line("else:   # exact IEEE products on the FMA path, inf as NumPy has it")
        w.indent += 1
        stream_keys("ieee")
        w.indent -= 1
    w.line("# the softmax's division, after the product, then the output's epilogue")
    el_o.raw = False
    if split:   # a low part that is NaN from 0 * inf (a bf16-exact p, an inf value) drops
        w.line(f"acc = acc + tl.where(tl.abs(acc_lo) < {literal(np.inf, F32)}, acc_lo, 0.0)")
    el_o.fixed[dot2] = w.let(narrow("tl.div_rn(acc, l)", dot2.dtype), "prod")
    el_o.mask = w.let(f"{rows} & {_bound('rv', DV, block_v)}", "mask")
    out_index = Index(dot2.shape, list(bdims) + ["rm", "rv"],
                      w.let(f"b * {M * DV} + rm * {DV} + rv", "i"))
    for j, out in enumerate(o_body.results):
        value = el_o.value(out, out_index)
        w.line(f"tl.store(out{j} + {out_index.lin}, {store_value(value, out.dtype)}, "
               f"mask={el_o.mask})")

    name = chain.output.attrs["name"]
    fn = identifier(f"flash_{chain.scores.attrs['name']}")
    params = _pointer_params(len(operands), len(o_body.results)) + [
        "BM: tl.constexpr", "BN: tl.constexpr"]
    summary = (f"{chain.scores.attrs['name']} -> {chain.softmax.attrs['name']} -> {name}, "
               "one kernel (online softmax)")
    source = _module_text(fn, "attention", summary, params, w.text(), {_MAX_NAN} | w.helpers)
    outputs = [(r.shape, r.dtype) for r in o_body.results]
    kernel = TritonKernel(
        name, fn, "attention", source, list(range(len(operands))), outputs,
        configs.attention_config(M, N, tile1.itemsize),
        lambda c: (_cdiv(M, c.constexprs["BM"]), B),
        _signature(params, [(o.shape, o.dtype) for o in operands], outputs),
        {"B": B, "M": M, "N": N, "D": D, "DV": DV, "itemsize": tile1.itemsize})
    return AttentionKernel(kernel, operands)
