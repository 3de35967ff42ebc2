"""The loop index inside a rolled loop: steps that differ from trip to trip only by a
number that grows by the same amount each trip.

`x[t]` traces to a slice whose start is t, `buf[t] = v` to an update at constant(t),
`x * t` to a multiplication by constant(t). Those steps differ in every trip, so the
roller compares them without that number (`abstract`), and afterwards asks whether the
numbers of the trips it rolls follow `base + step * n` exactly, n counting trips from
0 (`progression`). If so, the body computes them from its trip counter (`build_step`):
a slice becomes a dynamic_slice, a constant the counter's arithmetic. Floats qualify
only where every value and the step are whole numbers the dtype holds exactly, so the
body's arithmetic has no rounding to disagree with the one Python did.
"""
from jitlib.hlo import build, dtypes
from jitlib.hlo.ops import Op

_INDEX_LIMIT = 2 ** 63   # the counter's arithmetic is i64's


def abstract(x):
    """(what a trip's step is compared by in place of its attributes, the number left
    out): the number is a scalar constant's value or a slice's start, else None."""
    if x.op is Op.CONSTANT and x.shape == () and not dtypes.is_bool(x.dtype):
        return _COUNTED, x.attrs["value"].array.item()
    if x.op is Op.SLICE:
        start, limit = x.attrs["start"], x.attrs["limit"]
        sizes = tuple(b - a for a, b in zip(start, limit))
        return ("slice", sizes, x.attrs["strides"]), start
    return x.attrs, None


_COUNTED = ("counted constant",)


def progression(values, dtype):
    """(base, step) where `values` (one a trip: numbers, or tuples of ints for slice
    starts) are base + step * n exactly, step 0 where they are all equal; None where
    they are not a progression the counter can compute."""
    first = values[0]
    if all(v == first for v in values[1:]):
        return first, 0
    if isinstance(first, tuple):
        steps = tuple(b - a for a, b in zip(first, values[1]))
        for n, v in enumerate(values):
            if any(s != a + d * n for s, a, d in zip(v, first, steps)):
                return None
        return first, steps
    if dtypes.is_float(dtype):
        limit = 2 ** (dtypes.finfo(dtype).nmant + 1)   # whole numbers up to it are exact
        if any(not float(v).is_integer() or abs(v) > limit for v in values):
            return None
        values = [int(v) for v in values]
    elif any(abs(v) >= _INDEX_LIMIT for v in values):
        return None
    step = values[1] - values[0] if len(values) > 1 else 0
    if any(v != values[0] + step * n for n, v in enumerate(values)):
        return None
    return values[0], step


def build_step(x, spec, operands, counter, loc=None):
    """Trip `counter`'s version of step `x` (a constant or a slice), its number
    base + step * counter, from `spec` = (base, step), on `operands`."""
    base, step = spec
    if step == 0 or step == (0,) * len(x.shape):
        return build.make(x.op, operands, x.attrs, loc=loc)   # the same in every trip
    if x.op is Op.CONSTANT:
        return build.convert(_affine(counter, base, step), x.dtype, loc=loc)
    starts = [_affine(counter, a, d) for a, d in zip(base, step)]
    start, limit, strides = x.attrs["start"], x.attrs["limit"], x.attrs["strides"]
    sizes = [b - a for a, b in zip(start, limit)]
    if all(s == 1 for s in strides):
        return build.dynamic_slice(operands[0], starts, sizes, loc=loc)
    window = build.dynamic_slice(operands[0], starts, sizes)
    return build.slice(window, [0] * len(sizes), sizes, strides, loc=loc)


def _affine(counter, base, step):
    """base + step * counter as an i64 scalar (a constant where step is 0)."""
    if step == 0:
        return build.constant(dtypes.INDEX.type(base))
    value = counter
    if step != 1:
        value = build.binary(Op.MUL, value, build.constant(dtypes.INDEX.type(step)))
    if base != 0:
        value = build.binary(Op.ADD, value, build.constant(dtypes.INDEX.type(base)))
    return value
