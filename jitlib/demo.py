"""The main job's demo: jit two plain NumPy functions, show their IR, time them.

Run with `jitlib` or `python -m jitlib` (add `--backend jax` or `--backend interpreter`).
"""
import statistics
import time

import numpy as np

import jitlib
from jitlib import errors

# the demo plays the user: its lines are the ones the IR should point at
errors.treat_as_user_code(__file__)


def ew_chain(a, b, c):
    return np.maximum((a + b) * c, 0.0)


def layernorm(x, g, b):
    mu = x.mean(axis=-1, keepdims=True)
    var = np.var(x, axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-5) * g + b


def _median_ms(fn, args, repeats):
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn(*args)
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def _backend_label(name):
    from jitlib.backends import get_backend
    name = name or jitlib.config.default_backend()
    runs_as = get_backend(name).name
    return name if runs_as == name else f"{name} (not built yet: runs on the {runs_as})"


def run(backend=None, n=1 << 20, rows=1024, cols=256, repeats=15):
    rng = np.random.default_rng(0)
    cases = [
        (ew_chain, [rng.standard_normal(n, dtype=np.float32) for _ in range(3)]),
        (layernorm, [rng.standard_normal((rows, cols), dtype=np.float32),
                     rng.standard_normal(cols, dtype=np.float32),
                     rng.standard_normal(cols, dtype=np.float32)]),
    ]
    for fn, args in cases:
        jitted = jitlib.jit(fn, backend=backend)
        print(f"== {fn.__name__} ==")
        print(jitted.lower(*args).as_text())
        t0 = time.perf_counter()
        out = jitted(*args)
        first_ms = (time.perf_counter() - t0) * 1e3
        expected = fn(*args)
        assert out.dtype == expected.dtype, (out.dtype, expected.dtype)
        np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)
        jit_ms = _median_ms(jitted, args, repeats)
        numpy_ms = _median_ms(fn, args, repeats)
        used = jitted.cache_info()
        print(f"backend {_backend_label(jitted.backend)}: matches eager "
              f"NumPy ({out.dtype}{list(out.shape)}); first call {first_ms:.1f} ms "
              f"(trace + compile), then median {jit_ms:.2f} ms vs eager NumPy "
              f"{numpy_ms:.2f} ms ({numpy_ms / jit_ms:.2f}x); cache {used}\n")


def main(argv=None):
    """`jitlib demo [--backend B] [--repeats N]` (jitlib/cli.py parses the options)."""
    from jitlib.cli import main as cli_main
    return cli_main(["demo", *(argv or [])])


if __name__ == "__main__":
    main()
