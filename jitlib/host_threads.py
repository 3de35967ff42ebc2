"""Host work shared between threads: library calls that release the GIL (LAPACK through
SciPy and NumPy, NumPy's pocketfft), run over contiguous groups of independent items.

Threads are started per call and joined before it returns: the calls sharing work here
last milliseconds, a thread's start and join ~0.1 ms, and nothing is left running (or
to re-create after a fork).
"""
import threading

import numpy as np


def map_in_threads(fn, items, threads):
    """[fn(item) for item in items], computed by up to `threads` threads, each taking one
    contiguous group of the items (the calling thread the first). An exception raised in
    any group is raised here."""
    threads = max(1, min(threads, len(items)))
    if threads == 1:
        return [fn(item) for item in items]
    groups = np.array_split(np.arange(len(items)), threads)
    done = [None] * threads

    def run(k):
        try:
            done[k] = [fn(items[i]) for i in groups[k]]
        except BaseException as e:   # raised on the calling thread below
            done[k] = e
    helpers = [threading.Thread(target=run, args=(k,), daemon=True)
               for k in range(1, threads)]
    for helper in helpers:
        helper.start()
    run(0)
    for helper in helpers:
        helper.join()
    out = []
    for part in done:
        if isinstance(part, BaseException):
            raise part
        out.extend(part)
    return out
