"""The interpreter backend: runs a module on the reference interpreter, op by op in NumPy."""
from jitlib.backends.base import Backend, Executable
from jitlib.hlo.interpreter import evaluate


class InterpreterExecutable(Executable):
    def _execute(self, arrays):
        return evaluate(self.module, arrays)


class InterpreterBackend(Backend):
    """No compilation: each call evaluates the module with `jitlib.hlo.interpreter`."""

    name = "interpreter"

    def compile(self, module):
        return InterpreterExecutable(module, self.name)
