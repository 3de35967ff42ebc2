"""Where a rolled loop is in the user's source: the line of its `for` statement.

The roller knows the lines its loop's steps came from, not the loop itself; those
lines sit in the body of a `for` (or in functions the body calls, which sit in no
loop of theirs). So the loop is the innermost `for` of the user's file around most of
the steps' lines, found by parsing the file once.
"""
import ast
import collections
import linecache

from jitlib.errors import SourceLocation

_parsed = {}   # file -> (its source text, its `for` statements' (first, last) lines)


def loop_location(locs):
    """The location of the `for` statement around most of `locs` (SourceLocations or
    None); the first known location where no `for` is found."""
    votes = collections.Counter()
    for loc in locs:
        if loc is None:
            continue
        line = _innermost_for(loc.file, loc.line)
        if line is not None:
            votes[SourceLocation(loc.file, line, loc.function)] += 1
    if votes:
        return votes.most_common(1)[0][0]
    return next((loc for loc in locs if loc is not None), None)


def _innermost_for(file, line):
    best = None
    for first, last in _for_statements(file):
        if first <= line <= last and (best is None or last - first < best[1] - best[0]):
            best = (first, last)
    return best[0] if best is not None else None


def _for_statements(file):
    source = "".join(linecache.getlines(file))
    known = _parsed.get(file)
    if known is not None and known[0] == source:
        return known[1]
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        found = ()
    else:
        found = tuple((node.lineno, node.end_lineno) for node in ast.walk(tree)
                      if isinstance(node, (ast.For, ast.AsyncFor)))
    _parsed[file] = (source, found)
    return found
