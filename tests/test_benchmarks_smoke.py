"""Smoke tests of benchmarks/fusion_vs_xla.py: the HLO counting rules, and a full table."""

import numpy as np
import pytest

from benchmarks import fusion_vs_xla as F
from benchmarks import workloads as W

# A dot and a fusion reading it, as XLA:CPU prints them (metadata trimmed).
HLO = """\
HloModule jit_f, is_scheduled=true, entry_computation_layout={(f32[8,16]{1,0})->f32[8,4]{1,0}}

%fused_computation (param_0: f32[8,4]) -> f32[8,4] {
  %param_0 = f32[8,4]{1,0} parameter(0)
  %constant.1 = f32[] constant(0)
  %broadcast.1 = f32[8,4]{1,0} broadcast(%constant.1), dimensions={}
  ROOT %max.0 = f32[8,4]{1,0} maximum(%param_0, %broadcast.1)
}

ENTRY %main.2 (x: f32[8,16], w: f32[16,4]) -> f32[8,4] {
  %x = f32[8,16]{1,0} parameter(0), metadata={op_name="x"}
  %w = f32[16,4]{1,0} parameter(1), metadata={op_name="w"}
  %c = f32[] constant(0.5)
  %dot.0 = f32[8,4]{1,0} dot(%x, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT %relu_fusion = f32[8,4]{1,0} fusion(%dot.0, %c), kind=kLoop, calls=%fused_computation
}
"""


def test_hlo_parser_counts_kernels_and_bytes():
    instrs = F.parse_entry(HLO)
    assert [i.opcode for i in instrs] == ["parameter", "parameter", "constant", "dot", "fusion"]
    assert instrs[3].operands == ("x", "w")
    assert instrs[4].fusion_kind == "kLoop"
    cost = F.xla_cost(HLO)
    assert cost.kernels == 2
    # dot: reads x (8*16*4) and w (16*4*4), writes 8*4*4; the fusion reads the dot's result
    # and writes its own; the scalar constant is baked into the code
    assert cost.bytes == (512 + 256 + 128) + (128 + 128)
    assert cost.intermediate


def test_long_operand_lists_and_long_form_operands():
    line = ("  %f = f32[2]{0} fusion(f32[2]{0} %a, %b, %c, %d, %e, /*index=5*/%g), "
            "kind=kCustom, calls=%fc, backend_config={\"kind\":\"__ynn_fusion\"}")
    hlo = "ENTRY %m (a: f32[2]) -> f32[2] {\n" + "".join(
        f"  %{n} = f32[2]{{0}} parameter({i})\n" for i, n in enumerate("abcdeg")) + line + "\n}\n"
    f = F.parse_entry(hlo)[-1]
    assert f.operands == tuple("abcdeg")
    assert f.fusion_kind == "kCustom"
    cost = F.xla_cost(hlo)
    assert (cost.kernels, cost.bytes, cost.library, cost.intermediate) == (1, 7 * 8, 1, False)


def test_shape_sizes():
    assert F.shape_size("f32[64,128]{1,0}") == (64 * 128 * 4, 64 * 128)
    assert F.shape_size("pred[]") == (1, 1)
    assert F.shape_size("(f32[4]{0}, s64[2,3]{1,0})") == (16 + 48, 10)
    assert F.shape_size("bf16[<=10]") == (20, 10)


def test_multi_output_fusion_and_free_views():
    hlo = """\
ENTRY %main (p: f32[16]) -> (f32[16], f32[]) {
  %p = f32[16]{0} parameter(0)
  %f = (f32[16]{0}, f32[]) fusion(%p), kind=kInput, calls=%fc
  %a = f32[16]{0} get-tuple-element(%f), index=0
  %b = f32[] get-tuple-element(%f), index=1
  %v = f32[4,4]{1,0} bitcast(%a)
  %n = f32[4,4]{1,0} negate(%v)
  ROOT %t = (f32[4,4]{1,0}, f32[]) tuple(%n, %b)
}
"""
    cost = F.xla_cost(hlo)
    assert cost.kernels == 2
    assert cost.bytes == (64 + 68) + (64 + 64)
    assert cost.intermediate


def test_xla_side_of_one_workload():
    import jax.numpy as jnp
    args = W.inputs("ew_chain", np.random.default_rng(0), "small")
    cost = F.xla_cost(F.xla_hlo(lambda *a: W.ew_chain(jnp, *a), args))
    assert cost.kernels == 1
    assert cost.bytes == W.min_bytes(args, args[0]) == 4 * 4096 * 4
    assert not cost.intermediate


def test_table_has_a_jitlib_row_for_every_workload():
    fusion, note = F.jitlib_fusion()
    assert fusion is not None, f"jitlib's optimizer is missing: {note}"
    rows, _ = F.collect("small")
    by_name = {r.name: r for r in rows}
    assert set(W.WORKLOADS) <= set(by_name)
    failed = {r.name: r.error for r in rows if r.jitlib is None}
    assert not failed, f"jitlib columns empty: {failed}"


def test_cpu_run_times_the_triad_beside_each_call_and_pairs_them():
    import statistics

    from benchmarks import run
    order = []
    times, beside = run.time_calls(lambda: order.append("call"), (), budget=0.0, min_reps=4,
                                   max_reps=4, beside=lambda: order.append("triad"))
    assert order == ["call"] + ["triad", "call"] * 4      # one warm-up, then alternating
    assert len(times) == len(beside) == 4
    # each call against the triad just before it: 2 bytes in 1 s beside 3 bytes in 1 s,
    # then 1 byte in 1 s beside 3 bytes in 3 s, ...: the median of the pairs' fractions
    frac = run.paired_fraction([1.0, 1.0, 2.0], [1.0, 3.0, 1.0], nbytes=2, beside_bytes=3)
    assert frac == statistics.median([(2 / 1) / (3 / 1), (2 / 1) / (3 / 3), (2 / 2) / (3 / 1)])
    assert run.time_calls(lambda: None, (), 0.0, 2, 2)[1] == []   # no triad asked for


def test_loops_quick_run_writes_json_and_markdown(tmp_path):
    # one workload at tiny sizes: 7 fresh child processes, a few seconds each
    from benchmarks import loops
    result = loops.main(["--quick", "--only", "lu_rows", "--out", str(tmp_path)])
    row = result["workloads"]["lu_rows"]
    for key in ("jitlib/loop", "jitlib/plain", "jax/loop", "numpy/plain"):
        rec = row["tools"][key][3]
        assert "first_s" in rec and "warm_s" in rec, (key, rec)
        assert rec["max_rel_err"] < 1e-5, (key, rec)
    md = next(tmp_path.glob("loops-cpu-*.md")).read_text()
    assert "Host:" in md and "## Targets (issue 22)" in md
    assert next(tmp_path.glob("loops-cpu-*.json"))


def test_programs_run_times_a_catalogue_program_against_numpy(tmp_path, monkeypatch):
    from benchmarks import programs
    monkeypatch.setenv("JITLIB_CACHE_DIR", str(tmp_path / "cache"))   # main sets its own
    (row,) = programs.main(["--only", "newton_on_a_2x2_system", "--budget", "0.01",
                            "--out", str(tmp_path)])
    assert row["rel_diff"] < 1e-12 and row["warm_ms"] > 0 and row["numpy_ms"] > 0
    assert "newton_on_a_2x2_system" in next(tmp_path.glob("programs-cpu-*.md")).read_text()
    assert set(programs.SIZES) <= {p.name for p in programs.load_catalogue().PROGRAMS}


def test_compile_time_quick_run_writes_json_and_markdown(tmp_path):
    # the 4-layer forward at tiny sizes: 3 fresh child processes
    import json
    from benchmarks import compile_time
    assert compile_time.main(["--quick", "--only", "gpt2_4", "--out", str(tmp_path)]) == 0
    rows = json.loads(next(tmp_path.glob("compile-time-cpu-*.json")).read_text())["rows"]
    for tool in ("jitlib", "jax"):
        rec = rows["gpt2_4"][tool]
        assert "first_s" in rec and "warm_s" in rec, (tool, rec)
        assert rec["max_rel_err"] < 1e-4, (tool, rec)
    md = next(tmp_path.glob("compile-time-cpu-*.md")).read_text()
    assert "## Targets (issue 24 part 3)" in md and "| gpt2_4 |" in md


def test_cpu_run_measures_a_hang_prone_peer_in_a_child_with_a_time_limit():
    """jax's batched cholesky + solve can hang on the CPU: the coverage rows run jax in a
    child process, whose record comes back as JSON, or "hung" past --peer-timeout."""
    import argparse

    from benchmarks import run
    args = argparse.Namespace(scale="small", budget=0.05, min_reps=2, max_reps=3,
                              peer_timeout=120.0)
    rec, why = run.jax_in_child("histogram_256", args)
    assert why is None and rec["max_rel_err"] == 0.0 and 2 <= len(rec["times"]) <= 3
    rec, why = run.jax_in_child("histogram_256",
                                argparse.Namespace(**{**vars(args), "peer_timeout": 0.01}))
    assert rec is None and why.startswith("hung")


def test_dask_quick_run_checks_results_and_counts_worker_compiles(tmp_path):
    # two worker processes over a 20 MiB array: ~8 s, most of it starting the cluster
    pytest.importorskip("dask.distributed")
    import json
    from benchmarks import dask as D
    D.main(["--gib", "0.02", "--chunk-mib", "4", "--reps", "1",
            "--only", "layernorm", "sum_of_squares", "--out", str(tmp_path)])
    out = json.loads(next(tmp_path.glob("dask-cpu-*.json")).read_text())
    rows = {r["workload"]: r for r in out["rows_out"]}
    assert set(rows) == {"layernorm", "sum_of_squares"}
    for r in rows.values():
        assert r["ok"], r["check"]
        assert sum(r["compiled_on_workers"].values()) == 0
        assert 0 < r["jitlib_busy_pct"] <= 100
    md = next(tmp_path.glob("dask-cpu-*.md")).read_text()
    assert "## Targets (issue 27)" in md and "| sum_of_squares |" in md
