"""docs/numpy_support.md is exactly what tools/gen_numpy_table.py generates from the registries."""
import importlib.util
import pathlib

import numpy as np
import pytest

import jitlib.numpy as jnp
from jitlib.trace import registry, ufuncs
from jitlib.trace.functions.unsupported import UNSUPPORTED

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _generator():
    spec = importlib.util.spec_from_file_location("gen_numpy_table",
                                                  ROOT / "tools" / "gen_numpy_table.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_committed_doc_is_up_to_date():
    gen = _generator()
    committed = gen.DOC.read_text()
    if f"<!-- {gen.numpy_series()} -->" not in committed:
        pytest.skip("docs/numpy_support.md was generated with another NumPy series, whose "
                    "aliases differ: regenerate it with python tools/gen_numpy_table.py")
    assert committed == gen.render(), (
        "docs/numpy_support.md is out of date: run python tools/gen_numpy_table.py")


def test_doc_lists_every_function_and_ufunc():
    text = (ROOT / "docs" / "numpy_support.md").read_text()
    for fn in registry.FUNCTIONS:
        assert f".{fn.__name__}`" in text, fn
    for uf in ufuncs.BUILDERS:
        assert f"`np.{uf.__name__}`" in text, uf


def test_jnp_exports_every_supported_numpy_name():
    for name in dir(np):
        obj = getattr(np, name, None)
        try:
            supported = obj in registry.FUNCTIONS or obj in ufuncs.BUILDERS
        except TypeError:     # unhashable module attributes
            continue
        if supported and not name.startswith("_"):
            assert hasattr(jnp, name), name


def test_refused_functions_are_listed_as_refused():
    text = (ROOT / "docs" / "numpy_support.md").read_text()
    refused = text.split("## Refused on purpose")[1]
    for name in UNSUPPORTED:
        assert f"`np.{name}`" in refused, name


def test_coverage_counts_the_registries_and_the_survey(tmp_path):
    spec = importlib.util.spec_from_file_location("numpy_coverage",
                                                  ROOT / "tools" / "numpy_coverage.py")
    cov = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cov)
    figures = cov.figures()
    ok, total, missing = figures["ufuncs"]
    assert missing == [uf.__name__ for uf in ufuncs.REFUSED] and ok == total - len(missing)
    assert "sum" not in figures["numpy functions"][2]
    assert "frompyfunc" in figures["numpy functions"][2]   # not implemented: missing
    # a function refused on purpose is registered but counts as missing, not traced
    from jitlib.trace.functions import unsupported
    assert all(name in figures["numpy functions"][2] for name in unsupported.UNSUPPORTED)
    ok_sites, sites, ok_names, names, _ = cov.survey_share(cov.load_survey())
    assert 0 < ok_sites < sites and 0 < ok_names < names
    # the counter finds qualified calls and ignores what is not a NumPy function
    text = "np.sum(x); numpy.linalg.inv(a); np.float64(1); np.random.rand(3); np.fft.fft(x)"
    (tmp_path / "probe.py").write_text(text)
    assert cov.count_calls([tmp_path]) == {"sum": 1, "linalg.inv": 1, "fft.fft": 1}
