"""The disk cache under faults: whatever sits in an entry's place (a FIFO, a directory,
a huge file, a symbolic link, garbage) is removed and rebuilt, never a hang and never a
"jitlib bug"; a read-only cache is one warning line; the size bound evicts the least
recently used entries."""
import os
import shutil
import subprocess
import sys
import time

import numpy as np
import pytest

from jitlib.cache import disk

PROGRAM = """
import numpy as np, jitlib
from jitlib.cache.disk import object_store
f = jitlib.jit(lambda x: np.tanh(x).sum(axis=0) + x.max(axis=0), backend="cpu")
x = np.arange(12.0).reshape(4, 3) / 7
np.testing.assert_allclose(f(x), np.tanh(x).sum(axis=0) + x.max(axis=0), rtol=1e-14)
s = object_store()
print(s.hits, s.stores, s.discarded)
"""


def _run(cache, timeout=120, **popen):
    env = dict(os.environ, JITLIB_CACHE_DIR=str(cache))
    env.pop("JITLIB_LOG", None)
    return subprocess.run([sys.executable, "-c", PROGRAM], env=env, capture_output=True,
                          text=True, timeout=timeout, **popen)


@pytest.fixture(scope="module")
def filled(tmp_path_factory):
    """A cache directory the program has filled."""
    cache = tmp_path_factory.mktemp("filled") / "cache"
    done = _run(cache)
    assert done.returncode == 0, done.stderr
    return cache


def _spoil(path, kind):
    os.unlink(path)
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "directory":
        os.makedirs(os.path.join(path, "inside"))
    elif kind == "huge":
        with open(path, "wb") as f:
            f.truncate(disk.MAX_ENTRY_BYTES + 1)   # sparse: no disk space used
    elif kind == "symlink":
        os.symlink("/dev/zero", path)
    else:
        with open(path, "wb") as f:
            f.write(b"JITLIBOBJ1\n{not json\n")


@pytest.mark.parametrize("kind", ["fifo", "directory", "huge", "symlink", "garbage"])
def test_a_bad_entry_is_removed_and_rebuilt(filled, tmp_path, kind):
    cache = tmp_path / "cache"
    shutil.copytree(filled, cache, symlinks=True)
    paths = [p for p, _ in disk.DiskCache(cache).entries()]
    assert len(paths) >= 2
    for path in paths:
        _spoil(path, kind)
    done = _run(cache)      # a FIFO read would block here: the timeout fails the test
    assert done.returncode == 0, done.stderr
    assert "jitlib bug" not in done.stderr and "Traceback" not in done.stderr
    hits, stores, discarded = map(int, done.stdout.split())
    assert hits == 0 and discarded >= 1 and stores >= 1
    for path in paths:      # each entry the program reads is a valid entry again
        if os.path.lexists(path):
            assert os.path.isfile(path) and not os.path.islink(path)
            assert disk._read_meta(path).get("key")
    again = _run(cache)
    assert again.returncode == 0 and int(again.stdout.split()[0]) >= 1, again.stderr


def test_read_regular_refuses_without_blocking(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    start = time.monotonic()
    with pytest.raises(disk.BadEntry, match="FIFO"):
        disk.read_regular(fifo)
    with pytest.raises(disk.BadEntry, match="directory"):
        disk.read_regular(tmp_path)
    big = tmp_path / "big"
    big.write_bytes(b"x" * 100)
    with pytest.raises(disk.BadEntry, match="past the 99-byte limit"):
        disk.read_regular(big, limit=99)
    assert disk.read_regular(big, limit=100) == b"x" * 100
    assert disk.read_regular(tmp_path / "missing") is None
    assert time.monotonic() - start < 5


# As root, permissions do not stop writes: there the program's writes fail as on a
# read-only file system (EROFS), the error a read-only mount gives
READ_ONLY_FS = """
import errno, tempfile
def _read_only(*args, **kwargs):
    raise OSError(errno.EROFS, "Read-only file system")
tempfile.mkstemp = _read_only
"""


def test_a_read_only_cache_is_one_warning_line(filled, tmp_path):
    cache = tmp_path / "cache"
    shutil.copytree(filled, cache)
    os.unlink(disk.DiskCache(cache).entries()[0][0])   # to rebuild: a write to fail
    root = os.geteuid() == 0
    if not root:
        for folder, _, _ in os.walk(cache):
            os.chmod(folder, 0o500)
    env = dict(os.environ, JITLIB_CACHE_DIR=str(cache), JITLIB_RECORD_SHAPES="1")
    env.pop("JITLIB_LOG", None)
    try:
        done = subprocess.run([sys.executable, "-c", (READ_ONLY_FS if root else "")
                               + PROGRAM], env=env, capture_output=True, text=True,
                              timeout=120)
    finally:
        for folder, _, _ in os.walk(cache):
            os.chmod(folder, 0o700)
    assert done.returncode == 0, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot be written" in lines[0], done.stderr
    assert "Traceback" not in done.stderr


def test_the_size_bound_evicts_the_least_recently_used(tmp_path, monkeypatch):
    store = disk.DiskCache(tmp_path / "c")
    payload = b"p" * 1000
    for i in range(6):
        store.store(store.key(i), payload)
        os.utime(store.path(store.key(i)), (1000 + i, 1000 + i))
    assert store.load(store.key(0)) == payload   # used now: the newest
    monkeypatch.setenv("JITLIB_DISK_CACHE_BYTES", "4500")
    store.store(store.key(6), payload)           # 7 entries of ~1.1 KB: past 4500
    left = {i for i in range(7) if os.path.exists(store.path(store.key(i)))}
    assert left == {0, 5, 6}, left               # pruned to 90% of the bound
    assert store.usage()[1] <= 4500 * 0.9 and store.evicted == 4


def test_disk_cache_bytes_parses_sizes(monkeypatch):
    for text, value in [("", 1 << 30), ("500M", 500 << 20), ("2G", 2 << 30),
                        ("12345", 12345), ("64kb", 64 << 10)]:
        monkeypatch.setenv("JITLIB_DISK_CACHE_BYTES", text)
        assert disk.max_bytes() == value
    monkeypatch.setenv("JITLIB_DISK_CACHE_BYTES", "lots")
    with pytest.raises(ValueError, match="JITLIB_DISK_CACHE_BYTES"):
        disk.max_bytes()


def test_hit_rate_survives_the_process(tmp_path):
    store = disk.DiskCache(tmp_path / "c")
    store.store(store.key("a"), b"x")
    store.load(store.key("a"))
    store.load(store.key("b"))
    store.flush_stats()
    later = disk.DiskCache(tmp_path / "c")
    later.load(store.key("a"))
    stats = later.stats()
    assert (stats["hits"], stats["misses"], stats["stores"]) == (2, 1, 1)
    assert np.isclose(stats["hits"] / (stats["hits"] + stats["misses"]), 2 / 3)
