"""Compiled stages that travel: a Program pickles as its Module's plain data.

The client compiles each distinct stage Module once (a process-wide cache keyed by
the Module's hash, so two calls of one function share them). Pickled for a worker
process, a Program carries the Module as plain data (hlo/serial.py, no pickled code)
with its sha256; the worker checks the hash, and compiles it once into its own cache,
keyed by that hash, the first time a task runs it. Threads and in-process workers
share the client's cache and never compile again.
"""
import hashlib
import threading

from jitlib import errors
from jitlib.hlo import serial

_compiled = {}          # (backend, sha256 of the module's data) -> (module, executable)
_compiles = {}          # stage name -> compiles in this process
_lock = threading.Lock()


class Program:
    """One stage's program; calling it runs the compiled code on NumPy blocks."""

    def __init__(self, module, backend, digest=None):
        self.module, self.backend = module, backend
        self.digest = digest or hashlib.sha256(serial.dumps(module).encode()).hexdigest()

    @property
    def name(self):
        return self.module.name

    def compile(self):
        """The executable, compiled here at most once per process."""
        key = (self.backend, self.digest)
        found = _compiled.get(key)
        if found is None:
            with _lock:
                found = _compiled.get(key)
                if found is None:
                    from jitlib.backends import get_backend
                    found = self.module, get_backend(self.backend).compile(self.module)
                    _compiled[key] = found
                    _compiles[self.name] = _compiles.get(self.name, 0) + 1
        return found[1]

    def __call__(self, *arrays):
        return self.compile()(*arrays)

    def __reduce__(self):
        return _load, (self.backend, self.digest, serial.to_data(self.module))


def _load(backend, digest, data):
    found = _compiled.get((backend, digest))
    if found is not None:   # a worker thread of the client's process, or a second task
        return Program(found[0], backend, digest)
    module = serial.from_data(data)
    actual = hashlib.sha256(serial.dumps(module).encode()).hexdigest()
    if actual != digest:
        raise errors.JitlibError(f"a shipped jitlib program does not match its checksum "
                                 f"({actual[:12]} != {digest[:12]})",
                                 hint="client and workers must run the same jitlib")
    return Program(module, backend, digest)


def compiles():
    """Stage name -> compiles in this process, for tests and `stage_info`."""
    return dict(_compiles)
