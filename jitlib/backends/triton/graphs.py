"""Counted loops on the GPU, replayed as CUDA graphs.

A loop the host drives costs a few microseconds of Python and driver calls per kernel
per trip, more than a small body's kernels take on the device. A loop with a static trip
count always queues the same kernels, so from its second call on it runs as CUDA graphs
captured once:

- the carry lives in `slots` owned by the runner; a call copies its values in, launches
  the graphs, and copies the final carry out into fresh arrays;
- while capturing, the body's kernels take their outputs from two arenas in turn (trip t
  writes arena t % 2 and reads arena (t-1) % 2), so every address is fixed and one
  trip's memory is free again two trips later; a carried value that lives in neither the
  current arena nor a slot (the previous trip's value passed through) is copied into the
  current arena, so it survives the next trip;
- one graph holds up to MAX_KERNELS launches (a whole short loop), ending with the final
  carry copied back into the slots; it is launched trips // k times, and a second graph
  captured for the remaining trips.

Bodies with anything but generated kernels and views (a library call, a nested loop, a
fallback through the host) keep the host-driven loop; so does every loop on a device
that cannot capture (the interpreter's stand-ins).
"""
import logging
import threading

import numpy as np

from jitlib.array import Array, DeviceError
from jitlib.backends.triton.executable import KernelRunner, ViewRunner
from jitlib.hlo import dtypes
from jitlib.hlo.ops import Op

log = logging.getLogger("jitlib")

MAX_KERNELS = 4096   # launches in one graph: instantiating costs ~1 µs each
ALIGN = 256          # what cuMemAllocAsync gives, so kernels see the same alignment


def _aligned(n):
    return -(-n // ALIGN) * ALIGN


class Arena:
    """One block of device memory handed out front to back (reset between trips)."""

    def __init__(self, device, nbytes):
        self.block = device.empty((max(nbytes, 1),), np.uint8)
        self.device = device
        self.start = self.block.data_ptr()
        self.end = self.start + nbytes
        self.next = self.start

    def take(self, shape, dtype):
        ptr = self.next
        self.next += _aligned(dtypes.nbytes(shape, dtype))
        if self.next > self.end:
            raise DeviceError("a CUDA graph's arena is too small for the loop body")
        return Array(ptr, shape, dtype, self, self.device)

    def holds(self, value):
        return self.start <= value.data_ptr() < self.end


def graphable(body):
    """Why the body executable cannot be captured, or None if it can."""
    for instr, runner, _ in body._steps:
        if instr.op in (Op.PARAMETER, Op.CONSTANT, Op.GET_OUTPUT):
            continue
        if type(runner) is ViewRunner:
            continue
        if type(runner) is not KernelRunner:
            return f"{instr.attrs.get('name', instr.op)} is not a generated kernel"
    return None


def _kernel_count(body):
    return sum(type(r) is KernelRunner for _, r, _ in body._steps)


def _trip_bytes(body, carry):
    """Arena bytes one trip can take: every kernel's outputs, and the carry's copies."""
    total = sum(_aligned(dtypes.nbytes(shape, dtype))
                for _, r, _ in body._steps if type(r) is KernelRunner
                for shape, dtype in r._outputs)
    return total + sum(_aligned(v.nbytes) for v in carry)


class GraphLoop:
    """A counted `while` on the CUDA device: host-driven on its first call (which also
    compiles, tunes and uploads the body's constants), CUDA graphs from then on."""

    writes_into = False

    def __init__(self, instr, host_driven, body, device):
        self.trips = instr.attrs["trip_count"]
        self.host_driven = host_driven
        self.body = body
        self.device = device
        self.calls = 0
        self.why_not = graphable(body) if self.trips >= 2 else "fewer than two trips"
        if self.why_not is not None:
            log.debug("gpu: a loop of %d trips stays host-driven (%s)", self.trips,
                      self.why_not)
        self._plan = None   # (slots, [graph, ...] in launch order, the arenas they use)
        self._lock = threading.Lock()   # the slots serve one call at a time

    def __call__(self, values, outs=None):
        self.calls += 1
        if self.why_not is not None or self.calls == 1:
            return self.host_driven(values)
        with self._lock:
            if self._plan is None:
                try:
                    self._plan = self._capture(values)
                except Exception as e:   # whatever broke the capture, the loop still runs
                    self.why_not = f"capture failed: {type(e).__name__}: {e}"
                    log.warning("jitlib: a loop of %d trips stays host-driven (%s)",
                                self.trips, self.why_not)
                    return self.host_driven(values)
            slots, launches, _ = self._plan
            d = self.device
            for slot, v in zip(slots, values):
                d.copy_into(slot, v)
            for graph in launches:
                d.launch_graph(graph)
            return [d.copy(slot) for slot in slots]

    def _capture(self, values):
        d = self.device
        slots = [d.empty(v.shape, v.dtype) for v in values]
        nbytes = _trip_bytes(self.body, slots)
        arenas = (Arena(d, nbytes), Arena(d, nbytes))
        per_graph = max(1, min(self.trips, MAX_KERNELS // max(1, _kernel_count(self.body))))
        full = self._graph(slots, arenas, per_graph)
        launches = [full] * (self.trips // per_graph)
        if self.trips % per_graph:
            launches.append(self._graph(slots, arenas, self.trips % per_graph))
        log.debug("gpu: loop of %d trips as %d graph launches of %d trips", self.trips,
                  len(launches), per_graph)
        return slots, launches, arenas   # the graphs write the arenas: they live as long

    def _graph(self, slots, arenas, trips):
        """A graph of `trips` trips from the slots back into them."""
        current = [None]

        def take(shape, dtype):
            return current[0].take(shape, dtype)

        d = self.device
        with d.capture(take) as capture:
            carry = list(slots)
            for t in range(trips):
                arena = current[0] = arenas[t % 2]
                arena.next = arena.start
                carry = self.body.run_buffers(carry)
                carry = [v if arena.holds(v) or _in_slots(v, slots) else d.copy(v)
                         for v in carry]
            # a slot read by another result's copy is moved aside first
            carry = [d.copy(v) if _in_slots(v, slots) and v.data_ptr() !=
                     slots[j].data_ptr() else v for j, v in enumerate(carry)]
            for slot, v in zip(slots, carry):
                if v.data_ptr() != slot.data_ptr():
                    d.copy_into(slot, v)
            del carry
        return capture.graph


def _in_slots(value, slots):
    p = value.data_ptr()
    return any(s.data_ptr() <= p < s.data_ptr() + max(s.nbytes, 1) for s in slots)
