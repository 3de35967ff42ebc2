"""Regression files: a shrunk failing program kept as IR text plus its inputs.

    regressions/NAME.hlo   comment lines (`# key: value`), then the module as IR text
    regressions/NAME.npz   one array per parameter, in order, as raw bits (so bfloat16
                           and NaN payloads survive), keyed p0, p1, ...

A failure found at the NumPy level (tracing raised, or eager NumPy and the interpreter
disagree) has no module to show; it is kept as the program instead:

    regressions/NAME.py    comment lines, then the NumPy program `def f(a0, ...)`
    regressions/NAME.npz   its arguments, keyed a0, a1, ...

A program that kills the process (a native compiler's segfault) is kept as IR text
alone under regressions/crashes/, and replayed in a child process.

Header keys: `found-by` (generator and date), `variant` and `what` (the failure as first
seen), `signature` (its kind, `Mismatch.signature`), and `xfail` (a reason): a program
that shows a bug in code owned elsewhere is kept as an expected failure until that code
is fixed; the replay test marks it strict, so it turns red the day the bug is fixed and
the line must go. Fuzz runs count a failure with a kept signature apart (`known_bugs`).
"""
import datetime
import hashlib
import pathlib

import numpy as np

from jitlib.hlo.parser import parse_module
from jitlib.hlo.printer import print_module

DIRECTORY = pathlib.Path(__file__).parent / "regressions"


def save(mismatch, found_by, directory=DIRECTORY, xfail=None):
    """Write `mismatch`'s module and inputs as NAME.hlo + NAME.npz (or its NumPy program
    as NAME.py + NAME.npz); return the path of the text file."""
    program = mismatch.program
    text = print_module(mismatch.module) if program is None else program.source
    name = f"{found_by}_{hashlib.sha256(text.encode()).hexdigest()[:10]}"
    directory = pathlib.Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    header = {"found-by": f"{found_by}, {datetime.date.today().isoformat()}",
              "variant": mismatch.variant,
              "what": mismatch.what.splitlines()[0],
              "signature": mismatch.signature}
    if xfail:
        header["xfail"] = xfail
    lines = [f"# {key}: {value}" for key, value in header.items()]
    path = directory / f"{name}.{'hlo' if program is None else 'py'}"
    path.write_text("\n".join(lines + [text.rstrip("\n")]) + "\n")
    if program is None:
        np.savez(directory / f"{name}.npz",
                 **{f"p{i}": _bits(x) for i, x in enumerate(mismatch.inputs)})
    else:
        np.savez(directory / f"{name}.npz", **{f"a{i}": a for i, a in enumerate(program.args)})
    return path


def _header(text):
    header = {}
    for line in text.splitlines():
        if line.startswith("# ") and ":" in line:
            key, _, value = line[2:].partition(":")
            header[key.strip()] = value.strip()
    return header


def load_header(path):
    """The `# key: value` lines at the top of a regression file."""
    return _header(pathlib.Path(path).read_text())


def load_numpy(path):
    """(source, args, header) from a .py regression and the .npz beside it."""
    path = pathlib.Path(path)
    text = path.read_text()
    with np.load(path.with_suffix(".npz")) as stored:
        args = [stored[f"a{i}"] for i in range(len(stored.files))]
    return text, args, _header(text)


def load(path):
    """(module, inputs, header) from a .hlo file and the .npz beside it."""
    path = pathlib.Path(path)
    text = path.read_text()
    header = _header(text)
    module = parse_module(text)
    with np.load(path.with_suffix(".npz")) as stored:
        inputs = [stored[f"p{i}"].view(p.dtype).reshape(p.shape)
                  for i, p in enumerate(module.params)]
    return module, inputs, header


def known_bugs(directory=DIRECTORY):
    """{failure signature: regression name} of the expected failures kept here: bugs
    found and reported, not yet fixed. A fuzz run counts these apart instead of failing,
    so one open bug does not hide everything else it would find."""
    known = {}
    for path in all_files(directory, "hlo") + all_files(directory, "py"):
        header = _header(path.read_text())
        if "xfail" in header and "signature" in header:
            known[header["signature"]] = path.stem
    return known


def all_files(directory=DIRECTORY, suffix="hlo"):
    return sorted(pathlib.Path(directory).glob(f"*.{suffix}"))


def _bits(x):
    x = np.ascontiguousarray(x)
    return x.view(f"u{x.dtype.itemsize}") if x.dtype != np.bool_ else x
