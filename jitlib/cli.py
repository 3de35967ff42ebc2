"""The `jitlib` command (also `python -m jitlib`).

    jitlib [demo] [--backend B]     jit two NumPy functions, print their IR, time them
    jitlib cache info [--all]       the disk cache: entries, bytes, hit rate
    jitlib cache clear | prune      empty it / evict to its size bound now
    jitlib buckets suggest | warm   bucket rules from recorded shapes / fill the cache
    jitlib --version
"""
import argparse
import sys


def parser():
    top = argparse.ArgumentParser(
        prog="jitlib", description="jitlib: a tracing JIT for NumPy-style Python. "
        "With no command, runs the demo.")
    from jitlib import __version__
    top.add_argument("--version", action="version", version=f"jitlib {__version__}")
    sub = top.add_subparsers(dest="command", metavar="COMMAND")

    demo = sub.add_parser("demo", help="jit two NumPy functions, print their IR, time "
                          "them (the default)", description="jit two plain NumPy "
                          "functions, show their IR, check them against NumPy, time them")
    demo.add_argument("--backend", default=None,
                      help="interpreter, cpu, gpu or jax (default: the best available)")
    demo.add_argument("--repeats", type=int, default=15, help="timed calls (default 15)")

    cache = sub.add_parser("cache", help="the disk cache of compiled code",
                           description="The disk cache (JITLIB_CACHE_DIR, default "
                           "~/.cache/jitlib; bounded by JITLIB_DISK_CACHE_BYTES).")
    csub = cache.add_subparsers(dest="action", metavar="ACTION", required=True)
    info = csub.add_parser("info", help="entries, bytes and hit rate",
                           description="Entries, bytes and hit rate of the disk cache.")
    info.add_argument("--all", action="store_true", help="also list every entry")
    csub.add_parser("clear", help="delete every entry",
                    description="Delete every entry, recorded shape and statistic.")
    prune = csub.add_parser("prune", help="evict to the size bound now",
                            description="Remove the least recently used entries until "
                            "the rest fit, and anything that is no entry.")
    prune.add_argument("--max-bytes", default=None,
                       help="the size to prune to, like 200M (default: 90%% of "
                            "JITLIB_DISK_CACHE_BYTES)")

    buckets = sub.add_parser("buckets", help="shape buckets",
                             description="Shape buckets from the shapes a service "
                             "recorded (run it with JITLIB_RECORD_SHAPES=1).")
    bsub = buckets.add_subparsers(dest="action", metavar="ACTION", required=True)
    suggest = bsub.add_parser("suggest", help="a bucket config from the shapes seen",
                              description="Print a bucket config (TOML) that balances "
                              "compiles against padded work for the recorded shapes.")
    suggest.add_argument("-o", "--output", help="write the config here (default: stdout)")
    suggest.add_argument("--max-waste", type=float, default=0.25,
                         help="largest acceptable fraction of padded work (default 0.25)")
    warm = bsub.add_parser("warm", help="compile every bucket into the disk cache",
                           description="Compile every bucket of CONFIG's rules for the "
                           "recorded functions, and save every recorded length.")
    warm.add_argument("config", help="a bucket config (TOML)")
    return top


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0].startswith("-") and argv[0] not in ("-h", "--help", "--version"):
        argv = ["demo"] + argv   # `jitlib --backend jax` is the demo's option
    args = parser().parse_args(argv)
    if args.command in (None, "demo"):
        from jitlib.demo import run
        run(getattr(args, "backend", None), repeats=getattr(args, "repeats", 15))
        return 0
    from jitlib.cache import cli
    return cli.run(args)
