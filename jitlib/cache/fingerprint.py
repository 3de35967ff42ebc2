"""What a cached derivation of the IR depends on in jitlib's own source.

A dev checkout keeps one version number while its optimizer or code generators change,
and a stale rewrite or kernel must never be served, so disk entries derived by jitlib's
Python code are keyed by the name, size and mtime of every source file that derives them.
"""
import functools
import hashlib
import os


@functools.lru_cache(maxsize=None)
def source_fingerprint(*folders):
    """A hash of jitlib's version and of every .py file under `folders` (paths inside
    the jitlib package, like "fusion" or "backends/llvm")."""
    import jitlib
    root = os.path.dirname(os.path.abspath(jitlib.__file__))
    h = hashlib.sha256(jitlib.__version__.encode())
    for package in folders:
        _visit(h, os.path.join(root, package), len(root))
    return h.hexdigest()


def _visit(h, folder, strip):
    """Hash each .py file of `folder` and its subfolders, in name order (scandir's
    entries carry their stat: a warm start's first key costs one walk, kept short)."""
    with os.scandir(folder) as it:
        entries = sorted(it, key=lambda e: e.name)
    for entry in entries:
        if entry.name.endswith(".py") and entry.is_file():
            st = entry.stat()
            h.update(f"{folder[strip:]}/{entry.name}:{st.st_size}:{st.st_mtime_ns}\0".encode())
        elif entry.is_dir() and entry.name != "__pycache__":
            _visit(h, entry.path, strip)
