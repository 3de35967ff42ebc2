"""Bucket rules: which argument axis of which function is padded, and to which sizes.

A rule comes from a TOML file (`load`), from `JITLIB_BUCKETS=path`, or inline
(`jit(f, buckets=...)`, a dict or a list of dicts with the same keys). Every mistake
is a `BucketConfigError` naming the file, the line and the key, because a config
file is code the user wrote and they need to find the line to fix.
"""
import fnmatch
import math
import os
import re
import tomllib
from dataclasses import dataclass, field
from typing import Any, Mapping, overload

from jitlib import errors

_POLICIES = ("pow2",)
_KEYS = {"function", "arg", "axis", "policy", "sizes", "multiple_of", "min", "max",
         "pad_value", "beyond_max", "verify"}
_BEYOND_MAX = ("compile", "error")
# "bucket": the proof is traced at each bucket's ends and next to its top, then holds
# for every size inside; "each_size": also trace each new size once before it runs
_VERIFY = ("bucket", "each_size")


class BucketConfigError(errors.JitlibError):
    """A bucket rule is malformed: names the config file, line and key."""


class BucketRuleWarning(UserWarning):
    """A JITLIB_BUCKETS rule whose `function` glob matches no jitted function."""


@dataclass(frozen=True)
class Source:
    """Where a rule was written: for error messages."""
    file: str
    lines: dict[str, int] = field(default_factory=dict, compare=False, hash=False)  # key -> line
    header_line: int = 0

    def location(self, key: str | None = None) -> errors.SourceLocation | None:
        """The file and line of `key`; None for inline rules (the error then names the
        user's line that called jit)."""
        if not self.header_line:
            return None
        line = self.lines.get(key, self.header_line) if key else self.header_line
        return errors.SourceLocation(self.file, line, "[[bucket]]")

    def where(self) -> str:
        """`file:line` of the rule's header, or how an inline rule was given."""
        return f"{self.file}:{self.header_line}" if self.header_line else self.file

    def error(self, key: str, message: str, hint: str | None = None) -> BucketConfigError:
        return BucketConfigError(f"bucket rule from {self.file}: key {key!r}: {message}",
                                 location=self.location(key), hint=hint)


@dataclass(frozen=True)
class Rule:
    """One `[[bucket]]`: pad `arg`'s `axis` up to the next bucket size.

    >>> rule = from_inline({"arg": "x", "policy": "pow2", "max": 64})[0]
    >>> rule.bucket_for(20), rule.bucket_for(64), rule.bucket_for(65)
    (32, 64, None)
    """
    function: str            # glob over the jitted function's qualified name
    arg: str | int           # parameter name (str) or position (int)
    axis: int
    policy: str | None       # "pow2", or None with `sizes` or `multiple_of`
    sizes: tuple[int, ...] | None
    multiple_of: int | None
    min: int
    max: int | None
    pad_value: float
    beyond_max: str          # "compile": compile the exact shape; "error": raise
    source: Source
    verify: str = "bucket"   # "bucket" or "each_size" (see _VERIFY)

    def bucketing(self) -> tuple[Any, ...]:
        """What decides `bucket_for` and `smallest_in`: rules equal in it pad alike."""
        return (self.policy, self.sizes, self.multiple_of, self.min, self.max)

    def matches(self, qualname: str) -> bool:
        return fnmatch.fnmatchcase(qualname, self.function)

    def bucket_for(self, n: int) -> int | None:
        """The bucket size a length-`n` axis pads to, or None past `max`."""
        if self.max is not None and n > self.max:
            return None
        n = max(n, self.min)
        if self.sizes is not None:
            return next((s for s in self.sizes if s >= n), None)
        if self.multiple_of is not None:
            size = -(-n // self.multiple_of) * self.multiple_of
        else:
            size = 1 << max(n - 1, 0).bit_length()
        return size if self.max is None else min(size, self.max)

    def smallest_in(self, bucket: int) -> int:
        """The smallest padded length (>= 2) that pads to `bucket`: the bottom end of
        the sizes one program serves. `bucket_for` is monotone, so bisect."""
        lo, hi = max(2, self.min), bucket
        while lo < hi:
            mid = (lo + hi) // 2
            if self.bucket_for(mid) == bucket:
                hi = mid
            else:
                lo = mid + 1
        return lo

    def all_buckets(self) -> list[int]:
        """Every bucket size between min and max (for `buckets warm`)."""
        if self.sizes is not None:
            return list(self.sizes)
        if self.max is None:
            raise self.source.error("max", "warming every bucket needs a max",
                                    hint="add max = N to the rule")
        out, n = [], self.min
        while n <= self.max:
            b = self.bucket_for(n)
            assert b is not None   # n <= max always has a bucket
            out.append(b)
            n = b + 1
        return out

    def describe(self) -> str:
        how = (f"sizes={list(self.sizes)}" if self.sizes is not None else
               f"multiple_of={self.multiple_of}" if self.multiple_of else self.policy)
        return f"{self.function} arg {self.arg!r} axis {self.axis}: {how}"


def load(path: str | os.PathLike[str]) -> list[Rule]:
    r"""The rules of a TOML bucket file, each key checked: pass them to
    ``jit(f, buckets=rules)``, or name the file in ``JITLIB_BUCKETS`` to apply them to
    every jitted function whose qualified name a rule's ``function`` glob matches.
    A mistake raises `BucketConfigError` naming the file, line and key.

    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "buckets.toml"
    >>> _ = path.write_text('[[bucket]]\nfunction = "predict"\narg = "x"\npolicy = "pow2"\n')
    >>> [rule.describe() for rule in load(path)]
    ["predict arg 'x' axis 0: pow2"]
    """
    path = os.fspath(path)
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise BucketConfigError(f"cannot read bucket config {path}: {e.strerror}",
                                location=errors.SourceLocation(path, 0, "<file>")) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        # TOML is UTF-8; replacing the bytes would hide a mangled glob or key
        line = raw[:e.start].count(b"\n") + 1
        raise BucketConfigError(
            f"bucket config {path} is not UTF-8: byte {raw[e.start]:#04x} at line {line}",
            location=errors.SourceLocation(path, line, "<file>"),
            hint="save the file as UTF-8") from None
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        line = getattr(e, "lineno", 0) or _line_of_error(str(e))
        raise BucketConfigError(f"not valid TOML: {e}",
                                location=errors.SourceLocation(path, line, "<toml>")) from None
    unknown = set(doc) - {"bucket"}
    if unknown:
        key = sorted(unknown)[0]
        line = _find_key_line(text.splitlines(), 0, len(text.splitlines()), key)
        raise BucketConfigError(
            f"key {key!r}: unknown top-level key (expected [[bucket]] tables)",
            location=errors.SourceLocation(path, line, key))
    tables = doc.get("bucket", [])
    if not isinstance(tables, list):
        raise BucketConfigError("key 'bucket': must be an array of tables ([[bucket]])",
                                location=errors.SourceLocation(path, 1, "bucket"))
    headers = _table_headers(text)
    lines = text.splitlines()
    rules = []
    for i, table in enumerate(tables):
        start = headers[i] if i < len(headers) else 1
        end = headers[i + 1] - 1 if i + 1 < len(headers) else len(lines)
        key_lines = {k: _find_key_line(lines, start, end, k) for k in table}
        rules.append(parse_rule(table, Source(path, key_lines, start)))
    return rules


def from_inline(spec: Any, where: str = "jit(buckets=...)") -> list[Rule]:
    """Rules given in code: a Rule, a dict, a list of either, or a path to a TOML file."""
    if spec is None:
        return []
    if isinstance(spec, (str, os.PathLike)):
        return load(spec)
    if isinstance(spec, (Rule, dict)):
        spec = [spec]
    rules: list[Rule] = []
    for item in spec:
        if isinstance(item, Rule):
            rules.append(item)
        else:
            item = dict(item)
            item.setdefault("function", "*")   # inline: this function
            rules.append(parse_rule(item, Source(where)))
    return rules


def from_env() -> list[Rule]:
    """The rules of JITLIB_BUCKETS=path, or none."""
    path = os.environ.get("JITLIB_BUCKETS")
    return load(path) if path else []


def parse_rule(table: Mapping[str, Any], source: Source) -> Rule:
    """One rule from a TOML table (or dict), every key checked."""
    for key in table:
        if key not in _KEYS:
            raise source.error(key, "unknown key", hint=f"a [[bucket]] takes {sorted(_KEYS)}")
    for key in ("function", "arg"):
        if key not in table:
            raise source.error(key, "missing", hint=f"add {key} = ... to the rule")
    function = table["function"]
    if not isinstance(function, str) or not function:
        raise source.error("function", "must be a non-empty string (a qualified name or glob)")
    arg = table["arg"]
    if isinstance(arg, bool) or not isinstance(arg, (str, int)):
        raise source.error("arg", "must be an argument name or a position")
    axis = table.get("axis", 0)
    if isinstance(axis, bool) or not isinstance(axis, int):
        raise source.error("axis", f"must be an integer, got {axis!r}")
    lo = _positive(table, "min", 1, source)
    hi = _positive(table, "max", None, source)
    if hi is not None and hi < lo:
        raise source.error("max", f"max = {hi} is below min = {lo}")
    ways = [k for k in ("policy", "sizes", "multiple_of") if k in table]
    if len(ways) != 1:
        key = ways[1] if len(ways) > 1 else "policy"
        raise source.error(key, "give exactly one of policy, sizes, multiple_of"
                           if ways else "missing: give policy, sizes or multiple_of",
                           hint='e.g. policy = "pow2" or sizes = [1, 8, 32]')
    policy: str | None = None
    sizes: tuple[int, ...] | None = None
    multiple: int | None = None
    if "policy" in table:
        policy = table["policy"]
        if policy not in _POLICIES:
            raise source.error("policy", f"unknown policy {policy!r}",
                               hint='policy = "pow2", or use sizes = [...] / multiple_of = N')
    elif "sizes" in table:
        given = table["sizes"]
        if (not isinstance(given, list) or not given or
                any(isinstance(s, bool) or not isinstance(s, int) or s < 1 for s in given)):
            raise source.error("sizes", f"must be a non-empty list of positive integers, "
                               f"got {given!r}")
        if sorted(set(given)) != given:
            raise source.error("sizes", f"must be strictly increasing, got {given}")
        if hi is not None and given[-1] > hi:
            raise source.error("sizes", f"size {given[-1]} is past max = {hi}",
                               hint="drop the size or raise max")
        if given[-1] < lo:
            raise source.error("sizes", f"every size is below min = {lo}")
        sizes = tuple(given)
    else:
        multiple = _positive(table, "multiple_of", None, source)
    pad = table.get("pad_value", 0.0)
    if isinstance(pad, bool) or not isinstance(pad, (int, float)) or math.isnan(pad):
        raise source.error("pad_value", f"must be a number, got {pad!r}")
    beyond = table.get("beyond_max", "compile")
    if beyond not in _BEYOND_MAX:
        raise source.error("beyond_max", f"must be one of {_BEYOND_MAX}, got {beyond!r}")
    verify = table.get("verify", "bucket")
    if verify not in _VERIFY:
        raise source.error("verify", f"must be one of {_VERIFY}, got {verify!r}")
    return Rule(function, arg, axis, policy, sizes, multiple, lo, hi, float(pad), beyond,
                source, verify)


@overload
def _positive(table: Mapping[str, Any], key: str, default: int, source: Source) -> int: ...
@overload
def _positive(table: Mapping[str, Any], key: str, default: None,
              source: Source) -> int | None: ...
def _positive(table: Mapping[str, Any], key: str, default: int | None,
              source: Source) -> int | None:
    value = table.get(key, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise source.error(key, f"must be a positive integer, got {value!r}")
    return int(value)


def _table_headers(text: str) -> list[int]:
    """1-based line numbers of each [[bucket]] header."""
    return [i for i, line in enumerate(text.splitlines(), 1)
            if re.match(r"\s*\[\[\s*bucket\s*\]\]", line)]


def _find_key_line(lines: list[str], start: int, end: int, key: str) -> int:
    pattern = re.compile(rf"\s*(\"?){re.escape(key)}\1\s*=")
    for i in range(max(start, 1), end + 1):
        if i - 1 < len(lines) and pattern.match(lines[i - 1]):
            return i
    return start


def _line_of_error(message: str) -> int:
    m = re.search(r"line (\d+)", message)
    return int(m.group(1)) if m else 0
