"""`python -m jitlib`: the demo (see jitlib/demo.py); `cache ...` and `buckets ...` manage
the compile cache and shape buckets (see jitlib/cache/cli.py)."""
import sys

if len(sys.argv) > 1:
    from jitlib.cache.cli import main as cli_main
    sys.exit(cli_main(sys.argv[1:]))
else:
    from jitlib.demo import main
    main()
