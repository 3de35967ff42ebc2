"""Launch configurations: block sizes and warps per kernel signature.

`choose(kernel)` answers from the tuned-config cache when the autotuner (autotune.py) has
measured the kernel on this GPU, else from the heuristics below (sizes are static, so the
heuristic sees the real extents). `record(kernel, device_name, config)` stores a measured
winner (JSON beside the generated sources, keyed by the kernel's source hash and the GPU's
name) and `candidates(kernel)` lists what is worth timing. Nothing here measures.
"""
import dataclasses
import json
import os
import threading


@dataclasses.dataclass(frozen=True)
class Config:
    constexprs: dict      # block-size arguments of the kernel, by name
    num_warps: int = 4
    num_stages: int = 2
    maxnreg: int = None   # registers per thread ptxas may use (None: its own choice)

    def key(self):
        return (tuple(sorted(self.constexprs.items())), self.num_warps, self.num_stages,
                self.maxnreg)

    def options(self):
        """The compile options Triton takes for this config (launch keywords too)."""
        # no a*b+c contracted into an fma: elementwise float math rounds each op, as the
        # interpreter, NumPy and the LLVM backend do (jitlib.random's bit-identity needs it)
        out = {"num_warps": self.num_warps, "num_stages": self.num_stages,
               "enable_fp_fusion": False}
        if self.maxnreg:
            out["maxnreg"] = self.maxnreg
        return out


def next_pow2(n):
    return 1 << max(int(n) - 1, 0).bit_length()


# -- heuristics, one per kernel kind

def loop_config(n, light=False):
    """Flat elementwise: 512-element tiles, smaller for small n so the masked tail is not
    most of the work. In the H200 sweep (tools/gpu_tune_sweep.py) 512 at 4 warps (4 f32
    per thread: one 128-bit load per input and thread) was the fastest shape for
    ew_chain and gelu_tanh.

    `light` (f32 only, a few adds, multiplies and compares per element: all loads and
    stores) takes 8 warps, 2 per thread, inductor's shape for ew_chain, where it ran
    faster and as fast as inductor's own kernel; gelu_tanh, whose tanh is some 30
    instructions an element, ran much slower at 8 warps, so everything else keeps 4
    (docs/performance.md).
    Elementwise kernels are not autotuned: their launch is most of a small one."""
    block = min(512, max(16, next_pow2(n)))
    if block < 512:
        return Config({"BLOCK": block}, num_warps=1)
    return Config({"BLOCK": block}, num_warps=8 if light else 4)


def reduction_config(rows, row_len, row_outputs=True):
    """A whole row in registers: ROWS rows per program so a tile holds ~2K elements or
    one row; a warp per 512 elements, so each thread keeps ~16 (at most 16 warps). In
    the H200 sweep (tools/gpu_tune_sweep.py) this was the fastest for 4096x4096 softmax
    and layernorm (1 row, 8 warps) and within 3% of the fastest for 16384x512.
    Persistent programs looping over row blocks, with or without their loads pipelined
    through shared memory (or TMA), were slower, so the grid is a program per block.

    A kernel whose outputs are all per row (`row_outputs` False: sums, norms, logsumexp)
    and whose tile holds 4096 elements or more is compiled with maxnreg=40. It is a
    larger budget, not a cap: ptxas then gives logsumexp's kernel 39 registers instead
    of the 32 it picks by itself (6 programs of 8 warps per SM instead of 8) and
    schedules it differently, and it runs slightly faster on the H200. softmax, which
    keeps its row for the stores, gained nothing; layernorm lost (docs/performance.md)."""
    block_r = next_pow2(max(row_len, 1))
    rows_per = max(1, min(next_pow2(rows), 2048 // block_r, 64))
    warps = min(16, max(1, (rows_per * block_r) // 512))
    cap = None if row_outputs or rows_per * block_r < 4096 else 40
    return Config({"ROWS": rows_per}, num_warps=next_pow2(warps), maxnreg=cap)


# tf32x3 programs (128x64 tiles) below which an f32 x f32 dot stays on the FMA path by
# default: about two waves of the H200's 132 SMs. Its mlp's 1024x1024 output (128
# programs) ran slower in tf32x3 than IEEE, its 1024x4096 one (512) faster
TF32X3_MIN_PROGRAMS = 256


# programs below which an FMA dot's heuristic shortens its row tiles: half the H200's
# 132 SMs (mlp's 1024x1024 output, 128 tiles of 128x64, ran best as it is)
FEW_PROGRAMS = 66


def _cdiv(a, b):
    return -(-a // b)


def _dot_fit(n):
    """A tile side for an extent of `n`: a power of two, at least tl.dot's 16."""
    return max(16, next_pow2(n))


def dot_config(m, n, k, itemsize, widened=False, mode=None, batch=1):
    """Tiles for `tl.dot`, from the H200 sweeps (tools/gpu_tune_sweep.py; figures in
    docs/performance.md), no larger than the problem and at least 16 (tl.dot's minimum):

    - 16-bit (tensor cores): 128x128x64, 8 warps, 3 stages;
    - f32 on the FMA path (input_precision="ieee"): 128x64x32, 8 warps (the wider
      128x128 tile took twice as long); a short K (<= 64: attention's q @ k^T) is the
      exception, where 128x128x16 with 4 warps is faster. A product whose grid would not
      reach FEW_PROGRAMS takes rows 64 or 32 at a time instead (mse_loss's products ran
      twice as fast so);
    - `widened` (an operand converted to f32 inside the K loop: the f32 x bf16 product
      of a bf16 MLP under NumPy's promotion): 128x64x16, 8 warps. With a K step of 32
      most tiles spilled into a form up to 200x slower;
    - f64: 64x64x16, 4 warps;
    - f32 on the tensor cores (f32_products.py): tf32x3 128x64x32, 4 warps, 4 stages
      (the best of 94 tiles for mlp's first product); bf16x2 64x128x32, 4 warps,
      4 stages;
    - `mode` "either" (f32 x f32 under JITLIB_GPU_F32_DOT=auto): the constexpr TF32X3
      picks tf32x3 where its tiles make at least TF32X3_MIN_PROGRAMS programs, else the
      FMA path (the tuner times both: `candidates`)."""
    if mode == "either":
        use = batch * _cdiv(m, 128) * _cdiv(n, 64) >= TF32X3_MIN_PROGRAMS
        c = dot_config(m, n, k, itemsize, widened, "tf32x3" if use else None)
        return Config({**c.constexprs, "TF32X3": int(use)}, c.num_warps, c.num_stages)
    if mode in ("tf32x3", "tf32", "bf16x2"):
        # tf32 (matmul_precision="default") takes tf32x3's tiles until a sweep says better
        bm, bn, bk, warps = (64, 128, 32, 4) if mode == "bf16x2" else (128, 64, 32, 4)
    elif itemsize == 2:
        bm, bn, bk, warps = 128, 128, 64, 8
    elif itemsize == 4 and widened:
        bm, bn, bk, warps = 128, 64, 16, 8
    elif itemsize == 4 and k <= 64:
        bm, bn, bk, warps = 128, 128, 16, 4
    elif itemsize == 4:
        bm, bn, bk, warps = 128, 64, 32, 8
    else:
        bm, bn, bk, warps = 64, 64, 16, 4
    bm, bn, bk = min(bm, _dot_fit(m)), min(bn, _dot_fit(n)), min(bk, _dot_fit(k))
    if itemsize == 4 and not widened and mode in (None, "ieee") and k > 64:
        # an FMA product too small to fill half the SMs: shorter row tiles, more programs
        while bm > 32 and batch * _cdiv(m, bm) * _cdiv(n, bn) < FEW_PROGRAMS:
            bm //= 2
    if bm * bn < 64 * 64:    # a small product's tile: 4 warps have enough to do
        warps = 4
    stages = 4 if mode in ("tf32x3", "tf32", "bf16x2") else 3 if itemsize <= 4 else 2
    return Config({"BM": bm, "BN": bn, "BK": bk}, num_warps=warps, num_stages=stages)


def attention_config(m, n, itemsize):
    """The fused attention kernel (attention.py): BM query rows per program, keys in blocks
    of BN. From the H200 sweep (32x512x512, head dim 64): 16-bit scores 64x64, 4 warps,
    3 stages (2 stages slower, 64x128 within 2%); f32 (tf32x3 products) 128x64, 8 warps,
    3 stages, the best of 36 tiles."""
    bm, warps = (64, 4) if itemsize == 2 else (128, 8)
    bm, bn = min(bm, _dot_fit(m)), min(64, _dot_fit(n))
    return Config({"BM": bm, "BN": bn}, num_warps=warps if bm * bn >= 128 * 64 else 4,
                  num_stages=3)


def candidates(kernel):
    """Configs an autotuner should time for `kernel` (its heuristic one first), at most ~6:
    each costs a compile."""
    base = kernel.config
    if kernel.kind == "loop":
        out = [Config({"BLOCK": b}, num_warps=w) for b, w in ((1024, 4), (512, 8), (2048, 8))]
    elif kernel.kind == "dot":
        out = _dot_candidates(**kernel.problem)
    elif kernel.kind == "reduction":
        out = _reduction_candidates(**kernel.problem)
    elif kernel.kind == "attention":
        out = _attention_candidates(**kernel.problem)
    else:
        out = []
    seen, unique = set(), []
    for c in [base] + out:
        if c.key() not in seen:
            seen.add(c.key())
            unique.append(c)
    return unique


def _dot_candidates(B, M, N, K, itemsize, widened=False, mode=None):
    """Tiles by shape class, the ones that won somewhere in the H200 sweep first (the
    tuner's time budget may end the list early): skinny N (a tile as narrow as N, long
    in M and K), 16-bit tensor-core tiles, f32 FMA tiles (narrow K steps when an operand
    is widened in the loop), f64. Mode "either" takes the tf32x3 and the FMA lists in
    turn, each config with its TF32X3 constexpr."""
    if mode == "either":
        both = zip(_dot_candidates(B, M, N, K, itemsize, widened, "tf32x3"),
                   _dot_candidates(B, M, N, K, itemsize, widened, None))
        return [Config({**c.constexprs, "TF32X3": flag}, c.num_warps, c.num_stages)
                for pair in both for c, flag in zip(pair, (1, 0))]
    if N <= 32:
        bn = _dot_fit(N)
        shapes = [(64, bn, 64, 4, 3), (128, bn, 64, 4, 3), (128, bn, 128, 4, 3),
                  (256, bn, 64, 8, 3), (32, bn, 128, 4, 4)]
    elif mode in ("tf32x3", "tf32"):   # the H200 sweep's best five for mlp's products
        shapes = [(128, 64, 32, 4, 4), (128, 64, 32, 8, 3), (128, 64, 32, 4, 3),
                  (128, 128, 64, 8, 3), (256, 128, 32, 8, 3)]
    elif mode == "bf16x2":
        shapes = [(64, 128, 32, 4, 4), (128, 64, 32, 8, 4), (64, 128, 32, 8, 4),
                  (64, 128, 32, 4, 3), (128, 64, 32, 4, 4)]
    elif itemsize == 2:
        shapes = [(128, 64, 64, 4, 3), (64, 128, 64, 4, 4), (128, 256, 64, 8, 3),
                  (64, 64, 64, 4, 3)]
    elif itemsize == 4 and widened:
        shapes = [(64, 64, 16, 4, 3), (64, 128, 16, 8, 3), (64, 64, 16, 8, 3),
                  (64, 64, 32, 8, 3)]
    elif itemsize == 4:
        shapes = [(128, 128, 16, 4, 3), (64, 128, 32, 8, 3), (128, 64, 32, 8, 3),
                  (64, 64, 32, 4, 3), (64, 64, 16, 4, 3)]
    else:
        shapes = [(64, 64, 16, 4, 2), (32, 64, 16, 4, 3)]
    out = []
    for bm, bn, bk, w, s in shapes:
        bm, bn, bk = min(bm, _dot_fit(M)), min(bn, _dot_fit(N)), min(bk, _dot_fit(K))
        out.append(Config({"BM": bm, "BN": bn, "BK": bk}, num_warps=w, num_stages=s))
    return out


def _attention_candidates(B, M, N, D, DV, itemsize):
    """Query rows and key block per program, warps, stages: more rows share each key block
    read; fewer keep more programs in flight (B * M / BM of them)."""
    shapes = [(64, 64, 4, 3), (128, 64, 8, 3), (64, 128, 4, 3), (128, 64, 8, 2),
              (64, 32, 4, 3), (32, 64, 4, 2)]
    return [Config({"BM": min(bm, _dot_fit(M)), "BN": min(bn, _dot_fit(N))}, num_warps=w,
                   num_stages=st) for bm, bn, w, st in shapes]


def _reduction_candidates(rows, row_len, block_r):
    """Rows per program and warps around the heuristic: few rows with many warps keeps
    more programs in flight; more rows per program cuts per-program overhead."""
    out = []
    for tile in (1024, 2048, 4096, 8192):
        rows_per = max(1, min(next_pow2(rows), tile // block_r, 64))
        for per_thread in (16, 8, 32):
            warps = min(16, max(1, rows_per * block_r // (32 * per_thread)))
            out.append(Config({"ROWS": rows_per}, num_warps=next_pow2(warps)))
    return out


# -- the tuned-config cache

_lock = threading.Lock()
_tuned = {}     # (cache file, source hash, device) -> Config


def _tuned_path(cache_dir):
    return os.path.join(cache_dir, "tuned_configs.json")


def _load(cache_dir):
    path = _tuned_path(cache_dir)
    if path not in _tuned:
        try:
            with open(path) as f:
                _tuned[path] = {k: Config(**v) for k, v in json.load(f).items()}
        except (OSError, ValueError, TypeError):
            _tuned[path] = {}
    return _tuned[path]


def choose(kernel, cache_dir, device_name):
    """The config to launch `kernel` with: a measured one if recorded, else the heuristic."""
    with _lock:
        return _load(cache_dir).get(f"{kernel.digest}:{device_name}", kernel.config)


def record(kernel, cache_dir, device_name, config):
    """Remember the measured winner for `kernel` on `device_name` (persisted)."""
    with _lock:
        table = _load(cache_dir)
        table[f"{kernel.digest}:{device_name}"] = config
        with open(_tuned_path(cache_dir), "w") as f:
            json.dump({k: dataclasses.asdict(c) for k, c in table.items()}, f, indent=1)
