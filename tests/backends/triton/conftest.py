"""Every test here renders Triton source, which needs the Triton compiler (not a GPU).
Where Triton is not installed, each module here is reported skipped, with the reason."""
import pytest

from triton_marks import REASON, triton_installed


class _SkippedModule(pytest.Module):
    def collect(self):
        pytest.skip(REASON)


if not triton_installed():
    def pytest_pycollect_makemodule(module_path, parent):
        return _SkippedModule.from_parent(parent, path=module_path)
