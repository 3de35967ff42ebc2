"""Inputs that expose double rounding: values at and next to halfway points of the
target type's grid, for conversions that must round once (as NumPy and ml_dtypes do)."""
import numpy as np

# (source, target) pairs where a detour through f32 would round twice
ROUND_ONCE_PAIRS = [("f64", "f16"), ("f64", "bf16"), ("i32", "bf16"), ("u32", "bf16"),
                    ("i64", "bf16"), ("u64", "bf16")]


def near_ties(rng, bits, n, significant):
    """`bits`-bit integers at and around halfway points of a `significant`-bit grid."""
    shift = rng.integers(significant + 1, bits - significant + 1, n)
    head = rng.integers(1 << (significant - 1), 1 << significant, n)
    halfway = [(int(h) << int(s)) + (1 << (int(s) - 1)) for h, s in zip(head, shift)]
    return [v + int(d) for v, d in zip(halfway, rng.integers(-2, 3, n))]


def round_once_inputs(source, target, seed=7):
    """Values of dtype `source` that convert to `target` differently if rounded twice."""
    rng = np.random.default_rng(seed)
    if source == np.float64:
        grid = np.array(rng.uniform(-60000, 60000, 300), target)
        above = np.nextafter(grid, np.array(np.inf, target))
        mid = (grid.astype(np.float64) + above.astype(np.float64)) / 2
        x = np.concatenate([mid, mid * (1 + 2.0 ** -40), mid * (1 - 2.0 ** -40)])
        return x[np.isfinite(x)]
    info = np.iinfo(source)
    bits = info.bits - (info.min < 0)
    x = np.array(near_ties(rng, bits, 600, 8) + [info.max, info.min],
                 dtype=object).astype(source)
    return np.concatenate([x, -x[:-2]]) if info.min < 0 else x
