"""The axis names bound while a pmap'ed function is traced, innermost last.

A collective looks its axis up here to learn the axis size; outside every pmap the
name is unbound and the collective fails as JAX's do, naming the axis.
"""
import contextlib
import threading

from jitlib import errors

_state = threading.local()


def _stack():
    if not hasattr(_state, "axes"):
        _state.axes = []
    return _state.axes


@contextlib.contextmanager
def bind(name, size):
    """Bind axis `name` to `size` devices while tracing the body of a pmap."""
    _stack().append((name, size))
    try:
        yield
    finally:
        _stack().pop()


def size_of(name, what):
    """The size bound to `name`, or an UnboundAxisError naming it and the collective."""
    for bound, size in reversed(_stack()):
        if bound == name:
            return size
    names = [n for n, _ in _stack()]
    raise errors.UnboundAxisError(
        f"unbound axis name: {name!r} ({what} runs only inside a pmap binding it"
        + (f"; bound here: {', '.join(map(repr, names))}" if names else "") + ")",
        hint=f"call it from a function passed to jitlib.pmap(f, axis_name={name!r})")
