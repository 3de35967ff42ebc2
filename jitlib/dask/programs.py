"""Compiled stages that travel to Dask workers as plain data, never as pickled code.

The client compiles each distinct stage Module once (a process-wide cache keyed by the
sha256 of the Module's plain data, hlo/serial.py). Pickled for a worker process, a
Program carries that plain data and, where the backend saved the compiled program
(the cpu backend with the disk cache on), the saved entry too: the optimized module,
each kernel's record and its object code (backends/llvm/saved.py), with the sha256
of each part. A worker checks both hashes; on a machine with the client's target and
sources (`saved_context`) it maps the object code without compiling, else it renders
and compiles the kernels of the optimized module it received (no optimizer), once. Either way the executable goes into the worker's own
cache under the same hash (the CACHE_SIZE most recently used), so later tasks and calls
run it directly. Threads and in-process workers share the client's cache.
"""
import collections
import hashlib
import json
import threading

from jitlib import errors
from jitlib.dask import blocks
from jitlib.hlo import serial

_cache = collections.OrderedDict()   # (backend, sha256 of module data) -> (module, exe)
# programs kept per process, least recently used dropped first: a worker serves many
# functions over its life, each with a handful of stages
CACHE_SIZE = 256
_counts = {"compiled": {}, "mapped": {}}   # how each got here: (name, digest) -> count
_lock = threading.Lock()


class Program:
    """One stage's program; calling it runs the compiled code on NumPy blocks."""

    def __init__(self, module, backend, digest=None, shipped=None):
        self.module, self.backend = module, backend
        self.param_dtypes = [p.dtype for p in module.params]
        self.digest = digest or _sha256(serial.dumps(module))
        self.shipped = shipped   # (saved key, entry as JSON text, its sha256, context)

    @property
    def name(self):
        return self.module.name

    def executable(self):
        """The executable, compiled or mapped here at most once per process."""
        key = (self.backend, self.digest)
        found = _cache.get(key)
        with _lock:   # compiles run one at a time: a worker's threads share the program
            if found is None:
                found = _cache.get(key)
            if found is None:
                found = _cache[key] = self.module, self._build()
                while len(_cache) > CACHE_SIZE:
                    _cache.popitem(last=False)
            elif key in _cache:
                _cache.move_to_end(key)
        return found[1]

    def _build(self):
        from jitlib.backends import get_backend
        backend = get_backend(self.backend)
        optimized = None
        if self.shipped is not None:
            key, text, digest, context = self.shipped
            if _sha256(text) != digest:
                raise _mismatch("saved program", digest)
            record = json.loads(text)
            if context == backend.saved_context():
                exe = backend.load_record(self.module, key, record)
                if exe is not None:
                    _count("mapped", self)
                    return exe
            try:   # another CPU: its kernels are rendered here, from the optimized module
                optimized = serial.from_data(record["optimized"])
            except serial.READ_ERRORS:
                optimized = None
        exe = (backend.compile(self.module) if optimized is None
               else backend.compile_optimized(self.module, optimized))
        _count("compiled", self)
        return exe

    def __call__(self, *arrays):
        """The results, where the blocks live (blocks.py): NumPy arrays for host blocks (a
        device backend's results are copied to the host), CuPy arrays or jitlib Arrays on
        the device for device blocks."""
        from jitlib.api import _run
        inputs, home = blocks.program_inputs(arrays, self.param_dtypes)
        return blocks.program_outputs(_run(self.executable(), inputs), home)

    def __reduce__(self):
        return _load, (self.backend, self.digest, serial.to_data(self.module),
                       self.shipped or self._ship())

    def _ship(self):
        """The saved entry of the client's executable, if the backend saved one."""
        from jitlib.backends import get_backend
        backend = get_backend(self.backend)
        exe = self.executable()
        key = getattr(exe, "saved_key", None)
        record = backend.saved_record(key) if key is not None else None
        if record is None:
            return None
        text = json.dumps(record)
        self.shipped = (key, text, _sha256(text), backend.saved_context())
        return self.shipped


def _load(backend, digest, data, shipped):
    found = _cache.get((backend, digest))
    if found is not None:   # a worker thread of the client's process, or a second task
        return Program(found[0], backend, digest)
    module = serial.from_data(data)
    if _sha256(serial.dumps(module)) != digest:
        raise _mismatch("program", digest)
    return Program(module, backend, digest, shipped)


def _sha256(text):
    return hashlib.sha256(text.encode()).hexdigest()


def _mismatch(what, digest):
    return errors.JitlibError(
        f"a shipped jitlib {what} does not match its checksum {digest[:12]}",
        hint="the client and the workers must run the same jitlib version")


def _count(how, program):
    key = (program.name, program.digest)
    _counts[how][key] = _counts[how].get(key, 0) + 1


def counts(digests=None):
    """{"compiled": {stage name: n}, "mapped": {stage name: n}} in this process, of the
    programs whose hashes are in `digests` (default: all)."""
    out = {}
    for how, by_key in _counts.items():
        out[how] = {}
        for (name, digest), n in by_key.items():
            if digests is None or digest in digests:
                out[how][name] = out[how].get(name, 0) + n
    return out


def forget():
    """Drop every cached executable (tests: a fresh worker in this process)."""
    with _lock:
        _cache.clear()
