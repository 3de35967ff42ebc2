"""NumPy functions on tracers, one module per family; importing this registers them all.

Each implementation is registered with `registry.implements` for NumPy's
`__array_function__` protocol and by name (Tracer methods, `jitlib.numpy`).
"""
from jitlib.trace.functions import (  # noqa: F401 - imported to register
    counting, creation, elementwise, gradient, histograms, joining, linalg, mapping, nonzero,
    numeric, placement, quantiles, reductions, selection, shapes, signal, sorting, statistics,
    unsupported)
from jitlib.trace.functions import covariance, decompositions  # noqa: F401, E402
