"""A GPU first call without PyTorch: where PyTorch is not loaded, the gpu backend runs
on Triton's driver without importing it (torch_free.py; Triton 3.9 does so itself), and
every launch path works: Triton's own first launch, direct launches, CUDA-graph loops,
reductions and products. Each case runs in a fresh interpreter, where no other test has
imported PyTorch."""
import json
import subprocess
import sys
import textwrap

import pytest

from jitlib.backends import _cuda_gpu_visible

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not _cuda_gpu_visible(), reason="needs a CUDA GPU")]

PROGRAM = textwrap.dedent("""
    import json, sys
    import numpy as np
    import jitlib
    import jitlib.numpy as jnp

    rng = np.random.default_rng(0)
    x = rng.standard_normal((300, 129)).astype(np.float32)
    w = rng.standard_normal((129, 64)).astype(np.float32)

    def layer(x, w):
        h = np.exp(np.tanh(x @ w))
        return h / h.sum(axis=1, keepdims=True)

    def relax(x):
        return jnp.fori_loop(0, 50, lambda i, y: 0.5 * (y + np.roll(y, 1, axis=0)), x)

    errors = {}
    for name, f, args, want in (
            ("layer", layer, (x, w), layer(x, w)),
            ("relax", relax, (x,), None)):
        jf = jitlib.jit(f, backend="gpu")
        for call in range(3):
            got = np.asarray(jf(*args))
        if want is None:
            want = np.asarray(jitlib.jit(f, backend="interpreter")(*args))
        errors[name] = float(np.max(np.abs(got - want)) / np.max(np.abs(want)))
    print(json.dumps(dict(torch="torch" in sys.modules, errors=errors)))
""")


def test_gpu_programs_run_without_importing_torch(tmp_path):
    out = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True,
                         timeout=600, env={**__import__("os").environ,
                                           "JITLIB_CACHE_DIR": str(tmp_path)})
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert not result["torch"], "a GPU call imported PyTorch"
    for name, err in result["errors"].items():
        assert err < 1e-5, (name, err)
