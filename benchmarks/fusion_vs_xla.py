"""Kernels and bytes moved: jitlib's fusion pass next to XLA's CPU compiler.

    python -m benchmarks.fusion_vs_xla [--scale small|large] [--write-docs]

One row per program: the anchor workloads of `benchmarks/workloads.py`, then a few programs
from `tests/programs.py` (at their own small sizes, whatever `--scale` says) when the tests
directory is present. jitlib traces each program with plain NumPy (`jitlib.make_ir`) and
runs `jitlib.fusion.optimize` on it. XLA compiles the same source under `jax.jit` with `np`
meaning `jax.numpy`. A catalogue program that does not run under jax.numpy (gpt_block writes
into an array in place) is given to XLA as jitlib's traced Module lowered op by op to
`jax.lax` by the jax backend's rules, without the backend's per-op optimization barriers; the
summary names those rows. That route costs XLA some fusion (the backend's exact
NaN-propagating max reducer keeps XLA from its fastest reductions), so XLA's figures there
are an upper bound.

Counting rules
--------------
jitlib kernels: the top-level `fusion` instructions of the optimized Module (every kernel is
one, even a lone op). jitlib bytes: `jitlib.fusion.cost.bytes_moved` of that Module.

XLA kernels: the instructions of the ENTRY computation of the compiled HLO
(`jax.jit(f).lower(*args).compile().as_text()`) that run code. Free, so not counted:
`parameter`, `constant`, `tuple`, `get-tuple-element`, `bitcast` (a view of the same buffer),
and the scheduling-only `after-all`, `add-dependency`, `opt-barrier`, `domain`. Everything
else is one kernel: a `fusion` of any kind, and any op left unfused (`dot`, `reduce`, `copy`,
`custom-call`, `sort`, `scatter`, `while`, ...). A `while` or `conditional` counts once
although its body may run many times; none of the rows here has one.

"(n lib)" after the XLA count: n of those kernels are `kind=kCustom` fusions, which XLA:CPU
hands whole to a library (YNNPACK, `__ynn_fusion`). Each is one call from XLA's schedule and
is counted as one kernel, but the library runs its subgraph its own way and may keep
intermediates in scratch memory that these counts do not see. At `large` scale XLA gives
YNNPACK the whole of softmax, layernorm, logsumexp and even attention (two dots, softmax
between) as one such kernel.

XLA bytes: for each kernel, the bytes of its distinct operands plus the bytes of its result
(all elements of a tuple result, for a multi-output fusion). Shapes come from the HLO text
(`f32[64,128]{1,0}` is 64*128*4 bytes; the layout in braces is ignored). A scalar constant
operand is not counted: it is baked into the kernel's code. These are the rules of jitlib's
cost model (`jitlib/fusion/cost.py`), so the two columns measure two kernel graphs alike.

min bytes: every input read once and every output written once: what one perfect kernel
moves. "XLA interm." says whether some XLA kernel writes a value that another kernel reads
back (an intermediate in memory). The goal is met when jitlib runs no more kernels than XLA
and moves strictly fewer bytes where XLA has an intermediate (no more bytes elsewhere).

Floats stay as the inputs give them (float32). jax's 64-bit mode is left as found for the
workloads (their XLA rows are the same either way); the catalogue rows import jitlib's jax
backend, which turns it on for the whole process, so jax keeps NumPy's int64 and float64
there as jitlib does. The run prints the mode at start and end.
"""
import argparse
import datetime
import importlib.util
import math
import os
import pathlib
import platform
import re
import sys
import time
import traceback
import types
from dataclasses import dataclass

import numpy as np

from benchmarks import workloads

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs" / "fusion_vs_xla.md"

# the catalogue programs worth a row: the fusion-heavy ones
PROGRAMS = ("softmax", "layernorm", "gpt_block", "cross_entropy", "attention_single_head",
            "causal_attention_tril", "multi_head_attention", "attention_einsum")


# -- XLA's HLO text ------------------------------------------------------------------------

# bits per element of each HLO primitive type
_BITS = {"pred": 8, "s2": 2, "u2": 2, "s4": 4, "u4": 4, "s8": 8, "u8": 8, "s16": 16,
         "u16": 16, "f16": 16, "bf16": 16, "s32": 32, "u32": 32, "f32": 32, "s64": 64,
         "u64": 64, "f64": 64, "c64": 64, "c128": 128, "token": 0}

FREE_OPCODES = frozenset({"parameter", "constant", "tuple", "get-tuple-element", "bitcast",
                          "after-all", "add-dependency", "opt-barrier", "domain"})


@dataclass(frozen=True)
class HloInstr:
    """One instruction of an HLO computation, as much of it as the counting needs."""
    name: str
    opcode: str
    nbytes: int        # the result's bytes (all elements of a tuple)
    elements: int      # the result's element count (all elements of a tuple)
    operands: tuple    # operand names
    fusion_kind: str = ""   # kLoop, kInput, kOutput, kCustom: for a fusion


def _element_bits(dtype):
    if dtype in _BITS:
        return _BITS[dtype]
    if dtype.startswith("f8") or dtype.startswith("f4"):   # f8e4m3fn, f8e5m2, f4e2m1fn, ...
        return int(dtype[1])
    raise ValueError(f"unknown HLO element type {dtype!r}")


def _closing(text, i):
    """The index just past the bracket group that opens at text[i]."""
    pairs = {"(": ")", "[": "]", "{": "}"}
    depth = []
    for j in range(i, len(text)):
        if text[j] in pairs:
            depth.append(pairs[text[j]])
        elif depth and text[j] == depth[-1]:
            depth.pop()
            if not depth:
                return j + 1
    raise ValueError(f"unbalanced brackets in HLO: {text[i:i + 80]!r}")


def _split_top(text):
    """`text` split at the commas outside any brackets."""
    parts, start, depth = [], 0, 0
    for j, ch in enumerate(text):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:j])
            start = j + 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def shape_size(type_text):
    """(bytes, elements) of an HLO type: `f32[64,128]{1,0}`, `f32[]`, or a tuple of them."""
    text = type_text.strip()
    if text.startswith("("):
        sizes = [shape_size(t) for t in _split_top(text[1:_closing(text, 0) - 1])]
        return sum(b for b, _ in sizes), sum(n for _, n in sizes)
    dtype, _, rest = text.partition("[")
    dims = rest[:rest.index("]")]
    # a bounded dynamic dim `<=8` is allocated at its bound
    elements = math.prod(int(d.strip().lstrip("<=")) for d in dims.split(",") if d.strip())
    return elements * _element_bits(dtype.strip()) // 8, elements


def _parse_instr(line):
    """An HloInstr from one instruction line: `[ROOT ]%name = TYPE opcode(operands), ...`."""
    line = re.sub(r"/\*.*?\*/", "", line)           # the printer's `/*index=5*/` marks
    lhs, _, rhs = line.strip().removeprefix("ROOT ").partition(" = ")
    rhs = rhs.lstrip()
    type_end = _closing(rhs, 0) if rhs.startswith("(") else rhs.index("]") + 1
    if rhs[type_end:type_end + 1] == "{":            # the layout
        type_end = _closing(rhs, type_end)
    nbytes, elements = shape_size(rhs[:type_end])
    rest = rhs[type_end:].lstrip()
    paren = rest.index("(")
    opcode = rest[:paren].strip()
    end = _closing(rest, paren)
    operands = ()
    if opcode not in ("constant", "parameter"):       # their parens hold a literal, an index
        # an operand is `%name`, or `f32[4]{0} %name` in the long form
        operands = tuple(p.split()[-1].lstrip("%") for p in _split_top(rest[paren + 1:end - 1]))
    kind = re.search(r"\bkind=(\w+)", rest[end:]) if opcode == "fusion" else None
    return HloInstr(lhs.strip().lstrip("%"), opcode, nbytes, elements, operands,
                    kind.group(1) if kind else "")


def parse_entry(hlo_text):
    """The instructions of the ENTRY computation of an HLO module's text, in order."""
    lines = iter(hlo_text.splitlines())
    for line in lines:
        if line.startswith("ENTRY "):
            break
    else:
        raise ValueError("no ENTRY computation in the HLO text")
    instrs = []
    for line in lines:
        if line.strip() == "}":
            return instrs
        if line.strip():
            instrs.append(_parse_instr(line))
    raise ValueError("the ENTRY computation is not closed")


@dataclass(frozen=True)
class Cost:
    kernels: int
    bytes: int
    intermediate: bool | None = None   # some kernel reads a value another kernel wrote
    library: int = 0       # XLA kernels that are kCustom fusions run by a library (YNNPACK)


def xla_cost(hlo_text):
    """Kernels and bytes moved of a compiled XLA module (the rules in the module docstring)."""
    instrs = parse_entry(hlo_text)
    by_name = {i.name: i for i in instrs}

    def producer(name):
        # through the free views to the instruction that wrote the buffer
        instr = by_name[name]
        while instr.opcode in ("bitcast", "get-tuple-element"):
            instr = by_name[instr.operands[0]]
        return instr

    kernels = [i for i in instrs if i.opcode not in FREE_OPCODES]
    total, intermediate = 0, False
    for k in kernels:
        total += k.nbytes
        for name in dict.fromkeys(k.operands):
            source = by_name[name]
            if not (source.opcode == "constant" and source.elements <= 1):
                total += source.nbytes
            intermediate |= producer(name).opcode not in FREE_OPCODES
    library = sum(k.fusion_kind == "kCustom" for k in kernels)
    return Cost(len(kernels), total, intermediate, library)


def xla_hlo(fn, args):
    """The compiled HLO text of `jax.jit(fn)` for `args` (arrays or jax.ShapeDtypeStruct)."""
    import jax
    return jax.jit(fn).lower(*args).compile().as_text()


# -- jitlib ----------------------------------------------------------------------------------

def jitlib_fusion():
    """(optimize, bytes_moved), or the reason they cannot be used yet."""
    try:
        from jitlib.fusion import cost, optimize
        return (optimize, cost.bytes_moved), None
    except ImportError as e:
        return None, f"jitlib.fusion is not usable yet ({e})"


def jitlib_cost(module, fusion):
    """Kernels and bytes moved of `module` after jitlib's optimizer."""
    optimize, bytes_moved = fusion
    optimized = optimize(module)
    kernels = sum(1 for i in optimized.instructions if i.op == "fusion")
    return Cost(kernels, bytes_moved(optimized))


# -- the rows --------------------------------------------------------------------------------

@dataclass
class Row:
    name: str
    xla: Cost
    min_bytes: int
    jitlib: Cost | None = None
    error: str | None = None     # why the jitlib columns are empty
    xla_source: str = "jax.numpy"   # what XLA compiled: the program in jax.numpy, or jitlib IR

    def goal(self):
        """Whether jitlib meets the goal on this row: "yes", "no (...)" or "-"."""
        if self.jitlib is None:
            return "-"
        if self.jitlib.kernels > self.xla.kernels:
            return "no (kernels)"
        if self.jitlib.bytes > self.xla.bytes or (
                self.xla.intermediate and self.jitlib.bytes == self.xla.bytes):
            return "no (bytes)"
        return "yes"


def _workload_cases(scale):
    """(name, traceable fn, xla fn, args, min bytes) for each anchor workload."""
    import jax
    import jax.numpy as jnp
    rng = np.random.default_rng(0)
    for name, fn in workloads.WORKLOADS.items():
        args = workloads.inputs(name, rng, scale)
        traced, jaxed = (lambda *a, fn=fn: fn(np, *a)), (lambda *a, fn=fn: fn(jnp, *a))
        yield name, traced, jaxed, args, workloads.min_bytes(args, jax.eval_shape(jaxed, *args))


def load_catalogue():
    """tests/programs.py as a module, or None where the tests directory is absent."""
    path = ROOT / "tests" / "programs.py"
    if not path.exists():
        return None
    spec = importlib.util.spec_from_file_location("_benchmark_programs", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module    # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def lower_to_lax(module):
    """A jax function running `module` op by op with the jax backend's lowering rules and no
    optimization barriers, so XLA may fuse across ops."""
    from jitlib.backends.jax import lower_rules

    def run(*args):
        env = dict(zip(module.params, args))
        for instr in module.instructions:
            if instr not in env:
                env[instr] = lower_rules[instr.op](instr, *(env[x] for x in instr.operands))
        return [env[r] for r in module.results]
    return run


def _under_jax_numpy(catalogue):
    """The catalogue's functions, each a copy whose global `np` is jax.numpy."""
    import jax.numpy as jnp
    space = dict(vars(catalogue), np=jnp)
    for key, value in space.items():
        if isinstance(value, types.FunctionType) and value.__module__ == catalogue.__name__:
            space[key] = types.FunctionType(value.__code__, space, value.__name__,
                                            value.__defaults__, value.__closure__)
    return space


def _bind_static(fn, args, static_argnums):
    """`fn` as a function of its dynamic arguments, the static ones fixed; and those."""
    def bound(*dynamic):
        rest = iter(dynamic)
        return fn(*(a if i in static_argnums else next(rest) for i, a in enumerate(args)))
    return bound, [a for i, a in enumerate(args) if i not in static_argnums]


def _xla_for_program(program, jax_fn, args, module):
    """(compiled HLO text, how XLA got the program). The program written with jax.numpy
    when it runs so and computes the traced Module's types; else the Module lowered."""
    import jax
    bound, dynamic = _bind_static(jax_fn, args, program.static_argnums)
    try:
        out = jax.tree_util.tree_leaves(jax.eval_shape(bound, *dynamic))
        if [(o.shape, o.dtype) for o in out] == [(r.shape, r.dtype) for r in module.results]:
            return xla_hlo(bound, dynamic), "jax.numpy"
    except Exception:   # e.g. writes into an array in place, which jax.numpy refuses
        pass
    specs = [jax.ShapeDtypeStruct(x.shape, x.dtype) for x in module.params]
    return xla_hlo(lower_to_lax(module), specs), "jitlib IR"


def _catalogue_rows(catalogue, fusion):
    import jitlib
    import jitlib.backends.jax   # noqa: F401  (x64 on: jax keeps NumPy's int64 and float64)
    by_name = {p.name: p for p in catalogue.PROGRAMS}
    as_jax = _under_jax_numpy(catalogue)
    for name in PROGRAMS:
        if name not in by_name:
            continue
        p = by_name[name]
        args = p.make_args(np.random.default_rng(0))
        module = jitlib.make_ir(p.fn, static_argnums=p.static_argnums)(*args)
        hlo_text, source = _xla_for_program(p, as_jax[name], args, module)
        ideal = workloads.min_bytes(module.params, module.results)
        row = _row(f"programs.{name}", module, hlo_text, ideal, fusion)
        row.xla_source = source
        yield row


def _row(name, module, hlo_text, ideal, fusion):
    row = Row(name, xla_cost(hlo_text), ideal)
    if fusion is not None:
        try:
            row.jitlib = jitlib_cost(module, fusion)
        except Exception as e:   # one failing program must not hide the others' figures
            row.error = "".join(traceback.format_exception_only(e)).strip()
    return row


def collect(scale="small", catalogue=True):
    """The rows of the table, and a note when the jitlib columns cannot be filled."""
    import jitlib
    fusion, note = jitlib_fusion()
    rows = []
    for name, traced, jaxed, args, ideal in _workload_cases(scale):
        module = jitlib.make_ir(traced)(*args)
        rows.append(_row(name, module, xla_hlo(jaxed, args), ideal, fusion))
    programs = load_catalogue() if catalogue else None
    if programs is not None:
        rows.extend(_catalogue_rows(programs, fusion))
    return rows, note


# -- the report ------------------------------------------------------------------------------

COLUMNS = ("program", "jitlib kernels", "XLA kernels", "jitlib bytes", "XLA bytes",
           "min bytes", "XLA interm.", "goal")


def _cells(row):
    j = row.jitlib
    xla_kernels = str(row.xla.kernels)
    if row.xla.library:
        xla_kernels += f" ({row.xla.library} lib)"
    return (row.name, "-" if j is None else str(j.kernels), xla_kernels,
            "-" if j is None else f"{j.bytes:,}", f"{row.xla.bytes:,}", f"{row.min_bytes:,}",
            "yes" if row.xla.intermediate else "no", row.goal())


def markdown_table(rows):
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(_cells(r)) + " |" for r in rows]
    return "\n".join(lines)


def _summary(rows, note):
    lines = []
    if note:
        lines.append(f"jitlib columns empty: {note}.")
    scored = [r for r in rows if r.jitlib is not None]
    if scored:
        met = sum(r.goal() == "yes" for r in scored)
        lines.append(f"goal met on {met} of {len(scored)} rows.")
    lowered = [r.name for r in rows if r.xla_source != "jax.numpy"]
    if lowered:
        lines.append("XLA compiled jitlib's traced IR, lowered op by op, for: "
                     f"{', '.join(lowered)} (they do not run under jax.numpy).")
    lines += [f"{r.name}: jitlib failed: {r.error}" for r in rows if r.error]
    return lines


def _x64():
    import jax
    return bool(jax.config.jax_enable_x64)


def _machine():
    cpu = platform.processor() or "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return f"{platform.platform()}; {cpu}, {os.cpu_count()} logical CPUs"


def _versions():
    import jax
    import jaxlib
    return f"numpy {np.__version__}, jax {jax.__version__}, jaxlib {jaxlib.__version__}"


def write_docs(rows, note, scale, x64_before, seconds):
    """Write docs/fusion_vs_xla.md: the table, where and how it was made, the rules."""
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    x64 = f"jax_enable_x64 was {'on' if x64_before else 'off'} at start"
    if _x64() != x64_before:
        x64 += ", turned on by importing jitlib's jax backend"
    body = [
        "# Fusion: jitlib vs XLA (CPU)",
        "",
        "Generated by `python -m benchmarks.fusion_vs_xla --scale "
        f"{scale} --write-docs`; do not edit by hand.",
        "",
        f"- date: {now}",
        f"- machine: {_machine()}",
        f"- versions: {_versions()}",
        f"- scale: `{scale}`; inputs float32; {x64}; run took {seconds:.1f} s",
        "",
        markdown_table(rows),
        "",
        *[f"{line}  " for line in _summary(rows, note)],
        "",
        "## What the rows are",
        "",
        __doc__.split("\n\n", 2)[2].strip(),
        "",
    ]
    DOCS.write_text("\n".join(body))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", choices=tuple(workloads.SIZES), default="small")
    parser.add_argument("--write-docs", action="store_true",
                        help=f"write {DOCS.relative_to(ROOT)}")
    args = parser.parse_args(argv)
    x64_before = _x64()
    start = time.perf_counter()
    rows, note = collect(args.scale)
    seconds = time.perf_counter() - start
    print(markdown_table(rows))
    for line in _summary(rows, note):
        print(line)
    print(f"jax_enable_x64: {'on' if x64_before else 'off'} at start, "
          f"{'on' if _x64() else 'off'} at end; {seconds:.1f} s")
    if args.write_docs:
        write_docs(rows, note, args.scale, x64_before, seconds)
        print(f"wrote {DOCS}")
    return rows


if __name__ == "__main__":
    main()
