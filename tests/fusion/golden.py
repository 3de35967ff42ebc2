"""Golden pass tests: IR text in, FileCheck-style checks on the printed IR out.

A golden file (tests/golden/*.hlo) holds cases separated by `# -----` lines:

    # RUN: simplify                          passes (pipeline.BY_NAME), comma-separated,
    #                                        then options: unsafe_math=a,b fold_limit=N
    # -----
    # CASE: MulByOneIsRemoved                the test's name: a plain claim
    # RULE: mul_one                          the rule(s) the case is about
    module m(%x: f32[4]) {
      ...
    }
    # CHECK: return (%x)

A RUN line before the first CASE applies to every case; a case may carry its own.
Each case's module is parsed, verified, run through the passes (verifying after each)
and printed; then the checks run, in order, against the printed lines:

    CHECK: p        a later line contains p
    CHECK-NEXT: p   the line right after the previous match contains p
    CHECK-NOT: p    no line between the previous match and the next one contains p
    CHECK-UNCHANGED the output prints exactly as the input does

In a pattern, a run of spaces matches any run of whitespace, `{{re}}` is a regular
expression, `[[NAME:re]]` binds NAME to what `re` matched and `[[NAME]]` matches it again.

Unless the RUN line enables unsafe math, the interpreter must also give the same bits
before and after, on inputs full of special values (NaN, infinities, -0.0, integer
extremes). A case named DoNot... is a negative test: the edge where the rule must not fire.
"""
import dataclasses
import functools
import pathlib
import re

import numpy as np

from jitlib.fusion.options import Options
from jitlib.fusion.pipeline import BY_NAME, run_pipeline
from jitlib.hlo import dtypes
from jitlib.hlo.interpreter import evaluate
from jitlib.hlo.ops import Op
from jitlib.hlo.parser import parse_module
from jitlib.hlo.printer import print_module
from jitlib.hlo.verifier import verify

GOLDEN_DIR = pathlib.Path(__file__).resolve().parent.parent / "golden"
SEPARATOR = re.compile(r"^\s*#\s*-----\s*$")
DIRECTIVE = re.compile(r"^\s*#\s*(RUN|CASE|RULE|CHECK-NEXT|CHECK-NOT|CHECK-UNCHANGED|CHECK)"
                       r"(?::\s?(.*?))?\s*$")


@dataclasses.dataclass
class Case:
    path: pathlib.Path
    lineno: int            # where the case starts in the file
    name: str
    run: str
    rules: tuple
    text: str              # the chunk: module text plus directive comments
    checks: list           # (kind, pattern, lineno)

    @property
    def id(self):
        return f"{self.path.stem}::{self.name}"

    @property
    def negative(self):
        return self.name.startswith("DoNot")

    def where(self, lineno=None):
        return f"{self.path.name}:{lineno or self.lineno} ({self.name})"


def load(path):
    """The cases of one golden file."""
    path = pathlib.Path(path)
    chunks, start, lines = [], 1, []
    for n, line in enumerate(path.read_text().splitlines(), start=1):
        if SEPARATOR.match(line):
            chunks.append((start, lines))
            start, lines = n + 1, []
        else:
            lines.append((n, line))
    chunks.append((start, lines))
    default_run, cases = None, []
    for start, lines in chunks:
        fields = {"RUN": None, "CASE": None, "RULE": []}
        checks = []
        for n, line in lines:
            m = DIRECTIVE.match(line)
            if m is None:
                continue
            kind, arg = m.group(1), (m.group(2) or "").strip()
            if kind == "RULE":
                fields["RULE"] += arg.replace(",", " ").split()
            elif kind in ("RUN", "CASE"):
                fields[kind] = arg
            else:
                checks.append((kind, arg, n))
        has_module = any(line.lstrip().startswith("module ") for _, line in lines)
        if fields["CASE"] is None:
            if has_module or checks:
                raise ValueError(f"{path.name}:{start}: a case needs a `# CASE: name` line")
            default_run = fields["RUN"] or default_run
            continue
        run = fields["RUN"] or default_run
        if run is None or not has_module or not checks:
            raise ValueError(f"{path.name}:{start}: case {fields['CASE']} needs a RUN line, "
                             "a module and at least one CHECK")
        cases.append(Case(path, start, fields["CASE"], run, tuple(fields["RULE"]),
                          "\n".join(line for _, line in lines), checks))
    return cases


def collect(pattern):
    """Every case of the golden files matching `pattern`, in file order."""
    paths = sorted(GOLDEN_DIR.glob(pattern))
    if not paths:
        raise FileNotFoundError(f"no golden files {pattern} in {GOLDEN_DIR}")
    return [case for path in paths for case in load(path)]


def parse_run(run):
    """(passes, Options) from a RUN line's text."""
    words = run.split()
    passes = [BY_NAME[name] for name in words[0].split(",")]
    kwargs = {}
    for word in words[1:]:
        key, _, value = word.partition("=")
        if key == "unsafe_math":
            kwargs[key] = frozenset(value.split(","))
        elif key == "fold_limit":
            kwargs[key] = int(value)
        else:
            raise ValueError(f"unknown RUN option {word!r}")
    return passes, Options(**kwargs)


def run_case(case, options=None):
    """Run the case's passes on its module; returns (input module, output module).

    `options` replaces the RUN line's options.
    """
    passes, run_options = parse_run(case.run)
    module = parse_module(case.text)
    verify(module)
    return module, run_pipeline(module, passes, options or run_options, verify_each=True)


def check_case(case):
    """Run the case and its checks; raises AssertionError saying which check failed."""
    before, after = run_case(case)
    check(print_module(after), case.checks, print_module(before), where=case.where)
    if not parse_run(case.run)[1].unsafe_math:
        inputs = special_inputs(before, np.random.default_rng(0))
        assert_same_bits(evaluate(before, inputs), evaluate(after, inputs), case.where())


def check(output, checks, before=None, where=lambda lineno=None: "check"):
    """Match `checks` [(kind, pattern, lineno)] against the lines of `output`."""
    lines = output.splitlines()
    env, cursor, last, pending_not = {}, 0, None, []

    def fail(lineno, message):
        raise AssertionError(f"{where(lineno)}: {message}\noutput:\n{output}")

    def close_nots(upto):
        for pattern, lineno in pending_not:
            for k in range(cursor, upto):
                if _search(pattern, lines[k], dict(env)):
                    fail(lineno, f"CHECK-NOT: {pattern} matched line {k + 1}: {lines[k]}")
        pending_not.clear()

    for kind, pattern, lineno in checks:
        if kind == "CHECK-UNCHANGED":
            if output != before:
                fail(lineno, f"CHECK-UNCHANGED: the pass changed the module\ninput:\n{before}")
        elif kind == "CHECK-NOT":
            pending_not.append((pattern, lineno))
        elif kind == "CHECK-NEXT":
            k = cursor
            if last is None or k >= len(lines) or not _search(pattern, lines[k], env):
                got = lines[k] if last is not None and k < len(lines) else "(no next line)"
                fail(lineno, f"CHECK-NEXT: {pattern} does not match the next line: {got}")
            close_nots(k)
            cursor, last = k + 1, k
        else:
            for k in range(cursor, len(lines)):
                if _search(pattern, lines[k], env):
                    break
            else:
                fail(lineno, f"CHECK: {pattern} matches no line from line {cursor + 1} on")
            close_nots(k)
            cursor, last = k + 1, k
    close_nots(len(lines))


_PIECE = re.compile(r"\{\{(.*?)\}\}|\[\[([A-Za-z_]\w*)(?::(.*?))?\]\]|(\s+)")


def _search(pattern, line, env):
    """Whether `line` contains `pattern`; binds [[NAME:re]] captures into `env`."""
    parts, pos, binds = [], 0, []
    for m in _PIECE.finditer(pattern):
        parts.append(re.escape(pattern[pos:m.start()]))
        regex, name, capture, space = m.groups()
        if regex is not None:
            parts.append(f"(?:{regex})")
        elif space is not None:
            parts.append(r"\s+")
        elif capture is not None:
            parts.append(f"(?P<{name}>{capture})")
            binds.append(name)
        elif name in env:
            parts.append(re.escape(env[name]))
        else:
            raise ValueError(f"[[{name}]] is used before it is bound in {pattern!r}")
        pos = m.end()
    parts.append(re.escape(pattern[pos:]))
    found = re.search("".join(parts), line)
    if found is None:
        return False
    env.update({name: found.group(name) for name in binds})
    return True


# -- running modules

_FLOAT_SPECIALS = (0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, 2.0, 0.1, 1e-3, 3e38)


def special_inputs(module, rng):
    """One array per parameter: special values first, then random ones."""
    out = []
    for p in module.params:
        n, dt = p.size, p.dtype
        if dtypes.is_bool(dt):
            flat = rng.random(n) < 0.5
        elif dtypes.is_integer(dt):
            info = dtypes.iinfo(dt)
            edges = np.array([0, 1, info.max, info.min, 2, info.max - 1], dtype=object)
            flat = rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)
            flat[:min(n, len(edges))] = edges[:n].astype(dt)
        else:
            with np.errstate(over="ignore"):
                specials = np.array(_FLOAT_SPECIALS).astype(dt)
            flat = (rng.standard_normal(n) * 10).astype(dt)
            flat[:min(n, len(specials))] = specials[:n]
            rng.shuffle(flat)
        out.append(np.asarray(flat, dtype=dt).reshape(p.shape))
    return out


def assert_same_bits(expected, actual, what="results"):
    """Arrays of the same dtype, shape and bits; NaN matches NaN (payloads aside)."""
    assert len(expected) == len(actual), what
    for i, (e, a) in enumerate(zip(expected, actual)):
        e, a = np.asarray(e), np.asarray(a)
        assert (e.dtype, e.shape) == (a.dtype, a.shape), f"{what}[{i}]: {a.dtype}{a.shape}"
        if dtypes.is_float(e.dtype):
            nan_e, nan_a = np.isnan(e), np.isnan(a)
            width = f"u{e.dtype.itemsize}"
            same = (e.view(width) == a.view(width)) | (nan_e & nan_a)
        else:
            same = e == a
        if not np.all(same):
            bad = np.argwhere(~np.asarray(same))[:5].tolist()
            raise AssertionError(f"{what}[{i}] differ at {bad}: expected {e[~same][:5]}, "
                                 f"got {a[~same][:5]}")


@functools.lru_cache(maxsize=None)
def products_round_by_layout():
    """Whether this host's BLAS rounds a small product differently when an operand comes
    transposed: OpenBLAS's Zen kernels do for float32 and complex (a 4x12 complex128
    product m @ m.T against m @ m.T.copy()), its SkylakeX kernels do not. The optimizer
    may hand a product an operand as a transposed view where the trace had a copy."""
    rng = np.random.default_rng(0)
    for dt, shape in ((np.float32, (8, 16)), (np.complex128, (4, 12))):
        a = rng.standard_normal(shape).astype(dt)
        if np.dtype(dt).kind == "c":
            a = a + 1j * rng.standard_normal(shape)
        if not np.array_equal(a @ a.T, a @ a.T.copy()):
            return True
    return False


def has_product(module):
    """Whether `module` (or a kernel or loop body in it) computes a dot_general."""
    stack = [module]
    while stack:
        m = stack.pop()
        for instr in m.instructions:
            if instr.op is Op.DOT_GENERAL:
                return True
            stack.extend(v for v in instr.attrs.values() if hasattr(v, "instructions"))
    return False


def assert_same_bits_but_blas(module, expected, actual, what="results"):
    """`assert_same_bits`, or, where `module` has a product and this host's BLAS rounds
    by operand layout, equal to within a few roundings of float32 / float64."""
    if not (has_product(module) and products_round_by_layout()):
        return assert_same_bits(expected, actual, what)
    assert len(expected) == len(actual), what
    for i, (e, a) in enumerate(zip(expected, actual)):
        e, a = np.asarray(e), np.asarray(a)
        assert (e.dtype, e.shape) == (a.dtype, a.shape), f"{what}[{i}]: {a.dtype}{a.shape}"
        if e.dtype.kind in "fc":
            eps = np.finfo(e.dtype).eps
            scale = float(np.nanmax(np.abs(e), initial=0.0)) if e.size else 0.0
            np.testing.assert_allclose(a, e, rtol=256 * eps, atol=256 * eps * scale,
                                       err_msg=f"{what}[{i}]")
        else:
            np.testing.assert_array_equal(a, e, err_msg=f"{what}[{i}]")
