"""The persistent cache: atomic, checksummed, private, and really skipping LLVM."""
import os
import stat
import subprocess
import sys

import numpy as np

from jitlib.cache import disk

PROGRAM = """
import numpy as np, jitlib
from jitlib.backends.llvm.compiler import get_compiler
from jitlib.cache.disk import object_store
f = jitlib.jit(lambda x: np.tanh(x).sum(axis=0) + x.max(axis=0), backend="cpu")
x = np.arange(12.0).reshape(4, 3) / 7
np.testing.assert_allclose(f(x), np.tanh(x).sum(axis=0) + x.max(axis=0), rtol=1e-14)
s = object_store()
print(get_compiler().compiled, s.hits, s.stores, s.discarded, get_compiler().optimized_here)
"""


def _run(tmp_path, program=PROGRAM):
    env = dict(os.environ, JITLIB_CACHE_DIR=str(tmp_path / "cache"))
    out = subprocess.run([sys.executable, "-c", program], env=env, capture_output=True,
                         text=True, cwd=tmp_path, timeout=300)
    assert out.returncode == 0, out.stderr
    return [int(v) for v in out.stdout.split()]


# Besides each kernel's object code (`compiled` of them), the program is one entry
# (backends/llvm/saved.py), so a first run stores compiled + 1. A second run reads the
# program entry, which holds its kernels' object code, and the object code of the
# runtime's helpers (claiming.py) outside it.


def test_second_process_loads_object_code(tmp_path):
    compiled, hits, stores, _, _ = _run(tmp_path)
    assert stores == compiled + 1 and compiled > 0 and hits == 0
    _, hits2, stores2, _, optimized_here = _run(tmp_path)
    # the program's own kernels come with its entry: their object entries are not read
    assert 1 <= hits2 <= compiled and stores2 == 0
    assert optimized_here == 0   # and LLVM's optimizer never ran


def test_corrupt_and_truncated_entries_are_rebuilt(tmp_path):
    compiled, _, _, _, _ = _run(tmp_path)
    _, warm_hits, _, _, _ = _run(tmp_path)
    paths = [p for p, _ in disk.DiskCache(tmp_path / "cache").entries()]
    assert len(paths) == compiled + 1 >= 2
    for i, path in enumerate(paths):
        with open(path, "r+b") as f:
            if i % 2:                       # truncated
                f.truncate(os.path.getsize(path) // 2)
            else:                           # one byte of the payload flipped
                f.seek(-5, os.SEEK_END)
                byte = f.read(1)
                f.seek(-5, os.SEEK_END)
                f.write(bytes([byte[0] ^ 0xFF]))
    # the program entry reads back bad, so the program compiles, reading every kernel's
    # entry: each is discarded and written again
    _, hits, stores, discarded, _ = _run(tmp_path)
    assert discarded == stores == len(paths) and hits == 0
    _, hits, _, discarded, _ = _run(tmp_path)    # rebuilt entries are good again
    assert hits == warm_hits and discarded == 0


def test_two_processes_writing_the_same_entry(tmp_path):
    env = dict(os.environ, JITLIB_CACHE_DIR=str(tmp_path / "cache"))
    procs = [subprocess.Popen([sys.executable, "-c", PROGRAM], env=env, cwd=tmp_path,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
    entries = disk.DiskCache(tmp_path / "cache").entries()
    assert entries and all(meta.get("sha256") for _, meta in entries)
    assert not [n for _, _, files in os.walk(tmp_path / "cache") for n in files
                if n.startswith(".tmp-")]
    _, hits, stores, discarded, _ = _run(tmp_path)
    assert hits >= 1 and stores == 0 and discarded == 0


def test_store_load_roundtrip_and_checks(tmp_path, monkeypatch):
    store = disk.DiskCache(tmp_path / "c")
    key = store.key("ir", "target")
    store.store(key, b"\x7fELF object", symbol="k")
    assert store.load(key) == b"\x7fELF object"
    assert store.load(store.key("other")) is None
    mode = stat.S_IMODE(os.stat(tmp_path / "c").st_mode)
    assert mode == 0o700
    assert stat.S_IMODE(os.stat(os.path.dirname(store.path(key))).st_mode) == 0o700
    # an entry written under another key's name is never loaded
    other = store.key("x")
    os.makedirs(os.path.dirname(store.path(other)), exist_ok=True)
    with open(store.path(key), "rb") as f, open(store.path(other), "wb") as g:
        g.write(f.read())
    assert store.load(other) is None and not os.path.exists(store.path(other))


def test_entries_owned_by_another_user_are_ignored(tmp_path, monkeypatch):
    store = disk.DiskCache(tmp_path / "c")
    key = store.key("ir")
    store.store(key, b"code")
    real_uid = os.getuid()
    monkeypatch.setattr(disk, "current_uid", lambda: real_uid + 1)   # we are now "someone else"
    assert store.load(key) is None and store.ignored == 1
    assert os.path.exists(store.path(key))    # ignored, not deleted


def test_empty_cache_dir_disables(monkeypatch):
    monkeypatch.setenv("JITLIB_CACHE_DIR", "")
    assert disk.cache_dir() is None and disk.object_store() is None
    monkeypatch.delenv("JITLIB_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", "/somewhere")
    assert disk.cache_dir() == "/somewhere/jitlib"


def test_cli_info_and_clear(tmp_path):
    _run(tmp_path)
    env = dict(os.environ, JITLIB_CACHE_DIR=str(tmp_path / "cache"))
    info = subprocess.run([sys.executable, "-m", "jitlib", "cache", "info"], env=env,
                          capture_output=True, text=True, timeout=120)
    assert info.returncode == 0 and "llvm-object" in info.stdout
    clear = subprocess.run([sys.executable, "-m", "jitlib", "cache", "clear"], env=env,
                           capture_output=True, text=True, timeout=120)
    assert clear.returncode == 0 and "removed" in clear.stdout
    assert disk.DiskCache(tmp_path / "cache").entries() == []
