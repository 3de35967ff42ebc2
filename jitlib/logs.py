"""What jitlib reports, by topic: `JITLIB_LOG=compiles,recompiles` prints those to stderr.

    compiles    each compile: the function, its signature, how long it took
    recompiles  why a function compiled again (what differs from the nearest cached call)
    cache       the disk cache: entries read, written, evicted, bad ones removed
    buckets     shape buckets: calls compiled past a rule's max, masked inputs
    passes      the optimizer: the module before and after, each pass's diff, every
                fusion decision with its reason (the verifier then runs after each pass)
    ir          the traced IR of each compile
    kernels     each compiled kernel's generated source
    all         every topic

Each topic logs at INFO on its own logger, `jitlib.<topic>`. A topic is on when
JITLIB_LOG names it, or when the user sets that logger (or `jitlib`) to INFO or below.
Where the user has configured no handler (on `jitlib` or the root logger), jitlib adds
one to `jitlib` that prints `jitlib: <topic>: <message>` to stderr, so JITLIB_LOG needs
no `logging` set-up. JITLIB_DEBUG=1..4, the old switch, still works (deprecated): 1 is
compiles,cache; 2 and 3 add ir,passes; 4 adds kernels. Warnings (a bad cache entry, a cache directory that cannot be
written) print whatever JITLIB_LOG says; so does a compile past `SLOW_COMPILE_S`, with a
progress line (kernels compiled / total).
"""
import contextlib
import logging
import os
import sys
import threading
import time

from jitlib import forksafe

TOPICS = ("compiles", "recompiles", "cache", "buckets", "passes", "ir", "kernels")

root = logging.getLogger("jitlib")
_loggers = {topic: logging.getLogger(f"jitlib.{topic}") for topic in TOPICS}
_parsed = [None, frozenset()]   # (JITLIB_LOG text, its topics): parsed once per value

# a compile past this many seconds reports its progress
SLOW_COMPILE_S = 2.0


def parse(text):
    """The topics of a JITLIB_LOG value; an unknown one is an error naming the valid."""
    topics = {t.strip().lower() for t in text.split(",")} - {""}
    if "all" in topics:
        return frozenset(TOPICS)
    unknown = sorted(topics - set(TOPICS))
    if unknown:
        raise ValueError(f"JITLIB_LOG: unknown topic {', '.join(map(repr, unknown))}; "
                         f"valid: {', '.join(TOPICS)}, all")
    return frozenset(topics)


# JITLIB_DEBUG=N, the old way, read as the topics of its levels (deprecated)
_DEBUG_LEVELS = {1: ("compiles", "cache"), 2: ("compiles", "cache", "ir", "passes"),
                 3: ("compiles", "cache", "ir", "passes"),
                 4: ("compiles", "cache", "ir", "passes", "kernels")}


def _env_topics():
    text = os.environ.get("JITLIB_LOG", "")
    debug = os.environ.get("JITLIB_DEBUG", "")
    if (text, debug) != _parsed[0]:
        topics = parse(text)
        if debug:
            topics |= _debug_topics(debug)
        # the levels JITLIB_LOG set before are its own to undo
        for topic in _parsed[1] - topics:
            _loggers[topic].setLevel(logging.NOTSET)
        for topic in topics:
            _loggers[topic].setLevel(logging.INFO)
        _parsed[:] = [(text, debug), topics]
    return _parsed[1]


def _debug_topics(debug):
    try:
        level = min(int(debug), 4)
    except ValueError:
        level = 0
    topics = frozenset(_DEBUG_LEVELS.get(level, ()))
    if topics:
        _ensure_handler()
        root.warning("JITLIB_DEBUG=%s is deprecated: use JITLIB_LOG=%s", debug,
                     ",".join(sorted(topics)))
    return topics


def enabled(topic):
    """Whether `topic` is logged: for messages costly to build (IR text, diffs)."""
    if topic in _env_topics():
        return True
    level = _loggers[topic].level or root.level
    return logging.NOTSET < level <= logging.INFO


def log(topic, message, *args):
    """`message % args` on the topic's logger, if the topic is on."""
    if enabled(topic):
        _ensure_handler()
        _loggers[topic].info(message, *args)


def warning(topic, message, *args):
    """A warning on the topic's logger, printed whether or not the topic is on."""
    _ensure_handler()
    _loggers[topic].warning(message, *args)


class _Formatter(logging.Formatter):
    def format(self, record):
        topic = record.name[len("jitlib."):] if record.name.startswith("jitlib.") else ""
        return f"jitlib: {topic + ': ' if topic else ''}{record.getMessage()}"


class _StderrHandler(logging.StreamHandler):
    """Prints to the sys.stderr of the moment (a test or a tool may replace it), and
    stands aside once the user has configured a root handler of their own."""

    def emit(self, record):
        if logging.getLogger().handlers:
            return
        self.stream = sys.stderr
        super().emit(record)


_handler_lock = forksafe.lock()


def _ensure_handler():
    if root.handlers or logging.getLogger().handlers:
        return   # the user's (or ours, already)
    with _handler_lock:
        if not root.handlers:
            handler = _StderrHandler()
            handler.setFormatter(_Formatter())
            root.addHandler(handler)


def reset():
    """Remove jitlib's own handler and the levels JITLIB_LOG set (for tests)."""
    for handler in [h for h in root.handlers if isinstance(h, _StderrHandler)]:
        root.removeHandler(handler)
    for topic in _parsed[1]:
        _loggers[topic].setLevel(logging.NOTSET)
    _parsed[:] = [None, frozenset()]


# -- compile progress

_current = threading.local()


class Progress:
    """One program's compile on this thread: reports once it runs past SLOW_COMPILE_S,
    then at most once a second, with the kernels compiled so far out of `total`."""

    def __init__(self, name):
        self.name, self.total, self.done = name, 0, 0
        self.start = self._reported = time.perf_counter()
        self.reported = False
        self._lock = forksafe.lock()

    def tick(self, n=1):
        """`n` more kernels compiled (any thread: a helper thread compiles some)."""
        with self._lock:
            self.done += n
            now = time.perf_counter()
            if now - self.start < SLOW_COMPILE_S or (
                    self.reported and now - self._reported < 1.0):
                return
            self.reported, self._reported = True, now
        _progress_line("compiling %s: %d/%d kernels, %.1f s so far", self.name,
                       min(self.done, self.total), self.total, now - self.start)

    def finish(self):
        elapsed = time.perf_counter() - self.start
        if elapsed >= SLOW_COMPILE_S:
            _progress_line("compiled %s: %d kernels in %.1f s", self.name, self.total,
                           elapsed)


def _progress_line(message, *args):
    _ensure_handler()
    # shown whatever JITLIB_LOG says: a user waiting on a long compile wants to know
    level = logging.INFO if enabled("compiles") else logging.WARNING
    _loggers["compiles"].log(level, message, *args)


@contextlib.contextmanager
def compiling(name):
    """`with compiling(name) as progress:` a program's compile on this thread; the
    backend sets `progress.total`, its compiler ticks `current()` per kernel."""
    outer = getattr(_current, "progress", None)
    progress = _current.progress = Progress(name)
    try:
        yield progress
    finally:
        _current.progress = outer
    progress.finish()


def current():
    """The Progress of the compile running on this thread, or None."""
    return getattr(_current, "progress", None)
