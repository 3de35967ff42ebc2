"""The long fuzz run: `python -m tests.fuzz --minutes N [--backends ...] [--generators ...]`.

Runs every generator in turn, a batch of programs at a time with a fresh seed, until the
time is up. Each distinct failure (by variant and kind) is shrunk, printed as IR text and
saved under tests/fuzz/regressions/ (or --save-dir). Prints how many programs each
generator tried, what was skipped and why, and what was found.
"""
import argparse
import collections
import faulthandler
import pathlib
import sys
import time

# Run as `python -m tests.fuzz` from the repository root, tests/ is not on the path yet:
# the shared strategies (tests/ir_strategies.py) import as top-level modules.
_TESTS = str(pathlib.Path(__file__).resolve().parents[1])
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)

from . import regressions  # noqa: E402
from .driver import fuzz  # noqa: E402
from .generators import GENERATORS  # noqa: E402
from .oracle import default_variants, describe  # noqa: E402

BATCH = 50


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__.split(
        "\n")[0])
    parser.add_argument("--minutes", type=float, default=5.0)
    parser.add_argument("--backends", nargs="+", default=None,
                        choices=("optimized", "jax", "cpu", "gpu"),
                        help="variants to compare with the interpreter: optimized, jax, "
                             f"cpu, gpu (default here: {' '.join(default_variants())})")
    parser.add_argument("--generators", nargs="+", default=list(GENERATORS),
                        choices=list(GENERATORS))
    parser.add_argument("--seed", type=int, default=int(time.time()))
    parser.add_argument("--save-dir", default=str(regressions.DIRECTORY))
    args = parser.parse_args(argv)

    # A native crash (in LLVM, XLA) kills the process with no exception to shrink: the
    # traceback goes to stderr and the program being checked is in last_case.txt.
    faulthandler.enable()
    last_case = pathlib.Path(args.save_dir) / "last_case.txt"
    last_case.parent.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + args.minutes * 60
    tried = collections.Counter()
    skipped = collections.defaultdict(collections.Counter)
    found = {}   # signature -> (generator, saved path)
    seed = args.seed
    print(f"fuzzing {', '.join(args.generators)} for {args.minutes:g} min against "
          f"{', '.join(args.backends or default_variants())}; seed {seed}", flush=True)
    while time.monotonic() < deadline:
        for name in args.generators:
            if time.monotonic() >= deadline:
                break
            outcome = fuzz(GENERATORS[name], BATCH, seed=seed, variants=args.backends,
                           before_each=lambda case, name=name: _record(last_case, name, case))
            seed += 1
            tried[name] += outcome.tried
            skipped[name].update(outcome.skipped)
            # a line a batch: the counts so far survive a run that is killed
            print(f"  {name}: {outcome.tried} programs (seed {seed - 1}); "
                  f"{sum(tried.values())} in all", flush=True)
            for failure in outcome.failures:
                if failure.signature in found:
                    continue
                path = regressions.save(failure, name, args.save_dir)
                found[failure.signature] = (name, path)
                print(f"\nFOUND by {name} (seed {seed - 1}), saved as {path}:\n{failure}\n",
                      flush=True)
    _report(tried, skipped, found)
    sys.stdout.flush()
    return 1 if found else 0


def _record(path, generator, case):
    # (module, inputs) from an IR generator, else a NumpyProgram
    text = describe(*case) if isinstance(case, tuple) else str(case)
    path.write_text(f"# generator {generator}\n{text}\n")


def _report(tried, skipped, found):
    print(f"\nprograms tried: {sum(tried.values())}")
    for name, n in tried.items():
        print(f"  {name:10s} {n:7d}")
        for why, count in skipped[name].most_common():
            print(f"      skipped {count}x: {why}")
    print(f"distinct failures: {len(found)}")
    for signature, (name, path) in found.items():
        print(f"  [{name}] {signature}\n      {path}")


if __name__ == "__main__":
    sys.exit(main())
