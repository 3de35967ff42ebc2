# found-by: numpy, 2026-12-05
# variant: optimized
# what: raised AssertionError: fusion formed a cycle between kernels
# signature: optimized: raised AssertionError: fusion formed a cycle between kernels
def f(a0):
    v0 = a0.reshape((1, 9))
    v1 = v0.sum()
    v2 = jnp.fori_loop(0, 2, lambda i, c: np.negative(v0), v0)
    return (v1, v2,)
