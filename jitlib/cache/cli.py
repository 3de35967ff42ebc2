"""`python -m jitlib cache info|clear` and `python -m jitlib buckets suggest|warm CONFIG`."""
import argparse
import collections
import importlib
import json
import os
import sys

import numpy as np

from jitlib.cache import disk, planner, shapes


def main(argv):
    parser = argparse.ArgumentParser(prog="python -m jitlib")
    sub = parser.add_subparsers(dest="group", required=True)
    cache = sub.add_parser("cache", help="the persistent compile cache")
    cache.add_argument("action", choices=["info", "clear"])
    buckets = sub.add_parser("buckets", help="shape buckets")
    bsub = buckets.add_subparsers(dest="action", required=True)
    suggest = bsub.add_parser("suggest", help="a bucket config from the shapes seen")
    suggest.add_argument("-o", "--output", help="write the config here (default: stdout)")
    suggest.add_argument("--max-waste", type=float, default=0.25,
                         help="largest acceptable fraction of padded work (default 0.25)")
    warm = bsub.add_parser("warm", help="compile every bucket into the disk cache")
    warm.add_argument("config")
    args = parser.parse_args(argv)
    directory = disk.cache_dir()
    if directory is None:
        print("the disk cache is off (JITLIB_CACHE_DIR is empty)", file=sys.stderr)
        return 1
    if args.group == "cache":
        return _info(directory) if args.action == "info" else _clear(directory)
    if args.action == "suggest":
        return _suggest(directory, args.output, args.max_waste)
    return _warm(directory, args.config)


def _info(directory):
    store = disk.DiskCache(directory)
    entries = store.entries()
    size = sum(os.path.getsize(p) for p, _ in entries)
    kinds = collections.Counter(meta.get("kind", "?") for _, meta in entries)
    print(f"directory: {directory}")
    print(f"entries:   {len(entries)}, {size / 1024:.1f} KiB ("
          + ", ".join(f"{n} {kind}" for kind, n in sorted(kinds.items())) + ")")
    for path, meta in entries[:20]:
        what = meta.get("symbol") or meta.get("kernel") or meta.get("module") or "?"
        print(f"  {os.path.basename(path)[:16]}  {meta.get('kind', '?'):16}  {what}  "
              f"{meta.get('size', '?')} bytes")
    docs = shapes.load_all(directory)
    print(f"shapes:    recorded for {len(docs)} functions")
    return 0


def _clear(directory):
    print(f"removed {disk.DiskCache(directory).clear()} files from {directory}")
    return 0


def _suggest(directory, output, max_waste):
    docs = shapes.load_all(directory)
    if not docs:
        print(f"no shapes recorded under {directory}: run the service first",
              file=sys.stderr)
        return 1
    text = planner.suggest_toml(docs, max_waste)
    if output:
        with open(output, "w") as f:
            f.write(text)
    else:
        print(text)
    return 0


def _warm(directory, config_path):
    """For each recorded function a rule matches: call it once per bucket size with
    zero arrays of the recorded shapes, so every bucket program lands in the cache; then
    once per recorded length, checked against its bucket's proof and saved, so that a
    new process's first call at any of them runs after one trace (buckets/saved.py)."""
    from jitlib.buckets import config
    rules = config.load(config_path)
    os.environ["JITLIB_BUCKETS"] = os.path.abspath(config_path)
    compiled = 0
    for doc in shapes.load_all(directory):
        names = (doc["qualname"], f"{doc['module']}.{doc['qualname']}")
        matching = [r for r in rules if any(r.matches(n) for n in names)]
        if not matching or not doc["calls"]:
            continue
        fn = _import(doc["module"], doc["qualname"])
        template = max(doc["calls"], key=lambda c: c["count"])["args"]
        for rule in matching:
            position = next(i for i, (name, _, _) in enumerate(template)
                            if name == rule.arg or i == rule.arg)
            recorded = sorted({c["args"][position][1][rule.axis] for c in doc["calls"]})
            for size in rule.all_buckets():
                fn(*_zeros(template, position, rule.axis, size))
                compiled += 1
            layer = getattr(fn, "_buckets", None)
            for n in recorded if layer is not None else ():
                layer(_zeros(template, position, rule.axis, n), {}, verify=True)
        print(f"warmed {doc['module']}.{doc['qualname']}: {compiled} bucket calls")
    print(json.dumps({"bucket_calls": compiled, "cache": directory}))
    return 0


def _zeros(template, position, axis, size):
    """Zero arrays of the recorded shapes, argument `position`'s `axis` at `size`."""
    args = []
    for i, (_, shape, dtype) in enumerate(template):
        shape = list(shape)
        if i == position:
            shape[axis] = size
        args.append(np.zeros(shape, dtype))
    return args


def _import(module, qualname):
    sys.path.insert(0, os.getcwd())
    obj = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj
