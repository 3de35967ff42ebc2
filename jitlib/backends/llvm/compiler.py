"""The llvmlite chain, in one place: IR text -> machine code for this CPU.

parse -> verify -> optimise at O3 for the host CPU (its real name and features, so the
vectorizer uses every vector unit it has) -> MCJIT. Compiled functions are cached in
memory by the hash of their IR text: the same kernel text compiles once per process,
and on disk (jitlib/cache/disk.py) as object code, so it compiles once per machine.
"""
import hashlib
import threading

import llvmlite.binding as llvm

from jitlib.cache.disk import object_store, versions


class Compiler:
    """Compiles LLVM IR text for the host CPU; one MCJIT engine holds every kernel."""

    def __init__(self):
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        target = llvm.Target.from_default_triple()
        self.cpu = llvm.get_host_cpu_name()
        self.features = llvm.get_host_cpu_features().flatten()
        self.target_machine = target.create_target_machine(
            cpu=self.cpu, features=self.features, opt=3, jit=True)
        self._engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), self.target_machine)
        self._cache = {}              # sha256 of the IR text -> function address
        self._lock = threading.Lock()
        self.compiled = 0             # cache misses, for tests

    def optimize(self, ir_text):
        """The module parsed, verified and optimised at O3 for the host."""
        module = llvm.parse_assembly(ir_text)
        module.verify()
        module.triple = self.target_machine.triple
        module.data_layout = str(self.target_machine.target_data)
        tuning = llvm.create_pipeline_tuning_options(speed_level=3)
        tuning.loop_vectorization = True
        tuning.slp_vectorization = True
        builder = llvm.create_pass_builder(self.target_machine, tuning)
        builder.getModulePassManager().run(module, builder)
        return module

    def assembly(self, ir_text):
        """The host assembly of `ir_text`, optimised as `compile` would."""
        return self.target_machine.emit_assembly(self.optimize(ir_text))

    def compile(self, ir_text, name):
        """The address of function `name` defined in `ir_text`, compiled once per text."""
        digest = hashlib.sha256(ir_text.encode()).hexdigest()
        with self._lock:
            address = self._cache.get(digest)
            if address is not None:
                return address
            # one engine for all kernels: symbols must be unique, so add the text's hash
            symbol = f"{name}.{digest[:16]}"
            renamed = ir_text.replace(f'@"{name}"', f'@"{symbol}"')
            store = object_store()
            if store is None:
                self._engine.add_module(self.optimize(renamed))
            else:   # the disk cache holds object code: a new process skips LLVM
                key = store.key(renamed, self.target_machine.triple, self.cpu,
                                self.features, *versions())
                obj = store.load(key)
                if obj is None:
                    obj = self.target_machine.emit_object(self.optimize(renamed))
                    store.store(key, obj, kind="llvm-object", symbol=symbol, cpu=self.cpu,
                                triple=self.target_machine.triple)
                self._engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
            self._engine.finalize_object()
            address = self._engine.get_function_address(symbol)
            if not address:
                raise RuntimeError(f"MCJIT did not define {symbol}")
            self._cache[digest] = address
            self.compiled += 1
            return address


_compiler = None
_compiler_lock = threading.Lock()


def get_compiler():
    """The process's compiler (created on first use: it starts LLVM's native target)."""
    global _compiler
    with _compiler_lock:
        if _compiler is None:
            _compiler = Compiler()
        return _compiler
