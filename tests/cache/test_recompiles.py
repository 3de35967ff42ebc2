"""Cache misses explained, the recompile budget, the bounded cache and the planner."""
import logging

import numpy as np
import pytest

import jitlib
from jitlib.cache import RecompileBudgetError, RecompileWarning, planner


def scale(x, n):
    return x * n


def test_miss_explanation_names_argument_axis_and_static(caplog, monkeypatch):
    monkeypatch.setenv("JITLIB_LOG", "recompiles")
    f = jitlib.jit(scale, static_argnums=1, backend="interpreter")
    with caplog.at_level(logging.INFO, logger="jitlib"):
        f(np.ones((4, 3)), 2)
        f(np.ones((5, 3)), 2)
        f(np.ones((5, 3), np.float32), 2)
        f(np.ones((5, 3), np.float32), 3)
    lines = f.recompiles()
    assert lines[0] == "scale: first call: nothing cached yet"
    assert lines[1] == "scale: argument 'x': shape (4, 3) -> (5, 3) (axis 0: 4 -> 5)"
    assert lines[2] == "scale: argument 'x': dtype float64 -> float32"
    assert lines[3] == "scale: static argument 'n': 2 -> 3"
    assert "argument 'x': shape (4, 3) -> (5, 3)" in caplog.text


def test_budget_error_lists_each_compile_and_the_fix():
    f = jitlib.jit(scale, static_argnums=1, backend="interpreter", max_compiles=2)
    f(np.ones((4, 3)), 2)
    f(np.ones((5, 3)), 2)
    f(np.ones((5, 3)), 2)      # a hit costs nothing
    with pytest.raises(RecompileBudgetError) as info:
        f(np.ones((6, 3)), 2)
    text = str(info.value)
    assert "needs compile 3, past max_compiles=2" in text
    assert "2. scale: argument 'x': shape (4, 3) -> (5, 3)" in text
    assert "3. scale: argument 'x': shape (5, 3) -> (6, 3)" in text or \
        "3. scale: argument 'x': shape (4, 3) -> (6, 3)" in text
    assert "buckets={'arg': 'x', 'axis': 0, 'policy': 'pow2'}" in text
    assert "test_recompiles.py" in text            # the user's line
    with pytest.raises(RecompileBudgetError, match="static argument 'n'"):
        f(np.ones((5, 3)), 7)


def test_budget_warn_still_compiles():
    f = jitlib.jit(scale, static_argnums=1, backend="interpreter", max_compiles=1,
                   on_exceed="warn")
    f(np.ones(2), 2)
    with pytest.warns(RecompileWarning, match="stop varying static argument 'n'"):
        np.testing.assert_array_equal(f(np.ones(2), 3), [3.0, 3.0])


def test_buckets_keep_a_shifting_batch_within_budget():
    f = jitlib.jit(lambda x: x.sum(axis=0), backend="interpreter", max_compiles=4,
                   buckets={"arg": "x", "axis": 0, "policy": "pow2", "max": 16})
    for n in range(2, 17):
        np.testing.assert_allclose(f(np.ones((n, 2))), [n, n])
    assert f.cache_info().misses == 4


def test_cache_is_bounded_and_counts_evictions():
    f = jitlib.jit(lambda x: x + 1, backend="interpreter", cache_size=2)
    for n in (1, 2, 3, 1):
        np.testing.assert_array_equal(f(np.zeros(n)), np.ones(n))
    assert len(f._cache) == 2 and f._cache.stats().evictions == 2
    assert f.cache_info().misses == 4


def test_bad_budget_arguments():
    with pytest.raises(jitlib.JitlibTypeError):
        jitlib.jit(scale, max_compiles=0)
    with pytest.raises(jitlib.JitlibTypeError):
        jitlib.jit(scale, on_exceed="ignore")


def test_planner_balances_compiles_and_waste():
    counts = {n: 1 for n in range(1, 101)}
    p = planner.plan(counts, max_waste=0.1)
    assert p.sizes[-1] == 100 and p.waste <= 0.1
    fewer = planner.plan(counts, max_waste=0.3)
    assert fewer.compiles < p.compiles and fewer.waste <= 0.3
    assert planner.plan({8: 5}, 0.0) == planner.Plan((8,), 0.0, 1)
    exact = planner.plan({3: 1, 7: 1}, 0.0)
    assert exact.sizes == (3, 7) and exact.waste == 0.0


def test_planner_reads_recorded_shapes_and_writes_loadable_toml(tmp_path, monkeypatch):
    from jitlib.buckets import load
    from jitlib.cache import shapes
    f = jitlib.jit(lambda x, w: x @ w, backend="interpreter")
    monkeypatch.setattr(shapes, "_seen", {})   # this function's shapes, whatever ran before
    monkeypatch.setenv("JITLIB_RECORD_SHAPES", "1")
    for n in (3, 5, 9, 17, 30):
        f(np.ones((n, 2)), np.ones((2, 2)))
    shapes.flush(str(tmp_path))
    text = planner.suggest_toml(shapes.load_all(str(tmp_path)), max_waste=0.3)
    assert "'x' axis 0: 5 sizes seen" in text and "'w'" not in text
    path = tmp_path / "suggested.toml"
    path.write_text(text)
    rules = load(path)   # other tests' functions may be recorded too
    assert any(r.arg == "x" and r.sizes[-1] == 30 for r in rules), text


def test_the_compile_history_is_bounded_and_still_numbers_every_compile(monkeypatch):
    from jitlib.cache import budget
    monkeypatch.setattr(budget, "HISTORY", 4)
    f = jitlib.jit(lambda x: x * 2.0, backend="interpreter", max_compiles=9)
    for n in range(1, 10):
        f(np.ones(n))
    assert len(f.recompiles()) == 4
    with pytest.raises(budget.RecompileBudgetError) as info:
        f(np.ones(10))
    text = str(info.value)
    assert "needs compile 10, past max_compiles=9" in text
    assert "(6 earlier compiles not kept)" in text and "  7. " in text and "  10. " in text
    assert "  6. " not in text and "bucket" in info.value.hint


def test_recorded_shapes_are_bounded_per_function(monkeypatch):
    from jitlib.cache import shapes
    monkeypatch.setattr(shapes, "_seen", {})
    monkeypatch.setattr(shapes, "MAX_SIGNATURES", 3)
    monkeypatch.setenv("JITLIB_RECORD_SHAPES", "1")

    def fn(x):
        return x
    for n in (1, 2, 3, 4, 5, 2):
        shapes.record(fn, ["x"], [((n,), "float32")])
    seen = shapes.seen(fn)
    assert len(seen) == 3 and seen[(("x", (2,), "float32"),)] == 2


def test_shapes_are_recorded_only_when_asked(monkeypatch, tmp_path):
    from jitlib.cache import shapes
    monkeypatch.setattr(shapes, "_seen", {})
    monkeypatch.delenv("JITLIB_RECORD_SHAPES", raising=False)
    f = jitlib.jit(lambda x: x - 1.0, backend="interpreter")
    f(np.ones(3))
    shapes.flush(str(tmp_path))
    assert shapes.seen(f.fn) == {} and shapes.load_all(str(tmp_path)) == []
    monkeypatch.setenv("JITLIB_RECORD_SHAPES", "1")
    f(np.ones(4))
    assert list(shapes.seen(f.fn)) == [(("x", (4,), "float64"),)]
