"""`python -m benchmarks`: the CPU side-by-side timing run (see benchmarks/run.py)."""
from benchmarks.run import main

main()
