"""The shifting-batch scenario: an MLP forward whose batch size changes on every call.

    python -m benchmarks.shifting_batch [--calls 200] [--json out.json]

Runs the same 200 request sizes (1..256, seed 0) through
  jitlib, no buckets      one compile per distinct size
  jitlib, pow2 buckets    one compile per bucket; padding masked and sliced by jitlib
  jax.jit, no padding     one compile per distinct size
  jax.jit, hand padding   the user pads to a power of two and slices
and reports total time, compile count and the worst difference from eager NumPy on the
unpadded input. Then a new process's first call with an empty persistent cache against
one with a warm cache (jitlib's disk cache against JAX's persistent compilation cache),
for the scenario's MLP and for a larger elementwise/reduction chain.
Timings on a shared machine are noisy: read them as orders of magnitude.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time

import numpy as np

FEAT, HID = 64, 256


def dynamic_batch_sizes(n_calls=200, lo=1, hi=256, seed=0):
    """Request sizes an inference service might see (the shared workload's recipe)."""
    rng = np.random.default_rng(seed)
    return [int(v) for v in rng.integers(lo, hi + 1, size=n_calls)]


def mlp(xp, x, w1, b1, w2, b2):
    h = xp.maximum(x @ w1 + b1, 0.0)
    return h @ w2 + b2


def weights(rng):
    f32 = np.float32
    return [(rng.standard_normal((FEAT, HID)) * 0.05).astype(f32),
            rng.standard_normal(HID).astype(f32),
            (rng.standard_normal((HID, FEAT)) * 0.05).astype(f32),
            rng.standard_normal(FEAT).astype(f32)]


def _pow2(n):
    return 1 << max(n - 1, 0).bit_length()


def run_jitlib(sizes, xs, ws, buckets):
    import jitlib
    # a fresh disk cache per variant: every compile below is a real one
    os.environ["JITLIB_CACHE_DIR"] = tempfile.mkdtemp(prefix="jitlib-bench-")
    f = jitlib.jit(lambda x, w1, b1, w2, b2: mlp(np, x, w1, b1, w2, b2), backend="cpu",
                   buckets={"arg": "x", "axis": 0, "policy": "pow2", "max": 256}
                   if buckets else None)
    t0 = time.perf_counter()
    outs = [f(x, *ws) for x in xs]
    return time.perf_counter() - t0, f.cache_info().misses, outs


def run_jax(sizes, xs, ws, pad):
    import jax
    import jax.numpy as jnp
    f = jax.jit(lambda x, w1, b1, w2, b2: mlp(jnp, x, w1, b1, w2, b2))
    wj = [jnp.asarray(w) for w in ws]
    t0 = time.perf_counter()
    outs = []
    for x in xs:
        n = x.shape[0]
        if pad:
            xp = np.zeros((_pow2(n), FEAT), np.float32)
            xp[:n] = x
            outs.append(np.asarray(f(xp, *wj))[:n])
        else:
            outs.append(np.asarray(f(x, *wj)))
    return time.perf_counter() - t0, f._cache_size(), outs


def worst_error(outs, want):
    return max(float(np.max(np.abs(o - w) / (1 + np.abs(w)))) for o, w in zip(outs, want))


# The programs of the cold/warm comparison, as (jitlib call, jax call) source lines. The
# MLP is the scenario's (bucketed); the chain (layernorm, gelu, softmax four times, 181
# traced instructions) is a program whose compile costs more than its loading, written
# once against the namespace `xp` each side binds (np for jitlib, jnp for jax).
_CHAIN = """
def chain(x, g, b):
    for _ in range(4):
        mu = x.mean(axis=-1, keepdims=True)
        var = ((x - mu) * (x - mu)).mean(axis=-1, keepdims=True)
        x = (x - mu) / xp.sqrt(var + 1e-5) * g + b
        x = 0.5 * x * (1.0 + xp.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))
        e = xp.exp(x - x.max(axis=-1, keepdims=True))
        x = e / e.sum(axis=-1, keepdims=True)
    return x
args = [rng.standard_normal(s).astype(np.float32) for s in [(64, HID), (HID,), (HID,)]]
"""
PROGRAMS = {
    "mlp": ("""
f = jitlib.jit(lambda x, w1, b1, w2, b2: np.maximum(x @ w1 + b1, 0.0) @ w2 + b2,
               backend="cpu", buckets={"arg": "x", "axis": 0, "policy": "pow2"})
args = [rng.standard_normal(s).astype(np.float32)
        for s in [(100, FEAT), (FEAT, HID), (HID,), (HID, FEAT), (FEAT,)]]
""", """
f = jax.jit(lambda x, w1, b1, w2, b2: jnp.maximum(x @ w1 + b1, 0.0) @ w2 + b2)
args = [rng.standard_normal(s).astype(np.float32)
        for s in [(128, FEAT), (FEAT, HID), (HID,), (HID, FEAT), (FEAT,)]]
"""),
    "chain": ("xp = np" + _CHAIN + 'f = jitlib.jit(chain, backend="cpu")\n',
              "xp = jnp" + _CHAIN + "f = jax.jit(chain)\n"),
}

# Start-up (imports, the backend's initialization) is not the first call's: each side
# pays it whatever its cache holds.
JITLIB_PROCESS = """
import time, numpy as np
t0 = time.perf_counter()
import jitlib
import jitlib.backends.llvm, jitlib.backends.llvm.compiler as c
c.get_compiler()
rng = np.random.default_rng(0)
PROGRAM
t1 = time.perf_counter()
f(*args)
t2 = time.perf_counter()
print(t2 - t1, t2 - t0)
"""

JAX_PROCESS = """
import time, numpy as np
t0 = time.perf_counter()
import jax, jax.numpy as jnp
jax.config.update("jax_compilation_cache_dir", CACHE)
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
jax.devices()
rng = np.random.default_rng(0)
PROGRAM
t1 = time.perf_counter()
f(*args).block_until_ready()
t2 = time.perf_counter()
print(t2 - t1, t2 - t0)
"""


def first_call(program, env):
    out = subprocess.run([sys.executable, "-c", program], env=env, capture_output=True,
                         text=True, timeout=600)
    if out.returncode:
        raise RuntimeError(out.stderr)
    first, total = map(float, out.stdout.split())
    return first, total


def _source(template, program, cache):
    text = template.replace("PROGRAM", program).replace("CACHE", repr(cache))
    return text.replace("FEAT", str(FEAT)).replace("HID", str(HID))


def cold_vs_warm(trials=3):
    """Per program and side: (cold, warm) first-call seconds, each the best of `trials`
    fresh processes: cold with an empty persistent cache, warm with the one a previous
    process filled. Bytecode is cached (in a temporary prefix) as for an installed
    package, so neither side pays for compiling its own Python source."""
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env.update(PYTHONPYCACHEPREFIX=os.path.join(tmp, "pyc"), JITLIB_CACHE_DIR="")
        for name, (jitlib_program, jax_program) in PROGRAMS.items():
            for side, template, program in (("jitlib", JITLIB_PROCESS, jitlib_program),
                                            ("jax", JAX_PROCESS, jax_program)):
                first_call(_source(template, program, os.path.join(tmp, "prime")), env)
                cold = []
                for trial in range(trials):
                    cache = os.path.join(tmp, f"{side}-{name}-{trial}")
                    source = _source(template, program, cache)
                    cold.append(first_call(source, dict(env, JITLIB_CACHE_DIR=cache)))
                warm = [first_call(source, dict(env, JITLIB_CACHE_DIR=cache))
                        for _ in range(trials)]
                results[f"{side}, {name}"] = (min(cold), min(warm))
    return results


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    sizes = dynamic_batch_sizes(args.calls)
    rng = np.random.default_rng(1)
    ws = weights(rng)
    xs = [rng.standard_normal((n, FEAT)).astype(np.float32) for n in sizes]
    want = [mlp(np, x, *ws) for x in xs]
    rows = {}
    # buckets first: the process's compiled kernels outlive a jitted function, and the
    # unbucketed run compiles the bucket sizes among its 140 shapes
    for name, run in [("jitlib, pow2 buckets", lambda: run_jitlib(sizes, xs, ws, True)),
                      ("jitlib, no buckets", lambda: run_jitlib(sizes, xs, ws, False)),
                      ("jax.jit, no padding", lambda: run_jax(sizes, xs, ws, False)),
                      ("jax.jit, hand padding", lambda: run_jax(sizes, xs, ws, True))]:
        seconds, compiles, outs = run()
        shapes_ok = all(o.shape == w.shape for o, w in zip(outs, want))
        rows[name] = dict(seconds=seconds, compiles=compiles, shapes_ok=shapes_ok,
                          worst_rel_error=worst_error(outs, want))
    print(f"shifting batch: {len(sizes)} calls, {len(set(sizes))} distinct sizes in "
          f"[1, 256], MLP {FEAT}->{HID}->{FEAT} float32")
    print(f"{'':24} {'total s':>8} {'compiles':>9} {'worst rel err':>14}  shapes")
    for name, r in rows.items():
        print(f"{name:24} {r['seconds']:8.2f} {r['compiles']:9d} {r['worst_rel_error']:14.2e}"
              f"  {'ok' if r['shapes_ok'] else 'WRONG'}")
    cold = cold_vs_warm()
    print("\nnew process, first call after start-up (s, best of 3): empty persistent cache "
          "-> warm one [process total incl. imports]")
    for name, ((c, ct), (w, wt)) in cold.items():
        print(f"  {name:14} {c:7.3f} -> {w:7.3f}  ({w / c:4.0%} of cold)  "
              f"[{ct:.2f} -> {wt:.2f}]")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(rows=rows, cold_vs_warm=cold, calls=len(sizes)), f, indent=1)
    print(textwrap.dedent("""
        jitlib's bucketed numbers include tracing each bucket at its top, one below it,
        its bottom and the first call's own size, and proving the padding safe; sizes
        inside a proved bucket run without tracing (verify = "each_size" traces each
        new size as well). A warm process's first call traces once: its own size keys
        the program saved for it (jitlib/buckets/saved.py).
    """).strip())


if __name__ == "__main__":
    main()
