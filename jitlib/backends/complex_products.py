"""Complex products as real ones, for a backend whose products are real kernels (gpu).

A complex dot_general becomes the four real products of its operands' parts, combined as
(ar.br - ai.bi) + i (ar.bi + ai.br): each product a real dot kernel, taking the product's
precision setting; taking the parts and combining the sums are complex kernels that
complex_lowering.py compiles. (Gauss's three-product form saves one product but loses
accuracy where the parts differ in size; BLAS's zgemm computes the four.) Applied before
the optimizer, so fusion sees real products and elementwise work around them.
"""
from jitlib.fusion.rewrite import rebuild
from jitlib.hlo import build, dtypes
from jitlib.hlo.ir import Module
from jitlib.hlo.ops import Op


def split(module):
    """`module` with each complex dot_general at its top level written as real ones;
    `module` itself where it has none. Products inside loop bodies and branches keep
    their complex form (and run as those regions' kernels run)."""
    if not any(_complex_product(i) for i in module.instructions):
        return module
    new = {}
    for instr in module.instructions:
        operands = [new[o] for o in instr.operands]
        if _complex_product(instr):
            with build.locations(lambda instr=instr: instr.loc):
                new[instr] = _real_products(instr, *operands)
        else:
            new[instr] = rebuild(instr, operands)
    out = Module(module.name, module.params, [new[r] for r in module.results], module.writes)
    out.effects = module.effects
    return out


def _complex_product(instr):
    return instr.op is Op.DOT_GENERAL and dtypes.is_complex(instr.dtype)


def _real_products(dot, a, b):
    (ar, ai), (br, bi) = ((build.unary(Op.REAL, x), build.unary(Op.IMAG, x)) for x in (a, b))

    def product(x, y):
        return build.make(Op.DOT_GENERAL, (x, y), dot.attrs)
    re = build.binary(Op.SUB, product(ar, br), product(ai, bi))
    im = build.binary(Op.ADD, product(ar, bi), product(ai, br))
    return build.binary(Op.COMPLEX, re, im)
