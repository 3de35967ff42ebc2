# found-by: numpy, 2026-12-02
# variant: numpy
# what: result 1 (exact) differs: not bit-equal; 1/1 elements; at (): np.float64(-0.0) vs np.float64(0.0)
# signature: numpy: result N (exact) differs: not bit-equal
def f(a0):
    v0 = np.logical_not(a0)
    v1 = 2 + v0
    v2 = np.logical_not(v0)
    v3 = np.floor_divide(-0.0, v1)
    return (v2, v3,)
