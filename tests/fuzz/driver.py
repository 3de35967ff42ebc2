"""Run one generator under hypothesis against the oracle; shrink and keep what fails.

`fuzz(generator, examples, seed)` draws up to `examples` programs, checks each with
`oracle.check_program`, and on the first failure lets hypothesis shrink it; the smallest
failing program (several, when hypothesis tells distinct failures apart), cut further by
`reduce.minimize`, is returned in the `Outcome`. Both the bounded
CI test and the long run (`python -m tests.fuzz`) call this.
"""
import dataclasses
import collections

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed

from . import oracle, reduce, regressions


@dataclasses.dataclass
class Outcome:
    generator: str
    tried: int = 0         # programs drawn and checked, shrinking excluded
    failures: list = dataclasses.field(default_factory=list)   # shrunk, one per kind
    skipped: collections.Counter = dataclasses.field(default_factory=collections.Counter)

    @property
    def failure(self):
        return self.failures[0] if self.failures else None


def fuzz(generator, examples, seed=0, variants=None, shrink=True, known=None,
         before_each=None):
    """Fuzz `generator` (a `generators.Generator`) for up to `examples` programs.

    A failure whose signature is in `known` ({signature: name}; default: the expected
    failures saved in regressions/) is counted among the skips as that known bug.
    `before_each(case)` runs before each program is checked (the long run records the
    case: a segfault leaves no exception to shrink).
    """
    known = regressions.known_bugs() if known is None else known
    outcome = Outcome(generator.name)
    failed = []
    phases = [Phase.generate] + ([Phase.shrink] if shrink else [])

    @settings(max_examples=examples, deadline=None, database=None, phases=phases,
              suppress_health_check=list(HealthCheck), derandomize=False)
    @given(generator.strategy)
    def check(case):
        if not failed:
            outcome.tried += 1
        if before_each is not None:
            before_each(case)
        try:
            verdict = generator.check(case, variants)
        except oracle.Mismatch as mismatch:
            if mismatch.signature in known:
                if not failed:
                    outcome.skipped[f"known bug {known[mismatch.signature]}"] += 1
                return
            failed.append(mismatch)
            raise
        if not failed:
            outcome.skipped.update(verdict.skipped.values())

    try:
        hypothesis_seed(seed)(check)()
    except oracle.Mismatch as mismatch:
        found = [mismatch]
    except BaseExceptionGroup as group:   # hypothesis shrank distinct failures apart
        found = [e for e in group.exceptions if isinstance(e, oracle.Mismatch)]
        if len(found) != len(group.exceptions):
            raise
    else:
        return outcome
    outcome.failures = [reduce.minimize(m, variants) if shrink else m for m in found]
    return outcome
