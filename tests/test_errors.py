import contextlib
import inspect
import os
import pickle

import numpy as np
import pytest

import jitlib
from jitlib import errors
from jitlib.errors import (
    InterpretError,
    JitlibError,
    JitlibTypeError,
    ShapeError,
    SourceLocation,
    TracerConversionError,
    UnsupportedError,
    VerifierError,
    user_location,
)

THIS_FILE = os.path.basename(__file__)


def _line():
    """Line number of the caller."""
    return inspect.currentframe().f_back.f_lineno


def _compile_at(filename, src):
    """Run ``src`` as if it lived in ``filename``; returns its namespace."""
    ns = {"user_location": user_location}
    exec(compile(src, filename, "exec"), ns)
    return ns


def raise_shape_error():
    raise ShapeError("cannot broadcast (2,) with (3,)", hint="check the shapes")  # MARKER


def test_error_names_test_file_and_line():
    with pytest.raises(ShapeError) as info:
        raise_shape_error()
    err = info.value
    expected_line = inspect.getsourcelines(raise_shape_error)[1] + 1
    assert err.location.file == __file__
    assert err.location.line == expected_line
    assert err.location.function == "raise_shape_error"
    first = str(err).splitlines()[0]
    assert first == f"{__file__}:{expected_line} in raise_shape_error: " \
                    "cannot broadcast (2,) with (3,)"
    assert f"{THIS_FILE}:{expected_line}" in str(err)


def test_message_layout_with_source_and_hint():
    with pytest.raises(ShapeError) as info:
        raise_shape_error()
    lines = str(info.value).splitlines()
    assert len(lines) == 3
    assert lines[1].startswith("  raise ShapeError(") and lines[1].endswith("# MARKER")
    assert lines[2] == "hint: check the shapes"
    assert info.value.hint == "check the shapes"
    assert info.value.message == "cannot broadcast (2,) with (3,)"


def test_no_hint_no_location_lines_omitted():
    err = UnsupportedError("np.foo is not supported", location=None)
    assert "hint:" not in str(err)
    err.location = None
    assert str(err) == "np.foo is not supported"
    err.hint = "use np.bar"
    assert str(err) == "np.foo is not supported\nhint: use np.bar"


def test_missing_source_line_omitted():
    loc = SourceLocation("/nonexistent/dir/model.py", 12, "forward")
    err = VerifierError("bad IR", location=loc)
    assert str(err) == "/nonexistent/dir/model.py:12 in forward: bad IR"


def test_explicit_location_is_kept():
    loc = SourceLocation("/a/b/model.py", 7, "f")
    err = JitlibTypeError("bad dtype", location=loc, hint="use float32")
    assert err.location is loc
    assert str(err).splitlines()[0] == "/a/b/model.py:7 in f: bad dtype"


def test_source_location_formatting():
    loc = SourceLocation("/path/to/file.py", 42, "fn")
    assert loc.short() == "file.py:42"
    assert str(loc) == "/path/to/file.py:42 in fn"
    with pytest.raises(AttributeError):
        loc.line = 3  # frozen
    assert loc == SourceLocation("/path/to/file.py", 42, "fn")


def test_user_location_direct_call():
    loc = user_location(); line = _line()  # noqa: E702 -- same line on purpose
    assert loc.file == __file__
    assert loc.line == line
    assert loc.function == "test_user_location_direct_call"
    assert loc.short() == f"{THIS_FILE}:{line}"


def test_user_location_skips_jitlib_frames():
    # Code compiled with a filename inside the package stands in for a jitlib frame.
    pkg_dir = os.path.dirname(jitlib.__file__)
    fake = os.path.join(pkg_dir, "_fake_internal.py")
    ns = _compile_at(fake, "def f():\n    return user_location()\n")
    loc = ns["f"](); line = _line()  # noqa: E702
    assert loc.file == __file__ and loc.line == line


def test_user_location_numpy_frames():
    np_dir = os.path.dirname(np.__file__)
    fake = os.path.join(np_dir, "_fake_numpy_mod.py")
    ns = _compile_at(fake, "def g(skip):\n    return user_location(skip_numpy=skip)\n")
    loc = ns["g"](True); line = _line()  # noqa: E702
    assert loc.file == __file__ and loc.line == line
    loc = ns["g"](False)
    assert loc.file == fake and loc.line == 2


def test_user_location_skips_functools_contextlib_frames():
    fake = contextlib.__file__
    ns = _compile_at(fake, "def h():\n    return user_location()\n")
    loc = ns["h"](); line = _line()  # noqa: E702
    assert loc.file == __file__ and loc.line == line


def test_user_location_prefix_is_directory_not_string_prefix():
    # A sibling directory whose name merely starts with "jitlib" is user code.
    pkg_dir = os.path.dirname(jitlib.__file__)
    fake = pkg_dir + "_extra" + os.sep + "user.py"
    ns = _compile_at(fake, "def k():\n    return user_location()\n")
    assert ns["k"]().file == fake


def test_exception_hierarchy():
    for cls in (TracerConversionError, UnsupportedError, ShapeError, JitlibTypeError,
                VerifierError, InterpretError):
        assert issubclass(cls, JitlibError)
        assert issubclass(cls, Exception)
    assert issubclass(ShapeError, ValueError)
    assert issubclass(JitlibTypeError, TypeError)
    with pytest.raises(ValueError):
        raise ShapeError("x")
    with pytest.raises(TypeError):
        raise JitlibTypeError("x")


def test_constructor_captures_location_of_caller():
    err = TracerConversionError("bool() of a traced value"); line = _line()  # noqa: E702
    expected = SourceLocation(__file__, line, "test_constructor_captures_location_of_caller")
    assert err.location == expected


def test_error_pickles():
    err = InterpretError("boom", hint="h")
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is InterpretError
    assert back.location == err.location and back.hint == "h" and back.message == "boom"
    assert str(back) == str(err)


def test_all_exports_exist():
    for name in errors.__all__:
        assert hasattr(errors, name)
