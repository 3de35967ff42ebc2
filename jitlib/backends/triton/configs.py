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
    programs: int = 0     # reductions: at most this many programs, each looping over
                          # blocks of rows (0: one program per block)

    def key(self):
        return (tuple(sorted(self.constexprs.items())), self.num_warps, self.num_stages,
                self.programs)


def programs(n_blocks, config):
    """The grid size of a kernel with `n_blocks` blocks of work under `config`."""
    return min(n_blocks, config.programs) if config.programs else n_blocks


def next_pow2(n):
    return 1 << max(int(n) - 1, 0).bit_length()


# -- heuristics, one per kernel kind

def loop_config(n):
    """Flat elementwise: 1024-element tiles (8 f32 per thread at 4 warps: 128-bit loads),
    smaller for small n so the masked tail is not most of the work."""
    block = min(1024, max(16, next_pow2(n)))
    return Config({"BLOCK": block}, num_warps=4 if block >= 512 else 1)


def reduction_config(rows, row_len):
    """A whole row in registers: ROWS rows per program so a tile holds ~2-4K elements;
    long rows get more warps so each thread keeps at most ~16 elements."""
    block_r = next_pow2(max(row_len, 1))
    rows_per = max(1, min(next_pow2(rows), 2048 // block_r, 64))
    warps = min(16, max(1, (rows_per * block_r) // 512))
    # one program per block: its loop runs once, so nothing is worth prefetching
    return Config({"ROWS": rows_per, "STAGES": 1}, num_warps=next_pow2(warps), num_stages=1)


def dot_config(m, n, k, itemsize, widened=False):
    """Tensor-core tiles: 128x128 output tiles for big problems, down to 16 for small
    ones (tl.dot's minimum); K step 64 for 16-bit inputs, 32 for f32, 16 for f64.

    `widened`: an operand is converted to the tile type inside the K loop (an f32 x bf16
    product). 128x128 tiles with 8 warps then ran 45x slower on the H200 than 128x64 with
    4 warps (15.6 ms against 0.34 ms for 1024x4096x1024, 2026-12-02): the conversion's
    registers on top of the f32 accumulator spill. Use the narrower tile."""
    bm = min(128, max(16, next_pow2(m)))
    bn = min(64 if widened else 128, max(16, next_pow2(n)))
    bk = {2: 64, 4: 32}.get(itemsize, 16)
    bk = min(bk, max(16, next_pow2(k)))
    big = bm * bn >= 128 * 128 and not widened
    return Config({"BM": bm, "BN": bn, "BK": bk}, num_warps=8 if big else 4,
                  num_stages=3 if itemsize <= 4 else 2)


def candidates(kernel):
    """Configs an autotuner should time for `kernel` (its heuristic one first), at most ~6:
    each costs a compile."""
    base = kernel.config
    if kernel.kind == "loop":
        out = [Config({"BLOCK": b}, num_warps=w) for b, w in ((512, 4), (2048, 8), (4096, 8))]
    elif kernel.kind == "dot":
        out = _dot_candidates(**kernel.problem)
    elif kernel.kind == "reduction":
        out = _reduction_candidates(**kernel.problem)
    else:
        out = []
    seen, unique = set(), []
    for c in [base] + out:
        if c.key() not in seen:
            seen.add(c.key())
            unique.append(c)
    return unique


def _dot_candidates(B, M, N, K, itemsize):
    """Tiles by shape class: skinny N (a tile as narrow as N, long in M and K), batched
    small products (tiles no larger than one matrix), and big square ones (wide tiles,
    deep pipelines for tensor cores; smaller K steps for the f32 FMA path)."""
    fit = lambda n: max(16, next_pow2(n))
    if N <= 32:
        bn = fit(N)
        shapes = [(64, bn, 64, 4, 3), (128, bn, 64, 4, 3), (128, bn, 128, 4, 3),
                  (256, bn, 64, 8, 3), (32, bn, 128, 4, 4)]
    elif itemsize == 2:
        shapes = [(128, 256, 64, 8, 3), (128, 128, 64, 8, 4), (128, 128, 64, 4, 3),
                  (64, 128, 64, 4, 4), (128, 64, 64, 4, 4)]
    elif itemsize == 4:
        shapes = [(64, 64, 32, 4, 3), (128, 64, 32, 8, 3), (64, 128, 32, 4, 3),
                  (128, 128, 16, 8, 3), (128, 128, 32, 8, 2)]
    else:
        shapes = [(64, 64, 16, 4, 2), (32, 64, 16, 4, 3)]
    out = []
    for bm, bn, bk, w, s in shapes:
        bm, bn, bk = min(bm, fit(M)), min(bn, fit(N)), min(bk, fit(K))
        out.append(Config({"BM": bm, "BN": bn, "BK": bk}, num_warps=w, num_stages=s))
    return out


def _reduction_candidates(rows, row_len, block_r):
    """Rows per program and warps around the heuristic: few rows with many warps keeps
    more programs in flight; more rows per program cuts per-program overhead."""
    out = []
    for tile in (1024, 2048, 4096, 8192):
        rows_per = max(1, min(next_pow2(rows), tile // block_r, 64))
        for per_thread in (8, 16):
            warps = min(16, max(1, rows_per * block_r // (32 * per_thread)))
            out.append(Config({"ROWS": rows_per, "STAGES": 1}, num_warps=next_pow2(warps),
                              num_stages=1))
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
