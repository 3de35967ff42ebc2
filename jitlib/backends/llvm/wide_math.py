"""sin, cos and tan over the whole float range, vectorized: mathlib where it is accurate,
libm for the rare lanes past that, decided once per vector.

mathlib's trig reduction (Cody-Waite) is accurate up to a bound (`LIMIT`); past it, only
a Payne-Hanek reduction or libm is right, and a libm call per element stops LLVM's loop
vectorizer. So a kernel computes mathlib's value `r` inline and passes it, with `x`, to

    float @jl_sin_f32_wide(float %x, float %r)     ; |x| < LIMIT ? r : sinf(x)

which is `noinline` and carries a `vector-function-abi-variant` attribute naming vector
forms of itself for 2 to 16 lanes. LLVM vectorizes the loop and calls the vector form
once per vector: it tests whether any lane is past the bound (one compare and branch)
and returns `r` when none is, else calls libm for those lanes only. Data in the usual
range pays a call per vector (a few cycles per 16 elements, and the spills around it);
huge arguments get libm's result, as eager NumPy does.

The functions are `internal` and kept alive through the optimizer by
`@llvm.compiler.used` (`FunctionText.render` writes it from `fn.used`): nothing calls
the vector forms until the vectorizer does, and the scalar form keeps its signature.
"""
from jitlib.backends.llvm.emitter import F32, F64, literal

FUNCTIONS = ("sin", "cos", "tan")
# |x| below which mathlib's result is within 1 ulp (docs/cpu_math_accuracy.md: sin and
# cos float32 are 1 ulp up to 1e5, 2 ulp past 2.5e5; float64 1 ulp up to 1e15).
LIMIT = {"float": 2.0 ** 16, "double": 2.0 ** 49}
LANES = {"float": (4, 8, 16), "double": (2, 4, 8)}
_SUFFIX = {"float": "f32", "double": "f64"}
# the attributes of the scalar function and its vector forms: pure as far as LLVM is
# concerned (libm's errno is not a value anyone reads), so the call may be vectorized
_ATTRS = "noinline nounwind willreturn memory(none)"


def scalar_name(name, ty):
    return f"jl_{name}_{_SUFFIX[ty]}_wide"


def _libm(name, ty):
    return name + ("f" if ty == "float" else "")


def _vector_name(name, ty, n):
    return f"{scalar_name(name, ty)}_v{n}"


def call(fn, name, ty, x, r):
    """Emit `name(x)` as `r` (mathlib's value at x) where |x| < LIMIT, else libm's."""
    scalar = scalar_name(name, ty)
    if scalar not in fn.decls:
        for key, text in _definitions(fn, name, ty):   # keyed by symbol, as fn.intrinsic's
            fn.declare(key, text)
        # the scalar form too: a function only ever called directly has its arguments
        # stripped where every call passes constants (sin of an empty max's -inf), and
        # its vector-function-abi-variant then names arguments it no longer has, which
        # LLVM's vectorizer asserts on (the process aborts)
        fn.used.extend([scalar] + [_vector_name(name, ty, n) for n in LANES[ty]])
    variants = ",".join(f"_ZGV_LLVM_N{n}vv_{scalar}({_vector_name(name, ty, n)})"
                        for n in LANES[ty])
    return fn.op(f'call {ty} @{scalar}({ty} {x}, {ty} {r}) '
                 f'{_ATTRS.replace("noinline ", "")} "vector-function-abi-variant"="{variants}"',
                 "w")


def _definitions(fn, name, ty):
    """[(symbol, module text)]: libm's declaration, the scalar function, its vector forms
    and the intrinsics they call. The lane loops stay rolled (unrolled, the 16-lane form
    alone was 285 instructions of compile work for a path data rarely takes)."""
    limit = literal(LIMIT[ty], F32 if ty == "float" else F64)
    libm = _libm(name, ty)
    scalar = scalar_name(name, ty)
    fabs = f"llvm.fabs.{_SUFFIX[ty]}"
    parts = [(libm, f"declare {ty} @{libm}({ty}) nounwind willreturn memory(none)"),
             (fabs, f"declare {ty} @{fabs}({ty})"),
             (scalar, f"""define internal {ty} @{scalar}({ty} %x, {ty} %r) {_ATTRS} {{
entry:
  %ax = call {ty} @{fabs}({ty} %x)
  %far = fcmp oge {ty} %ax, {limit}
  br i1 %far, label %libm, label %near
near:
  ret {ty} %r
libm:
  %y = call {ty} @{libm}({ty} %x)
  ret {ty} %y
}}""")]
    for n in LANES[ty]:
        vty = f"<{n} x {ty}>"
        splat = f"<{', '.join([f'{ty} {limit}'] * n)}>"
        vfabs = f"llvm.fabs.v{n}{_SUFFIX[ty]}"
        parts.append((vfabs, f"declare {vty} @{vfabs}({vty})"))
        parts.append((_vector_name(name, ty, n), f"""define internal {vty} @{_vector_name(name, ty, n)}({vty} %x, {vty} %r) {_ATTRS} {{
entry:
  %ax = call {vty} @{vfabs}({vty} %x)
  %far = fcmp oge {vty} %ax, {splat}
  %bits = bitcast <{n} x i1> %far to i{n}
  %any = icmp ne i{n} %bits, 0
  br i1 %any, label %lanes, label %near
near:
  ret {vty} %r
lanes:
  br label %lane
lane:
  %i = phi i32 [0, %lanes], [%i.next, %next]
  %acc = phi {vty} [%r, %lanes], [%acc.next, %next]
  %is_far = extractelement <{n} x i1> %far, i32 %i
  br i1 %is_far, label %call, label %next
call:
  %xi = extractelement {vty} %x, i32 %i
  %yi = call {ty} @{libm}({ty} %xi)
  %with = insertelement {vty} %acc, {ty} %yi, i32 %i
  br label %next
next:
  %acc.next = phi {vty} [%acc, %lane], [%with, %call]
  %i.next = add nuw nsw i32 %i, 1
  %more = icmp ult i32 %i.next, {n}
  br i1 %more, label %lane, label %done, !llvm.loop {fn.rolled_hint()}
done:
  ret {vty} %acc.next
}}"""))
    return parts
