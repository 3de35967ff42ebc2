"""Tracing: Python functions over NumPy arrays become `hlo.Module`s.

`tracer` holds the Tracer and its coercion helpers; `ufuncs` the ufunc table;
`functions` the NumPy-function table (registered through `registry`);
`indexing` getitem/setitem/`.at`; `context` the active trace.
"""
from jitlib.trace.context import Trace, current_trace
from jitlib.trace.tracer import Tracer

__all__ = ["Trace", "Tracer", "current_trace"]
