"""The shapes each jitted function has seen, for `python -m jitlib buckets suggest`.

Only with JITLIB_RECORD_SHAPES=1: then counted in memory on every compile and every
bucketed call (never on the fast path, which must stay a dict lookup), and merged into
<cache dir>/shapes/<function>.json when the process exits, if the disk cache is on.
"""
import atexit
import collections
import json
import os

from jitlib import forksafe

_lock = forksafe.lock()
_seen = {}          # (module, qualname) -> Counter of ((name, shape, dtype), ...) tuples
_registered = False
# distinct signatures kept per function: enough to plan buckets from, and a function
# that sees a new shape on every call must not grow the process for ever
MAX_SIGNATURES = 4096


def recording():
    """JITLIB_RECORD_SHAPES=1: keep the shapes each function sees, for `buckets suggest`."""
    return os.environ.get("JITLIB_RECORD_SHAPES", "") not in ("", "0")


def record(fn, names, shapes):
    """One call of `fn` with leaves `names` of `shapes` ((shape, dtype) each)."""
    global _registered
    if not recording():
        return
    key = (getattr(fn, "__module__", "?"), getattr(fn, "__qualname__", repr(fn)))
    sig = tuple((n, tuple(s), _dtype_text(d)) for n, (s, d) in zip(names, shapes))
    with _lock:
        counts = _seen.setdefault(key, collections.Counter())
        if sig in counts or len(counts) < MAX_SIGNATURES:
            counts[sig] += 1
        if not _registered:
            atexit.register(flush)
            _registered = True


def _dtype_text(dtype, _texts={}):
    """str(dtype), remembered: NumPy makes it in Python, four calls a time, and every
    bucketed call records its shapes."""
    text = _texts.get(dtype)
    if text is None:
        text = _texts[dtype] = str(dtype)
    return text


def seen(fn):
    key = (getattr(fn, "__module__", "?"), getattr(fn, "__qualname__", repr(fn)))
    with _lock:
        return dict(_seen.get(key, {}))


def flush(directory=None):
    """Merge what this process saw into the cache directory's shape files."""
    from jitlib.cache import disk
    directory = directory or disk.cache_dir()
    if directory is None:
        return
    with _lock:
        items = {k: dict(v) for k, v in _seen.items()}
    if not items:
        return
    try:
        _write(directory, items)
    except OSError as e:   # a read-only cache: one line, never a traceback at exit
        disk.warn_unwritable(directory, e)
        return
    with _lock:
        for key in items:
            _seen.pop(key, None)


def _write(directory, items):
    from jitlib.cache import disk
    folder = os.path.join(directory, "shapes")
    disk.private_dir(folder)
    for (module, qualname), counts in items.items():
        path = os.path.join(folder, f"{module}.{qualname}.json".replace(os.sep, "_"))
        merged = collections.Counter()
        for entry in load_file(path).get("calls", []):
            merged[_sig_from_json(entry["args"])] += entry["count"]
        merged.update(counts)
        doc = {"module": module, "qualname": qualname,
               "calls": [{"args": [[n, list(s), d] for n, s, d in sig], "count": c}
                         for sig, c in merged.items()]}
        disk.atomic_write(path, json.dumps(doc, indent=1).encode())


def load_file(path):
    from jitlib.cache import disk
    try:
        doc = json.loads(disk.read_regular(path) or b"{}")
    except (disk.BadEntry, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def load_all(directory):
    """Every recorded function: [{"module", "qualname", "calls"}]."""
    folder = os.path.join(directory, "shapes")
    if not os.path.isdir(folder):
        return []
    return [doc for name in sorted(os.listdir(folder)) if name.endswith(".json")
            for doc in [load_file(os.path.join(folder, name))] if doc]


def _sig_from_json(args):
    return tuple((n, tuple(s), d) for n, s, d in args)
