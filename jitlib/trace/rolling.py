"""Loop rolling: a Python `for` loop that traced into many copies of one step becomes one
`while` op again.

Tracing runs the user's Python, so `for t in range(1000): A = step(A)` records a
thousand copies of `step`. While jit traces, the builder logs every instruction asked
for (found or new) with the user's line that asked (`build.locations(..., log)`). Each
trip of a Python loop asks for the same lines in the same order, so a loop shows up in
the log as a run of keys (line, op) repeating with some period.

A run found that way is only a candidate; it rolls when its trips are *isomorphic*:

  For trips 2..k, each step's signature is the same: its op, type and attributes, and
  for each operand whether it is an earlier step of the same trip (by position), a
  step of the trip before (by position: a carried value), or one value from outside
  the loop, the same in every trip.

Then, by induction over the trips, a body that replays the signature on the carried
values computes trip j from trip j-1 exactly; so trip 1 stays as traced (it gives the
carry its first values) and trips 2..k become `while` with trip_count=k-1. The values
used after the loop are the last trip's, which are the loop's outputs. A trip's value
used after the loop by anything but the next trip (a list of every step's value),
differing constants (the loop index used as a number), a new parameter per trip (a
global read, np.random): each breaks the check somewhere, and that loop stays straight
line. Rolling never removes an instruction it has not proven equal to a loop output,
so what it gets wrong costs speed, never values.

Loops inside a candidate's trips are rolled first, trip by trip, so nested loops roll
from the inside out: an inner loop becomes one `while` in each outer trip, and the
outer trips are then compared with those in them.
"""
from jitlib.hlo import build, dtypes
from jitlib.hlo.ir import Module
from jitlib.hlo.ops import Op
from jitlib.trace import loop_source, trip_counters

MIN_TRIPS = 3        # a loop of fewer trips stays straight line
MIN_OPS = 64         # as does one whose trips hold fewer steps in all
_CANDIDATES = 8      # periods tried at a position: the next occurrences of its key
_NEVER = float("inf")


def roll(module, log):
    """`module` (a trace's Module) with the repeated trips of its Python loops, found in
    `log` (the trace's (instr, loc) per builder call), rolled into `while` ops."""
    if len(log) < MIN_OPS:
        return module
    roller = _Roller(module, log)
    roller.segment(list(range(len(log))))
    if not roller.replace:
        return module
    return module.with_results(roller.rebuilt(module.results))


class _Roller:
    """The log as parallel lists indexed by entry, and the rolls made so far. Rolled
    loops add entries (their `while` and its get_outputs) past the logged ones."""

    def __init__(self, module, log):
        self.instrs = [instr for instr, _ in log]
        self.locs = [loc for _, loc in log]
        key_ids = {}
        self.keys = [key_ids.setdefault((loc, instr.op), len(key_ids)) for instr, loc in log]
        self.at = list(range(len(log)))   # an entry's place in trace order
        self.replace = {}   # a rolled trip's value -> the loop output that stands for it
        self.depth = {}     # a rolled `while` -> how many rolled loops nest in it, itself too
        self.first_seen, self.last_use = {}, {}
        alive = set(module.instructions)
        for t, instr in enumerate(self.instrs):
            self.first_seen.setdefault(instr, t)
            if instr in alive:   # a dead request (a probe, a region's fix-up) uses nothing
                for o in instr.operands:
                    self.last_use[o] = t
        for r in module.results:
            self.last_use[r] = _NEVER

    def value(self, x):
        """What stands for `x` now: a loop output where `x`'s trip was rolled."""
        replace = self.replace
        while x in replace:
            x = replace[x]
        return x

    # -- finding the runs

    def segment(self, ids):
        """`ids` (entries in trace order) with the loops in them rolled."""
        keys, out, s, n = self.keys, [], 0, len(ids)
        if n < MIN_OPS:
            return ids
        following = _next_same([keys[e] for e in ids])
        while s < n:
            found = self._periodic(ids, following, s)
            if found is None:
                out.append(ids[s])
                s += 1
                continue
            period, trips = found
            rolled = [self.segment(ids[s + j * period:s + (j + 1) * period])
                      for j in range(trips)]
            out += self._roll_trips(rolled)
            s += period * trips
        return out

    def _periodic(self, ids, following, s):
        """(period, trips) of the longest-lived repetition of keys starting at `s`, trying
        the next few occurrences of `s`'s key as the period; None if none repeats."""
        keys, n = self.keys, len(ids)
        t = following[s]
        for _ in range(_CANDIDATES):
            if t is None:
                return None
            period = t - s
            if s + period * MIN_TRIPS > n:
                return None
            run = 0
            while s + run + period < n and keys[ids[s + run]] == keys[ids[s + run + period]]:
                run += 1
            trips = run // period + 1
            if trips >= MIN_TRIPS and trips * period >= MIN_OPS:
                return period, trips
            t = following[t]
        return None

    # -- checking and rolling a run

    def _roll_trips(self, trips):
        """The entries of `trips` (lists of entries, one a trip), the longest stretch of
        isomorphic trips among them rolled into a loop."""
        flat = [e for trip in trips for e in trip]
        if len({len(trip) for trip in trips}) != 1:
            return flat   # loops inside rolled differently from trip to trip
        compared = [None] + [self._signature(trips[j - 1], trips[j])
                             for j in range(1, len(trips))]
        first, last = _longest_equal_stretch([c and c[0] for c in compared])
        count = last - first + 1
        if count + 1 < MIN_TRIPS or (count + 1) * len(trips[0]) < MIN_OPS:
            return flat
        signature = compared[first][0]
        counted = {}   # position -> (base, step) of its number in trip n: base + step * n
        numbers = [compared[j][1] for j in range(first, last + 1)]
        for k, (i, _) in enumerate(numbers[0]):
            spec = trip_counters.progression([trip[k][1] for trip in numbers], signature[i][2])
            if spec is None:
                return flat   # the loop index used in a way the counter cannot follow
            counted[i] = spec
        loop = self._loop(trips[first - 1], trips[first:last + 1], signature, counted)
        if loop is None:
            return flat
        return [e for trip in trips[:first] for e in trip] + loop \
            + [e for trip in trips[last + 1:] for e in trip]

    def _signature(self, before, trip):
        """(signature, numbers) of `trip`. The signature has per entry (op, shape,
        dtype, attrs, operands), each operand the position of an earlier entry of `trip`
        (an int >= 0), -1 - the position of an entry of `before` (the trip before: a
        carried value), or the value itself. Scalar constants and slices are compared
        without their number (trip_counters.abstract): `numbers` has (position, number)."""
        instrs, value = self.instrs, self.value
        earlier = {}
        for m, e in enumerate(before):
            earlier.setdefault(value(instrs[e]), m)
        here, signature, numbers = {}, [], []
        for i, e in enumerate(trip):
            x = value(instrs[e])
            operands = []
            for o in x.operands:
                o = value(o)
                m = here.get(o)
                if m is None:
                    m = earlier.get(o)
                    operands.append(o if m is None else -1 - m)
                else:
                    operands.append(m)
            attrs, number = trip_counters.abstract(x)
            if number is not None:
                numbers.append((i, number))
            signature.append((x.op, x.shape, x.dtype, attrs, tuple(operands)))
            here.setdefault(x, i)
        return signature, numbers

    def _loop(self, peeled, trips, signature, counted):
        """The entries standing for `trips` rolled into a `while` that starts from the
        values of `peeled` (the trip before them), or None where that is not exact."""
        instrs, value = self.instrs, self.value
        start, end = self.at[trips[0][0]], self.at[trips[-1][-1]]
        last = trips[-1]
        inside = set()   # values first made in the rolled trips: they exist only there
        for trip in trips:
            for e in trip:
                x = value(instrs[e])
                if self.first_seen.get(x, start) >= start:
                    inside.add(x)
        last_values = [value(instrs[e]) for e in last]
        first_at = {}
        for m, x in enumerate(last_values):
            first_at.setdefault(x, m)
        exits = sorted({first_at[x] for x in last_values
                        if x in inside and self.last_use.get(x, -1) > end})
        if not exits:
            return None   # nothing after the loop reads it: leave it to dead-code removal
        last_set = set(last_values)
        for trip in trips[:-1]:
            for e in trip:
                x = value(instrs[e])
                if x in inside and x not in last_set and self.last_use.get(x, -1) > end:
                    return None   # a trip's value outlives the loop: it stays straight line
        return self._emit(peeled, trips, signature, exits, inside, counted)

    def _emit(self, peeled, trips, signature, exits, inside, counted):
        live, carried = _needed(signature, exits)
        for i in live:
            for o in signature[i][4]:
                if o.__class__ is not int and o in inside:
                    return None   # read from an earlier trip than the one before
        instrs, value = self.instrs, self.value
        init = [value(instrs[peeled[m]]) for m in carried]
        if any((x.shape, x.dtype) != signature[m][1:3] for x, m in zip(init, carried)):
            return None   # the carry's type settles after the first trip: keep that one
        captured, seen = [], set()
        for i in live:
            for o in signature[i][4]:
                if o.__class__ is not int and o not in seen:
                    seen.add(o)
                    captured.append(o)
        first = trips[0]
        inner = [self.depth.get(value(instrs[e]), 0) for e in first]
        depth = 1 + max(inner, default=0)
        loc = loop_source.loop_location([self.locs[first[i]] for i in live])
        steps = [(value(instrs[e]), self.locs[e]) for e in first]
        loop = _while_op(signature, live, carried, init, captured, len(trips), depth, loc,
                         steps, counted)
        return self._record(loop, trips, carried, depth, loc)

    def _record(self, loop, trips, carried, depth, loc):
        """Log entries for `loop` and its outputs (what outer loops compare), and the
        last trip's values it stands for."""
        end = self.at[trips[-1][-1]]
        key = self.keys[trips[0][0]]
        entries = []
        outputs = build.outputs(loop, loc)
        self.depth[loop] = depth
        for k, x in enumerate([loop] + [outputs[1 + n] for n in range(len(carried))]):
            self.instrs.append(x)
            self.locs.append(loc)
            self.keys.append(("loop", key, len(trips[0]), len(trips), k))
            self.at.append(end)
            self.first_seen.setdefault(x, end)
            entries.append(len(self.instrs) - 1)
        last = trips[-1]
        for n, m in enumerate(carried):
            x = self.value(self.instrs[last[m]])
            self.last_use[outputs[1 + n]] = self.last_use.get(x, -1)
            self.replace[x] = outputs[1 + n]
        self.last_use[loop] = end
        return entries

    # -- the module with the rolls in it

    def rebuilt(self, results):
        """`results` rebuilt over the loop outputs that replace rolled trips' values."""
        value, memo = self.value, {}
        for root in results:
            stack = [value(root)]
            while stack:
                x = stack[-1]
                if x in memo:
                    stack.pop()
                    continue
                pending = [v for v in map(value, x.operands) if v not in memo]
                if pending:
                    stack += pending
                    continue
                stack.pop()
                operands = [memo[value(o)] for o in x.operands]
                same = all(a is b for a, b in zip(operands, x.operands))
                memo[x] = x if same else build.make(x.op, operands, x.attrs, loc=x.loc)
        return [memo[value(r)] for r in results]


def _next_same(keys):
    """For each position, the next position with the same key (None past the last)."""
    following, seen = [None] * len(keys), {}
    for t in range(len(keys) - 1, -1, -1):
        following[t] = seen.get(keys[t])
        seen[keys[t]] = t
    return following


def _longest_equal_stretch(signatures):
    """(first, last): the longest stretch of equal signatures, from index 1 on."""
    best, start = (1, 1), 1
    for j in range(2, len(signatures) + 1):
        if j == len(signatures) or signatures[j] != signatures[start]:
            if j - 1 - start > best[1] - best[0]:
                best = (start, j - 1)
            start = j
    return best


def _needed(signature, exits):
    """(live positions, carried positions), both sorted: what the loop's outputs need,
    and which of those a trip takes from the trip before."""
    live, carried, work = set(exits), set(exits), list(exits)
    while work:
        for o in signature[work.pop()][4]:
            if o.__class__ is int:
                m = o if o >= 0 else -1 - o
                if o < 0:
                    carried.add(m)
                if m not in live:
                    live.add(m)
                    work.append(m)
    return sorted(live), sorted(carried)


def _while_op(signature, live, carried, init, captured, trips, depth, loc, steps, counted):
    """The `while` running `trips` trips of `signature`: a trip counter, the `carried`
    positions (starting from `init`), then the `captured` outside values, passed on.
    `steps`: (instr, loc) of the first rolled trip; `counted`: the positions whose
    number the counter gives (trip_counters)."""
    name = f"l{depth}_"
    with build.locations(lambda: None):
        counter = build.parameter(0, (), dtypes.INDEX, name + "0")
        params = [build.parameter(1 + n, signature[m][1], signature[m][2], f"{name}{1 + n}")
                  for n, m in enumerate(carried)]
        base = 1 + len(params)
        outside = [build.parameter(base + n, x.shape, x.dtype, f"{name}{base + n}")
                   for n, x in enumerate(captured)]
        carry_of = {m: p for m, p in zip(carried, params)}
        outside_of = dict(zip(captured, outside))
        made = {}
        for i in live:
            op, _, _, attrs, operands = signature[i]
            operands = [outside_of[o] if o.__class__ is not int
                        else made[o] if o >= 0 else carry_of[-1 - o] for o in operands]
            x, at = steps[i]
            if i in counted:
                made[i] = trip_counters.build_step(x, counted[i], operands, counter, at)
            else:
                made[i] = build.make(op, operands, attrs, loc=at)
        one = build.constant(dtypes.INDEX.type(1))
        body = Module("body", [counter] + params + outside,
                      [build.binary(Op.ADD, counter, one)] + [made[m] for m in carried]
                      + outside)
        limit = build.constant(dtypes.INDEX.type(trips))
        cond = Module("cond", [counter] + params + outside,
                      [build.compare(counter, limit, "LT")])
        zero = build.constant(dtypes.INDEX.type(0))
        return build.make(Op.WHILE, [zero] + init + captured,
                          dict(cond=cond, body=body, trip_count=trips), loc=loc)
