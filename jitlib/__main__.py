"""`python -m jitlib`: the same as the `jitlib` command (jitlib/cli.py)."""
import sys

from jitlib.cli import main

sys.exit(main())
