import pytest


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    """Never touch the user's cache directory from a test."""
    monkeypatch.setenv("JITLIB_CACHE_DIR", str(tmp_path / "jitlib-cache"))
    monkeypatch.delenv("JITLIB_BUCKETS", raising=False)
