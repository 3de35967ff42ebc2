"""Benchmarks: jitlib side by side with NumPy and JAX/XLA. See benchmarks/README.md."""
