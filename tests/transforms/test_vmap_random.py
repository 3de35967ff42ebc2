"""Random well-typed programs (tests/ir_strategies.py), batched with random in_axes and
out_axes, against the per-example program run on each example in a loop.

Example b's inputs are the drawn inputs with their elements rolled by b: the same
values (so index ranges and convert bounds still hold) in different places.
"""
import numpy as np
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import ir_strategies as irs
from jitlib.hlo import dtypes
from jitlib.hlo.interpreter import evaluate
from jitlib.hlo.verifier import verify
from jitlib.transforms import batching

SIZE = 3
RTOL = {"f16": 1e-2, "bf16": 1e-2, "f32": 1e-5, "f64": 1e-12}


def examples(x, axis):
    """SIZE rolled copies of `x`, stacked at `axis`."""
    rolled = [np.roll(x.reshape(-1), b).reshape(x.shape) for b in range(SIZE)]
    return np.stack(rolled, axis=axis)


def check(module, inputs, data):
    assume(inputs)   # a module of constants alone has nothing to map over
    in_axes = [data.draw(st.sampled_from([0, -1, None]), label=f"in_axes[{i}]")
               for i in range(len(inputs))]
    if all(a is None for a in in_axes):
        in_axes[0] = 0
    out_axes = [data.draw(st.sampled_from([0, -1]), label=f"out_axes[{i}]")
                for i in range(len(module.results))]
    batched = batching.batch_module(module, in_axes, SIZE, out_axes)
    verify(batched)
    args = [x if a is None else examples(x, a) for x, a in zip(inputs, in_axes)]
    got = evaluate(batched, args)
    per_example = [evaluate(module, [x if a is None else np.take(x, b, axis=a)
                                     for x, a in zip(args, in_axes)]) for b in range(SIZE)]
    for i, (g, axis) in enumerate(zip(got, out_axes)):
        want = np.stack([outs[i] for outs in per_example], axis=axis)
        assert g.dtype == want.dtype
        message = f"result {i}, in_axes={in_axes}, out_axes={out_axes}\n{module}\n{batched}"
        if dtypes.is_float(want.dtype):
            rtol = RTOL[dtypes.name(want.dtype)]
            np.testing.assert_allclose(g.astype(np.float64), want.astype(np.float64),
                                       rtol=rtol, atol=rtol, equal_nan=True, err_msg=message)
        else:
            np.testing.assert_array_equal(g, want, err_msg=message)


@settings(max_examples=30)
@given(irs.programs(max_steps=6), st.data())
def test_random_programs_batch_like_a_loop(program, data):
    check(*program, data)


@settings(max_examples=15)
@given(irs.fused_programs(max_steps=6), st.data())
def test_random_fused_programs_batch_like_a_loop(program, data):
    check(*program, data)
