"""jitlib.pmap: one program on each of N devices, as jax.pmap.

The function is traced once for the per-device shapes (the mapped axis removed)
with `axis_name` bound, so its collectives become ops over that axis. The Module is
cached per argument signature and run by executor.py on the first N virtual devices;
results are stacked along `out_axes`.
"""
import functools
from typing import Any, Callable, Sequence

import numpy as np

from jitlib import errors, tree
from jitlib.parallel import axes, devices as D
from jitlib.parallel.executor import BACKENDS, Executor
from jitlib.parallel.devices import Device


def pmap(fn: Callable[..., Any], axis_name: str | None = None, *, in_axes: Any = 0,
         out_axes: int = 0, devices: Sequence[Device] | None = None,
         backend: str | None = None) -> "Pmapped":
    """`fn` run on each device over slices of its arguments' `in_axes` (0: the
    leading axis, None: every device gets the whole argument); results stacked along
    `out_axes`. `devices` (a list from jitlib.devices()) fixes which devices: their
    number must equal the mapped size. backend: "cpu" (default) or "interpreter"."""
    backend = backend or "cpu"
    if backend not in BACKENDS:
        raise errors.UnsupportedError(f"pmap runs on backends {', '.join(BACKENDS)}, not "
                                      f"{backend!r}", hint="docs/multi_device.md")
    return Pmapped(fn, axis_name if axis_name is not None else "_pmap_axis",
                   in_axes, out_axes, devices, backend)


class Pmapped:
    """A pmap'ed function: call it as `fn`, with the mapped axis on its arguments."""

    def __init__(self, fn: Callable[..., Any], axis_name: str, in_axes: Any, out_axes: int,
                 devices: Sequence[Device] | None, backend: str) -> None:
        functools.update_wrapper(self, fn)
        self.fn, self.axis_name, self.backend = fn, axis_name, backend
        self.in_axes, self.out_axes, self.devices = in_axes, out_axes, devices
        self._cache: dict[Any, tuple[Executor, tree.TreeDef]] = {}

    def __call__(self, *args: Any) -> Any:
        per_device, key = self._slices(args)
        executor, out_tree = self._compiled(per_device[0], key)
        outs = executor(per_device)
        out_axes = _leaf_out_axes(self.out_axes, out_tree)
        stacked = [np.stack([dev[i] for dev in outs], axis=a)
                   for i, a in enumerate(out_axes)]
        return out_tree.unflatten(stacked)

    def lower(self, *args: Any) -> Any:
        """The per-device program traced for `args`: `.as_text()` shows its IR, the
        collectives among it (a jitlib.Lowered)."""
        per_device, key = self._slices(args)
        executor, out_tree = self._compiled(per_device[0], key)
        from jitlib.api import Lowered
        return Lowered(executor.module, out_tree, "interpreter")

    def _slices(self, args: tuple[Any, ...]) -> tuple[list[list[np.ndarray]], Any]:
        """Each device's argument leaves, and the signature they are cached under."""
        leaves, in_tree = tree.flatten(args)
        leaves = [np.asarray(x) for x in leaves]
        axes_of = _leaf_axes(self.in_axes, args, in_tree)
        size = _mapped_size(leaves, axes_of)
        self._check_devices(size)
        per_device = [[np.take(x, k, axis=a) if a is not None else x
                       for x, a in zip(leaves, axes_of)] for k in range(size)]
        key = (in_tree, size, tuple(axes_of),
               tuple((x.shape, x.dtype) for x in per_device[0]))
        return per_device, key

    def _compiled(self, example: list[np.ndarray],
                  key: Any) -> tuple[Executor, tree.TreeDef]:
        if key not in self._cache:
            in_tree, size = key[0], key[1]
            self._cache[key] = self._compile(example, in_tree, size)
        return self._cache[key]

    def _check_devices(self, size: int) -> None:
        if self.devices is not None:
            if len(self.devices) != size:
                raise errors.ShapeError(
                    f"pmap got devices of length {len(self.devices)} but the mapped axis "
                    f"has size {size}", hint="pass as many devices as slices")
            return
        available = D.device_count()
        if size > available:
            raise errors.ShapeError(
                f"pmap over an axis of size {size} needs {size} devices, but only "
                f"{available} are available",
                hint=f"set {D.ENV}={size} for {size} virtual CPU devices")

    def _compile(self, example: list[np.ndarray], in_tree: tree.TreeDef,
                 size: int) -> tuple[Executor, tree.TreeDef]:
        from jitlib.api import jit
        fn = self.fn

        def per_device(*leaves: Any) -> Any:
            return fn(*in_tree.unflatten(leaves))

        per_device.__name__ = getattr(fn, "__name__", "pmapped")
        with axes.bind(self.axis_name, size):
            lowered = jit(per_device, backend="interpreter").lower(*example)
        module = lowered.module
        if len(module.params) != len(example):
            raise errors.UnsupportedError("pmap traced a program whose parameters are not "
                                          "its arguments' leaves", hint="report this")
        return Executor(module, self.axis_name, size, self.backend), lowered.out_tree


def _leaf_axes(in_axes: Any, args: tuple[Any, ...],
              in_tree: tree.TreeDef) -> list[int | None]:
    """One mapped axis (or None) per flattened argument leaf."""
    if isinstance(in_axes, (list, tuple)):
        if len(in_axes) != len(args):
            raise errors.JitlibTypeError(
                f"pmap in_axes has {len(in_axes)} entries for {len(args)} arguments",
                hint="give one in_axes entry per positional argument")
        out: list[Any] = []
        for spec, arg in zip(in_axes, args):
            out += [spec] * len(tree.flatten(arg)[0])
    else:
        out = [in_axes] * in_tree.num_leaves
    return [None if a is None else int(a) for a in out]


def _mapped_size(leaves: list[np.ndarray], axes_of: list[int | None]) -> int:
    sizes: set[int] = set()
    for x, a in zip(leaves, axes_of):
        if a is None:
            continue
        if not -x.ndim <= a < x.ndim:
            raise errors.ShapeError(f"pmap in_axes {a} is out of range for an argument "
                                    f"of shape {x.shape}")
        sizes.add(x.shape[a])
    if not sizes:
        raise errors.JitlibTypeError("pmap needs at least one mapped argument",
                                     hint="set in_axes to 0 for some argument")
    if len(sizes) > 1:
        raise errors.ShapeError(f"pmap got inconsistent sizes for the mapped axes: "
                                f"{sorted(sizes)}", hint="map arguments of one size")
    return sizes.pop()


def _leaf_out_axes(out_axes: Any, out_tree: tree.TreeDef) -> list[int]:
    if isinstance(out_axes, (list, tuple)):
        raise errors.UnsupportedError("pmap out_axes per result is not supported yet",
                                      hint="use out_axes=0 or another single int")
    return [int(out_axes)] * out_tree.num_leaves
