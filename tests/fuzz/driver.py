"""Run one generator under hypothesis against the oracle; shrink and keep what fails.

`fuzz(generator, examples, seed)` draws up to `examples` programs, checks each with
`oracle.check_program`, and on the first failure lets hypothesis shrink it; the smallest
failing program (hypothesis runs it last), cut further by `reduce.minimize`, is returned
in the `Outcome`. Both the bounded
CI test and the long run (`python -m tests.fuzz`) call this.
"""
import dataclasses
import collections

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed

from . import oracle, reduce


@dataclasses.dataclass
class Outcome:
    generator: str
    tried: int = 0                     # programs drawn and checked, shrinking excluded
    failure: oracle.Mismatch = None    # the shrunk failure, if any
    skipped: collections.Counter = dataclasses.field(default_factory=collections.Counter)


def fuzz(generator, examples, seed=0, variants=None, shrink=True):
    """Fuzz `generator` (a `generators.Generator`) for up to `examples` programs."""
    outcome = Outcome(generator.name)
    failures = []
    phases = [Phase.generate] + ([Phase.shrink] if shrink else [])

    @settings(max_examples=examples, deadline=None, database=None, phases=phases,
              suppress_health_check=list(HealthCheck), derandomize=False)
    @given(generator.strategy)
    def check(case):
        if not failures:
            outcome.tried += 1
        try:
            verdict = generator.check(case, variants)
        except oracle.Mismatch as mismatch:
            failures.append(mismatch)
            raise
        if not failures:
            outcome.skipped.update(verdict.skipped.values())

    try:
        hypothesis_seed(seed)(check)()
    except oracle.Mismatch:
        last = failures[-1]
        outcome.failure = reduce.minimize(last, variants) if shrink else last
    return outcome
