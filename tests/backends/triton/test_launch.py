"""CompiledLaunch's bookkeeping without a GPU: Triton's path once per pointer-alignment
pattern, then the compiled kernel's launcher with the same arguments Triton would pass."""
import numpy as np

from triton_cases import fusions, traced
from jitlib.backends.triton import kernels
from jitlib.backends.triton.configs import Config
from jitlib.backends.triton.launch import CompiledLaunch, TritonLaunch


class FakeBuffer:
    def __init__(self, ptr):
        self.ptr = ptr

    def data_ptr(self):
        return self.ptr


class FakeCompiled:
    function, packed_metadata = "fn-handle", "packed"

    def __init__(self, log, fail=False):
        self.log, self.fail = log, fail

    def launch_metadata(self, grid, stream, *args):
        return None

    def run(self, *args):
        if self.fail:
            raise TypeError("launcher changed")
        self.log.append(("direct",) + args)


class FakeJit:
    """Triton's JITFunction as CompiledLaunch uses it: fn[grid](*buffers, **options)."""

    def __init__(self, arg_names, fail=False):
        self.arg_names, self.fail, self.log, self.__name__ = arg_names, fail, [], "k"

    def __getitem__(self, grid):
        def run(*buffers, **options):
            self.log.append(("triton", grid, [b.data_ptr() for b in buffers], options))
            return FakeCompiled(self.log, self.fail)
        return run


def _launch(fail=False):
    module = traced(lambda x, y: np.exp(x) + y, [np.ones(5000, np.float32)] * 2)
    kernel = kernels.render(fusions(module)[0])
    config = Config({"BLOCK": 1024}, num_warps=4)
    launch = CompiledLaunch(kernel, config, stream=77)
    assert launch.fn.arg_names == ["in0", "in1", "out0", "BLOCK"]
    launch.fn = FakeJit(launch.fn.arg_names, fail)
    return launch


def test_triton_compiles_once_then_the_launcher_is_called_directly():
    launch = _launch()
    bufs = [FakeBuffer(p) for p in (4096, 8192, 12288)]
    launch(bufs)
    launch([FakeBuffer(p) for p in (16, 32, 48)])      # other pointers, same alignment
    log = launch.fn.log
    assert log[0] == ("triton", (5,), [4096, 8192, 12288],
                      {"BLOCK": 1024, "num_warps": 4, "num_stages": 2,
                       "enable_fp_fusion": False})
    # grid, our stream, the handle, metadata, no hooks, then pointers and constexprs
    assert log[1] == ("direct", 5, 1, 1, 77, "fn-handle", "packed", None, None, None,
                      16, 32, 48, 1024)
    assert len(log) == 2


def test_a_misaligned_pointer_goes_through_triton_again():
    launch = _launch()
    launch([FakeBuffer(p) for p in (4096, 8192, 12288)])
    launch([FakeBuffer(p) for p in (4100, 8192, 12288)])   # Triton specializes on % 16
    assert [e[0] for e in launch.fn.log] == ["triton", "triton"]


def test_a_changed_launcher_falls_back_to_triton_for_good():
    launch = _launch(fail=True)
    bufs = [FakeBuffer(p) for p in (4096, 8192, 12288)]
    launch(bufs)
    launch(bufs)
    launch(bufs)
    assert isinstance(launch, TritonLaunch)
    assert [e[0] for e in launch.fn.log] == ["triton", "triton", "triton"]


def test_installed_launch_hooks_are_passed_to_the_launcher():
    from triton import knobs
    launch = _launch()
    bufs = [FakeBuffer(p) for p in (4096, 8192, 12288)]
    seen = []
    knobs.runtime.launch_enter_hook.add(seen.append)
    try:
        launch(bufs)
        launch(bufs)
    finally:
        knobs.runtime.launch_enter_hook.remove(seen.append)
    direct = launch.fn.log[1]
    assert direct[8] is knobs.runtime.launch_enter_hook
    assert direct[9] is knobs.runtime.launch_exit_hook
