"""Which saved program runs a bucketed call, found by the call's own trace.

A bucket's program is proven from three traces (the bucket size and two probes, see
runtime.py) before its first call runs, and that first call's own trace is checked
against the proof. The conclusion, "the program saved under key K, given this call's
inputs padded, gives what the function gives at these true lengths", is a fact about
two things: the function's trace at the true lengths and the program. A `bucket-size`
entry keeps it, keyed by that trace's text (with the bucketed axes, bucket sizes, pad
values, backend, and the sources of the proof and the IR; not the tracer's: the claim
is about the trace, however it was made). A new process whose call traces to the
same text at the same lengths runs program K without proving again: one trace instead
of three, no proof, no optimizer. Any other length, or a function whose trace changed,
misses and is proven as in a cold process.

The payload is plain JSON: the program's key (backends/llvm/saved.py), a copy of the
program's own entry (so a warm start reads one file, not two), and how each result is
sliced back.
"""
import json

from jitlib import logs
from jitlib.cache import disk
from jitlib.cache.fingerprint import source_fingerprint
from jitlib.hlo import serial

KIND = "bucket-size"


class SavedCall:
    """The entry of one call traced to `traced` (at its true lengths), for `backend`:
    `load` and `save` share its key, computed once."""

    def __init__(self, traced, axes, buckets, backend):
        self.traced, self.backend = traced, backend
        self.store = disk.object_store() if backend.saves_programs else None
        self.key = None if self.store is None else _key(self.store, traced, axes, buckets,
                                                        backend)

    def load(self):
        """(executable, out_axes) saved for the call, or None."""
        if self.key is None:
            return None
        data = self.store.load(self.key)
        if data is None:
            return None
        try:
            record = json.loads(data)
            program = str(record["program"])
            out_axes = tuple(tuple((int(axis), int(i)) for axis, i in result)
                             for result in record["out_axes"])
            copy = record.get("copy")
            if copy is not None and not isinstance(copy, dict):
                raise TypeError("the program's copy is not an object")
        except (ValueError, KeyError, IndexError, TypeError, AttributeError) as e:
            logs.warning("cache", "discarding an unreadable bucket entry: %s", e)
            self.store.discard(self.key)
            return None
        executable = self.backend.load_saved(program, copy)
        if executable is None or len(out_axes) != len(executable.module.results):
            return None
        return executable, out_axes

    def save(self, executable, out_axes):
        """Note that `executable` (saved by the backend) runs the call."""
        if self.key is None or executable.saved_key is None:
            return
        payload = {"program": executable.saved_key,
                   "copy": self.backend.saved_record(executable.saved_key),
                   "out_axes": [[list(pair) for pair in result] for result in out_axes]}
        self.store.store(self.key, json.dumps(payload).encode(), kind=KIND,
                         module=self.traced.name)


def _key(store, traced, axes, buckets, backend):
    """The entry's key: the trace as its plain data (hlo/serial.py), which says all its
    text says (locations included) in a fifth of the Python calls printing makes; and
    what the backend's saved programs depend on (its sources, the target), so that the
    program an entry names is one this code would compile for this machine."""
    spec = [(a.name, a.axis, a.group, repr(a.rule.pad_value), buckets[a.group])
            for a in axes]
    return store.key(KIND, serial.dumps(traced), repr(spec), backend.name,
                     backend.saved_context(), source_fingerprint("buckets", "hlo"))
