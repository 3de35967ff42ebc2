"""Saved bucketed calls (buckets/saved.py): a later process runs the saved program after
one trace, and only for a call whose own trace is the one saved. Each "process" here is
a new `jit` of the same function (its own in-memory cache) over the same disk cache."""
import functools
import os
import subprocess
import sys

import numpy as np
import pytest

import jitlib
from jitlib.buckets import BucketRefusedError
from jitlib.buckets import saved as bucket_saved
from jitlib.cache import disk

RULE = {"arg": "x", "axis": 0, "policy": "pow2", "max": 64}


def _x(n):
    return np.random.default_rng(n).standard_normal((n, 3))


def _counting(fn):
    """(fn, lengths it was traced at)."""
    seen = []

    @functools.wraps(fn)
    def traced(x):
        seen.append(x.shape[0])
        return fn(x)
    return traced, seen


def _mean_softmax(x):
    e = np.exp(x - x.max(axis=0))
    return e / e.sum(axis=0) + x.mean(axis=0)


def _saved_entries():
    return [m for _, m in disk.object_store().entries() if m["kind"] == bucket_saved.KIND]


def test_a_new_process_runs_the_saved_call_after_one_trace():
    fn, seen = _counting(_mean_softmax)
    first = jitlib.jit(fn, backend="cpu", buckets=RULE)
    np.testing.assert_allclose(first(_x(20)), _mean_softmax(_x(20)), rtol=1e-12)
    assert sorted(seen) == [17, 20, 31, 32]   # its own length, the bucket, two probes
    assert len(_saved_entries()) == 1

    seen.clear()
    later = jitlib.jit(fn, backend="cpu", buckets=RULE)
    np.testing.assert_allclose(later(_x(20)), _mean_softmax(_x(20)), rtol=1e-12)
    assert seen == [20]                         # no bucket trace, no probes
    # another length of the bucket was never saved: proven here, then as in a cold process
    np.testing.assert_allclose(later(_x(25)), _mean_softmax(_x(25)), rtol=1e-12)
    assert sorted(seen) == [17, 20, 25, 31, 32]
    np.testing.assert_allclose(later(_x(30)), _mean_softmax(_x(30)), rtol=1e-12)
    assert len(seen) == 5
    assert later.cache_info().misses == 1


def _defined(body):
    """`f` defined by `body` as if in file model.py: the traces of two versions are
    equal where they do the same thing (their locations included)."""
    namespace = {"np": np}
    exec(compile(f"def f(x):\n    return {body}\n", "model.py", "exec"), namespace)
    return namespace["f"]


def test_the_saved_call_is_found_by_its_trace_not_by_the_function():
    """A function edited between processes: where its trace at the saved length is the
    same, the saved program is right for it; where a length traces differently, the
    proof runs again, checks that length and refuses it."""
    jitlib.jit(_counting(_defined("x.sum(axis=0)"))[0], backend="cpu", buckets=RULE)(_x(20))
    edited = _defined("x.max(axis=0) if x.shape[0] == 22 else x.sum(axis=0)")
    fn, seen = _counting(edited)
    later = jitlib.jit(fn, backend="cpu", buckets=RULE)
    np.testing.assert_allclose(later(_x(20)), _x(20).sum(axis=0), rtol=1e-12)
    assert seen == [20]
    with pytest.raises(BucketRefusedError, match="structure changes"):
        later(_x(22))


def test_a_changed_trace_misses_and_is_proven():
    jitlib.jit(_counting(_defined("x.sum(axis=0) * 2.0"))[0], backend="cpu",
               buckets=RULE)(_x(20))
    fn, seen = _counting(_defined("x.sum(axis=0) * 3.0"))
    later = jitlib.jit(fn, backend="cpu", buckets=RULE)
    np.testing.assert_allclose(later(_x(20)), _x(20).sum(axis=0) * 3.0, rtol=1e-12)
    assert sorted(seen) == [17, 20, 31, 32]


def test_an_unreadable_entry_is_discarded_and_proven_again():
    def mean(x):
        return x.mean(axis=0)
    jitlib.jit(mean, backend="cpu", buckets=RULE)(_x(20))
    store = disk.object_store()
    (path,) = [p for p, m in store.entries() if m["kind"] == bucket_saved.KIND]
    key = path.rsplit("/", 1)[1][:-len(".obj")]
    store.store(key, b'{"program": 1}', kind=bucket_saved.KIND)   # no out_axes
    later = jitlib.jit(mean, backend="cpu", buckets=RULE)
    np.testing.assert_allclose(later(_x(20)), _x(20).mean(axis=0), rtol=1e-12)
    assert store.discarded == 1 and len(_saved_entries()) == 1


def test_a_warm_call_reads_one_entry():
    # the bucket entry holds a copy of its program's entry: one read, no second lookup
    jitlib.jit(_mean_softmax, backend="cpu", buckets=RULE)(_x(20))
    store = disk.object_store()
    hits = store.hits
    later = jitlib.jit(_mean_softmax, backend="cpu", buckets=RULE)
    np.testing.assert_allclose(later(_x(20)), _mean_softmax(_x(20)), rtol=1e-12)
    assert store.hits == hits + 1


def test_an_entry_made_for_another_target_or_code_generator_is_not_used(monkeypatch):
    """Regression: the bucket entry named its program by the key that program was saved
    under, and was keyed without the target or the code generator's sources. A cache
    shared by two machines (a network home) ran code compiled for the other CPU, and a
    dev checkout with an edited code generator ran what the old one compiled."""
    from jitlib.backends.llvm import compiler
    fn, seen = _counting(_mean_softmax)
    jitlib.jit(fn, backend="cpu", buckets=RULE)(_x(20))
    c = compiler.get_compiler()
    target = c.target()
    monkeypatch.setattr(type(c), "target", lambda self: target[:2] + ("+other",)
                        + target[3:])
    seen.clear()
    later = jitlib.jit(fn, backend="cpu", buckets=RULE)
    np.testing.assert_allclose(later(_x(20)), _mean_softmax(_x(20)), rtol=1e-12)
    assert sorted(seen) == [17, 20, 31, 32]   # proven and compiled again, not loaded
    assert len(_saved_entries()) == 2


def test_the_first_call_of_a_bucket_is_checked_at_its_own_length():
    """The proof samples the bucket; the call that compiles it is traced as well, so a
    branch on exactly its length is refused before a wrong answer is saved or given."""
    def f(x):
        return x.max(axis=0) if x.shape[0] == 6 else x.sum(axis=0)
    jitted = jitlib.jit(f, backend="interpreter", buckets={"arg": "x", "axis": 0,
                                                            "sizes": [8]})
    with pytest.raises(BucketRefusedError, match="structure changes"):
        jitted(_x(6))


def test_backends_that_save_nothing_leave_no_entry():
    jitlib.jit(lambda x: x.sum(axis=0), backend="interpreter", buckets=RULE)(_x(20))
    assert _saved_entries() == []


WARM_PROCESS = """
import numpy as np, jitlib
seen = []
def f(x):
    seen.append(x.shape[0])
    return np.maximum(x @ np.full((3, 4), 0.5) + 1.0, 0.0).sum(axis=1)
g = jitlib.jit(f, backend="cpu", buckets={"arg": "x", "axis": 0, "policy": "pow2"})
x = np.arange(60.0).reshape(20, 3) / 7
np.testing.assert_allclose(g(x), f(x), rtol=1e-12)
print(len(seen))
"""


def test_across_processes(tmp_path):
    env = dict(os.environ, JITLIB_CACHE_DIR=str(tmp_path / "cache"))
    runs = [subprocess.run([sys.executable, "-c", WARM_PROCESS], env=env, text=True,
                           capture_output=True, timeout=300) for _ in range(2)]
    assert all(r.returncode == 0 for r in runs), runs[-1].stderr
    # eager call + 4 traces, then eager call + 1 trace
    assert [int(r.stdout) for r in runs] == [5, 2]


SERVICE = '''
import numpy as np, jitlib
seen = []

@jitlib.jit(backend="cpu")
def forward(x, w):
    seen.append(x.shape[0])
    return np.maximum(x @ w, 0.0).sum(axis=1)
'''
CONFIG = '''
[[bucket]]
function = "model.forward"
arg = "x"
axis = 0
policy = "pow2"
max = 64
'''
CALLS = """
import sys, numpy as np, model
for n in map(int, sys.argv[1:]):
    x = np.linspace(-1.0, 1.0, 4 * n).reshape(n, 4)
    w = np.linspace(0.5, -0.5, 12).reshape(4, 3)
    np.testing.assert_allclose(model.forward(x, w), np.maximum(x @ w, 0.0).sum(axis=1),
                               rtol=1e-12)
print(len(model.seen))
"""


def test_warm_saves_every_recorded_length(tmp_path):
    """A service records its shapes; `buckets warm` compiles each bucket and saves each
    recorded length; the restarted service's first call at any of them traces once."""
    (tmp_path / "model.py").write_text(SERVICE)
    (tmp_path / "buckets.toml").write_text(CONFIG)
    env = dict(os.environ, JITLIB_CACHE_DIR=str(tmp_path / "cache"),
               JITLIB_BUCKETS=str(tmp_path / "buckets.toml"),
               # model.py, then the jitlib under test (not whichever the venv installed)
               PYTHONPATH=os.pathsep.join([str(tmp_path),
                                           os.path.dirname(os.path.dirname(jitlib.__file__))]),
               JITLIB_RECORD_SHAPES="1")

    def run(*argv):
        out = subprocess.run([sys.executable, *argv], env=env, cwd=tmp_path, text=True,
                             capture_output=True, timeout=300)
        assert out.returncode == 0, out.stderr
        return out.stdout

    run("-c", CALLS, "20", "9", "23", "27")      # the service, recording its shapes
    # its first calls of buckets 32 and 16 were saved, but not 23 or 27 (in bucket 32)
    assert run("-c", CALLS, "27").strip() == "4"   # its length, the bucket, two probes
    warmed = run("-m", "jitlib", "buckets", "warm", "buckets.toml")
    assert '"bucket_calls": 7' in warmed          # pow2 buckets 1, 2, 4, ..., 64
    for n in ("9", "20", "23"):                    # each a new process: one trace
        assert run("-c", CALLS, n).strip() == "1"
