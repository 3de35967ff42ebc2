"""NumPy functions on tracers, one module per family; importing this registers them all.

Each implementation is registered with `registry.implements` for NumPy's
`__array_function__` protocol and by name (Tracer methods, `jitlib.numpy`).
"""
from jitlib.trace.functions import (  # noqa: F401 - imported to register
    bits, compositions, counting, covariance, creation, decompositions, differences,
    elementwise, fft, gradient, histograms, index_math, joining, linalg, mapping,
    nan_quantiles, nonzero, numeric, numpy_code, permuted, placement, polynomials, quantiles,
    queries, real_only, reductions, selection, shapes, signal, sorting, statistics,
    unsupported)
