"""How much of NumPy jitlib traces: ufuncs, functions per namespace, and a survey of
which NumPy functions real code calls.

    python tools/numpy_coverage.py                      # print the figures
    python tools/numpy_coverage.py --survey SRC... --write
        # count np.NAME( call sites in SRC (wheels, sdists or directories of .py files)
        # into tools/numpy_survey.json, which docs/numpy_support.md is generated from

Supported means traced inside jit: a ufunc with a builder (or a generalized ufunc with
its function), a function in the tracer's registry that is not refused on purpose, or a
creation function jit sees when user code calls it as np.NAME(...).
"""
import argparse
import collections
import inspect
import io
import json
import pathlib
import re
import sys
import tarfile
import zipfile

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
SURVEY = ROOT / "tools" / "numpy_survey.json"
NAMESPACES = (("numpy", np), ("numpy.linalg", np.linalg), ("numpy.fft", np.fft))
# np.NAME( / numpy.linalg.NAME( / np.fft.NAME( at a call site
_CALL = re.compile(r"\b(?:np|numpy)\.(?:(linalg|fft)\.)?([A-Za-z_]\w*)\s*\(")


def _tables():
    sys.path.insert(0, str(ROOT))
    from jitlib.trace import numpy_hooks, registry, ufuncs
    from jitlib.trace.functions.unsupported import UNSUPPORTED
    return registry, ufuncs, UNSUPPORTED, set(numpy_hooks.NAMES)


def numpy_ufuncs():
    return sorted({obj for obj in vars(np).values() if isinstance(obj, np.ufunc)},
                  key=lambda u: u.__name__)


def is_supported(obj, name):
    registry, ufuncs, refused, hooked = _tables()
    if isinstance(obj, np.ufunc):
        return obj in ufuncs.BUILDERS or (obj.signature is not None
                                          and obj.__name__ in registry.BY_NAME)
    impl = registry.FUNCTIONS.get(obj)
    if impl is not None:
        return impl.__name__ not in refused
    return name in hooked


def namespace_functions(module):
    """The public functions of a NumPy namespace (not ufuncs, types, modules or
    constants), each object once under its first name."""
    seen, out = set(), {}
    for name in sorted(dir(module)):
        obj = getattr(module, name, None)
        if name.startswith("_") or isinstance(obj, (type, np.ufunc)) or not callable(obj):
            continue
        if inspect.ismodule(obj) or id(obj) in seen:
            continue
        seen.add(id(obj))
        out[name] = obj
    return out


def _dispatches(fn):
    return hasattr(fn, "_implementation")


def figures():
    """{label: (supported, total, [missing names])} for the ufuncs and each namespace."""
    ufs = numpy_ufuncs()
    rows = {"ufuncs": [(u.__name__, is_supported(u, u.__name__)) for u in ufs]}
    for label, module in NAMESPACES:
        functions = namespace_functions(module)
        rows[f"{label} functions"] = [(n, is_supported(f, n)) for n, f in functions.items()]
        # those NumPy dispatches to array libraries (__array_function__): the array API,
        # without utilities such as np.load, np.set_printoptions or np.get_include
        rows[f"{label} array functions"] = [(n, is_supported(f, n)) for n, f in
                                            functions.items() if _dispatches(f)]
    return {label: (sum(ok for _, ok in r), len(r), [n for n, ok in r if not ok])
            for label, r in rows.items()}


# -- the survey

def _python_sources(path):
    """(name, text) of every .py file in a wheel, an sdist or a directory, tests left out
    (they call np.testing and build fixtures: not the code people jit)."""
    path = pathlib.Path(path)
    if path.is_dir():
        files = ((str(p), p.read_bytes) for p in path.rglob("*.py"))
    elif path.suffix in (".whl", ".zip"):
        archive = zipfile.ZipFile(path)
        files = ((n, lambda n=n: archive.read(n)) for n in archive.namelist()
                 if n.endswith(".py"))
    else:
        archive = tarfile.open(path)
        files = ((m.name, lambda m=m: archive.extractfile(m).read())
                 for m in archive.getmembers() if m.name.endswith(".py") and m.isfile())
    for name, read in files:
        if re.search(r"(^|/)(tests?|testing|benchmarks?)/|(^|/)test_[^/]*$|conftest", name):
            continue
        yield name, io.TextIOWrapper(io.BytesIO(read()), errors="replace").read()


def count_calls(paths):
    """Call sites of each NumPy function (by its qualified name) in `paths`."""
    known = {label: namespace_functions(module) for label, module in NAMESPACES}
    ufuncs = {u.__name__ for u in numpy_ufuncs()}
    counts = collections.Counter()
    for path in paths:
        for _, text in _python_sources(path):
            for sub, name in _CALL.findall(text):
                label = f"numpy.{sub}" if sub else "numpy"
                if name in known[label] or (label == "numpy" and name in ufuncs):
                    counts[f"{label}.{name}"[len("numpy."):]] += 1
    return counts


def _label(path):
    """scikit_learn-1.6.1-cp311-...whl -> scikit_learn 1.6.1; an installed package's
    directory -> its name and installed version."""
    path = pathlib.Path(path)
    if path.is_dir():
        from importlib import metadata
        try:
            return f"{path.name} {metadata.version(path.name)}"
        except metadata.PackageNotFoundError:
            return path.name
    return " ".join(path.name.split("-")[:2])


def _resolve(qualified):
    module, _, name = ("." + qualified).rpartition(".")
    namespace = dict((label, m) for label, m in NAMESPACES)["numpy" + module]
    return getattr(namespace, name), name


def survey_share(survey):
    """(supported call sites, all call sites, supported names, all names, missing names
    in order of calls)."""
    calls = sorted(survey["counts"].items(), key=lambda kv: (-kv[1], kv[0]))
    ok = {q: is_supported(*_resolve(q)) for q, _ in calls}
    sites = sum(n for _, n in calls)
    return (sum(n for q, n in calls if ok[q]), sites, sum(ok.values()), len(calls),
            [q for q, _ in calls if not ok[q]])


def load_survey():
    return json.loads(SURVEY.read_text()) if SURVEY.exists() else None


def report():
    lines = []
    for label, (ok, total, _) in figures().items():
        lines.append(f"{label}: {ok}/{total} supported ({100 * ok / total:.0f}%)")
    survey = load_survey()
    if survey:
        ok_sites, sites, ok_names, names, missing = survey_share(survey)
        lines.append(f"survey ({survey['survey']}): {ok_sites}/{sites} call sites "
                     f"({100 * ok_sites / sites:.1f}%), {ok_names}/{names} distinct "
                     "functions supported")
        lines.append("most called of the missing: " + ", ".join(missing[:15]))
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--survey", nargs="+", metavar="SRC",
                        help="wheels, sdists or directories of NumPy-using code to count")
    parser.add_argument("--write", action="store_true", help=f"write {SURVEY.name}")
    args = parser.parse_args(argv)
    if args.survey:
        counts = count_calls(args.survey)
        survey = {
            "survey": ", ".join(_label(p) for p in args.survey) + ": np.NAME( call sites "
                      "outside tests, counted with numpy " + np.__version__,
            "regenerate": "python tools/numpy_coverage.py --survey SRC... --write (the "
                          "wheels from pip download --no-deps --only-binary :all: NAME==VER)",
            "counts": dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))),
        }
        if args.write:
            SURVEY.write_text(json.dumps(survey, indent=1) + "\n")
            print(f"wrote {SURVEY.relative_to(ROOT)}")
    print(report())
    return 0


if __name__ == "__main__":
    sys.exit(main())
