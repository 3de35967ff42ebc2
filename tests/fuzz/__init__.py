"""Differential fuzzing of jitlib: random programs on every backend must agree.

    oracle.py          runs a program on the interpreter (the spec) and every variant
                       (optimized, jax, cpu, gpu), and says what agreeing means per result
    exactness.py       which results must be bitwise, within tolerance, or type-only
    generators.py      the generators by name: ir, ir_exact, fused, numpy
    numpy_programs.py  random NumPy source programs, checked against eager NumPy too
    driver.py          one hypothesis run of a generator: count, shrink, keep the failure
    reduce.py          cuts spare results and parameters hypothesis could not
    regressions.py     failures kept as regressions/*.hlo (+ .npz), or *.py for NumPy ones
    test_fuzz.py       the bounded CI run, the replay of every regression, oracle tests
    __main__.py        the long run: python -m tests.fuzz --minutes N [--backends ...]
"""
