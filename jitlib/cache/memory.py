"""The in-memory compile cache: a bounded LRU of compiled entries, with statistics."""
import collections
import os
from typing import NamedTuple


def default_size():
    """JITLIB_CACHE_SIZE: how many signatures one jitted function keeps compiled."""
    try:
        return max(1, int(os.environ.get("JITLIB_CACHE_SIZE", "512")))
    except ValueError:
        return 512


class CacheStats(NamedTuple):
    entries: int
    maxsize: int
    evictions: int


class CompileCache:
    """Signature -> compiled entry, least recently compiled or looked up evicted first.

    `on_evict` lets the caller drop derived caches (jit's fast-path dict) that still
    point at the evicted entry, so memory is really bounded."""

    def __init__(self, maxsize=None, on_evict=None):
        self.maxsize = maxsize or default_size()
        self.evictions = 0
        self._entries = collections.OrderedDict()
        self._on_evict = on_evict

    def get(self, key):
        entry = self._entries.get(key)
        if entry is not None:
            self._entries.move_to_end(key)
        return entry

    def __setitem__(self, key, entry):
        self._entries[key] = entry
        self._entries.move_to_end(key)
        while len(self._entries) > self.maxsize:
            self._entries.popitem(last=False)
            self.evictions += 1
            if self._on_evict is not None:
                self._on_evict()

    def __len__(self):
        return len(self._entries)

    def __contains__(self, key):
        return key in self._entries

    def keys(self):
        return list(self._entries)

    def clear(self):
        self._entries.clear()

    def stats(self):
        return CacheStats(len(self._entries), self.maxsize, self.evictions)
