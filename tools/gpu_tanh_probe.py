"""Branch-free float32 tanh candidates (jitlib/backends/triton/tanh.py) on the GPU.

    PYTHONPATH=$PWD python tools/gpu_tanh_probe.py [--out $OUT/tanh_probe.json]

For libdevice's tanhf and each candidate (switch threshold, polynomial, compensated
exponent), over all 2^32 float32 inputs against float64 tanh (torch, on the GPU): the
max ulp error over normal inputs and over all, how many results are more than 1 and 2
ulp off, wrong specials (NaN in/out, +-inf -> +-1, +-0 kept with its sign) and results
whose bits differ from libdevice's. Then gelu_tanh's kernel (16M float32, the
benchmark's row) with each tanh, timed by CUPTI over rotated inputs
(tools/gpu_read_probe.cupti_us), beside torch's copy_ of the same bytes and jitlib's
generated kernel. Measurements, not backend options.
"""
import argparse
import importlib.util
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpu_read_probe import cupti_us  # noqa: E402

# (name, threshold, coefficients of P, compensated): fits of x + x^3 P(x^2) for relative
# error on [0, threshold] (weighted least squares, Lawson iterations, 40-digit tanh)
CANDIDATES = [
    ("backend", None, None, False),   # tanh.SOURCE as generated
    ("T0.5625 cpu P4", 0.5625, (-0.3333331346511841, 0.13332471251487732,
                                -0.053839243948459625, 0.021014273166656494,
                                -0.00618863245472312), False),
    ("T0.6 P4 compensated", 0.6, None, True),
    ("T0.7 P5", 0.7, (-0.33333325386047363, 0.133329838514328, -0.05392095446586609,
                      0.02157106064260006, -0.007883310317993164, 0.0018956668209284544),
     False),
    ("T0.8 P6", 0.8, (-0.3333333134651184, 0.1333322525024414, -0.05395333096385002,
                      0.021770581603050232, -0.008504902012646198, 0.002847712254151702,
                      -0.0005696456064470112), False),
    ("T1.0 P7", 1.0, (-0.333333283662796, 0.1333319991827011, -0.05395309999585152,
                      0.02178473025560379, -0.008595114573836327, 0.003078593872487545,
                      -0.0008411368471570313, 0.00012147060624556616), False),
]


def build_module():
    """A module with tanh_<i>(x) per candidate, kernels running each over a flat array
    (`tanh_k`) and inside gelu (`gelu_k`), form 0 being libdevice's tanhf."""
    from jitlib.backends.triton import tanh
    parts = ["import triton", "import triton.language as tl",
             "from triton.language.extra import libdevice", "",
             "@triton.jit", "def tanh_0(x):", "    return libdevice.tanh(x)", ""]
    for i, (_, thr, coeffs, comp) in enumerate(CANDIDATES, start=1):
        if thr is None:
            parts.append(tanh.SOURCE.replace(f"def {tanh.NAME}(", f"def tanh_{i}("))
        else:
            parts.append(tanh.helper_source(f"tanh_{i}", thr, coeffs or tanh.COEFFS, comp))
    n = len(CANDIDATES) + 1
    chain = "\n".join(f"    {'if' if i == 0 else 'elif'} FORM == {i}:\n        y = tanh_{i}(x)"
                      for i in range(n))
    parts += ["@triton.jit", "def _tanh(x, FORM: tl.constexpr):", chain, "    return y", "",
              "@triton.jit",
              "def tanh_k(x, out, n, FORM: tl.constexpr, BLOCK: tl.constexpr):",
              "    i = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)",
              "    m = i < n",
              "    tl.store(out + i, _tanh(tl.load(x + i, mask=m), FORM), mask=m)", "",
              "@triton.jit",
              "def gelu_k(x, out, FORM: tl.constexpr, N: tl.constexpr, BLOCK: tl.constexpr):",
              "    # the generated gelu_tanh kernel's operations, tanh as FORM",
              "    i = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)",
              "    m = i < N",
              "    v = tl.load(x + i, mask=m, other=0)",
              "    u = (v + v * 0.044714998453855515 * v * v) * 0.7978845834732056",
              "    tl.store(out + i, v * 0.5 * (_tanh(u, FORM) + 1.0), mask=m)", ""]
    path = os.path.join(tempfile.mkdtemp(prefix="tanh-probe-"), "tanh_forms.py")
    with open(path, "w") as f:
        f.write("\n".join(parts))
    spec = importlib.util.spec_from_file_location("tanh_forms", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["tanh_forms"] = module
    spec.loader.exec_module(module)
    return module, ["libdevice"] + [c[0] for c in CANDIDATES]


def exhaustive(torch, triton, M, names):
    chunk = 1 << 28
    rep = {i: dict(form=names[i], max_ulp_normal=0.0, at_normal=None, max_ulp_all=0.0,
                   at_all=None, over_1ulp=0, over_2ulp=0, wrong_specials=0,
                   bits_differ_from_libdevice=0) for i in range(len(names))}
    out = torch.empty(chunk, device="cuda", dtype=torch.float32)
    lib = torch.empty_like(out)
    grid = (triton.cdiv(chunk, 1024),)
    tiny = torch.finfo(torch.float32).tiny
    for c in range((1 << 32) // chunk):
        bits = torch.arange(c * chunk, (c + 1) * chunk, device="cuda", dtype=torch.int64)
        x = torch.where(bits >= (1 << 31), bits - (1 << 32), bits).to(torch.int32)
        x = x.view(torch.float32)
        del bits
        ref = torch.tanh(x.double())
        # the spacing of float32 values at the correctly rounded result (2^-149 floor)
        ulp = torch.pow(2.0, (torch.frexp(ref.float())[1] - 24).clamp_min(-149).double())
        finite = torch.isfinite(x)
        normal = finite & (x.abs() >= tiny)
        M.tanh_k[grid](x, lib, chunk, 0, 1024, num_warps=4)
        for i, r in rep.items():
            M.tanh_k[grid](x, out, chunk, i, 1024, num_warps=4)
            r["bits_differ_from_libdevice"] += int((out.view(torch.int32) !=
                                                    lib.view(torch.int32)).sum())
            err = ((out.double() - ref).abs() / ulp).nan_to_num(1e30)
            for key, where in (("normal", normal), ("all", finite)):
                e = err.where(where, torch.zeros_like(err))
                j = int(e.argmax())
                if float(e[j]) > r[f"max_ulp_{key}"]:
                    r[f"max_ulp_{key}"], r[f"at_{key}"] = float(e[j]), float(x[j])
            e = err.where(normal, torch.zeros_like(err))
            r["over_1ulp"] += int((e > 1).sum())
            r["over_2ulp"] += int((e > 2).sum())
            r["wrong_specials"] += int((torch.isnan(out) != torch.isnan(x)).sum())
            r["wrong_specials"] += int(((out != torch.sign(x)) & torch.isinf(x)).sum())
            r["wrong_specials"] += int(((out.view(torch.int32) != x.view(torch.int32))
                                        & (x == 0)).sum())
            del err, e
        del x, ref, ulp, finite, normal
    return rep


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--launches", type=int, default=40)
    ap.add_argument("--out", default=os.path.join(os.environ.get("OUT", "."), "tanh_probe.json"))
    args = ap.parse_args(argv)
    import torch
    import triton
    M, names = build_module()
    report = dict(device=torch.cuda.get_device_name(0), forms=names)
    t0 = time.perf_counter()
    report["exhaustive"] = exhaustive(torch, triton, M, names)
    for r in report["exhaustive"].values():
        print(f"{r['form']:22s} max ulp normal {r['max_ulp_normal']:.3f} (x={r['at_normal']}) "
              f"all {r['max_ulp_all']:.3g}; >1 ulp {r['over_1ulp']}, >2 ulp {r['over_2ulp']}; "
              f"specials wrong {r['wrong_specials']}; bits != libdevice "
              f"{r['bits_differ_from_libdevice']}", flush=True)
    print(f"exhaustive: {time.perf_counter() - t0:.0f} s", flush=True)

    n = 1 << 24
    copies = max(1, -(-(256 << 20) // (n * 4)))
    xs = [torch.randn(n, device="cuda") for _ in range(copies)]
    out, ref = torch.empty_like(xs[0]), torch.empty_like(xs[0])
    M.gelu_k[(n // 512,)](xs[0], ref, 0, n, 512, num_warps=4)
    report["timing"] = {}

    def record(name, launch, check=None):
        fns = [lambda i=i: launch(i % copies) for i in range(args.launches)]
        for f in fns[:3]:
            f()
        torch.cuda.synchronize()
        med, _ = cupti_us(torch, fns)
        us = sum(med.values())
        err = check() if check else None
        report["timing"][name] = dict(us=us, gbs=2 * n * 4 / us / 1e3, err=err)
        print(f"{name:40s} {us:7.2f} us {2 * n * 4 / us / 1e3:6.0f} GB/s"
              + (f"  max |diff| vs libdevice gelu {err:.1e}" if err is not None else ""),
              flush=True)

    for rnd in range(2):   # two interleaved rounds: the spread of one figure
        record(f"torch copy_ 64 MiB #{rnd}", lambda i: out.copy_(xs[i]))
        for form, name in enumerate(names):
            def check(form=form):
                out.fill_(float("nan"))
                M.gelu_k[(n // 512,)](xs[0], out, form, n, 512, num_warps=4)
                torch.cuda.synchronize()
                return float((out - ref).abs().max())
            record(f"gelu {name} #{rnd}",
                   lambda i, form=form: M.gelu_k[(n // 512,)](xs[i], out, form, n, 512,
                                                              num_warps=4), check)
    # jitlib's generated gelu kernel (with the backend's tanh) at its heuristic config
    import gpu_tune_sweep as S
    from jitlib.backends.triton import compiler
    k, = S.row_kernels("gelu_tanh")
    run = compiler.compile_for(k)[(k.grid(k.config)[0], 1, 1)]
    block = k.config.constexprs["BLOCK"]
    record("gelu generated (jitlib)", lambda i: run(xs[i].data_ptr(), out.data_ptr(), block))
    with open(args.out, "w") as f:
        json.dump(report, f, indent=1)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    sys.path.insert(0, os.getcwd())
    main(sys.argv[1:])
