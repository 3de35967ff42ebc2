"""Each compile of one jitted function: explained, counted against a budget, logged.

`jit(f, max_compiles=N, on_exceed="error"|"warn")`: compile N+1 raises (or warns)
with the difference that caused every compile and the fix for it. With
JITLIB_LOG=recompiles (jitlib/logs.py) every compile after the first logs why the cache
missed.
"""
import collections
import warnings

from jitlib import errors, logs
from jitlib.cache import explain

_ON_EXCEED = ("error", "warn")


class RecompileBudgetError(errors.JitlibError):
    """A jitted function compiled more often than its max_compiles allows."""


class RecompileWarning(UserWarning):
    """A jitted function compiled more often than its max_compiles allows."""


HISTORY = 256   # compiles whose explanation is kept per function


class Recompiles:
    """The compile history of one jitted function."""

    def __init__(self, fn_name, max_compiles=None, on_exceed="error"):
        if max_compiles is not None and (isinstance(max_compiles, bool)
                                         or not isinstance(max_compiles, int)
                                         or max_compiles < 1):
            raise errors.JitlibTypeError(f"max_compiles must be a positive int, got "
                                         f"{max_compiles!r}")
        if on_exceed not in _ON_EXCEED:
            raise errors.JitlibTypeError(f"on_exceed must be one of {_ON_EXCEED}, got "
                                         f"{on_exceed!r}")
        self.fn_name = fn_name
        self.max_compiles = max_compiles
        self.on_exceed = on_exceed
        self.compiles = 0
        # (signature, [Difference], explanation) of the latest compiles: a function that
        # compiles for ever must not keep every signature it saw
        self.history = collections.deque(maxlen=HISTORY)

    def before_compile(self, key, cached_keys, what=""):
        """Explain, log and budget one compile; raises when over an "error" budget."""
        diffs, text = explain.explain(self.fn_name, key, cached_keys)
        if what:
            text += f" [{what}]"
        self.history.append((key, diffs, text))
        self.compiles += 1
        logs.log("recompiles", "%s", text)
        if self.max_compiles is not None and self.compiles > self.max_compiles:
            message = self.report()
            if self.on_exceed == "error":
                self.history.pop()
                self.compiles -= 1
                raise RecompileBudgetError(message, hint=self._fixes())
            warnings.warn(f"{message}\nhint: {self._fixes()}", RecompileWarning, stacklevel=4)

    def report(self):
        first = self.compiles - len(self.history) + 1
        lines = [f"{self.fn_name} needs compile {self.compiles}, past "
                 f"max_compiles={self.max_compiles}; what caused each compile:"]
        if first > 1:
            lines.append(f"  ({first - 1} earlier compiles not kept)")
        lines += [f"  {i}. {text}" for i, (_, _, text) in enumerate(self.history, first)]
        return "\n".join(lines)

    def _fixes(self):
        fixes = []
        for _, diffs, _ in self.history:
            for d in diffs:
                if d.kind == "new":   # the first compile needs no fix
                    continue
                fix = d.fix(self.fn_name)
                if fix not in fixes:
                    fixes.append(fix)
        return "; ".join(fixes) or "raise max_compiles"

