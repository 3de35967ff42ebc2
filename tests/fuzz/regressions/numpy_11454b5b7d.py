# found-by: numpy, 2026-12-02
# variant: trace
# what: raised OverflowError: Python integer -1 out of bounds for uint64
# signature: trace: raised OverflowError: Python integer -N out of bounds for uintN
def f(a0):
    v0 = np.sum(a0, axis=None, keepdims=True)
    v1 = np.negative(v0)
    v2 = np.greater_equal(2, v0)
    v3 = np.where(v2, v1, -1)
    return v3
