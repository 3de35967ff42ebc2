"""jitlib.numpy: a NumPy namespace that also works inside jit, like jax.numpy.

    import jitlib.numpy as jnp

Every function here takes traced and concrete arrays alike. Inside an active
trace (or given a traced argument) it traces: `jnp.zeros(3)` is a traced array
of constants, so `y = jnp.zeros(3); y[0] = x` works. Outside a trace it is
plain eager NumPy and returns NumPy arrays.

The namespace is generated from the tracer's tables: every supported NumPy
function (`registry.FUNCTIONS`, under each of NumPy's names for it, so Array
API aliases such as `concat` and `permute_dims` come along), every supported
ufunc (`ufuncs.BUILDERS`), and the creation functions NumPy's protocols cannot
reach (`zeros`, `arange`, `eye`, ...). docs/numpy_support.md lists them.
"""
import builtins as _builtins
import types as _types

import numpy as _np

import jitlib.trace.functions  # noqa: F401 - registers the implementations
from jitlib.hlo import dtypes as _dtypes
from jitlib.trace import registry as _registry
from jitlib.trace import ufuncs as _ufuncs
from jitlib.trace.context import current_trace as _current_trace
from jitlib.trace.tracer import Tracer as _Tracer

# -- constants and dtypes

pi, e, inf, nan, newaxis, euler_gamma = _np.pi, _np.e, _np.inf, _np.nan, None, _np.euler_gamma
bool_ = bool = _np.bool_
int8, int16, int32, int64 = _np.int8, _np.int16, _np.int32, _np.int64
uint8, uint16, uint32, uint64 = _np.uint8, _np.uint16, _np.uint32, _np.uint64
float16, float32, float64 = _np.float16, _np.float32, _np.float64
intp = _np.intp
dtype = _np.dtype
issubdtype = _np.issubdtype
isdtype = _np.isdtype
iinfo = _dtypes.iinfo
finfo = _dtypes.finfo


# -- dispatch: trace when a tracer is involved or a trace is active, else NumPy

def _has_tracer(x):
    if isinstance(x, _Tracer):
        return True
    if isinstance(x, (list, tuple)):
        return _builtins.any(_has_tracer(v) for v in x)
    return False


def _tracing(args, kwargs):
    return (_current_trace() is not None or _has_tracer(args)
            or _has_tracer(tuple(kwargs.values())))


def _is_masked(args, kwargs):
    return _builtins.any(getattr(type(v), "_jitlib_masked", False)
                         for v in (*args, *kwargs.values()))


def _function(name, impl, eager):
    def function(*args, **kwargs):
        if _is_masked(args, kwargs):   # x[mask]: NumPy's protocols reach its own methods
            return eager(*args, **kwargs)
        if _tracing(args, kwargs):
            return impl(*args, **kwargs)
        return eager(*args, **kwargs)
    function.__name__ = function.__qualname__ = name
    function.__doc__ = (f"np.{name} (eager outside jit); traced as: "
                        f"{(impl.__doc__ or '').strip()}")
    return function


def _strong(result):
    # a ufunc call returns NumPy scalars, not Python ones, even for Python-scalar inputs
    if isinstance(result, tuple):
        return tuple(_strong(r) for r in result)
    if isinstance(result, _Tracer) and result._weak:
        return _Tracer(result.instr)
    return result


class ufunc:
    """A NumPy ufunc that traces when given tracers (or called inside a trace)."""

    def __init__(self, numpy_ufunc):
        self._ufunc = numpy_ufunc
        self.__name__ = numpy_ufunc.__name__
        self.__doc__ = numpy_ufunc.__doc__

    def __call__(self, *args, **kwargs):
        if _tracing(args, kwargs):
            return _strong(_ufuncs.dispatch(self._ufunc, "__call__", args, dict(kwargs)))
        return self._ufunc(*args, **kwargs)

    def _method(self, method, args, kwargs):
        if _tracing(args, kwargs):
            return _strong(_ufuncs.dispatch(self._ufunc, method, args, dict(kwargs)))
        return getattr(self._ufunc, method)(*args, **kwargs)

    def reduce(self, *args, **kwargs):
        return self._method("reduce", args, kwargs)

    def accumulate(self, *args, **kwargs):
        return self._method("accumulate", args, kwargs)

    def outer(self, *args, **kwargs):
        return self._method("outer", args, kwargs)

    def at(self, *args, **kwargs):
        return self._method("at", args, kwargs)

    def __getattr__(self, name):   # nin, nout, identity, types, ...
        return getattr(self._ufunc, name)

    def __repr__(self):
        return f"<jitlib.numpy ufunc {self.__name__!r}>"


def _public_names(module):
    # the module's own attributes: dir(numpy) also names the submodules NumPy imports on
    # first access (f2py, testing, ma, polynomial, ...), 75 ms at a process's first trace
    for name, obj in list(vars(module).items()):
        if name.startswith("_"):
            continue
        try:
            hash(obj)
        except TypeError:
            continue
        yield name, obj


def _populate_linalg(submodule="linalg"):
    """jnp.linalg (jnp.fft): the supported np.linalg (np.fft) functions."""
    source = getattr(_np, submodule)
    module = _types.ModuleType(f"jitlib.numpy.{submodule}",
                               f"np.{submodule} functions jitlib traces.")
    for name, obj in _public_names(source):
        if obj in _registry.FUNCTIONS:
            setattr(module, name, _function(name, _registry.FUNCTIONS[obj], obj))
        elif submodule == "fft" and name in ("fftfreq", "rfftfreq"):
            setattr(module, name, obj)   # NumPy's own code traces (a traced d is an array)
    return module


def _populate(namespace):
    exported = []
    for name, obj in _public_names(_np):
        if name in namespace:
            continue
        if obj in _registry.FUNCTIONS:
            namespace[name] = _function(name, _registry.FUNCTIONS[obj], obj)
        elif isinstance(obj, _np.ufunc) and obj in _ufuncs.BUILDERS:
            namespace[name] = ufunc(obj)
        else:
            continue
        exported.append(name)
    # Registered by name only: creation functions NumPy never dispatches to a tracer.
    for name, impl in _registry.BY_NAME.items():
        if name not in namespace and hasattr(_np, name):
            namespace[name] = _function(name, impl, getattr(_np, name))
            exported.append(name)
    return exported


# -- control flow, with jax.lax's signatures (eager Python loops outside a trace)

from jitlib.trace.control_flow import cond, fori_loop, scan, switch, while_loop  # noqa: E402

__all__ = ["pi", "e", "inf", "nan", "newaxis", "euler_gamma", "bool_", "bool", "int8",
           "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16",
           "float32", "float64", "bfloat16", "intp", "dtype", "issubdtype", "isdtype", "iinfo",
           "finfo", "ufunc", "linalg", "cond", "fori_loop", "scan", "switch", "while_loop"]
__all__ += sorted(_populate(globals()))

# -- sorting beyond NumPy's signatures: unique with a static size, jax.lax's top_k

from jitlib.trace.functions import sorting as _sorting  # noqa: E402

unique = _function("unique", _sorting.unique, _sorting.unique_eager)

# -- np.nonzero and family with JAX's static size= (and fill_value=)

from jitlib.trace.functions import nonzero as _nonzero  # noqa: E402

nonzero = _function("nonzero", _nonzero.nonzero, _nonzero.nonzero_eager)
flatnonzero = _function("flatnonzero", _nonzero.flatnonzero, _nonzero.flatnonzero_eager)
argwhere = _function("argwhere", _nonzero.argwhere, _nonzero.argwhere_eager)
top_k = _function("top_k", _sorting.top_k, _sorting.top_k_eager)
__all__ += ["top_k"]

# -- bincount with a static length=, as jax.numpy.bincount

from jitlib.trace.functions import counting as _counting  # noqa: E402

bincount = _function("bincount", _counting.bincount, _counting.bincount_eager)
linalg = _populate_linalg()
fft = _populate_linalg("fft")
__all__ += ["fft"]

# -- pmap's collectives, as jax.lax names them (jitlib.pmap binds their axis)

from jitlib.parallel.collectives import (  # noqa: E402
    all_gather, axis_index, pmax, pmean, pmin, ppermute, psum, psum_scatter)

__all__ += ["psum", "pmean", "pmax", "pmin", "all_gather", "psum_scatter", "ppermute",
            "axis_index"]

# -- linear algebra beyond NumPy's: scipy.linalg's triangular solve, as jax.scipy.linalg's

from jitlib.trace.functions import decompositions as _decompositions  # noqa: E402

linalg.solve_triangular = _function("solve_triangular", _decompositions.solve_triangular,
                                    _decompositions.solve_triangular_eager)


def __getattr__(name):
    if name == "bfloat16":   # ml_dtypes' type, imported on first use (hlo/dtypes.py says why)
        globals()[name] = _dtypes.bfloat16.type
        return _dtypes.bfloat16.type
    raise AttributeError(f"module 'jitlib.numpy' has no attribute {name!r}: jitlib does not "
                         f"trace np.{name} (docs/numpy_support.md lists what it does)")
