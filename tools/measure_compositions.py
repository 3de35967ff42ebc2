"""Measure every ufunc jitlib traces as a composition of IR ops against eager NumPy.

    python tools/measure_compositions.py            # print the table
    python tools/measure_compositions.py --write    # save tools/composition_accuracy.json
                                                    # and regenerate docs/numpy_support.md

For float32 and float64 operands made of edge values (0, -0, +-inf, NaN, subnormals,
the extremes, powers of 2 and 10, integers and halves) and random samples over the whole
exponent range, each backend's result is compared with NumPy's: the largest distance in
ulps, and whether NaNs, infinities and signed zeros land where NumPy puts them. The jax
backend flushes subnormals to zero (XLA on the CPU), so its inputs and NumPy's results
exclude them.
"""
import argparse
import json
import pathlib
import sys
import warnings

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
DATA = ROOT / "tools" / "composition_accuracy.json"
BACKENDS = ("interpreter", "cpu", "jax")


def _edges(dt):
    info = np.finfo(dt)
    v = [0.0, -0.0, np.inf, -np.inf, np.nan, float(info.max), -float(info.max),
         float(info.tiny), float(info.smallest_subnormal), 1.0, -1.0, 0.5, -0.5, 1.5, 2.5,
         -2.5, 3.0, 7.0, -7.0, 180.0, 90.0, 1e-3, 0.1]
    v += [2.0 ** k for k in range(info.minexp, info.maxexp, 7)]
    v += [10.0 ** k for k in range(-info.precision * 2, info.precision * 2)]
    v += [float(np.pi), float(np.e), 1 + float(info.eps), 1 - float(info.epsneg)]
    return np.array(v, dtype=np.float64).astype(dt)


def _randoms(dt, n, rng):
    info = np.finfo(dt)
    mag = np.exp2(rng.uniform(info.minexp, info.maxexp, n))
    sign = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    near = rng.standard_normal(n) * 10.0
    with np.errstate(over="ignore"):
        return np.concatenate([mag * sign, near]).astype(dt)


def operands(dt, nin, rng, n=20000):
    """Unary: edges and randoms. Binary: every pair of edges, plus random pairs."""
    e, r = _edges(dt), _randoms(dt, n, rng)
    if nin == 1:
        return (np.concatenate([e, r]),)
    a, b = np.meshgrid(e, e)
    r2 = _randoms(dt, n, rng)
    rng.shuffle(r2)
    return np.concatenate([a.ravel(), r]), np.concatenate([b.ravel(), r2])


def _order(x):
    """Floats as integers in the same order, one apart per ulp (-0.0 and 0.0 are 0)."""
    it = np.int64 if x.dtype == np.float64 else np.int32
    i = x.view(it).astype(np.int64)
    return np.where(i < 0, -(i & np.iinfo(it).max), i)


def compare(got, want):
    """(max ulp over finite pairs, count of values that differ in class: NaN where a
    number is expected, an infinity or signed zero of the wrong sign, ...)."""
    got, want = np.asarray(got), np.asarray(want)
    if want.dtype.kind != "f":
        return 0, int((got != want).sum())
    both_nan = np.isnan(got) & np.isnan(want)
    finite = np.isfinite(got) & np.isfinite(want)
    zero_sign = (got == 0) & (want == 0) & (np.signbit(got) != np.signbit(want))
    other = ~both_nan & ~finite & ~((got == want) & ~np.isnan(want))
    ulp = np.abs(_order(got[finite]) - _order(want[finite]))
    return int(ulp.max(initial=0)), int(other.sum() + zero_sign.sum())


def _cases():
    lf = np.round
    return [
        ("exp2", np.exp2, 1), ("log2", np.log2, 1), ("log10", np.log10, 1),
        ("deg2rad", np.deg2rad, 1), ("rad2deg", np.rad2deg, 1), ("trunc", np.trunc, 1),
        ("square", np.square, 1), ("reciprocal", np.reciprocal, 1),
        ("signbit", np.signbit, 1), ("isinf", np.isinf, 1),
        ("hypot", np.hypot, 2), ("logaddexp", np.logaddexp, 2),
        ("logaddexp2", np.logaddexp2, 2), ("fmax", np.fmax, 2), ("fmin", np.fmin, 2),
        ("floor_divide", np.floor_divide, 2), ("remainder", np.remainder, 2),
        ("divmod[0]", lambda a, b: np.divmod(a, b)[0], 2),
        ("divmod[1]", lambda a, b: np.divmod(a, b)[1], 2),
        ("float_power", np.float_power, 2),
        ("round(x, 2)", lambda x: lf(x, 2), 1), ("round(x, -1)", lambda x: lf(x, -1), 1),
        ("clip(x, -1, 2)", lambda x: np.clip(x, -1.0, 2.0), 1),
        ("nan_to_num", np.nan_to_num, 1),
    ]


def measure(backends=BACKENDS, seed=0):
    import jitlib
    rows = {}
    for name, fn, nin in _cases():
        for dt in (np.float32, np.float64):
            rng = np.random.default_rng(seed)
            args = operands(np.dtype(dt), nin, rng)
            for backend in backends:
                xs = args
                if backend == "jax":   # XLA flushes subnormals: keep them out
                    keep = np.ones(len(xs[0]), bool)
                    for x in xs:
                        keep &= ~((x != 0) & (np.abs(x) < np.finfo(dt).tiny))
                    xs = tuple(x[keep] for x in xs)
                with warnings.catch_warnings(), np.errstate(all="ignore"):
                    warnings.simplefilter("ignore")
                    want = fn(*xs)
                    got = jitlib.jit(fn, backend=backend)(*xs)
                if backend == "jax" and want.dtype.kind == "f":
                    tiny = (want != 0) & (np.abs(want) < np.finfo(want.dtype).tiny)
                    want, got = want[~tiny], got[~tiny]
                if got.dtype != want.dtype:
                    raise AssertionError(f"{name} {backend}: dtype {got.dtype} != {want.dtype}")
                ulp, wrong = compare(got, want)
                rows.setdefault(name, {}).setdefault(np.dtype(dt).name, {})[backend] = [
                    ulp, wrong]
    return {"numpy": np.__version__, "rows": rows}


def table(data):
    """Markdown rows: composition, then 'max ulp (class mismatches)' per dtype x backend."""
    head = ["Composition"] + [f"{dt} {b}" for dt in ("float32", "float64") for b in BACKENDS]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, per_dt in data["rows"].items():
        cells = []
        for dt in ("float32", "float64"):
            for b in BACKENDS:
                ulp, wrong = per_dt[dt][b]
                cells.append(f"{ulp}" + (f" ({wrong}!)" if wrong else ""))
        lines.append(f"| `{name}` | " + " | ".join(cells) + " |")
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    data = measure()
    print("\n".join(table(data)))
    if args.write:
        rows = [f" {json.dumps(k)}: {json.dumps(v)}" for k, v in data["rows"].items()]
        DATA.write_text(f'{{"numpy": {json.dumps(data["numpy"])}, "rows": {{\n'
                        + ",\n".join(rows) + "\n}}\n")
        from tools import gen_numpy_table
        gen_numpy_table.main([])
    return 0


if __name__ == "__main__":
    sys.exit(main())
