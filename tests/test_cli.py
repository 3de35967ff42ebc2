"""The `jitlib` command (jitlib/cli.py): subcommands, their --help, the demo as the
default, and what `cache info|prune` print."""
import importlib
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import jitlib
from jitlib.cache import disk
from jitlib.cli import main

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("argv", [[], ["demo"], ["cache"], ["cache", "info"],
                                  ["cache", "clear"], ["cache", "prune"], ["buckets"],
                                  ["buckets", "suggest"], ["buckets", "warm"]])
def test_every_command_has_help(argv, capsys):
    with pytest.raises(SystemExit) as done:
        main(argv + ["--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: jitlib" + "".join(" " + a for a in argv))


def test_version(capsys):
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0 and capsys.readouterr().out == f"jitlib {jitlib.__version__}\n"


def test_python_m_jitlib_and_the_console_script_are_the_cli(tmp_path):
    out = subprocess.run([sys.executable, "-m", "jitlib", "--version"], capture_output=True,
                         text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 0 and out.stdout.strip() == f"jitlib {jitlib.__version__}"
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    module, name = scripts["jitlib"].split(":")
    assert getattr(importlib.import_module(module), name) is main


@pytest.mark.parametrize("argv", [["--backend", "interpreter", "--repeats", "1"],
                                  ["demo", "--backend", "interpreter", "--repeats", "1"]])
def test_the_demo_is_the_default_command(argv, capsys):
    assert main(argv) == 0
    assert capsys.readouterr().out.count("backend interpreter: matches eager NumPy") == 2


def test_import_jitlib_makes_buckets_load_work():
    rules = jitlib.buckets.load(ROOT / "examples" / "buckets.toml")
    assert rules and all(isinstance(r, jitlib.buckets.Rule) for r in rules)
    assert rules[0].function == "model.forward" and rules[0].policy == "pow2"


def _filled(directory):
    store = disk.DiskCache(directory)
    for i, kind in enumerate(["llvm-object", "llvm-object", "llvm-program"]):
        store.store(store.key(i), b"x" * 1000 * (i + 1), kind=kind, symbol=f"kernel_{i}")
        os.utime(store.path(store.key(i)), (1_000_000 + i, 1_000_000 + i))
    store.load(store.key(2))
    store.load(store.key("missing"))
    store.flush_stats()
    return store


def test_cache_info_summarises_and_lists_with_all(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("JITLIB_CACHE_DIR", str(tmp_path))
    store = _filled(tmp_path)
    fifo = store.path(store.key(0))[:-5] + "f.obj"   # beside an entry: `info` must not
    os.mkfifo(fifo)                                    # block on it
    assert main(["cache", "info"]) == 0
    out = capsys.readouterr().out
    assert f"directory: {tmp_path}" in out
    assert "entries:   3, " in out and "2 llvm-object, 1 llvm-program" in out
    assert "hit rate:  50.0% (1 hits, 1 misses" in out
    assert "kernel_0" not in out
    assert main(["cache", "info", "--all"]) == 0
    listing = capsys.readouterr().out.splitlines()
    rows = [line for line in listing if "kernel_" in line]
    assert [r.split()[-1] for r in rows] == ["kernel_2", "kernel_1", "kernel_0"]


def test_cache_prune_evicts_the_least_recently_used(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("JITLIB_CACHE_DIR", str(tmp_path))
    store = _filled(tmp_path)
    assert main(["cache", "prune", "--max-bytes", "3500"]) == 0
    assert "removed 2 entries" in capsys.readouterr().out
    assert [m["symbol"] for _, m in store.entries()] == ["kernel_2"]   # the one used
    assert disk.DiskCache(tmp_path).stats()["evicted"] == 2


def test_cache_commands_say_when_the_cache_is_off(monkeypatch, capsys):
    monkeypatch.setenv("JITLIB_CACHE_DIR", "")
    assert main(["cache", "info"]) == 1
    assert "the disk cache is off" in capsys.readouterr().err
