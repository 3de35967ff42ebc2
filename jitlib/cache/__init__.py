"""The cache layer of `jit`: the bounded in-memory cache, miss explanations, the
recompile budget, the shapes seen, and the persistent disk cache of object code.

    memory.py   CompileCache: signature -> compiled entry, LRU-bounded, with statistics
    explain.py  why a call missed: the differences from the nearest cached signature
    budget.py   max_compiles / on_exceed, and the JITLIB_LOG=recompiles log
    shapes.py   the shapes each function has seen (for the bucket planner)
    disk.py     the persistent cache (JITLIB_CACHE_DIR): checksummed entries of every kind
    optimized.py  the optimizer's output on disk, for large modules
    fingerprint.py  what an entry derived by jitlib's Python code depends on in its source
  (saved programs are backends/llvm/saved.py's, saved bucketed calls buckets/saved.py's)
    planner.py  bucket sizes from the shapes seen: compiles against padding waste
    cli.py      jitlib cache info|clear|prune, buckets suggest|warm (parser: jitlib/cli.py)
"""
from jitlib.cache.budget import RecompileBudgetError, RecompileWarning
from jitlib.cache.disk import cache_dir
from jitlib.cache.memory import CompileCache

__all__ = ["CompileCache", "RecompileBudgetError", "RecompileWarning", "cache_dir"]
