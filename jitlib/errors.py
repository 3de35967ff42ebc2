"""Error types raised by jitlib, and the helper that finds the user's source location.

Every jitlib error records where in *user* code it happened (the first stack frame that is
not jitlib, NumPy or a functools/contextlib wrapper), so messages point at the line the user
wrote rather than at tracer internals.
"""

from __future__ import annotations

import contextlib
import functools
import linecache
import os
import sys
from typing import NamedTuple

import numpy

__all__ = [
    "SourceLocation",
    "user_location",
    "JitlibError",
    "TracerConversionError",
    "UnsupportedError",
    "ShapeError",
    "JitlibIndexError",
    "JitlibTypeError",
    "VerifierError",
    "InterpretError",
    "CheckError",
    "ChunkCouplingError",
]


class SourceLocation(NamedTuple):
    """A position in Python source: file path, 1-based line number and function name.
    (A named tuple: every traced instruction carries one, and a frozen dataclass makes,
    hashes and compares in Python calls where a tuple does it in C.)"""

    file: str
    line: int
    function: str

    def short(self) -> str:
        """Return ``"basename.py:LINE"``."""
        return f"{os.path.basename(self.file)}:{self.line}"

    def source_line(self) -> str | None:
        """Return the stripped text of the source line, or None if it is unavailable."""
        text = linecache.getline(self.file, self.line).strip()
        return text or None

    def __str__(self) -> str:
        return f"{self.file}:{self.line} in {self.function}"


# --- locating user code -----------------------------------------------------------------------

_USER, _INTERNAL, _NUMPY = 0, 1, 2


def _real(path: str) -> str:
    return os.path.normcase(os.path.realpath(path))


def _dir_prefix(module_file: str) -> str:
    # Trailing separator so ".../jitlib_extra/x.py" does not match ".../jitlib".
    return os.path.join(_real(os.path.dirname(module_file)), "")


_PKG_PREFIX = _dir_prefix(__file__)
_PKG_AS_IMPORTED = os.path.join(os.path.dirname(__file__), "")
_NUMPY_PREFIX = _dir_prefix(numpy.__file__)
_INTERNAL_FILES = frozenset(_real(m.__file__) for m in (functools, contextlib))
# Pseudo-filenames that are never user code; "<jitlib" is reserved for code jitlib generates.
_INTERNAL_PSEUDO = ("<frozen ", "<jitlib")

# Keyed by co_filename rather than by code object: internal-ness depends only on the file,
# str hashes are cached (code-object hashes are recomputed each time), and we avoid keeping
# dynamically created code objects alive.
_category_cache: dict[str, int] = {}


# Modules shipped inside the package that are user code all the same (the demo).
_USER_FILES: set[str] = set()
_USER_FILES_AS_GIVEN: set[str] = set()


def treat_as_user_code(path: str) -> None:
    """Report locations in `path` although it lies inside the jitlib package."""
    _USER_FILES.add(_real(path))
    _USER_FILES_AS_GIVEN.add(path)
    _category_cache.clear()


def _classify(filename: str) -> int:
    if filename.endswith((".pyx", ".pxd", ".pxi")):
        category = _INTERNAL   # a compiled library's Cython code (NumPy's random module)
    elif filename.startswith("<"):
        category = _INTERNAL if filename.startswith(_INTERNAL_PSEUDO) else _USER
    elif filename.startswith(_PKG_AS_IMPORTED) and filename not in _USER_FILES_AS_GIVEN:
        # jitlib's own modules carry the path they were imported by: no realpath (an
        # lstat per path component) for the frames every first trace walks through
        category = _INTERNAL
    else:
        real = _real(filename)
        if real in _USER_FILES:
            category = _USER
        elif real.startswith(_PKG_PREFIX) or real in _INTERNAL_FILES:
            category = _INTERNAL
        elif real.startswith(_NUMPY_PREFIX):
            category = _NUMPY
        else:
            category = _USER
    _category_cache[filename] = category
    return category


def user_location(skip_numpy: bool = True) -> SourceLocation | None:
    """Return the location of the innermost user frame, starting from the caller.

    Frames in the jitlib package, in functools/contextlib, and (if ``skip_numpy``) in NumPy
    are skipped. Returns None if no user frame is found.
    """
    frame = sys._getframe(1)
    cache = _category_cache
    while frame is not None:
        code = frame.f_code
        filename = code.co_filename
        category = cache.get(filename)
        if category is None:
            category = _classify(filename)
        if category == _USER or (category == _NUMPY and not skip_numpy):
            return SourceLocation(filename, frame.f_lineno, code.co_name)
        frame = frame.f_back
    return None


def is_user_frame(frame) -> bool:
    """Whether `frame` runs user code (not jitlib's, NumPy's or a functools wrapper's)."""
    return is_user_file(frame.f_code.co_filename)


def is_user_file(filename: str) -> bool:
    """Whether code from `filename` is user code (not jitlib's, NumPy's, a library's
    compiled Cython, or a functools wrapper's)."""
    category = _category_cache.get(filename)
    if category is None:
        category = _classify(filename)
    return category == _USER


# --- exceptions --------------------------------------------------------------------------------


def _rebuild(cls, message, location, hint):
    # Pickle support: the constructor is keyword-only and would otherwise re-capture a location.
    return cls(message, location=location, hint=hint)


class JitlibError(Exception):
    """Base class of all jitlib errors; carries a user source location and an optional hint."""

    def __init__(
        self,
        message: str,
        *,
        location: SourceLocation | None = None,
        hint: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.location = location if location is not None else user_location()
        self.hint = hint

    def __str__(self) -> str:
        lines = []
        loc = self.location
        if loc is not None:
            lines.append(f"{loc}: {self.message}")
            source = loc.source_line()
            if source:
                lines.append(f"  {source}")
        else:
            lines.append(str(self.message))
        if self.hint:
            lines.append(f"hint: {self.hint}")
        return "\n".join(lines)

    def __reduce__(self):
        return _rebuild, (type(self), self.message, self.location, self.hint)


class TracerConversionError(JitlibError):
    """A traced value was used where a concrete Python/NumPy value is needed.

    For example ``bool()``/``if`` on a tracer, ``float()``, ``int()``, ``np.asarray()``, or
    ``len()`` of a 0-d tracer.
    """


class EscapedTracerError(JitlibError):
    """A traced value was kept past the end of its trace and used later."""


class EscapedTracerWarning(UserWarning):
    """A jitted function left a traced value where it outlives the trace."""


class UnsupportedError(JitlibError):
    """An unsupported NumPy function or language feature was used."""


class UnboundAxisError(JitlibError, NameError):
    """A collective names an axis no enclosing pmap binds (JAX's NameError)."""


class ShapeError(JitlibError, ValueError):
    """Shapes do not match, e.g. an invalid broadcast or reshape."""


class JitlibTypeError(JitlibError, TypeError):
    """Wrong argument structure, an unhashable static argument, or a bad dtype."""


class VerifierError(JitlibError):
    """An IR module failed verification (it is ill-typed or malformed)."""


class InterpretError(JitlibError):
    """The reference interpreter failed while evaluating IR."""


class IntegerOverflowError(JitlibError, OverflowError):
    """A Python int meets an integer array whose type cannot hold it, where NumPy raises."""


class JitlibValueError(JitlibError, ValueError):
    """A value NumPy rejects (an integer raised to a negative integer power), found or
    not checkable while tracing."""


class JitlibIndexError(JitlibError, IndexError):
    """An index NumPy rejects (out of bounds, too many indices, ...), found while tracing."""


class CheckError(JitlibError):
    """The check mode found a result that differs from the reference (see jitlib.check)."""


class BackendError(JitlibError, ValueError):
    """An unknown backend name, or one that cannot run here."""


class ChunkCouplingError(JitlibError):
    """A jitted function called on Dask arrays has an op that makes one block's result
    depend on other blocks in a way jitlib cannot split into per-block programs and a
    tree reduction (jitlib/dask)."""


class CompileError(JitlibError, RuntimeError):
    """A backend failed to compile a program; the message carries the IR it was given."""
