"""The GPU benchmark's sleep kernel (benchmarks/gpu.py EventTimer), without a GPU: a hold
must last its nominal length after the SM clock has come up from idle. Calibrated once on
an idle H200 (345 MHz) a "5 ms" hold lasted 0.39 ms at 1980 MHz, too short for
torch.compile to queue its calls behind it (2026-12-03e notes)."""
import pytest

from benchmarks import gpu as G


class _GPU:
    """Sleep kernels that spin `cycles` at the current SM clock, which rises from idle to
    its boost after `ramp` sleeps (one step each), and CUDA events reading its time."""

    def __init__(self, ramp, idle_mhz=345.0, boost_mhz=1980.0):
        self.now_ms, self.sleeps = 0.0, 0
        self.steps = [idle_mhz + (boost_mhz - idle_mhz) * i / ramp for i in range(ramp + 1)]
        gpu = self

        class Event:
            def __init__(self, enable_timing=True):
                self.at = None

            def record(self):
                self.at = gpu.now_ms

            def synchronize(self):
                pass

            def elapsed_time(self, end):
                return end.at - self.at

        class cuda:
            pass
        cuda.Event = Event
        cuda._sleep = self.sleep
        self.cuda = cuda

    @property
    def mhz(self):
        return self.steps[min(self.sleeps, len(self.steps) - 1)]

    def sleep(self, cycles):
        self.now_ms += cycles / (self.mhz * 1e3)
        self.sleeps += 1


@pytest.mark.parametrize("ramp", [1, 2, 3])
def test_a_hold_lasts_its_length_once_the_clock_is_up(ramp):
    gpu = _GPU(ramp)
    timer = G.EventTimer(gpu)
    assert gpu.mhz == 1980.0
    t0 = gpu.now_ms
    timer.hold(5.0)
    assert gpu.now_ms - t0 == pytest.approx(5.0, rel=0.03)


def test_a_steady_clock_calibrates_in_two_sleeps():
    gpu = _GPU(ramp=1, idle_mhz=1980.0)
    timer = G.EventTimer(gpu)
    assert gpu.sleeps == 2
    assert timer.cycles_per_ms == pytest.approx(1980e3)


def test_rounds_record_holds_that_ended_before_their_calls_were_queued(monkeypatch):
    class Timer:
        short_holds = 0

    timer = Timer()

    def cupti_kernels(torch, call, sync, k, hold_ms=0.0, timer=None):
        if hold_ms:
            timer.short_holds += 1     # every held pass of this fake comes up short
        return 62.0, 62.0, 1.0

    class Tool:
        sync = None
    monkeypatch.setattr(G, "cupti_kernels", cupti_kernels)
    ready = {"torch.compile": (Tool(), lambda i: None, {}), "jax": (Tool(), lambda i: None, {})}
    G.kernel_rounds(None, ready, dict(k=30, rounds=3), timer=timer)
    assert ready["torch.compile"][2]["short_holds"] == 3
    assert "short_holds" not in ready["jax"][2]     # its own stream: timed as queued
