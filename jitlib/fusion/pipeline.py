"""The optimizer's passes, in order, and the runner that checks and logs each one.

A pass is a named, pure function `(Module, Options) -> Module`. `PASSES` is the
simplification pipeline; `optimize` runs it and then fusion. The order, and why:

  1. fixed_point(simplify, constant_fold, control)
     - within simplify, each op's rules run in table order, canonicalisation first
       (constants to the right), so the rules after it look for constants there only.
     - simplify before constant_fold: simplify collapses broadcast chains and turns
       reductions of broadcasts into elementwise ops on the operand, so the folder sees
       broadcasts of scalars and folds them as scalars instead of materialising arrays.
     - constant_fold before simplify again (hence the fixed point): folded constants
       (a 1 from 2*0.5, a true predicate) are what simplify's identities match.
     - control, last in the round: loops of 0 or 1 known trips and branches on an index
       the folder made constant become straight-line code the next round simplifies
       (fusion/regions.py).
  2. cse: after every rewrite, so duplicates the rewrites made are merged (interning
     already did it; see `rewrite.cse`) before anything counts uses.
  3. dce: last, since each rewrite strands the instructions it replaced.
  (optimize) regions: each loop's and conditional's regions optimized as modules of
     their own, down to kernels, before the top level fuses around them.
  (optimize) fuse: after all of the above. Fusion groups what is left into kernels;
     the rules do not look inside kernels, and dead or duplicate ops would become
     kernel work.

Debugging (`JITLIB_LOG=passes`, logger "jitlib.passes"): logs the module before and
after `optimize` and each pass's diff, and verifies the module after every pass.
"""
import dataclasses
import difflib
from typing import Callable

from jitlib import logs
from jitlib.errors import VerifierError
from jitlib.fusion import rewrite
from jitlib.fusion.fuse import fuse
from jitlib.fusion.in_place import mark_in_place
from jitlib.fusion.options import Options
from jitlib.fusion.regions import optimize_regions, simplify_control
from jitlib.fusion.simplify import ALGEBRAIC, FOLD
from jitlib.hlo.printer import print_module
from jitlib.hlo.verifier import verify


@dataclasses.dataclass(frozen=True)
class Pass:
    """A named `fn(module, options) -> module`."""

    name: str
    fn: Callable

    def __call__(self, module, options=None):
        return self.fn(module, options if options is not None else Options())


@dataclasses.dataclass(frozen=True)
class FixedPoint:
    """`passes` in order, repeated until a round changes nothing or `max_iters` rounds ran
    (None: `Options.max_iters`)."""

    name: str
    passes: tuple
    max_iters: int | None = None

    def __call__(self, module, options=None):
        return run_pipeline(module, (self,), options)


def fixed_point(passes, max_iters=None, name=None):
    """Repeat a pass (or a sequence of passes) until the module stops changing."""
    passes = (passes,) if isinstance(passes, (Pass, FixedPoint)) else tuple(passes)
    return FixedPoint(name or "+".join(p.name for p in passes), passes, max_iters)


def _rule_pass(name, rules):
    return Pass(name, lambda module, options: rewrite.rewrite_module(module, rules, options))


SIMPLIFY = _rule_pass("simplify", ALGEBRAIC)
CONSTANT_FOLD = _rule_pass("constant_fold", FOLD)
CSE = Pass("cse", rewrite.cse)
DCE = Pass("dce", rewrite.dce)

CONTROL = Pass("control", simplify_control)

PASSES = (
    fixed_point((SIMPLIFY, CONSTANT_FOLD, CONTROL), name="simplify_and_fold"),
    CSE,
    DCE,
)

BY_NAME = {p.name: p for p in (SIMPLIFY, CONSTANT_FOLD, CSE, DCE, *PASSES)}

# after PASSES, in `optimize`: fusion into kernels, then the kernels that may write in place
FUSE = Pass("fuse", fuse)
KERNEL_PASSES = (Pass("regions", optimize_regions), FUSE, Pass("in_place", mark_in_place))


def run_pipeline(module, passes=None, options=None, verify_each=False):
    """Run `passes` (default `PASSES`) in order and return the result.

    With `verify_each`, or with JITLIB_LOG=passes, the verifier runs after every pass
    and a failure names the pass; with JITLIB_LOG=passes each pass's diff is logged.
    """
    passes = PASSES if passes is None else tuple(passes)
    options = options if options is not None else Options()
    debug = logs.enabled("passes")
    for p in passes:
        module = _run(p, module, options, verify_each or debug, debug)
    return module


def _run(p, module, options, check, debug):
    if p.name in options.disabled:   # the check mode's bisection turns passes off
        return module
    if isinstance(p, FixedPoint):
        limit = p.max_iters if p.max_iters is not None else options.max_iters
        for _ in range(limit):
            before = module
            for inner in p.passes:
                module = _run(inner, module, options, check, debug)
            if module.results == before.results:
                break
        return module
    before = module
    module = p.fn(module, options)
    if check:
        try:
            verify(module)
        except VerifierError as e:
            raise VerifierError(f"after pass {p.name!r}: {e.message}",
                                location=e.location) from e
    if debug:
        logs.log("passes", "%s", _diff(p.name, before, module))
    return module


def _diff(name, before, after):
    if after.results == before.results and after.params == before.params:
        return f"pass {name}: no change"
    lines = difflib.unified_diff(print_module(before, short_locs=True).splitlines(),
                                 print_module(after, short_locs=True).splitlines(),
                                 f"before {name}", f"after {name}", lineterm="")
    return "\n".join(lines)


def optimize(module, options=None):
    """The optimized module: `PASSES`, then fusion into kernels (`KERNEL_PASSES`)."""
    options = options if options is not None else Options()
    if logs.enabled("passes"):
        logs.log("passes", "optimize: before\n%s", print_module(module, short_locs=True))
    module = run_pipeline(module, PASSES + KERNEL_PASSES, options)
    if logs.enabled("passes"):
        logs.log("passes", "optimize: after\n%s", print_module(module, short_locs=True))
    return module
