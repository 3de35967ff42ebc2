"""jitlib's IR: dtypes, ops, instructions, modules, the builder.

The text printer/parser, the verifier and the reference interpreter live in
sibling modules (`printer`, `parser`, `verifier`, `interpreter`).
"""
from jitlib.hlo import build, dtypes
from jitlib.hlo.ir import Instr, Literal, Module
from jitlib.hlo.ops import Op
from jitlib.hlo.shape_rules import IRTypeError, infer

__all__ = ["build", "dtypes", "Instr", "Literal", "Module", "Op", "IRTypeError", "infer"]
