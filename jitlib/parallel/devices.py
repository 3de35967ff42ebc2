"""The devices pmap maps over: N virtual CPU devices in this process.

JITLIB_VIRTUAL_DEVICES=N (default 1) sets N, as XLA's
--xla_force_host_platform_device_count does; it is read at each call, so a test
may change it between calls.
"""
import os
from dataclasses import dataclass

from jitlib import errors

ENV = "JITLIB_VIRTUAL_DEVICES"


@dataclass(frozen=True)
class Device:
    """One virtual device: its position and its platform."""
    id: int
    platform: str = "cpu"

    def __repr__(self) -> str:
        return f"VirtualCpuDevice(id={self.id})"


def device_count() -> int:
    text = os.environ.get(ENV, "1")
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise errors.JitlibError(f"{ENV}={text!r} is not a positive number of devices",
                                 hint=f"set {ENV} to 1, 2, 4, ...")
    return n


def devices() -> list[Device]:
    """The devices pmap may use, in order (jax.devices())."""
    return [Device(k) for k in range(device_count())]
