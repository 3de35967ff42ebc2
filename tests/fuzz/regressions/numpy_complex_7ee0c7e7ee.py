# found-by: numpy_complex, 2026-12-06
# variant: trace
# what: raised IRTypeError: compare(c64[], c64[]): complex values compare only for EQ and NE
# signature: trace: raised IRTypeError: compare(cN[], cN[]): complex values compare only for EQ and NE
def f(a0):
    v0 = 2 + a0
    v1 = np.negative(v0)
    v2 = np.clip(v0, -1, 1)
    return (v1, v2,)
