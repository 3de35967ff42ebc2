"""Golden cases of the fusion pass (tests/golden/fuse_*.hlo): kernels as the IR prints them,
and the same bits from the interpreter before and after fusing."""
import pytest

import golden
from jitlib.fusion import pipeline

CASES = golden.collect("fuse_*.hlo")


@pytest.fixture
def fuse_runnable(monkeypatch):
    # the pipeline names "fuse" as its last pass but BY_NAME lists only the rewrite passes
    monkeypatch.setitem(golden.BY_NAME, "fuse", pipeline.FUSE)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_golden(case, fuse_runnable):
    golden.check_case(case)


def test_the_fusion_goldens_are_found():
    assert len(CASES) >= 4
