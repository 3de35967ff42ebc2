"""Which loops of benchmarks/loop_workloads.py run as CUDA graphs on the GPU, and why not.

    python tools/gpu_loop_report.py      # on a machine with an NVIDIA GPU

Calls each workload's plain and loop forms three times on the gpu backend with the
`jitlib` logger at DEBUG (graphs.py says there whether a loop is captured, or why it stays
host-driven) and prints the warm call's time.
"""
import logging
import sys
import time

import numpy as np

sys.path.insert(0, ".")
from benchmarks import loop_workloads as LW   # noqa: E402
import jitlib   # noqa: E402

logging.basicConfig(level=logging.WARNING, format="%(message)s")
logging.getLogger("jitlib").setLevel(logging.DEBUG)
for handler in logging.getLogger().handlers:   # the loop lines, not every kernel's
    handler.addFilter(lambda r: r.getMessage().startswith(("gpu:", "jitlib:")))
for w in LW.WORKLOADS.values():
    for form in ("plain", "loop"):
        args = w.make(np.random.default_rng(0), max(w.trips))
        f = jitlib.jit(getattr(w, form), backend=sys.argv[1] if len(sys.argv) > 1 else "gpu", static_argnums=w.static)
        print(f"== {w.name} {form} ({max(w.trips)} trips)", flush=True)
        for call in range(3):
            t0 = time.perf_counter()
            out = f(*args)
            for leaf in (out if isinstance(out, (tuple, list)) else [out]):
                np.asarray(leaf)
            print(f"   call {call}: {1e3 * (time.perf_counter() - t0):.2f} ms", flush=True)
