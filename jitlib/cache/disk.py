"""The persistent compile cache: compiled code on disk, so a new process skips compiling.

Layout: <dir>/objects/<2 hex>/<key>.obj, one file per entry:

    JITLIBOBJ1\\n
    {"key": ..., "sha256": ..., "size": ..., ...}\\n      metadata, plain JSON
    <size bytes of payload>

Four kinds of entry share the store, each named in its metadata's "kind":

    llvm-object       a kernel's object code (backends/llvm/compiler.py)
    optimized-module  the optimizer's output as IR text, for large modules (optimized.py)
    llvm-program      what the cpu backend made of a traced module, as JSON: the
                      optimized module and each kernel's LLVM IR, how to call it and
                      its object code (backends/llvm/saved.py)
    bucket-size       for one bucketed call's traced module, which saved program runs
                      it (its key and a copy of its entry) and how its results are
                      sliced (buckets/saved.py)

An object's key hashes what the code depends on: the LLVM IR text of the kernel (itself
rendered from the optimized Module), its symbol, the target (triple, CPU name, CPU
features) and the jitlib / llvmlite / LLVM versions; the others hash their inputs and
the fingerprint of the jitlib sources that derive them (fingerprint.py).

Entries are written to a temp file and `os.replace`d (two processes writing one entry
leave one whole entry); a load checks owner, magic, key, size and sha256, and a bad
entry is deleted and rebuilt, never loaded. The directory is created 0700; entries
owned by another user are ignored (someone else's code must not run in our process).
"""
import functools
import hashlib
import json
import os
import stat
import tempfile

from jitlib import forksafe

_MAGIC = b"JITLIBOBJ1\n"


def current_uid():
    """The user whose entries we trust (a hook so tests run as root can pretend)."""
    return os.getuid()


def cache_dir():
    """JITLIB_CACHE_DIR if set (empty: no disk cache), else $XDG_CACHE_HOME/jitlib,
    else ~/.cache/jitlib."""
    env = os.environ.get("JITLIB_CACHE_DIR")
    if env is not None:
        return env or None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "jitlib")


def private_dir(path):
    """Create `path` (and parents) readable by this user only; refuse one we don't own."""
    os.makedirs(path, mode=0o700, exist_ok=True)
    st = os.stat(path)
    if st.st_uid != current_uid():
        raise PermissionError(f"{path} belongs to uid {st.st_uid}")
    if stat.S_IMODE(st.st_mode) & 0o077:
        os.chmod(path, 0o700)
    return path


def atomic_write(path, data):
    """Write `data` to `path` so readers see the old file or the new one, never half.
    No fsync: it cost more than the LLVM work it saves on a busy disk, and an entry torn
    by a machine crash fails its checksum on load and is rebuilt."""
    folder = os.path.dirname(path)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


class DiskCache:
    """Object code by key under one directory, with counters for tests and `cache info`."""

    def __init__(self, root):
        self.root = os.path.abspath(root)
        self.hits = self.misses = self.stores = self.discarded = self.ignored = 0
        self._lock = forksafe.lock()

    @staticmethod
    def key(*parts):
        h = hashlib.sha256()
        for part in parts:
            h.update(str(part).encode())
            h.update(b"\0")
        return h.hexdigest()

    def path(self, key):
        return os.path.join(self.root, "objects", key[:2], f"{key}.obj")

    def load(self, key):
        """The payload stored under `key`, or None (missing, foreign or corrupt)."""
        path = self.path(key)
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except OSError:
            self.misses += 1
            return None
        with os.fdopen(fd, "rb") as f:
            if os.fstat(f.fileno()).st_uid != current_uid():
                self.ignored += 1
                self.misses += 1
                return None
            blob = f.read()
        payload = _unpack(blob, key)
        if payload is None:
            self.discarded += 1
            self.misses += 1
            try:
                os.unlink(path)
            except OSError:
                pass
            return None
        self.hits += 1
        return payload

    def discard(self, key):
        """Delete the entry under `key` (its payload was found unusable)."""
        self.discarded += 1
        try:
            os.unlink(self.path(key))
        except OSError:
            pass

    def store(self, key, payload, **meta):
        """Write one entry atomically; failures only cost the cache, never the call."""
        meta = dict(meta, key=key, size=len(payload),
                    sha256=hashlib.sha256(payload).hexdigest())
        blob = _MAGIC + json.dumps(meta, sort_keys=True).encode() + b"\n" + payload
        path = self.path(key)
        try:
            for folder in (self.root, os.path.dirname(os.path.dirname(path)),
                           os.path.dirname(path)):
                private_dir(folder)
            atomic_write(path, blob)
            self.stores += 1
        except OSError:
            pass

    def entries(self):
        """(path, metadata) of every readable entry we own."""
        out = []
        top = os.path.join(self.root, "objects")
        if not os.path.isdir(top):
            return out
        for sub in sorted(os.listdir(top)):
            folder = os.path.join(top, sub)
            for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else ():
                if name.endswith(".obj"):
                    out.append((os.path.join(folder, name), _read_meta(
                        os.path.join(folder, name))))
        return out

    def clear(self):
        """Delete every entry (and recorded shapes) we own; returns how many files."""
        removed = 0
        for sub in ("objects", "shapes"):
            top = os.path.join(self.root, sub)
            for dirpath, _, files in os.walk(top, topdown=False):
                for name in files:
                    path = os.path.join(dirpath, name)
                    if os.lstat(path).st_uid == current_uid():
                        os.unlink(path)
                        removed += 1
                try:
                    os.rmdir(dirpath)
                except OSError:
                    pass
        return removed


def _unpack(blob, key):
    if not blob.startswith(_MAGIC):
        return None
    end = blob.find(b"\n", len(_MAGIC))
    if end < 0:
        return None
    try:
        meta = json.loads(blob[len(_MAGIC):end])
    except ValueError:
        return None
    payload = blob[end + 1:]
    if (not isinstance(meta, dict) or meta.get("key") != key
            or meta.get("size") != len(payload)
            or meta.get("sha256") != hashlib.sha256(payload).hexdigest()):
        return None
    return payload


def _read_meta(path):
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
        end = head.find(b"\n", len(_MAGIC))
        return json.loads(head[len(_MAGIC):end]) if head.startswith(_MAGIC) else {}
    except (OSError, ValueError):
        return {}


_stores = {}
_stores_lock = forksafe.lock()


def object_store():
    """The DiskCache of the current JITLIB_CACHE_DIR, or None when disabled."""
    root = cache_dir()
    if root is None:
        return None
    with _stores_lock:
        store = _stores.get(root)
        if store is None:
            store = _stores[root] = DiskCache(root)
        return store


@functools.lru_cache(maxsize=None)
def versions():
    """The versions an object's validity depends on (llvmlite is imported by the caller)."""
    import llvmlite
    import llvmlite.binding as llvm

    import jitlib
    return (f"jitlib={jitlib.__version__}", f"llvmlite={llvmlite.__version__}",
            "llvm=" + ".".join(map(str, llvm.llvm_version_info)))
