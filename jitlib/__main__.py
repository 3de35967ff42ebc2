"""`python -m jitlib`: the demo (see jitlib/demo.py)."""
from jitlib.demo import main

main()
