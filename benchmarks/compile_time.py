"""First calls and compile time: jitlib against jax.jit, each in a fresh process.

    python -m benchmarks.compile_time [--quick] [--gpu] [--out DIR] [--only NAME ...]

Programs: a GPT-2-style forward (n_embd 256, 4 heads, 64 tokens, vocabulary 1024) at 4
and at 48 layers, written once with `xp` standing for NumPy or jax.numpy (the layers are
a Python loop over a list of parameter dicts, so both tools trace every layer); the MLP
of `python -m benchmarks`; and two loop programs of `benchmarks.loops` at 1000 trips,
jitlib tracing the plain Python loop and jax running `lax.fori_loop`.

Each (program, tool) runs in a fresh Python process with an empty `JITLIB_CACHE_DIR`
(imports done before the clock starts): the first call is trace + compile + one run; warm
is the median of the calls after it (see `benchmarks.loops.child`). Every result is
compared with eager NumPy's.

Targets (issue 24 part 3): the 4-layer forward's first call at most jax.jit's; the
48-layer forward's at most half of jax.jit's. Writes `<out>/compile-time-<cpu|gpu>-<date>
.json` and `.md` (default out: benchmarks/results).
"""
import argparse
import datetime
import json
import math
import pathlib
import sys
import tempfile

import numpy as np

from benchmarks import loop_workloads as LW
from benchmarks import loops, workloads

GPT_SIZES = dict(n_embd=256, n_head=4, tokens=64, vocab=1024)
QUICK_GPT = dict(n_embd=32, n_head=2, tokens=8, vocab=64)


# ---------------------------------------------------------------------------- programs

def _layer_norm(xp, x, p):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / xp.sqrt(var + 1e-5) * p["g"] + p["b"]


def _gelu(xp, x):
    return 0.5 * x * (1.0 + xp.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))


def gpt2_forward(xp, tokens, params, n_head):
    t = tokens.shape[0]
    x = params["wte"][tokens] + params["wpe"][:t]
    c = x.shape[-1]
    hd = c // n_head
    causal = xp.tril(xp.ones((t, t), dtype=bool))
    for p in params["layers"]:
        qkv = _layer_norm(xp, x, p["ln1"]) @ p["w_qkv"] + p["b_qkv"]
        q, k, v = (qkv[:, i * c:(i + 1) * c].reshape(t, n_head, hd).transpose(1, 0, 2)
                   for i in range(3))
        att = (q @ k.transpose(0, 2, 1)) * (1.0 / math.sqrt(hd))
        att = xp.where(causal, att, -1e9)
        att = xp.exp(att - att.max(-1, keepdims=True))
        att = att / att.sum(-1, keepdims=True)
        y = (att @ v).transpose(1, 0, 2).reshape(t, c)
        x = x + y @ p["w_out"] + p["b_out"]
        h = _gelu(xp, _layer_norm(xp, x, p["ln2"]) @ p["w_fc"] + p["b_fc"])
        x = x + h @ p["w_proj"] + p["b_proj"]
    return _layer_norm(xp, x, params["ln_f"]) @ params["wte"].T


def gpt2_numpy(tokens, params, n_head):
    """The forward as a user writes it: plain NumPy."""
    return gpt2_forward(np, tokens, params, n_head)


def mlp_numpy(x, w1, b1, w2, b2):
    return workloads.mlp(np, x, w1, b1, w2, b2)


def gpt2_inputs(rng, layers, n_embd, n_head, tokens, vocab):
    def w(*shape, scale=0.02):
        return (scale * rng.standard_normal(shape)).astype(np.float32)

    def ln():
        return dict(g=np.ones(n_embd, np.float32), b=np.zeros(n_embd, np.float32))
    c = n_embd
    params = dict(wte=w(vocab, c), wpe=w(tokens, c), ln_f=ln(), layers=[
        dict(ln1=ln(), ln2=ln(), w_qkv=w(c, 3 * c), b_qkv=w(3 * c), w_out=w(c, c),
             b_out=w(c), w_fc=w(c, 4 * c), b_fc=w(4 * c), w_proj=w(4 * c, c), b_proj=w(c))
        for _ in range(layers)])
    return rng.integers(0, vocab, tokens).astype(np.int32), params, n_head


def _gpt(layers):
    def make(rng, quick):
        return gpt2_inputs(rng, layers, **(QUICK_GPT if quick else GPT_SIZES))
    return dict(make=make, fn=gpt2_forward, plain=gpt2_numpy, static=(2,),
                note=f"{layers} layers, n_embd {GPT_SIZES['n_embd']}, "
                     f"{GPT_SIZES['tokens']} tokens")


def _mlp_make(rng, quick):
    args = workloads.inputs("mlp", rng, "small" if quick else "large")
    return tuple(args)


def _loop(name):
    w = LW.WORKLOADS[name]

    def make(rng, quick):
        return w.make(rng, 3 if quick else 1000, **(loops.QUICK_SIZES.get(name, {})
                                                     if quick else {}))
    return dict(make=make, plain=w.plain, jax=w.jax, static=w.static,
                note=f"{w.note}; 1000 trips, jitlib: the plain Python loop")


PROGRAMS = {
    "gpt2_4": _gpt(4),
    "gpt2_48": _gpt(48),
    "mlp": dict(make=_mlp_make, fn=workloads.mlp, plain=mlp_numpy, static=(),
                note="the benchmark MLP"),
    "jacobi_256": _loop("jacobi_256"),
    "nbody_64": _loop("nbody_64"),
}


# ---------------------------------------------------------------------------- child

def _callable(spec):
    prog = PROGRAMS[spec["program"]]
    args = prog["make"](np.random.default_rng(0), spec["quick"])
    static = prog["static"]
    tool = spec["tool"]
    if tool == "numpy":
        return prog["plain"], args
    if tool == "jax":
        import jax
        if not spec["gpu"]:
            jax.config.update("jax_platforms", "cpu")
        import jax.numpy as jnp
        if "jax" in prog:
            f = jax.jit(lambda *a: prog["jax"](jnp, jax.lax, *a), static_argnums=static)
        else:
            f = jax.jit(lambda *a: prog["fn"](jnp, *a), static_argnums=static)
        return f, tuple(a if i in static else jax.device_put(a) for i, a in enumerate(args))
    import jitlib
    backend = "gpu" if spec["gpu"] else "cpu"
    return jitlib.jit(prog["plain"], static_argnums=static, backend=backend), args


def child(spec):
    loops.child(spec, _callable)


# ---------------------------------------------------------------------------- parent

def _max_rel_err(got, want):
    return loops.max_rel_err([np.asarray(g, np.float64) for g in got],
                             [np.asarray(w, np.float64) for w in want])


def measure(name, args):
    rows = {}
    with tempfile.TemporaryDirectory(prefix="jitlib-compile-time-") as tmp:
        saved = {}
        for tool in ("jitlib", "jax", "numpy"):
            save = str(pathlib.Path(tmp) / f"{tool}.npz")
            spec = dict(program=name, tool=tool, quick=args.quick, gpu=args.gpu,
                        warm=tool != "numpy", budget=args.budget, save=save)
            rec = loops.run_child(spec, args.timeout, module="benchmarks.compile_time")
            rows[tool] = rec
            if "error" not in rec:
                saved[tool] = [v for _, v in sorted(np.load(save).items(),
                                                    key=lambda kv: int(kv[0][4:]))]
            print(f"  {name:12s} {tool:7s} " + (rec.get("error") or
                  f"first {rec['first_s'] * 1e3:9.1f} ms" +
                  (f"  warm {rec['warm_s'] * 1e3:9.3f} ms" if "warm_s" in rec else "")),
                  flush=True)
        for tool in ("jitlib", "jax"):
            if tool in saved and "numpy" in saved:
                rows[tool]["max_rel_err"] = _max_rel_err(saved[tool], saved["numpy"])
    return rows


def targets(rows):
    out = []
    for name, factor in (("gpt2_4", 1.0), ("gpt2_48", 0.5)):
        row = rows.get(name)
        if not row:
            continue
        j, x = (row[t].get("first_s") for t in ("jitlib", "jax"))
        if j is None or x is None:
            out.append((name, f"first call <= {factor:g}x jax.jit's", "-", None))
            continue
        out.append((name, f"first call <= {factor:g}x jax.jit's",
                    f"{j * 1e3:.0f} vs {factor * x * 1e3:.0f} ms", j <= factor * x))
    return out


def render(rows, info, args):
    def ms(rec, key, fmt):
        v = rec.get(key)
        return "-" if v is None else format(v * 1e3, fmt)
    lines = [f"# First calls and compile time: jitlib ({'gpu' if args.gpu else 'cpu'}) vs "
             "jax.jit", "",
             f"Host: {info.get('gpu') or info['cpu']}, {info['cores']} cores; numpy "
             f"{info['numpy']}, jax {info['jax']}, llvmlite {info['llvmlite']}; {info['date']}"
             + (" (--quick: tiny sizes, not a measurement)" if args.quick else ""), "",
             "Each cell is a fresh Python process with an empty JITLIB_CACHE_DIR (jitlib's "
             "modules byte-compiled first, as pip does); first = trace + compile + one run, "
             "warm = median of later calls.", "",
             "| program | jitlib 1st ms | jax 1st ms | jax / jitlib (1st) | jitlib warm ms | "
             "jax warm ms | numpy ms | max rel err (jitlib, jax) |",
             "|---|---|---|---|---|---|---|---|"]
    for name, row in rows.items():
        j, x, n = row["jitlib"], row["jax"], row["numpy"]
        ratio = (f"{x['first_s'] / j['first_s']:.2f}" if "first_s" in j and "first_s" in x
                 else "-")
        errs = ", ".join("-" if r.get("max_rel_err") is None else f"{r['max_rel_err']:.0e}"
                         for r in (j, x))
        lines.append(f"| {name} | {ms(j, 'first_s', '.0f')} | {ms(x, 'first_s', '.0f')} | "
                     f"{ratio} | {ms(j, 'warm_s', '.3f')} | {ms(x, 'warm_s', '.3f')} | "
                     f"{ms(n, 'first_s', '.3f')} | {errs} |")
    lines += ["", "Programs: " + "; ".join(f"{n}: {PROGRAMS[n]['note']}" for n in rows) + ".",
              "", "## Targets (issue 24 part 3)", "", "| program | target | figure | met |",
              "|---|---|---|---|"]
    for name, target, fig, ok in targets(rows):
        lines.append(f"| {name} | {target} | {fig} | "
                     f"{'-' if ok is None else 'met' if ok else '**not met**'} |")
    errors = [f"{n} {t}: {r['error']}" for n, row in rows.items() for t, r in row.items()
              if "error" in r]
    if errors:
        lines += [""] + [f"- {e}" for e in errors]
    return "\n".join(lines) + "\n"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="tiny sizes: a smoke run")
    p.add_argument("--gpu", action="store_true", help="jitlib's gpu backend, jax on CUDA")
    p.add_argument("--out", default=str(pathlib.Path(__file__).parent / "results"))
    p.add_argument("--only", nargs="*", choices=list(PROGRAMS))
    p.add_argument("--timeout", type=float, default=300.0, help="seconds per child")
    p.add_argument("--budget", type=float, default=2.0, help="warm seconds per child")
    p.add_argument("--child", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        return child(json.loads(args.child))
    info = loops.machine_info(args.gpu)
    loops.byte_compile_jitlib()
    names = args.only or list(PROGRAMS)
    if args.quick:
        names = [n for n in names if n != "gpt2_48"]
    rows = {name: measure(name, args) for name in names}
    text = render(rows, info, args)
    print(text)
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = f"compile-time-{'gpu' if args.gpu else 'cpu'}-{datetime.date.today().isoformat()}"
    (out / f"{stem}.md").write_text(text)
    (out / f"{stem}.json").write_text(json.dumps(dict(
        info=info, quick=args.quick, rows=rows,
        targets=[dict(program=n, target=t, figure=f, met=m) for n, t, f, m in targets(rows)]),
        indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
