"""Where a rolled loop is in the user's source: the line of its `for` statement.

The roller knows the lines its loop's steps came from, not the loop itself; those
lines sit in the body of a `for` (or in functions the body calls, which sit in no
loop of theirs). So the loop is the `for` of the user's file around the most steps'
lines, the innermost of those that tie: an outer loop's `for` holds its inner loop's
lines too. The file is parsed once.
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
        for first, last in _for_statements(loc.file):
            if first <= loc.line <= last:
                votes[(loc.file, first, last, loc.function)] += 1
    if not votes:
        return next((loc for loc in locs if loc is not None), None)
    file, line, _, function = max(votes, key=lambda k: (votes[k], k[1] - k[2]))
    return SourceLocation(file, line, function)


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
