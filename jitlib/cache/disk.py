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
leave one whole entry); a load opens only a regular file (O_NOFOLLOW | O_NONBLOCK, then
fstat: type, owner, size at most MAX_ENTRY_BYTES, before reading) and checks magic, key,
size and sha256; anything else in an entry's place (corrupt, a FIFO, a directory, a
huge file) is deleted and rebuilt, never loaded. The directory is created 0700; entries
owned by another user are ignored (someone else's code must not run in our process).

The store keeps to JITLIB_DISK_CACHE_BYTES (default 1 GiB): a load marks its entry used
(its mtime), and a store that takes the total past the bound removes the least recently
used entries down to 90% of it (`prune`). Hits and misses of every process add up in
<dir>/stats.json, for `jitlib cache info`. A cache directory that cannot be written
costs the cache only, with one warning line per process.
"""
import atexit
import errno
import functools
import hashlib
import json
import os
import re
import shutil
import stat
import tempfile
import time

from jitlib import forksafe, logs

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


class BadEntry(Exception):
    """A path in the cache that is no entry (a FIFO, a directory, a file past the size
    limit): removed, and the entry rebuilt."""


# the largest entry read: a saved program of thousands of kernels is a few MiB
MAX_ENTRY_BYTES = 256 << 20


def max_bytes():
    """JITLIB_DISK_CACHE_BYTES: the disk cache's size bound, in bytes (default 1 GiB; K,
    M, G suffixes are powers of 1024). Past it, the least recently used entries go."""
    text = os.environ.get("JITLIB_DISK_CACHE_BYTES", "").strip()
    if not text:
        return 1 << 30
    match = re.fullmatch(r"(\d+(?:\.\d*)?)\s*([kmg]?)i?b?", text, re.IGNORECASE)
    if match is None:
        raise ValueError(f"JITLIB_DISK_CACHE_BYTES={text!r}: a size in bytes, like 500M")
    scale = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}[match[2].lower()]
    return int(float(match[1]) * scale)


def read_regular(path, limit=MAX_ENTRY_BYTES, touch=False):
    """The bytes of the regular file at `path` (None if there is none, or it belongs to
    another user). Only regular files are read, never through a symbolic link, and a
    FIFO is opened without waiting for a writer: anything else, or a file past `limit`
    bytes, raises BadEntry. `touch`: mark it used now (its mtime: the LRU order)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        return None
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise BadEntry("a symbolic link") from None
        raise BadEntry(f"unreadable ({e.strerror})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise BadEntry(f"a {_KINDS.get(stat.S_IFMT(st.st_mode), 'special file')}, "
                           "not a regular file")
        if st.st_uid != current_uid():
            return None
        if st.st_size > limit:
            raise BadEntry(f"{st.st_size} bytes, past the {limit}-byte limit")
        chunks, left = [], st.st_size
        while left > 0:
            chunk = os.read(fd, left)
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        if touch:
            try:
                os.utime(fd)
            except OSError:
                pass
        return b"".join(chunks)
    finally:
        os.close(fd)


_KINDS = {stat.S_IFIFO: "FIFO", stat.S_IFDIR: "directory", stat.S_IFSOCK: "socket",
          stat.S_IFCHR: "character device", stat.S_IFBLK: "block device"}


def remove(path):
    """Delete what is at `path` (a directory with its contents) if we own it."""
    try:
        st = os.lstat(path)
        if st.st_uid != current_uid():
            return False
        if stat.S_ISDIR(st.st_mode):
            shutil.rmtree(path)
        else:
            os.unlink(path)
        return True
    except OSError:
        return False


_warned_unwritable = set()


def warn_unwritable(directory, error):
    """One line, once per directory and process: the cache there cannot be written."""
    if directory in _warned_unwritable:
        return
    _warned_unwritable.add(directory)
    logs.warning("cache", "the disk cache %s cannot be written (%s: %s): compiled code "
                 "is not kept; set JITLIB_CACHE_DIR to a writable directory, or to "
                 "nothing to turn the disk cache off", directory, type(error).__name__,
                 getattr(error, "strerror", None) or error)


class DiskCache:
    """Entries by key under one directory, at most `max_bytes()` of them (least recently
    used go first), with counters for tests and `cache info` (kept in stats.json)."""

    def __init__(self, root):
        self.root = os.path.abspath(root)
        self.hits = self.misses = self.stores = self.discarded = self.ignored = 0
        self.evicted = 0
        self._lock = forksafe.lock()
        self._bytes = None       # the entries' total as this process last counted it
        self._saved_stats = dict.fromkeys(_COUNTERS, 0)   # counters already in stats.json
        self._flush_registered = False

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
        """The payload stored under `key`, or None (missing, foreign, corrupt or no
        entry at all: the last two are removed, so the caller's store rebuilds them)."""
        path = self.path(key)
        self._count_at_exit()
        try:
            blob = read_regular(path, touch=True)
        except BadEntry as e:
            self.discarded += 1
            self.misses += 1
            if remove(path):
                logs.warning("cache", "removed %s from the disk cache: %s", path, e)
            return None
        if blob is None:
            self.misses += 1
            if os.path.lexists(path):
                self.ignored += 1   # another user's: someone else's code must not run here
            return None
        payload = _unpack(blob, key)
        if payload is None:
            self.discarded += 1
            self.misses += 1
            logs.log("cache", "removed a corrupt entry %s", os.path.basename(path))
            remove(path)
            return None
        self.hits += 1
        return payload

    def discard(self, key):
        """Delete the entry under `key` (its payload was found unusable)."""
        self.discarded += 1
        remove(self.path(key))

    def store(self, key, payload, **meta):
        """Write one entry atomically, then evict past the size bound; failures only
        cost the cache, never the call."""
        meta = dict(meta, key=key, size=len(payload),
                    sha256=hashlib.sha256(payload).hexdigest())
        blob = _MAGIC + json.dumps(meta, sort_keys=True).encode() + b"\n" + payload
        path = self.path(key)
        self._count_at_exit()
        try:
            for folder in (self.root, os.path.dirname(os.path.dirname(path)),
                           os.path.dirname(path)):
                private_dir(folder)
            if os.path.isdir(path) and not os.path.islink(path):
                remove(path)   # a directory in an entry's place: os.replace cannot
            atomic_write(path, blob)
        except OSError as e:
            warn_unwritable(self.root, e)
            return
        self.stores += 1
        logs.log("cache", "stored %s %s (%d bytes)", meta.get("kind", "entry"),
                 key[:16], len(blob))
        with self._lock:
            if self._bytes is None:
                self._bytes = sum(size for _, size, _ in self._scan())
            else:
                self._bytes += len(blob)
            over = self._bytes > max_bytes()
        if over:
            self.prune()

    def prune(self, limit=None):
        """Remove the least recently used entries until the rest fit in `limit` bytes
        (default: 90% of `max_bytes()`, so each prune makes room for a while), along with
        anything in the store that is no entry and temp files a crash left. Returns
        (entries removed, bytes removed)."""
        limit = int(max_bytes() * 0.9) if limit is None else limit
        entries, removed, freed = self._scan(clean=True), 0, 0
        total = sum(size for _, size, _ in entries)
        for path, size, _ in sorted(entries, key=lambda e: e[2]):
            if total <= limit:
                break
            if remove(path):
                removed, freed, total = removed + 1, freed + size, total - size
        with self._lock:
            self._bytes = total
            self.evicted += removed
        if removed:
            logs.log("cache", "evicted %d least recently used entries (%d bytes) to stay "
                     "under %d bytes", removed, freed, limit)
        return removed, freed

    def _scan(self, clean=False):
        """(path, size, last use) of every entry we own; `clean`: remove what is no
        entry (not a regular file) and temp files over an hour old."""
        out, top = [], os.path.join(self.root, "objects")
        now = time.time()
        for folder in _subdirs(top):
            try:
                listing = list(os.scandir(folder))
            except OSError:
                continue
            for item in listing:
                try:
                    st = item.stat(follow_symlinks=False)
                except OSError:
                    continue
                if st.st_uid != current_uid():
                    continue
                stale = item.name.startswith(".tmp-") and now - st.st_mtime > 3600
                if not stat.S_ISREG(st.st_mode) or stale:
                    if clean:
                        remove(item.path)
                    continue
                if item.name.endswith(".obj"):
                    out.append((item.path, st.st_size, st.st_mtime))
        return out

    def entries(self):
        """(path, metadata) of every readable entry we own, least recently used first."""
        return [(path, _read_meta(path))
                for path, _, _ in sorted(self._scan(), key=lambda e: (e[2], e[0]))]

    def usage(self):
        """(entries, bytes) of the store now."""
        found = self._scan()
        return len(found), sum(size for _, size, _ in found)

    def clear(self):
        """Delete every entry (and recorded shapes, statistics) we own; returns how many
        files."""
        removed = 0
        for sub in ("objects", "shapes"):
            top = os.path.join(self.root, sub)
            for dirpath, dirs, files in os.walk(top, topdown=False):
                for name in files + [d for d in dirs if os.path.islink(
                        os.path.join(dirpath, d))]:
                    removed += remove(os.path.join(dirpath, name))
                try:
                    os.rmdir(dirpath)
                except OSError:
                    pass
        remove(os.path.join(self.root, _STATS))
        with self._lock:
            self._bytes = 0
        return removed

    # -- statistics across processes, for `cache info`

    def stats(self):
        """The counters of every process that used this cache (stats.json), plus this
        one's not yet written there."""
        totals = _read_stats(self.root)
        for name in _COUNTERS:
            totals[name] = totals.get(name, 0) + getattr(self, name) - \
                self._saved_stats[name]
        return totals

    def _count_at_exit(self):
        if not self._flush_registered:
            self._flush_registered = True
            atexit.register(self.flush_stats)

    def flush_stats(self):
        """Add this process's counters to stats.json (a read-only cache: a warning)."""
        new = {name: getattr(self, name) - self._saved_stats[name] for name in _COUNTERS}
        if not any(new.values()) or not os.path.isdir(self.root):
            return
        totals = _read_stats(self.root)
        for name, value in new.items():
            totals[name] = totals.get(name, 0) + value
        try:
            atomic_write(os.path.join(self.root, _STATS), json.dumps(totals).encode())
        except OSError as e:
            warn_unwritable(self.root, e)
            return
        self._saved_stats.update({name: getattr(self, name) for name in _COUNTERS})


_COUNTERS = ("hits", "misses", "stores", "discarded", "evicted")
_STATS = "stats.json"


def _read_stats(root):
    try:
        data = json.loads(read_regular(os.path.join(root, _STATS), 1 << 16) or b"{}")
    except (BadEntry, ValueError):
        data = {}
    return {k: v for k, v in data.items() if k in _COUNTERS and type(v) is int} \
        if isinstance(data, dict) else {}


def _subdirs(top):
    try:
        return [item.path for item in os.scandir(top)
                if item.is_dir(follow_symlinks=False)]
    except OSError:
        return []


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
    """An entry's metadata, read from its first 4 KiB (no whole-file read)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return {}
            head = os.read(fd, 4096)
        finally:
            os.close(fd)
        end = head.find(b"\n", len(_MAGIC))
        meta = json.loads(head[len(_MAGIC):end]) if head.startswith(_MAGIC) else {}
        return meta if isinstance(meta, dict) else {}
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
