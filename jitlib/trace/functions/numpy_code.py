"""NumPy functions whose own Python code traces as it is.

These are written in NumPy with ufuncs, reshapes and functions jitlib already traces
(np.isposinf is isinf and signbit; np.resize is concatenate and reshape), so the
implementation registered for a tracer is NumPy's own, unchanged: the semantics are
NumPy's by construction. Functions of static arguments only (np.tril_indices(3),
np.hamming(8)) return NumPy arrays, which become constants of the program.
"""
import numpy as np

from jitlib.trace.registry import implements

# dispatched: NumPy hands these a tracer, and their code runs on it
_TRACED = ("isposinf", "isneginf", "isreal", "fix", "resize", "rollaxis", "logspace",
           "tril_indices_from", "triu_indices_from", "diag_indices_from",
           "polyadd", "polysub", "dsplit", "put_along_axis")
# not dispatched (no array argument): called with static values, they return constants
_STATIC = ("tril_indices", "triu_indices", "diag_indices", "hamming", "hanning",
           "blackman", "bartlett",
           # bytes and text are never traced: every call is one of static arguments
           "frombuffer", "fromstring")


def _numpys_own(name, doc):
    fn = getattr(np, name)
    code = getattr(fn, "_implementation", fn)

    def traced(*args, **kwargs):
        return code(*args, **kwargs)
    traced.__name__ = name
    traced.__doc__ = doc.format(name=name)
    implements(fn)(traced)


for _name in _TRACED:
    _numpys_own(_name, "NumPy's own np.{name}, run on tracers.")
for _name in _STATIC:
    _numpys_own(_name, "NumPy's own np.{name}: static arguments give a constant array.")
