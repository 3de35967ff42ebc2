import pytest

pytest.importorskip("dask.array")
