"""What jit does around each compile, in one call so api.py stays small."""
from jitlib.cache import explain, shapes


def before_compile(jitted, key, what=""):
    """Explain and budget the compile (may raise RecompileBudgetError); note the shapes."""
    jitted._recompiles.before_compile(key, jitted._cache.keys(), what)
    if not what:   # bucketed calls record their true shapes on every call instead
        record_key(jitted, key)


def record_key(jitted, key):
    shapes.record(jitted.fn, explain.leaf_names(key), [leaf[:2] for leaf in key.leaves])
