"""Bucket sizes from the sizes a function has seen: few compiles, little padding.

For one axis, the seen lengths (with call counts) are split into k contiguous groups,
each padded to its largest length; dynamic programming finds, for every k, the split
with the least padded work. The plan is the smallest k whose expected waste (padded
elements / computed elements, weighted by calls) is at most `max_waste`.
"""
from typing import NamedTuple


class Plan(NamedTuple):
    sizes: tuple          # the bucket sizes
    waste: float          # expected fraction of computed elements that are padding
    compiles: int


def plan(counts, max_waste=0.25):
    """counts: {length: calls}. The fewest buckets keeping waste <= max_waste."""
    lengths = sorted(n for n in counts if n > 0)
    if not lengths:
        return Plan((), 0.0, 0)
    calls = [counts[n] for n in lengths]
    total = sum(n * c for n, c in zip(lengths, calls))
    m = len(lengths)

    def group_cost(i, j):   # lengths[i..j] padded to lengths[j]
        return sum(c * (lengths[j] - n) for n, c in zip(lengths[i:j + 1], calls[i:j + 1]))

    inf = float("inf")
    best = [[inf] * m for _ in range(m + 1)]   # best[k][j]: k groups covering 0..j
    cut = [[-1] * m for _ in range(m + 1)]
    for j in range(m):
        best[1][j] = group_cost(0, j)
    for k in range(1, m + 1):
        if k > 1:
            for j in range(k - 1, m):
                for i in range(k - 1, j + 1):
                    cost = best[k - 1][i - 1] + group_cost(i, j)
                    if cost < best[k][j]:
                        best[k][j], cut[k][j] = cost, i
        waste = best[k][m - 1] / (total + best[k][m - 1])
        if waste <= max_waste or k == m:
            sizes, j = [], m - 1
            for kk in range(k, 0, -1):
                sizes.append(lengths[j])
                j = cut[kk][j] - 1 if kk > 1 else -1
            return Plan(tuple(reversed(sizes)), waste, k)
    raise AssertionError("unreachable")


def varying_axes(calls):
    """From recorded calls [{"args": [[name, shape, dtype]...], "count"}]: for each
    (arg, axis) whose length varies, {length: calls}."""
    out = {}
    ranks = {}
    for call in calls:
        for name, shape, _ in call["args"]:
            ranks.setdefault(name, set()).add(len(shape))
    for name, rank in ranks.items():
        if len(rank) != 1:
            continue
        for axis in range(rank.pop()):
            counts = {}
            for call in calls:
                for n, shape, _ in call["args"]:
                    if n == name:
                        counts[shape[axis]] = counts.get(shape[axis], 0) + call["count"]
            if len(counts) > 1:
                out[(name, axis)] = counts
    return out


def suggest_toml(docs, max_waste=0.25):
    """The bucket config text for every recorded function, with the expected waste."""
    lines = [f"# written by `python -m jitlib buckets suggest` (max waste {max_waste:.0%})", ""]
    for doc in docs:
        function = f"{doc['module']}.{doc['qualname']}"
        for (arg, axis), counts in sorted(varying_axes(doc["calls"]).items()):
            p = plan(counts, max_waste)
            lines += [f"# {function} {arg!r} axis {axis}: {len(counts)} sizes seen in "
                      f"{sum(counts.values())} calls -> {p.compiles} compiles, expected "
                      f"padding waste {p.waste:.1%}",
                      "[[bucket]]", f'function = "{function}"', f'arg = "{arg}"',
                      f"axis = {axis}", f"sizes = {list(p.sizes)}",
                      f"max = {p.sizes[-1]}", "pad_value = 0.0", ""]
    return "\n".join(lines)
