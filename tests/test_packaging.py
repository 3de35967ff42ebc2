"""What a fresh install gets: the extras, the pins' reasons, and a test run without Triton."""
import os
import subprocess
import sys
import tomllib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _project():
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        return tomllib.load(f)["project"]


def test_the_test_extra_does_not_pull_triton():
    extras = _project()["optional-dependencies"]
    assert not any(r.startswith("triton") for r in extras["test"])   # 999 MB, no GPU needed
    assert any(r.startswith("triton") for r in extras["triton"])
    assert "jitlib[triton]" in extras["gpu"]


def test_pins_on_private_apis_have_upper_bounds():
    project = _project()
    pins = project["dependencies"] + project["optional-dependencies"]["triton"]
    for name in ("numpy", "triton"):
        (pin,) = [p for p in pins if p.startswith(name)]
        assert "<" in pin, f"{pin}: {name} internals are used, so it needs an upper bound"


def test_the_package_ships_its_typing_marker():
    assert os.path.exists(os.path.join(ROOT, "jitlib", "py.typed"))
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        assert "py.typed" in tomllib.load(f)["tool"]["setuptools"]["package-data"]["jitlib"]


def test_without_triton_its_tests_skip_with_the_reason():
    # None in sys.modules makes Triton absent to the process, installed or not
    code = ("import sys; sys.modules['triton'] = None; import pytest; "
            "sys.exit(pytest.main(['-p', 'no:cacheprovider', '-rs', "
            "'tests/backends/triton/test_launch.py', 'tests/test_array.py']))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    reasons = [line for line in out.stdout.splitlines() if "needs Triton, not installed" in line]
    assert any("tests/backends/triton/" in line for line in reasons), out.stdout   # the module
    assert any("tests/test_array.py" in line for line in reasons), out.stdout      # a fixture's


def test_the_gpu_backend_without_triton_says_what_to_install():
    code = ("import sys; sys.modules['triton'] = None\n"
            "import numpy as np, jitlib\n"
            "try:\n"
            "    jitlib.jit(lambda x: x + 1, backend='gpu')(np.ones(2))\n"
            "except jitlib.errors.BackendError as e:\n"
            "    print('BackendError:', e)\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, timeout=120)
    assert "BackendError:" in out.stdout, out.stdout + out.stderr
    assert "needs the triton package" in out.stdout and "pip install" in out.stdout
