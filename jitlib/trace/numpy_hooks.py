"""NumPy's creation functions, seen from user code while a trace is active.

`np.zeros`, `np.empty`, `np.arange`, `np.array(list)`, `np.zeros_like(a_global)`... never
see a tracer, so NumPy cannot hand them to jitlib and they return plain ndarrays, into
which a traced value cannot be written. While a trace is active, these names in the
`numpy` module point at wrappers that give *user code* (frames outside jitlib and NumPy)
traced arrays of known value instead (trace/known.py), so `out = np.empty(n); out[i] = f(x)`
traces; every other caller, NumPy's and jitlib's own code included, gets NumPy's function.

The wrappers are installed when the first trace starts and removed when the last one
ends, so a process that is not tracing never calls through them. Only calls written as
`np.zeros(...)` are seen: `from numpy import zeros` binds NumPy's function itself.

`np.vectorize.__call__` is swapped the same way: vectorize is a class NumPy never
dispatches, so a vectorize object called on tracers is routed to functions/mapping.py.
So is the `array` that NumPy's np.r_ and np.c_ code calls on each item: traced items
stay traced, and NumPy's own indexing code does the rest.
"""
import contextlib
import functools
import sys
import threading

import numpy as np

from jitlib import errors, forksafe
from jitlib.trace import host_random
from jitlib.trace.context import current_trace

# Called through the numpy module, with no tracer among their arguments (a tracer
# argument would dispatch through __array_function__ anyway).
NAMES = ("empty", "zeros", "ones", "full", "empty_like", "zeros_like", "ones_like",
         "full_like", "arange", "linspace", "eye", "identity", "tri", "array", "asarray",
         "asanyarray", "copy", "indices",
         # NumPy converts their argument before any dispatch: a tracer must be seen here
         "ascontiguousarray", "asfortranarray", "require", "isfortran", "fromiter")

_lock = forksafe.lock()
_host = threading.local()   # host.work: jitlib runs NumPy for itself (probing a draw)


@contextlib.contextmanager
def host_work():
    """NumPy's own functions for everyone while entered (jitlib's work on the host)."""
    previous = getattr(_host, "work", False)
    _host.work = True
    try:
        yield
    finally:
        _host.work = previous


def _hooked(frame):
    return current_trace() is not None and not getattr(_host, "work", False) \
        and errors.is_user_frame(frame)
_depth = 0
_originals = {}


def _wrapper(name, original, traced):
    def creation(*args, **kwargs):
        if _hooked(sys._getframe(1)):
            try:
                result = traced(*args, **kwargs)
            except errors.JitlibTypeError:
                # data jit does not trace (strings, objects): NumPy's own array, as before
                return original(*args, **kwargs)
            if getattr(result, "shape", None) == ():   # not indices(sparse=True), isfortran
                result._array0d = True   # np.array(1.0) is a 0-d array, not a scalar
            return result
        return original(*args, **kwargs)
    functools.update_wrapper(creation, original)
    creation.__jitlib_original__ = original
    return creation


# np.random's legacy functions draw from the global RandomState; each becomes a call
# step (trace/host_random.py). The constructors make generators replayed at each call.
RANDOM_NAMES = tuple(sorted(n for n in host_random.SAMPLERS | host_random.STATE
                            if hasattr(np.random, n)))
RANDOM_CONSTRUCTORS = ("default_rng",)   # a class (RandomState) cannot be swapped safely


def _random_wrapper(name, original):
    def draw(*args, **kwargs):
        if _hooked(sys._getframe(1)):
            return getattr(host_random.global_recorder(current_trace()), name)(*args, **kwargs)
        return original(*args, **kwargs)
    functools.update_wrapper(draw, original)
    return draw


def _constructor_wrapper(name, original):
    def make(*args, **kwargs):
        if _hooked(sys._getframe(1)):
            return host_random.made_inside(current_trace(), original, args, kwargs,
                                           f"np.random.{name}(...)")
        return original(*args, **kwargs)
    functools.update_wrapper(make, original)
    return make


def _has_tracer(values):
    from jitlib.trace.functions._common import contains_tracer
    return any(contains_tracer(v) for v in values)


def _vectorize_wrapper(original):
    """np.vectorize's __call__: a call on traced values maps pyfunc with vmap (NumPy's
    own loop would convert each tracer to a Python object)."""
    def __call__(self, *args, **kwargs):
        if self.pyfunc is not np._NoValue and _has_tracer(args + tuple(kwargs.values())):
            from jitlib.trace.functions.mapping import vectorize_call
            return vectorize_call(self, args, kwargs)
        return original(self, *args, **kwargs)
    functools.update_wrapper(__call__, original)
    return __call__


def _index_tricks_array(original):
    """The `array` of NumPy's np.r_/np.c_ code, which makes each item an array of at
    least `ndmin` dims (and the common dtype) before concatenating: a tracer cannot pass
    NumPy's, so a traced item becomes a tracer of those dims and dtype; anything else
    goes to NumPy's."""
    def array(obj, *args, dtype=None, ndmin=0, **kwargs):
        if not _has_tracer((obj,)):
            return original(obj, *args, dtype=dtype, ndmin=ndmin, **kwargs)
        import jitlib.numpy as jnp
        t = jnp.asarray(obj)
        t = t if dtype is None else t.astype(dtype)
        return t.reshape((1,) * (ndmin - t.ndim) + t.shape) if t.ndim < ndmin else t
    return array


def _install():
    import jitlib.numpy as jnp
    from numpy.lib import _index_tricks_impl as index_tricks
    _originals[(np.vectorize, "__call__")] = np.vectorize.__call__
    np.vectorize.__call__ = _vectorize_wrapper(np.vectorize.__call__)
    _originals[(index_tricks, "array")] = index_tricks.array
    index_tricks.array = _index_tricks_array(index_tricks.array)
    for name in NAMES:
        original = getattr(np, name)
        _originals[(np, name)] = original
        setattr(np, name, _wrapper(name, original, getattr(jnp, name)))
    for name in RANDOM_NAMES:
        original = getattr(np.random, name)
        _originals[(np.random, name)] = original
        setattr(np.random, name, _random_wrapper(name, original))
    for name in RANDOM_CONSTRUCTORS:
        original = getattr(np.random, name)
        _originals[(np.random, name)] = original
        setattr(np.random, name, _constructor_wrapper(name, original))


def _uninstall():
    for (module, name), original in _originals.items():
        setattr(module, name, original)
    _originals.clear()


@contextlib.contextmanager
def installed():
    """NumPy's creation functions trace for user code while this is entered."""
    global _depth
    with _lock:
        if _depth == 0:
            _install()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                _uninstall()
