"""The llvmlite chain, in one place: IR text -> machine code for this CPU.

parse -> verify -> optimise at O3 for the host CPU -> object code (optimizer_process.py:
in this process for its first compiles, then in a worker process) -> mapped into the
process (loader.py, or an MCJIT engine for what it does not handle). Compiled functions
are cached in memory by the hash of their IR text: the same kernel text compiles once per
process, and on disk (jitlib/cache/disk.py) as object code, so it compiles once per
machine.

The kernels loaded together (a program's) share one mapping, handed out as `KernelCode`
handles shared by every executable that runs them; the mapping is unmapped when its last
kernel is released (an MCJIT engine frees machine code only when it closes:
`remove_module` leaves the code mapped, +12 KiB per removed kernel), so a bounded jit
cache that evicts programs frees their code. When the last handle on a text dies, its
code is kept among the `RETAIN_UNUSED` most recently released (a program compiled again
soon finds it) and released after that.
"""
import atexit
import collections
import hashlib
import os
import threading
import weakref

import llvmlite.binding as llvm

from jitlib import config, forksafe, logs
from jitlib.backends.llvm import loader, optimizer_process
from jitlib.cache.disk import object_store, versions
from jitlib.cache.fingerprint import source_fingerprint

# a fork waits for the thread inside LLVM, if any: see forksafe.py
_llvm_lock = getattr(getattr(llvm.ffi.lib, "_lock", None), "_lock", None)
if _llvm_lock is not None:
    forksafe.hold_llvm_across_fork(_llvm_lock)


class Compiler:
    """Compiles LLVM IR text for the host CPU. The kernels loaded together (a program's)
    share one mapping, unmapped when none of them is used any more."""

    def __init__(self):
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        self.cpu = llvm.get_host_cpu_name()
        self.features = full_width(llvm.get_host_cpu_features().flatten())
        self.target_machine = optimizer_process.target_machine(llvm, self.cpu, self.features)
        self._triple_target = llvm.Target.from_default_triple()
        self._quick_machine = None    # -O0 code generator of `quick_object_code`
        self._empty = llvm.parse_assembly("")   # what MCJIT engines are made around (`_map`)
        self._live = weakref.WeakValueDictionary()   # sha256 of the IR text -> KernelCode
        self._unused = collections.OrderedDict()     # sha256 -> _Native no handle uses
        self._pinned = {}             # address -> handle of `compile` callers: kept for good
        self._lock = forksafe.rlock()   # a handle's finalizer may run inside `load`
        self.compiled = 0             # cache misses, for tests
        self.released = 0             # kernels unmapped (or due to be, with their mapping)
        self.optimized_here = 0       # LLVM optimizer runs in this process
        self._worker = optimizer_process.OptimizerProcess(self.cpu, self.features)
        atexit.register(self._worker.close)
        # the second core of `compile_ahead`: only idle CPU time, never the caller's
        self._second = optimizer_process.OptimizerProcess(self.cpu, self.features,
                                                          idle_only=True)
        atexit.register(self._second.close)
        self._ahead = {}              # sha256 -> object code `compile_ahead` made
        # `target()`, made once here: in LLVM calls it was a visible part of a warm first call
        self._target = (self.target_machine.triple, self.cpu, self.features, *versions())
        if object_store() is not None:
            # with the disk cache on, what saved programs depend on besides the target
            # (saved.context: the sources of the IR, the optimizer and the code
            # generators) is walked here too, once a process, as the code imported
            # before the compiler starts, and not in a warm first call
            source_fingerprint(*CODEGEN_SOURCES)
        self._several = 0             # programs that had several kernels to compile
        self.loaded_by = {"jitlib": 0, "mcjit": 0}   # mappings made by each loader

    def _loader_machine(self):
        """The target machine of an engine that only loads object code. An engine owns
        (and frees) its machine, so each gets a fresh one; it never generates code (the
        object is compiled by `self.target_machine`), so it is the generic machine of the
        host triple: far cheaper to make than the host CPU's, with its ~900 feature flags
        to parse."""
        return self._triple_target.create_target_machine(jit=True)

    def optimize(self, ir_text):
        """The module parsed, verified and optimised at O3 for the host, here."""
        self.optimized_here += 1
        return optimizer_process.optimize(llvm, self.target_machine, ir_text)

    def object_code(self, ir_text):
        """`ir_text` optimised and compiled to object code for the host: in this process
        for its first compiles, then by the worker process (see optimizer_process.py)."""
        where = config.compile_worker()
        if where == "always" or (
                where == "auto" and self.optimized_here >= optimizer_process.IN_PROCESS_LIMIT):
            return self._worker.object_code(ir_text)
        return self._object_code_here(ir_text)

    def _object_code_here(self, ir_text):
        return self.target_machine.emit_object(self.optimize(ir_text))

    def quick_object_code(self, ir_text):
        """`ir_text` compiled without LLVM's optimizer, by an -O0 code generator: for the
        runtime's own helpers (claiming.py's entries), loops around a call whose speed is
        the callee's. O3 spent ten times as long on each (its loop passes and the
        aggressive instruction selector); O0 keeps no memory per run, so these never go
        to the worker."""
        if self._quick_machine is None:
            self._quick_machine = llvm.Target.from_default_triple().create_target_machine(
                cpu=self.cpu, features=self.features, opt=0, jit=True)
        module = llvm.parse_assembly(ir_text)
        module.verify()
        module.triple = self._quick_machine.triple
        module.data_layout = str(self._quick_machine.target_data)
        return self._quick_machine.emit_object(module)

    def compile_ahead(self, kernels):
        """Make the object code of the kernels [(ir_text, name)] that `load` would have
        to compile, on both cores where that pays: LLVM runs under llvmlite's one global
        lock, so the second core's share goes to a worker process of the lowest priority
        (optimizer_process.py: the same bytes) while this thread compiles the rest, each
        side taking the largest kernel left. Only while compiles run in this process; the
        worker starts (off the caller's path) at the `SECOND_CORE_AFTER`-th
        program with several kernels to compile, which compiles here alone. `load` then
        finds the objects ready."""
        if config.compile_worker() != "auto" or self.optimized_here >= \
                optimizer_process.IN_PROCESS_LIMIT:
            return
        store = object_store()
        missing = []
        with self._lock:
            for ir_text, name in map(anonymous, kernels):
                digest = hashlib.sha256(ir_text.encode()).hexdigest()
                if digest in self._live or digest in self._unused or digest in self._ahead:
                    continue
                _, renamed = _renamed(ir_text, name, digest)
                if store is not None and os.path.exists(store.path(self._disk_key(store,
                                                                                  renamed))):
                    continue
                missing.append((digest, renamed))
        if len(missing) < 2:
            return
        self._several += 1
        if not self._second.ready():
            if self._several >= SECOND_CORE_AFTER:
                self._second.start_soon()
            return
        missing.sort(key=lambda item: len(item[1]))   # largest last: popped first
        lock, made = threading.Lock(), {}
        tick = getattr(logs.current(), "tick", lambda: None)   # a slow compile's report

        def take():
            with lock:
                return missing.pop() if missing else None

        def by_worker():
            while (item := take()) is not None:
                try:
                    made[item[0]] = self._second.object_code(item[1])
                except RuntimeError:   # `load` compiles it here, and reports any error
                    return
                tick()

        item = take()   # this thread's warm LLVM takes the largest
        helper = threading.Thread(target=by_worker, name="jitlib-llvm-ahead", daemon=True)
        helper.start()
        while item is not None:
            made[item[0]] = self._object_code_here(item[1])
            tick()
            item = take()
        helper.join()
        with self._lock:
            self._ahead.update(made)

    def _disk_key(self, store, renamed):
        return store.key(renamed, *self.target())

    def target(self):
        """What code made for this host depends on besides its input: the triple, CPU
        name and features, and the jitlib / llvmlite / LLVM versions."""
        return self._target

    def assembly(self, ir_text):
        """The host assembly of `ir_text`, optimised as `compile` would."""
        return self.target_machine.emit_assembly(self.optimize(ir_text))

    def compile(self, ir_text, name, quick=True):
        """The address of function `name` defined in `ir_text`, kept for the process's
        life: for the runtime's helpers, so compiled unoptimized (`quick_object_code`)
        unless `quick` is False (a helper whose loops must be vectorized)."""
        code = self.load(ir_text, name, quick=quick)
        with self._lock:
            self._pinned[code.address] = code
        return code.address

    def load(self, ir_text, name, quick=False):
        """A `KernelCode` for function `name` of `ir_text`: its machine code stays while
        the handle (or another handle on the same text) is alive. `quick`: compiled by
        `quick_object_code` instead of the O3 pipeline."""
        return self.load_all([(ir_text, name)], quick)[0]

    def load_all(self, kernels, quick=False, saved=None):
        """`load` for each (ir_text, name) of `kernels`; the code not mapped yet is mapped
        together (a program's kernels: one mapping instead of one each). `quick`: for all
        of them, or per kernel. `saved`: per kernel, (digest, object code) as a saved
        program kept them (KernelCode's), or None: no hashing of the text, and no object
        code to find."""
        quick = [quick] * len(kernels) if isinstance(quick, bool) else list(quick)
        # the level is part of the text: hashes and disk keys tell them apart
        texts = [(QUICK_PREFIX + text if q else text, name)
                 for (text, name), q in zip(map(anonymous, kernels), quick)]
        saved = saved or [None] * len(texts)
        digests = [hashlib.sha256(text.encode()).hexdigest() if known is None else known[0]
                   for (text, _), known in zip(texts, saved)]
        with self._lock:
            held, new = {}, {}   # held: strong references, `_live` holds weak ones
            for (text, name), digest, known in zip(texts, digests, saved):
                if digest in held or digest in new:
                    continue
                code = self._live.get(digest)
                if code is None:
                    native = self._unused.pop(digest, None)
                    if native is None:
                        new[digest] = (text, name, None if known is None else known[1],
                                       text.startswith(QUICK_PREFIX))
                        continue
                    code = self._live[digest] = self._handle(digest, native)
                held[digest] = code
            if new:
                for digest, native in zip(new, self._build(list(new.values()), list(new))):
                    held[digest] = self._live[digest] = self._handle(digest, native)
            return [held[digest] for digest in digests]

    def _handle(self, digest, native):
        code = KernelCode(native.address, digest, native.object)
        weakref.finalize(code, self._release, digest, native).atexit = False
        return code

    def _build(self, texts, digests):
        """[_Native] for each (ir_text, name, object code or None, quick) of `texts`,
        mapped together."""
        symbols, objects = [], []
        for (ir_text, name, obj, quick), digest in zip(texts, digests):
            if obj is None:
                symbol, renamed = _renamed(ir_text, name, digest)
                obj = self._object_for(renamed, symbol, digest, quick)
            else:
                symbol = _symbol(name, digest)
            objects.append(obj)
            symbols.append(symbol)
        mapping, addresses = self._map(objects, symbols)
        self.compiled += len(texts)
        shared = _Mapping(mapping, len(texts))
        return [_Native(shared, address, obj) for address, obj in zip(addresses, objects)]

    def _map(self, objects, symbols):
        """(mapping, [address of each symbol]): by jitlib's loader (loader.py) where it
        can, else by a new MCJIT engine. The mapping's `close()` unmaps them all."""
        if config.cpu_loader() == "auto" and loader.SUPPORTED:
            try:
                mapping, addresses = loader.load(objects, symbols)
                self.loaded_by["jitlib"] += 1
                return mapping, addresses
            except loader.Unloadable as e:
                logs.log("compiles", "%s mapped by MCJIT: %s", ", ".join(symbols), e)
        # an engine is made around a module; removed again, the same empty one serves
        # every engine (parsing one each time was a good part of a cached kernel's load)
        engine = llvm.create_mcjit_compiler(self._empty, self._loader_machine())
        engine.remove_module(self._empty)   # else finalizing generates code for it
        try:
            for obj in objects:
                engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
            engine.finalize_object()
            addresses = [engine.get_function_address(symbol) for symbol in symbols]
            for symbol, address in zip(symbols, addresses):
                if not address:
                    raise RuntimeError(f"MCJIT did not define {symbol}")
        except BaseException:
            engine.close()
            raise
        self.loaded_by["mcjit"] += 1
        return engine, addresses

    def _object_for(self, renamed, symbol, digest, quick):
        """The object code of `renamed`: made ahead, on disk, or compiled now."""
        ahead = self._ahead.pop(digest, None)
        if ahead is not None:
            return ahead   # compiled by `compile_ahead`
        generate = self.quick_object_code if quick else self.object_code
        store = object_store()
        # the disk cache holds object code: a new process skips LLVM
        key = None if store is None else self._disk_key(store, renamed)
        obj = None if key is None else store.load(key)
        if obj is None:
            obj = generate(renamed)
            if key is not None:
                store.store(key, obj, kind="llvm-object", symbol=symbol, cpu=self.cpu,
                            triple=self.target_machine.triple)
        progress = logs.current()
        if progress is not None:
            progress.tick()
        return obj

    def _release(self, digest, native):
        """The last handle on `digest` died: keep its code mapped a while, then
        release it from its mapping."""
        with self._lock:
            self._unused[digest] = native
            while len(self._unused) > RETAIN_UNUSED:
                _, old = self._unused.popitem(last=False)
                old.mapping.release()
                self.released += 1

    def engines(self):
        """How many compiled kernels are mapped now: (in use, kept unused). Code that
        `compile` callers keep for good (claiming.py's entries) is not counted."""
        with self._lock:
            return len(self._live) - len(self._pinned), len(self._unused)


# kernels kept mapped after their last user is gone (see the module docstring)
RETAIN_UNUSED = 64
# heads the text of a kernel compiled without the optimizer: hashes and disk keys differ
QUICK_PREFIX = "; jitlib: compiled at -O0\n"
# the jitlib folders whose sources decide what a saved program holds (saved.py keys by
# their fingerprint): the IR, the optimizer and the code generators
# "backends" whole, not backends/llvm alone: the cpu's kernels also come from the modules
# the backends share (elemental.py's index rules, complex_lowering.py)
CODEGEN_SOURCES = ("hlo", "fusion", "backends")
# `compile_ahead` starts its worker at the third program with several kernels to
# compile: a process that compiles that much (a service's buckets, a test suite) gains
# from the second core, while a script's first calls do not pay the worker's start
# (docs/performance.md)
SECOND_CORE_AFTER = 3


def full_width(features):
    """The host's features, with 512-bit vectors preferred where it has AVX-512.

    LLVM tunes most Intel AVX-512 cores (skylake-avx512 to sapphirerapids, rocketlake)
    to prefer 256-bit vectors, against the clock drop older parts took on 512-bit code,
    so kernels came out with ymm registers only. jitlib's kernels are long vector streams
    whose transcendental work is the limit on a small host, and zmm made them up to twice
    as fast (docs/performance.md). AMD's AVX-512 cores carry no such preference: nothing
    changes there."""
    if "+avx512f" in features.split(","):
        return features + ",-prefer-256-bit"
    return features


def anonymous(kernel):
    """(ir_text, name) with the function named for its body alone: kernels that differ
    only in their names (a model's identical layers, a loop's steps) hash alike, so each
    body compiles and maps once."""
    ir_text, name = kernel
    return ir_text.replace(f'@"{name}"', '@"kernel"'), "kernel"


def _renamed(ir_text, name, digest):
    """(symbol, text): function `name` renamed after the text's hash, so that the disk
    cache's key, which covers the text, covers the symbol too."""
    symbol = _symbol(name, digest)
    return symbol, ir_text.replace(f'@"{name}"', f'@"{symbol}"')


def _symbol(name, digest):
    return f"{name}.{digest[:16]}"


class _Mapping:
    """Mapped object code (loader.py's Image, or an MCJIT engine) and how many of the
    kernels it maps are not released yet: the last one to go closes it (and unmaps them
    all)."""
    __slots__ = ("code", "kernels")

    def __init__(self, code, kernels):
        self.code, self.kernels = code, kernels

    def release(self):
        self.kernels -= 1
        if self.kernels == 0:
            self.code.close()


class _Native:
    """One kernel text's machine code: the mapping that holds it, its entry address, and
    the object code it was mapped from."""
    __slots__ = ("mapping", "address", "object")

    def __init__(self, mapping, address, obj):
        self.mapping, self.address, self.object = mapping, address, obj


class KernelCode:
    """A handle on compiled code: hold it as long as `address` is called. `digest` and
    `object` (the IR text's hash and the object code) are what a saved program keeps
    (saved.py), so that a later process maps the code without finding it again."""
    __slots__ = ("address", "digest", "object", "__weakref__")

    def __init__(self, address, digest=None, obj=None):
        self.address, self.digest, self.object = address, digest, obj


_compiler = None
_compiler_lock = forksafe.lock()


def get_compiler():
    """The process's compiler (created on first use: it starts LLVM's native target)."""
    global _compiler
    with _compiler_lock:
        if _compiler is None:
            _compiler = Compiler()
        return _compiler
