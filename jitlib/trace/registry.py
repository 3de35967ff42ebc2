"""Where the tracer finds its implementation of each NumPy function.

`FUNCTIONS` maps NumPy callables (np.sum, np.reshape, ...) to implementations
that take tracers; `__array_function__` dispatches through it. `BY_NAME` maps
the same implementations by name: Tracer methods (`x.sum()`) and the
`jitlib.numpy` namespace read it. Ufuncs have their own table in `ufuncs.py`.
"""
FUNCTIONS = {}
BY_NAME = {}


def implements(*numpy_functions, name=None):
    """Register `impl` for each of `numpy_functions` and under `name` (default: its own)."""
    def register(impl):
        for fn in numpy_functions:
            FUNCTIONS[fn] = impl
        BY_NAME[name or impl.__name__] = impl
        return impl
    return register


def lookup(name):
    """The implementation registered under `name`; KeyError names what is missing."""
    from jitlib.trace import functions  # noqa: F401 - registers on import
    try:
        return BY_NAME[name]
    except KeyError:
        raise KeyError(f"jitlib has no implementation of {name!r}") from None
