"""Questions about dtypes, memory layout and shared memory, asked of traced arrays.

A traced array has a dtype and a shape but no memory: dtype questions get NumPy's
own answer from the tracer's dtype, and layout requests (C or Fortran order,
contiguity) are met by the value itself, since the program is free to lay buffers out
as it likes. Most of these functions never reach `__array_function__` (NumPy does not
dispatch them); they are registered so `jitlib.numpy` has them and they are counted.
"""
import numpy as np

from jitlib import errors
from jitlib.trace import tracer as T
from jitlib.trace.functions._common import tracer
from jitlib.trace.registry import implements


def _dtype_of(x):
    """A tracer's dtype, so NumPy's dtype functions accept tracers where arrays go."""
    return x.dtype if isinstance(x, T.Tracer) else x


@implements(np.issubdtype)
def issubdtype(arg1, arg2):
    """np.issubdtype; a tracer stands for its dtype."""
    return np.issubdtype(_dtype_of(arg1), _dtype_of(arg2))


@implements(np.isscalar)
def isscalar(element):
    """np.isscalar: False for a tracer, as for an ndarray (even a 0-d one)."""
    return False if isinstance(element, T.Tracer) else np.isscalar(element)


@implements(np.iterable)
def iterable(y):
    """np.iterable: a tracer iterates unless it is 0-d, like an ndarray."""
    if isinstance(y, T.Tracer):
        return y.ndim > 0
    return np.iterable(y)


@implements(np.promote_types)
def promote_types(type1, type2):
    """np.promote_types; a tracer stands for its dtype."""
    return np.promote_types(_dtype_of(type1), _dtype_of(type2))


@implements(np.mintypecode)
def mintypecode(typechars, typeset="GDFgdf", default="d"):
    """np.mintypecode; a tracer stands for its dtype."""
    return np.mintypecode([_dtype_of(t) if isinstance(t, T.Tracer) else t
                           for t in typechars], typeset, default)


@implements(np.common_type)
def common_type(*arrays):
    """np.common_type from the dtypes alone: NumPy's rule reads nothing else."""
    return np.common_type(*(np.empty(0, a.dtype) if isinstance(a, T.Tracer) else a
                            for a in arrays))


@implements(np.min_scalar_type)
def min_scalar_type(a):
    """The dtype of an array with dimensions; a traced 0-d value raises.

    NumPy's answer for a 0-d value depends on the value, unknown while tracing."""
    if not isinstance(a, T.Tracer):
        return np.min_scalar_type(a)
    if a.ndim:
        return a.dtype
    raise errors.UnsupportedError(
        "np.min_scalar_type of a traced scalar depends on its value, unknown while tracing",
        hint="pass the value as a static argument, or use its dtype")


@implements(np.isfortran)
def isfortran(a):
    """False, as for any C-ordered array: traced values are C-ordered."""
    return False if isinstance(a, T.Tracer) else np.isfortran(a)


# -- layout requests: the value is the answer

def _as_array(a, dtype):
    return tracer(a, dtype)


@implements(np.ascontiguousarray)
def ascontiguousarray(a, dtype=None, *, like=None):
    """The value of `a` (at least 1-d, as NumPy's); layout is the program's business."""
    x = _as_array(a, dtype)
    return x.reshape(1) if x.ndim == 0 else x


@implements(np.asfortranarray)
def asfortranarray(a, dtype=None, *, like=None):
    """The value of `a`: jit chooses memory layout itself, so only the values matter."""
    x = _as_array(a, dtype)
    return x.reshape(1) if x.ndim == 0 else x


# NumPy's spellings of the flags np.require accepts
_REQUIREMENTS = {"C", "F", "A", "W", "O", "E", "C_CONTIGUOUS", "CONTIGUOUS", "F_CONTIGUOUS",
                 "FORTRAN", "ALIGNED", "WRITEABLE", "OWNDATA", "ENSUREARRAY"}


@implements(np.require)
def require(a, dtype=None, requirements=None, *, like=None):
    """`a` as an array of `dtype`; flags name layouts, which traced values satisfy."""
    reqs = [requirements] if isinstance(requirements, str) else (requirements or [])
    unknown = [r for r in reqs if str(r).upper() not in _REQUIREMENTS]
    if unknown:
        raise errors.JitlibValueError(f"unknown requirement {unknown[0]!r} for np.require",
                                      hint="use C, F, A, W, O or E")
    return _as_array(a, dtype)


def _root(x):
    while x._base is not None:
        x = x._base
    return x


def _same_buffer(a, b):
    """Whether a and b are views of one traced array: the buffers jit tracks. A traced
    value and a NumPy array never share (the program copies its inputs)."""
    if not (isinstance(a, T.Tracer) and isinstance(b, T.Tracer)):
        return False
    return _root(a) is _root(b)


@implements(np.may_share_memory)
def may_share_memory(a, b, /, max_work=None):
    """True for views of one traced array, without NumPy's comparison of bounds.

    Two disjoint slices of one array give True here and False eagerly: the safe
    answer, since code that copies when memory may be shared stays correct."""
    return _same_buffer(a, b)


@implements(np.shares_memory)
def shares_memory(a, b, /, max_work=None):
    """As np.may_share_memory: views of one traced array are taken to overlap."""
    return _same_buffer(a, b)
