"""The backend interface: a `Backend` compiles a `Module` into an `Executable`."""
import numpy as np

from jitlib.errors import JitlibTypeError
from jitlib.hlo import dtypes


class Executable:
    """A compiled module. Call it with one NumPy array per parameter; get a list of results.

    Subclasses implement `_execute(arrays)`; `__call__` checks the arguments first, so every
    backend rejects a wrong argument the same way instead of casting it silently.
    """

    # the disk cache key a backend saved this program under (see Backend.load_saved)
    saved_key = None

    def __init__(self, module, backend_name):
        self.module = module
        self.backend_name = backend_name

    def __call__(self, *arrays) -> list[np.ndarray]:
        return self._execute(check_args(self.module, arrays))

    def _execute(self, arrays):
        raise NotImplementedError

    def __repr__(self):
        return f"<{type(self).__name__} {self.module.name!r} on {self.backend_name}>"


class Backend:
    """Compiles modules for one target; `name` is its registry name."""

    name = None
    # whether `compile` saves programs to the disk cache for `load_saved`
    saves_programs = False

    def compile(self, module) -> Executable:
        raise NotImplementedError

    def load_saved(self, key, record=None):
        """The executable a `compile` of this process or an earlier one saved to the disk
        cache under `key` (its `saved_key`), or None: backends that save nothing.
        `record`: what `saved_record(key)` gave, kept by the caller (no read then)."""
        return None

    def load_record(self, module, key, record):
        """The executable of `module` from `saved_record(key)` shipped by another process
        (a Dask client to its workers), without compiling; None: backends that save
        nothing, or a record that does not read back."""
        return None

    def compile_optimized(self, module, optimized):
        """`module`'s executable where its optimized form is at hand (a Dask worker
        received it): backends that do not optimize ahead compile `module` itself."""
        return self.compile(module)

    def saved_context(self):
        """What every program this backend saves depends on besides its module (its
        sources, the target machine), as text: a caller that names a saved program from
        an entry of its own keys that entry by it too, so that a program saved by other
        code, or for another machine, is never named."""
        return ""

    def saved_record(self, key):
        """The content of the entry saved under `key`, as plain data, for a caller that
        keeps a copy beside its own entry (buckets/saved.py); None if there is none."""
        return None

    def __repr__(self):
        return f"<{type(self).__name__} {self.name!r}>"


def check_args(module, arrays):
    """`arrays` as ndarrays, checked against `module`'s parameter count, shapes and dtypes."""
    params = module.params
    if len(arrays) != len(params):
        raise JitlibTypeError(
            f"module {module.name!r} takes {len(params)} arguments, got {len(arrays)}")
    out = []
    for p, a in zip(params, arrays):
        a = np.asarray(a)
        if not a.dtype.isnative:   # byte-swapped (>f8 on x86): the same values, converted
            a = a.astype(a.dtype.newbyteorder("="))
        if a.dtype != p.dtype or a.shape != p.shape:
            got = f"{dtypes.name(a.dtype) if dtypes.is_supported(a.dtype) else a.dtype}" \
                  f"[{','.join(map(str, a.shape))}]"
            raise JitlibTypeError(
                f"argument {p.attrs['index']} ({p.attrs['name']}) of module {module.name!r} "
                f"must be {p.type_str}, got {got}")
        out.append(a)
    return out
