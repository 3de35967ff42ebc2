"""The optimizer's output on disk, so a new process parses it instead of optimizing again.

The entry is the optimized Module's text (the parser reads it back exactly, locations
included), keyed by the traced Module's text, and by a fingerprint of the optimizer's
and the IR's source files: a dev checkout keeps one version number while the optimizer
changes, and a stale rewrite must never be served.

Only modules of `MIN_INSTRUCTIONS` or more go through the disk: for small ones parsing
the text costs as much as optimizing (a two-kernel MLP parses in twice its optimizing
time; a 181-instruction chain in a third of it).
"""

from jitlib import fusion, logs
from jitlib.cache import disk
from jitlib.cache.fingerprint import source_fingerprint
from jitlib.fusion import fuse as _fuse  # noqa: F401 - else the first optimize imports it
from jitlib.hlo.parser import parse_module
from jitlib.hlo.printer import print_module


MIN_INSTRUCTIONS = 64
_KIND = "optimized-module"


def optimize(module):
    """`jitlib.fusion.optimize(module)`, read from the disk cache when it has it."""
    store = disk.object_store()
    if store is None or len(module.instructions) < MIN_INSTRUCTIONS:
        return fusion.optimize(module)
    key = store.key(_KIND, print_module(module), _source_fingerprint())
    text = store.load(key)
    if text is not None:
        try:
            optimized = parse_module(text.decode())
        except Exception as e:   # noqa: BLE001 - a bad entry costs a re-optimize, not the call
            logs.warning("cache", "discarding an unreadable optimized module: %s", e)
            store.discard(key)
        else:
            return optimized
    optimized = fusion.optimize(module)
    store.store(key, print_module(optimized).encode(), kind=_KIND, module=module.name)
    return optimized


def _source_fingerprint():
    return source_fingerprint("fusion", "hlo")
