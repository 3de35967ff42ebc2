"""LLVM's optimizer and code generator, in this process or in a worker process.

`optimize` and `object_code` are the one O3 pipeline of the cpu backend. They run in
the user's process for its first `IN_PROCESS_LIMIT` compiles, then in a worker:
llvmlite's new-pass-manager pipeline keeps about 50-70 KiB of native memory per run
that nothing frees (measured: 2,500 O3 runs of a 12-line kernel grow resident memory
by 166 MiB, with fresh pass builders, LLVM contexts and target machines alike; O0 does
not grow), so a service that compiles thousands of signatures would grow without bound.
The worker is replaced every `RECYCLE_AFTER` compiles, which bounds its memory too, and
an LLVM crash ends there: the caller gets an error carrying the kernel's IR, not a dead
interpreter. Loading object code (MCJIT) stays in the user's process and does not grow.

While compiles still run in the user's process, a second worker, started at the lowest
priority (`idle_only`), is its second core: a program with two or more kernels to
compile sends some of them there while the rest compile here (`Compiler.compile_ahead`).
It starts on a background thread (`start_soon`) once a process has compiled a few such
programs (`compiler.SECOND_CORE_AFTER`): its start beside a script's first call, on a
2-core host, costs that call more than the second core gives back.

Run as a script, this file is the worker. It imports only llvmlite and the standard
library (importing jitlib would cost its start more than everything else), and speaks
length-prefixed messages on stdin/stdout: a request is a JSON header
{"cpu": ..., "features": ...} then the IR text; the reply is b"ok" + object code, or
b"error" + the message.
"""
import json
import os
import shutil
import struct
import subprocess
import sys
import threading
import weakref

IN_PROCESS_LIMIT = 100   # compiles before the worker takes over (~6 MiB kept by LLVM)
RECYCLE_AFTER = 500      # compiles per worker process (~35 MiB kept, then freed)


def target_machine(llvm, cpu, features):
    """The machine both sides compile for (so their object code is the same bytes): the
    host CPU by name and features, at O3. LLVM's native target must be initialized."""
    return llvm.Target.from_default_triple().create_target_machine(
        cpu=cpu, features=features, opt=3, jit=True)


def optimize(llvm, machine, ir_text):
    """`ir_text` parsed, verified and optimised at O3 for `machine`'s CPU (its real name
    and features, so the vectorizers use every vector unit it has)."""
    module = llvm.parse_assembly(ir_text)
    module.verify()
    module.triple = machine.triple
    module.data_layout = str(machine.target_data)
    tuning = llvm.create_pipeline_tuning_options(speed_level=3)
    tuning.loop_vectorization = True
    # Off: our kernels are loop nests whose inner loops the loop vectorizer takes (and
    # interleaves where a hint says so). After it, the unroller copied vector bodies again
    # and SLP looked for straight-line work there is none of: a sixth of LLVM's time on
    # the benchmark's kernels, for the same bits and the same speed
    # (docs/performance.md).
    tuning.slp_vectorization = False
    tuning.loop_unrolling = False
    builder = llvm.create_pass_builder(machine, tuning)
    builder.getModulePassManager().run(module, builder)
    return module


def object_code(llvm, machine, ir_text):
    return machine.emit_object(optimize(llvm, machine, ir_text))


# -- the protocol

def _send(stream, payload):
    stream.write(struct.pack("<I", len(payload)))
    stream.write(payload)


def _receive(stream):
    header = stream.read(4)
    if len(header) < 4:
        raise EOFError("the other side closed the pipe")
    (size,) = struct.unpack("<I", header)
    payload = stream.read(size)
    if len(payload) < size:
        raise EOFError("the other side closed the pipe mid-message")
    return payload


def serve(requests, replies):
    """The worker's loop: one reply per request until stdin closes."""
    import llvmlite.binding as llvm
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    machines = {}
    while True:
        try:
            header = json.loads(_receive(requests))
            ir_text = _receive(requests).decode()
        except EOFError:
            return
        key = (header["cpu"], header["features"])
        try:
            if key not in machines:
                machines[key] = target_machine(llvm, *key)
            reply = b"ok" + object_code(llvm, machines[key], ir_text)
        except Exception as e:   # noqa: BLE001 - every failure goes back to the caller
            reply = b"error" + f"{type(e).__name__}: {e}".encode()
        _send(replies, reply)
        replies.flush()


# -- the user's side

# A kernel-shaped module a new worker compiles first: LLVM's passes initialize lazily,
# and a fresh process's first vectorized loop takes much longer than later ones.
_WARM_UP = """
declare float @llvm.fma.f32(float, float, float)
define void @warm_up(ptr noalias readonly %in, ptr noalias %out) nounwind {
entry:
  br label %loop
loop:
  %i = phi i64 [0, %entry], [%next, %loop]
  %p = getelementptr inbounds float, ptr %in, i64 %i
  %x = load float, ptr %p
  %y = call float @llvm.fma.f32(float %x, float 2.0, float 1.0)
  %z = fdiv float 1.0, %y
  %q = getelementptr inbounds float, ptr %out, i64 %i
  store float %z, ptr %q
  %next = add nuw nsw i64 %i, 1
  %more = icmp ult i64 %next, 4096
  br i1 %more, label %loop, label %exit
exit:
  ret void
}
"""

class OptimizerProcess:
    """A worker process compiling IR text to object code for one target CPU; started on
    first use, replaced every `recycle_after` compiles, restarted if it died."""

    def __init__(self, cpu, features, recycle_after=None, command=None, idle_only=False):
        self._header = json.dumps({"cpu": cpu, "features": features}).encode()
        self.recycle_after = recycle_after or RECYCLE_AFTER
        self._command = command or [sys.executable, os.path.abspath(__file__)]
        if idle_only:   # at the lowest priority: it runs on CPU time nobody else wants
            nice = shutil.which("nice")   # from its first instruction: Python's own start
            self._command = ([nice, "-n", "19"] + self._command if nice
                             else self._command + [NICE_FLAG])
        self._process = None
        self._served = 0         # compiles by the current process
        self.started = 0         # processes started, for tests
        self._lock = threading.Lock()
        self._warming = None     # the thread of `start_soon`
        self._ready = False
        _instances.add(self)

    def _after_fork(self):
        # the parent's worker answers the parent: a forked child starts its own
        self._process, self._warming, self._ready = None, None, False
        self._lock = threading.Lock()

    def start_soon(self):
        """Start the worker on a background thread (its Python and llvmlite take a while
        to come up) and mark it `ready` once it has compiled `_WARM_UP`."""
        with self._lock:
            if self._warming is not None:
                return
            self._warming = threading.Thread(target=self._warm, name="jitlib-llvm-warm",
                                             daemon=True)
            self._warming.start()

    def _warm(self):
        try:
            self.object_code(_WARM_UP)
            self._ready = True
        except RuntimeError:   # no worker here: `ready` stays False, compiles stay local
            pass

    def ready(self):
        """Whether the worker is up and answering, so a request costs only its compile."""
        process = self._process
        return self._ready and process is not None and process.poll() is None

    def object_code(self, ir_text):
        with self._lock:
            process = self._running()
            try:
                _send(process.stdin, self._header)
                _send(process.stdin, ir_text.encode())
                process.stdin.flush()
                reply = _receive(process.stdout)
            except (OSError, EOFError) as e:
                self._stop()
                raise RuntimeError(f"the LLVM worker process died compiling this kernel "
                                   f"({type(e).__name__}: {e}); its stderr, above, says "
                                   "why") from None
            self._served += 1
            if self._served >= self.recycle_after:
                self._stop()
        if reply.startswith(b"ok"):
            return reply[2:]
        raise RuntimeError(reply[len(b"error"):].decode())

    def _running(self):
        if self._process is None or self._process.poll() is not None:
            self._process = subprocess.Popen(self._command, stdin=subprocess.PIPE,
                                             stdout=subprocess.PIPE, close_fds=True)
            self._served = 0
            self.started += 1
        return self._process

    def _stop(self):
        process, self._process = self._process, None
        if process is None:
            return
        try:
            process.stdin.close()   # the worker's loop ends at end of input
            process.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            process.kill()
            process.wait()
        process.stdout.close()

    def close(self):
        with self._lock:
            self._stop()


_instances = weakref.WeakSet()


def _after_fork_in_child():
    for instance in list(_instances):
        instance._after_fork()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


NICE_FLAG = "--idle-only"

if __name__ == "__main__":
    if NICE_FLAG in sys.argv[1:]:
        os.nice(19)
    serve(sys.stdin.buffer, sys.stdout.buffer)
