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
    h = hashlib.sha256(jitlib.__version__.encode())
    for folder in folders:
        h.update(_folder_digest(folder).encode())
    return h.hexdigest()


@functools.lru_cache(maxsize=None)
def _folder_digest(folder):
    """The hash of one folder's files (each walked once per process, however many
    fingerprints name it)."""
    import jitlib
    root = os.path.dirname(os.path.abspath(jitlib.__file__))
    stats = []
    _visit(stats, os.path.join(root, folder), folder)
    return hashlib.sha256("\n".join(stats).encode()).hexdigest()


def _visit(stats, path, folder):
    """"folder/name:size:mtime" of each .py file of `path` and its subfolders, in name
    order. A warm start's first key pays this walk, so it is one listing and one stat
    per file, each relative to the folder's descriptor."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        for name in sorted(os.listdir(fd)):
            if name.endswith(".py"):
                st = os.stat(name, dir_fd=fd)
                stats.append(f"{folder}/{name}:{st.st_size}:{st.st_mtime_ns}")
            elif "." not in name and name != "__pycache__" and \
                    os.path.isdir(os.path.join(path, name)):
                _visit(stats, os.path.join(path, name), f"{folder}/{name}")
    finally:
        os.close(fd)
