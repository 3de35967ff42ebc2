"""Complex elementwise kernels on the GPU: jitlib (generated over real parts) against
jax.jit and eager torch, on one 2^24-element complex64 wave-function update.

    python tools/gpu_complex_check.py     # on a machine with an NVIDIA GPU
"""
import sys

import numpy as np

sys.path.insert(0, ".")
import jitlib   # noqa: E402
from benchmarks.host_transfer import median_s   # noqa: E402
from jitlib.backends.triton.device import get_device   # noqa: E402


def wave(z, x):
    psi = np.exp(1j * x) * z + z / 3
    return np.abs(psi) ** 2, psi.conj()


def median_ms(call, sync, reps=20):
    return 1e3 * median_s(call, sync, reps)


n = 1 << 24
rng = np.random.default_rng(0)
x = rng.standard_normal(n).astype(np.float32)
z = (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(np.complex64)
device = get_device()
zd, xd = jitlib.device_put(z), jitlib.device_put(x)
f = jitlib.jit(wave, backend="gpu")
print("fallbacks:", f.lower(zd, xd).compile().fallbacks)
want = wave(z, x)
for g, w in zip(f(zd, xd), want):
    np.testing.assert_allclose(np.asarray(g), w, rtol=1e-4, atol=1e-4)
moved = n * (8 + 4 + 4 + 8)   # z and x in, |psi|^2 and conj(psi) out
rows = {"jitlib": median_ms(lambda: f(zd, xd), device.synchronize)}
try:
    import jax
    import jax.numpy as jnp
    jz, jx = jax.device_put(z), jax.device_put(x)
    jf = jax.jit(lambda z, x: (jnp.abs(jnp.exp(1j * x) * z + z / 3) ** 2,
                               jnp.conj(jnp.exp(1j * x) * z + z / 3)))
    rows["jax.jit"] = median_ms(lambda: [r.block_until_ready() for r in jf(jz, jx)],
                                lambda: None)
except Exception as e:   # a comparison, not the check
    print("jax:", e)
try:
    import torch
    tz, tx = torch.from_numpy(z).cuda(), torch.from_numpy(x).cuda()

    def torch_wave():
        psi = torch.exp(1j * tx) * tz + tz / 3
        return psi.abs() ** 2, psi.conj().resolve_conj()
    rows["torch eager"] = median_ms(torch_wave, torch.cuda.synchronize)
except Exception as e:
    print("torch:", e)
for k, v in rows.items():
    print(f"2^24 complex64 wave update, {k:12s} {v:8.3f} ms  {moved / v / 1e6:7.1f} GB/s")
rows = {}


# complex functions (glibc's algorithms over real parts): a Karman-Trefftz map and a
# log-sinh product, compute-bound
def conformal(z, xp=np):
    r = (z - 1) / (z + 1)
    p = r ** 1.9
    return 1.9 * (1 + p) / (1 - p), xp.log(z) * xp.sinh(z)


g = jitlib.jit(conformal, backend="gpu")
print("function fallbacks:", g.lower(zd).compile().fallbacks)
for got, want in zip(g(zd), conformal(z)):
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-3, atol=1e-3)
functions = {"jitlib": median_ms(lambda: g(zd), device.synchronize)}
try:
    jg = jax.jit(lambda z: conformal(z, jnp))
    functions["jax.jit"] = median_ms(lambda: [r.block_until_ready() for r in jg(jz)],
                                     lambda: None)
except Exception as e:
    print("jax functions:", e)
try:
    functions["torch eager"] = median_ms(lambda: conformal(tz, torch), torch.cuda.synchronize)
except Exception as e:
    print("torch functions:", e)
for k, v in functions.items():
    print(f"2^24 complex64 conformal map + log*sinh, {k:12s} {v:8.3f} ms")

# a complex product: four real dot kernels (complex_products.py) against cuBLAS's cgemm
m = 2048
a, b = ((rng.standard_normal((m, m)) + 1j * rng.standard_normal((m, m))).astype(np.complex64)
        for _ in range(2))
da, db = jitlib.device_put(a), jitlib.device_put(b)
mm = jitlib.jit(lambda a, b: a @ b, backend="gpu")
print("product fallbacks:", mm.lower(da, db).compile().fallbacks)
np.testing.assert_allclose(np.asarray(mm(da, db)), a @ b, rtol=1e-3, atol=1e-2)
products = {"jitlib": median_ms(lambda: mm(da, db), device.synchronize)}
try:
    ta, tb = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
    products["torch"] = median_ms(lambda: ta @ tb, torch.cuda.synchronize)
except Exception as e:
    print("torch product:", e)
try:
    ja, jb = jax.device_put(a), jax.device_put(b)
    jmm = jax.jit(lambda a, b: a @ b)
    products["jax.jit"] = median_ms(lambda: jmm(ja, jb).block_until_ready(), lambda: None)
except Exception as e:
    print("jax product:", e)
for k, v in products.items():
    print(f"{m}^2 complex64 product, {k:8s} {v:8.3f} ms  {8 * m ** 3 / v / 1e9:7.1f} TFLOP/s")

# the path before complex_lowering.py: each complex kernel on the interpreter via the host
from jitlib.backends.triton import kernels, source   # noqa: E402


def host_only(*args):
    raise source.Unsupported("complex values through the host (comparison)")


kernels._render_complex = host_only
g = jitlib.jit(lambda z, x: wave(z, x), backend="gpu")
rows["jitlib via host"] = median_ms(lambda: g(zd, xd), device.synchronize, reps=3)
for k, v in rows.items():
    print(f"{k:12s} {v:8.3f} ms  {moved / v / 1e6:7.1f} GB/s")
