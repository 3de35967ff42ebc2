# found-by: numpy, 2026-12-02
# variant: trace
# what: raised JitlibTypeError: <fuzz numpy program>:2 in f: shape must be integers, got ()
def f(a0):
    v0 = a0.reshape(())
    return v0
