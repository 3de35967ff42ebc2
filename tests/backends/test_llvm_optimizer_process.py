"""LLVM's optimizer in a worker process: the same object code, bounded memory, and a
worker's death reported as an error rather than taking the user's process with it."""
import sys

import numpy as np
import pytest

import jitlib
from jitlib import errors
from jitlib.backends.llvm import compiler, optimizer_process
from jitlib.backends.llvm.optimizer_process import OptimizerProcess

KERNEL = """define void @"scale"(ptr %a, ptr %b, i64 %n) {
entry:
  br label %loop
loop:
  %i = phi i64 [0, %entry], [%next, %loop]
  %pa = getelementptr float, ptr %a, i64 %i
  %x = load float, ptr %pa
  %y = fmul float %x, SCALE
  %pb = getelementptr float, ptr %b, i64 %i
  store float %y, ptr %pb
  %next = add i64 %i, 1
  %more = icmp slt i64 %next, %n
  br i1 %more, label %loop, label %exit
exit:
  ret void
}
"""


def _kernel(scale):
    return KERNEL.replace("SCALE", f"{scale:.1f}")


@pytest.fixture
def worker():
    c = compiler.get_compiler()
    w = OptimizerProcess(c.cpu, c.features)
    yield w
    w.close()


def test_the_worker_gives_the_same_object_code_as_this_process(worker):
    c = compiler.get_compiler()
    here = c.target_machine.emit_object(c.optimize(_kernel(3.0)))
    assert worker.object_code(_kernel(3.0)) == here
    assert worker.started == 1


def test_bad_ir_is_an_error_and_the_worker_serves_on(worker):
    with pytest.raises(RuntimeError, match="expected"):
        worker.object_code("define void @broken( {")
    assert worker.object_code(_kernel(2.0))
    assert worker.started == 1


def test_the_worker_is_replaced_every_recycle_after_compiles():
    c = compiler.get_compiler()
    w = OptimizerProcess(c.cpu, c.features, recycle_after=2)
    try:
        objects = [w.object_code(_kernel(s)) for s in (1.0, 2.0, 3.0, 4.0, 5.0)]
    finally:
        w.close()
    assert w.started == 3 and len(set(objects)) == 5


def test_a_worker_that_dies_is_an_error_then_a_fresh_worker():
    c = compiler.get_compiler()
    dies = [sys.executable, "-c", "import sys; sys.stdin.buffer.read(4)"]
    w = OptimizerProcess(c.cpu, c.features, command=dies)
    with pytest.raises(RuntimeError, match="worker process died"):
        w.object_code(_kernel(1.0))
    w._command = OptimizerProcess(c.cpu, c.features)._command
    try:
        assert w.object_code(_kernel(1.0))
    finally:
        w.close()
    assert w.started == 2


def _fresh_kernel_function(tag):
    # a constant no other test uses: the kernel text is new, so it really compiles
    return jitlib.jit(lambda x: np.tanh(x) * tag + 0.5, backend="cpu")


def test_past_the_limit_jit_compiles_in_the_worker(monkeypatch):
    monkeypatch.setenv("JITLIB_CACHE_DIR", "")
    monkeypatch.setenv("JITLIB_COMPILE_WORKER", "auto")
    c = compiler.get_compiler()
    monkeypatch.setattr(optimizer_process, "IN_PROCESS_LIMIT", c.optimized_here)
    here, started = c.optimized_here, c._worker.started
    x = np.linspace(-3, 3, 37)
    f = _fresh_kernel_function(1.734)
    np.testing.assert_allclose(f(x), np.tanh(x) * 1.734 + 0.5, rtol=1e-14)
    assert c.optimized_here == here            # nothing optimised in this process
    assert c._worker.started >= started and c._worker._process is not None


def test_never_keeps_every_compile_here(monkeypatch):
    monkeypatch.setenv("JITLIB_CACHE_DIR", "")
    monkeypatch.setenv("JITLIB_COMPILE_WORKER", "never")
    monkeypatch.setattr(optimizer_process, "IN_PROCESS_LIMIT", 0)
    c = compiler.get_compiler()
    here = c.optimized_here
    x = np.linspace(-3, 3, 41)
    np.testing.assert_allclose(_fresh_kernel_function(2.913)(x), np.tanh(x) * 2.913 + 0.5,
                               rtol=1e-14)
    assert c.optimized_here > here


def test_a_worker_failure_reaches_the_user_as_a_compile_error(monkeypatch):
    monkeypatch.setenv("JITLIB_CACHE_DIR", "")
    monkeypatch.setenv("JITLIB_COMPILE_WORKER", "always")
    c = compiler.get_compiler()
    dies = OptimizerProcess(c.cpu, c.features,
                            command=[sys.executable, "-c", "pass"])
    monkeypatch.setattr(c, "_worker", dies)
    f = _fresh_kernel_function(3.377)
    with pytest.raises(errors.CompileError, match="worker process died") as info:
        f(np.ones(5))
    assert "tanh(%x)" in str(info.value)


def test_a_bad_setting_is_named():
    from jitlib import config
    with pytest.MonkeyPatch.context() as m:
        m.setenv("JITLIB_COMPILE_WORKER", "sometimes")
        with pytest.raises(ValueError, match="JITLIB_COMPILE_WORKER"):
            config.compile_worker()


# -- compile_ahead: a program's kernels on both cores (this process and the worker)

def _fresh_compiler(monkeypatch, tmp_path):
    monkeypatch.setenv("JITLIB_COMPILE_WORKER", "auto")
    monkeypatch.setenv("JITLIB_CACHE_DIR", str(tmp_path))
    c = compiler.Compiler()
    return c


def _scales(*values):
    return [(_kernel(v).replace('@"scale"', f'@"scale_{i}"'), f"scale_{i}")
            for i, v in enumerate(values)]


def test_compile_ahead_starts_the_worker_off_the_callers_path_and_uses_it_once_ready(
        monkeypatch, tmp_path):
    c = _fresh_compiler(monkeypatch, tmp_path)
    try:
        for i in range(compiler.SECOND_CORE_AFTER):
            # no worker yet: it starts at the SECOND_CORE_AFTER-th such program, and
            # none of them is compiled ahead (`load` compiles them here, as before)
            assert c._second._warming is None
            c.compile_ahead(_scales(5.0 + i, 6.0 + i))
            assert c.optimized_here == 0 and not c._ahead
        c._second._warming.join(timeout=60)
        assert c._second.ready()
        second = _scales(7.0, 8.0, 9.0)
        c.compile_ahead(second)
        assert len(c._ahead) == 3
        assert c._second._served >= 2           # the warm-up and at least one kernel
        assert c.optimized_here >= 1            # this thread took the largest one
        # the bytes are this process's, wherever they were made; `load` compiles no more
        for text, name in map(compiler.anonymous, second):   # kernels hash without names
            renamed = text.replace(f'@"{name}"', f'@"{name}.'
                                   + compiler.hashlib.sha256(text.encode()).hexdigest()[:16]
                                   + '"')
            here = c.target_machine.emit_object(c.optimize(renamed))
            assert c._ahead[compiler.hashlib.sha256(text.encode()).hexdigest()] == here
        made_here = c.optimized_here
        a = np.arange(64, dtype=np.float32)
        for (text, name), scale in zip(second, (7.0, 8.0, 9.0)):
            code = c.load(text, name)
            b = np.empty_like(a)
            import ctypes
            ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)(
                code.address)(a.ctypes.data, b.ctypes.data, a.size)
            np.testing.assert_array_equal(b, a * np.float32(scale))
        assert c.optimized_here == made_here and not c._ahead
    finally:
        c._second.close()


def test_compile_ahead_does_nothing_where_compiles_do_not_run_here(monkeypatch, tmp_path):
    c = _fresh_compiler(monkeypatch, tmp_path)
    try:
        for setting in ("never", "always"):
            monkeypatch.setenv("JITLIB_COMPILE_WORKER", setting)
            c.compile_ahead(_scales(1.0, 2.0))
            assert c._second._warming is None and not c._ahead
    finally:
        c._second.close()


def test_a_forked_child_starts_its_own_worker(monkeypatch, tmp_path):
    import os
    c = _fresh_compiler(monkeypatch, tmp_path)
    try:
        c._worker.start_soon()
        c._worker._warming.join(timeout=60)
        assert c._worker.ready()
        started = c._worker.started
        pid = os.fork()
        if pid == 0:   # the child: the parent's worker answers the parent, not it
            ok = False
            try:
                ok = (not c._worker.ready()
                      and c._worker.object_code(_kernel(4.0)) is not None
                      and c._worker.started == started + 1)
            finally:
                os._exit(0 if ok else 1)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        assert c._worker.ready() and c._worker.object_code(_kernel(4.5))
    finally:
        c._worker.close()


def test_the_second_core_worker_runs_at_the_lowest_priority():
    import os
    c = compiler.get_compiler()
    w = OptimizerProcess(c.cpu, c.features, idle_only=True)
    try:
        assert w.object_code(_kernel(2.0)) == c.target_machine.emit_object(
            c.optimize(_kernel(2.0)))
        mine = os.getpriority(os.PRIO_PROCESS, 0)
        assert os.getpriority(os.PRIO_PROCESS, w._process.pid) == min(19, mine + 19)
    finally:
        w.close()
