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
        for folder, dirs, files in os.walk(os.path.join(root, package)):
            dirs.sort()
            for name in sorted(f for f in files if f.endswith(".py")):
                st = os.stat(os.path.join(folder, name))
                h.update(f"{folder[len(root):]}/{name}:{st.st_size}:{st.st_mtime_ns}\0".encode())
    return h.hexdigest()
