"""What `jitlib cache ...` and `jitlib buckets ...` do (the parser is jitlib/cli.py)."""
import collections
import datetime
import importlib
import json
import os
import sys

import numpy as np

from jitlib.cache import disk, planner, shapes


def run(args):
    directory = disk.cache_dir()
    if directory is None:
        print("the disk cache is off (JITLIB_CACHE_DIR is empty)", file=sys.stderr)
        return 1
    if args.command == "cache":
        if args.action == "info":
            return _info(directory, args.all)
        if args.action == "clear":
            return _clear(directory)
        return _prune(directory, args.max_bytes)
    if args.action == "suggest":
        return _suggest(directory, args.output, args.max_waste)
    return _warm(directory, args.config)


def _info(directory, everything):
    store = disk.DiskCache(directory)
    entries = store.entries()
    sizes = {path: _size(path) for path, _ in entries}
    kinds = collections.Counter(meta.get("kind", "?") for _, meta in entries)
    print(f"directory: {directory}")
    print(f"entries:   {len(entries)}, {_bytes(sum(sizes.values()))} of "
          f"{_bytes(disk.max_bytes())} (JITLIB_DISK_CACHE_BYTES)"
          + (": " + ", ".join(f"{n} {kind}" for kind, n in sorted(kinds.items()))
             if kinds else ""))
    stats = store.stats()
    looked = stats.get("hits", 0) + stats.get("misses", 0)
    rate = f"{100 * stats.get('hits', 0) / looked:.1f}%" if looked else "-"
    print(f"hit rate:  {rate} ({stats.get('hits', 0)} hits, {stats.get('misses', 0)} "
          f"misses; {stats.get('evicted', 0)} evicted, {stats.get('discarded', 0)} bad "
          "entries removed)")
    docs = shapes.load_all(directory)
    print(f"shapes:    recorded for {len(docs)} functions"
          + ("" if shapes.recording() else " (JITLIB_RECORD_SHAPES=1 records them)"))
    if everything:
        print(f"{'last used':19}  {'kind':16}  {'bytes':>9}  what")
        for path, meta in reversed(entries):   # most recently used first
            what = meta.get("symbol") or meta.get("kernel") or meta.get("module") or \
                os.path.basename(path)[:16]
            used = datetime.datetime.fromtimestamp(_mtime(path)).strftime(
                "%Y-%m-%d %H:%M:%S")
            print(f"{used}  {meta.get('kind', '?'):16}  {sizes[path]:>9}  {what}")
    return 0


def _size(path):
    try:
        return os.lstat(path).st_size
    except OSError:
        return 0


def _mtime(path):
    try:
        return os.lstat(path).st_mtime
    except OSError:
        return 0


def _bytes(n):
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n} bytes" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024


def _clear(directory):
    print(f"removed {disk.DiskCache(directory).clear()} files from {directory}")
    return 0


def _prune(directory, max_bytes):
    if max_bytes is not None:
        os.environ["JITLIB_DISK_CACHE_BYTES"] = max_bytes   # parsed as the variable is
        limit = disk.max_bytes()
    else:
        limit = int(disk.max_bytes() * 0.9)
    store = disk.DiskCache(directory)
    removed, freed = store.prune(limit)
    store.flush_stats()   # its evictions count in `cache info`
    entries, left = store.usage()
    print(f"removed {removed} entries ({_bytes(freed)}); {entries} entries, "
          f"{_bytes(left)} left (pruned to {_bytes(limit)})")
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
