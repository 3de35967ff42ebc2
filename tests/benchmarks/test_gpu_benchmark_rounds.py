"""The GPU benchmark's interleaved rounds (benchmarks/gpu.py), without a GPU: the round
orders, and that the median of rounds survives a GPU whose speed drifts while a single
pass per tool does not."""
import statistics

import pytest

from benchmarks import gpu as G

TOOLS = ["jitlib", "jax", "torch", "torch.compile"]


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
def test_every_round_runs_every_tool_once(n):
    names = TOOLS[:n] + ["extra"] * (n == 5)
    names = [f"{x}{i}" for i, x in enumerate(names)]
    for order in G.round_orders(names, 12):
        assert sorted(order) == sorted(names)


def test_no_tool_is_always_first_last_or_behind_the_same_tool():
    orders = G.round_orders(TOOLS, 8)
    assert {o[0] for o in orders} == set(TOOLS)
    assert {o[-1] for o in orders} == set(TOOLS)
    for name in TOOLS:
        before = {o[o.index(name) - 1] for o in orders if o.index(name) > 0}
        assert len(before) >= 2, (name, orders)


def test_interleaved_keeps_each_tools_rounds_in_order():
    calls = []

    def time_one(name):
        calls.append(name)
        return len(calls)
    out = G.interleaved(TOOLS, 3, time_one)
    assert calls == [n for order in G.round_orders(TOOLS, 3) for n in order]
    assert all(len(v) == 3 for v in out.values())
    for name, figures in out.items():
        assert figures == sorted(figures)     # round r's figure was taken in round r
        assert [calls[f - 1] for f in figures] == [name] * 3


class _DriftingGPU:
    """A GPU that slows by 0.05% with every timing pass (warming up), timing tool "b",
    which is truly 0.5% faster than "a"."""

    def __init__(self):
        self.passes = 0

    def cupti_kernels(self, torch, call, sync, k, hold_ms=0.0, timer=None):
        self.passes += 1
        us = {"a": 62.0, "b": 61.69}[call.tool] * (1 + 0.0005 * self.passes)
        return us, us, 1


class _Tool:
    sync = staticmethod(lambda out: None)


def _call(name):
    c = lambda i: None   # noqa: E731
    c.tool = name
    return c


def _ready(rec_a, rec_b):
    return {"a": (_Tool, _call("a"), rec_a), "b": (_Tool, _call("b"), rec_b)}


def test_median_of_rounds_orders_tools_as_their_true_speed(monkeypatch):
    gpu = _DriftingGPU()
    monkeypatch.setattr(G, "cupti_kernels", gpu.cupti_kernels)
    calls = _ready({}, {})
    # one pass per tool, "b" timed after twenty passes' worth of other work (its first
    # call, wall and event timing, the tools between): the drift hides b's lead
    single = {"a": gpu.cupti_kernels(None, calls["a"][1], None, 30)[0]}
    gpu.passes += 20
    single["b"] = gpu.cupti_kernels(None, calls["b"][1], None, 30)[0]
    assert single["b"] > single["a"]
    rec_a, rec_b = dict(kernel_us=single["a"]), dict(kernel_us=single["b"])
    G.kernel_rounds(None, _ready(rec_a, rec_b), dict(k=30, rounds=15))
    assert rec_b["kernel_us"] < rec_a["kernel_us"]
    assert rec_a["kernel_us_single"] == single["a"]
    assert len(rec_a["kernel_us_rounds"]) == 15
    assert rec_a["kernel_us"] == statistics.median(rec_a["kernel_us_rounds"])


def test_same_stream_tools_are_timed_back_to_back_and_keep_the_queued_figure(monkeypatch):
    """A tool that queues calls slower than its kernels run gets idle gaps before them
    when timed as queued; behind the sleep kernel it does not. jax (its own stream)
    cannot be held and keeps the queued figure."""
    held = []

    def cupti_kernels(torch, call, sync, k, hold_ms=0.0, timer=None):
        held.append((call.tool, hold_ms))
        us = 62.0 if hold_ms else 61.5   # queued: gaps make the kernels look faster
        return us, us, 1
    monkeypatch.setattr(G, "cupti_kernels", cupti_kernels)
    recs = {t: dict(kernel_us=61.5, queue_us=61.0) for t in ("torch.compile", "jax")}
    ready = {t: (_Tool, _call(t), recs[t]) for t in recs}
    G.kernel_rounds(None, ready, dict(k=30, rounds=4), timer=object())
    assert recs["torch.compile"]["kernel_us"] == 62.0
    assert recs["torch.compile"]["kernel_us_queued"] == 61.5
    assert recs["torch.compile"]["kernel_timing"] == "back to back behind a sleep"
    assert recs["jax"]["kernel_us"] == 61.5 and recs["jax"]["kernel_timing"] == "queued"
    holds = [ms for tool, ms in held if tool == "torch.compile" and ms]
    assert len(holds) == 4 and min(holds) >= 5.0
    assert all(ms == 0.0 for tool, ms in held if tool == "jax")


def _result(rounds):
    rec = dict(kernel_us=61.9, kernels_per_call=1, wall_us=65.0, first_call_s=0.1,
               max_rel_err=0.0)
    if rounds > 1:
        rec["kernel_us_rounds"] = [61.8, 61.9, 62.0]
    return dict(machine=dict(python="3.12", date="2026-12-03T13:00:00", gpu="NVIDIA H200"),
                quick=False, settings=dict(k=30, rounds=rounds), ceilings={}, notes=[],
                rows={"ew_chain": dict(workload="ew_chain", tools={"jitlib": rec})})


def test_table_says_how_the_memory_bound_rows_were_timed():
    text = G.render(_result(15))
    assert "median of 15 interleaved rounds" in text
    assert "ew_chain jitlib 61.80-62.00" in text
    single = G.render(_result(1))
    assert "interleaved" not in single and "Rounds' range" not in single
