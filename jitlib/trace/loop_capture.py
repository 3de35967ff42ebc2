"""Python `for` loops traced once: the body of `for t in range(n): ...` becomes one
`while` region, checked by two ordinary trips first, so tracing a loop costs the same at
10 trips and at 10,000.

The roller (`rolling.py`) finds repeated trips in a finished trace, but the trace still
ran every trip, at tens of microseconds an op. This module removes that cost before it
is paid. When jit clones a user's function for tracing (`free_values`), each plain
`for` statement of it is rewritten, once per code object, into a call of `run_for` with
the loop body as a nested function of the variables the loop reads or binds:

    for t in range(n):            def _jitlib_for_7(_jitlib_i, A, B, t):
        B[1:-1] = f(A)                t = _jitlib_i
        A[1:-1] = f(B)      ->        B[1:-1] = f(A); A[1:-1] = f(B)
                                      return (A, B, t)
                                  A, B, t = run_for(range(n), _jitlib_for_7, (A, B, t))

`run_for` runs the first two trips as Python, as the loop would. If after them every
traced variable kept its shape and dtype and is either the same array written in place
or a new array (not another variable's), and every other variable is the very object
it was, the trips that remain are the same function of the carried arrays: it traces
the body once more as `fori_loop` over them, and over the two Python trips too where
the state before the first trip is carried as after the second (their ops are then dead
code, never compiled). Anything that says otherwise (a Python
number that changes, the index used as a Python int, a new random draw, a shape that
grows) makes it run the remaining trips as Python, which is what the loop would have
done anyway, so what it cannot prove costs time, never values.

Rewritten are `for NAME in ...:` statements without `else`, whose body has no `return`,
`yield`, `break`/`continue` of this loop, `global`/`nonlocal`, `del`, `try`/`with`, and
no statement that is a bare expression (`hs.append(h)`, `print(x)`): their effects are
outside the variables, where a body traced once cannot repeat them. Those loops stay
Python loops, traced trip by trip and rolled afterwards where their trips repeat.

Loops inside a rewritten body are rewritten too, over the body's variables. While a body
is traced once, an inner `range(...)` with a bound the trace holds (`range(j)` of the
outer counter) has no Python trips to run: it is traced once as a loop of traced length,
what it carries read from the body's text (`_changes`), or fails, and the outer loop
runs as Python.
"""
import ast
import inspect
import textwrap
import threading
import types

from jitlib import config, errors

MIN_TRIPS = 4   # a shorter loop runs as Python: two trips and one traced trip save nothing
PYTHON_TRIPS = 2

_RUN, _STATE, _UNBOUND, _APPEND, _RANGE = (
    "_jitlib_run_for", "_jitlib_state", "_jitlib_unbound", "_jitlib_append", "_jitlib_range")
_HELPER_NAMES = (_RUN, _STATE, _UNBOUND, _APPEND, _RANGE)


class _Unbound:
    """Stands for a variable the loop's scope had not bound (yet)."""

    def __repr__(self):
        return "<unbound>"


UNBOUND = _Unbound()
_rewritten = {}   # code object -> its rewritten code object, or None


# ---------------------------------------------------------------------------- rewriting

def function_code(fn):
    """The code to run `fn` with its `for` loops rewritten (`closure_for` gives its
    closure), or None where it has none to rewrite or its source cannot be read."""
    code = fn.__code__
    if code not in _rewritten:
        if not errors.is_user_file(code.co_filename):
            _rewritten[code] = None
            return None
        try:
            _rewritten[code] = _rewrite(fn)
        except (OSError, TypeError, SyntaxError, ValueError, IndexError):
            _rewritten[code] = None
    return _rewritten[code]


def closure_for(new_code, old_code, cells):
    """The closure of `new_code`: `cells` (for `old_code`'s free variables) by name, and
    the helpers the rewritten loops call."""
    helpers = {_RUN: run_for, _STATE: state_of, _UNBOUND: UNBOUND, _APPEND: append_to,
               _RANGE: range_of}
    by_name = dict(zip(old_code.co_freevars, cells or ()))
    return tuple(by_name[name] if name in by_name else types.CellType(helpers[name])
                 for name in new_code.co_freevars)


def _rewrite(fn):
    code = fn.__code__
    if code.co_flags & (inspect.CO_GENERATOR | inspect.CO_COROUTINE
                        | inspect.CO_ASYNC_GENERATOR) or _in_class(fn.__qualname__) \
            or fn.__name__ in code.co_freevars or fn.__name__ == "<lambda>":
        return None
    lines, first = inspect.getsourcelines(fn)
    tree = ast.parse(textwrap.dedent("".join(lines)))
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.FunctionDef) \
            or tree.body[0].name != fn.__name__:
        return None
    ast.increment_lineno(tree, first - 1)
    fdef = tree.body[0]
    fdef.decorator_list = []
    outer_locals = set(code.co_varnames) | set(code.co_cellvars)
    declared = {n for node in _own_nodes(fdef.body)
                if isinstance(node, (ast.Global, ast.Nonlocal)) for n in node.names}
    mentions = {}
    for node in ast.walk(fdef):
        if isinstance(node, ast.Name):
            mentions[node.id] = mentions.get(node.id, 0) + 1
    rewriter = _Rewriter(outer_locals, declared | set(code.co_freevars), mentions)
    fdef.body = rewriter.statements(fdef.body)
    if not rewriter.count:
        return None
    # compile it inside a factory whose parameters are its free variables, so that the
    # names it closes over (and the helpers) compile as closure cells, not globals
    factory = ast.FunctionDef(
        name="_jitlib_factory",
        args=ast.arguments(posonlyargs=[], args=[
            ast.arg(n) for n in (*_HELPER_NAMES, *code.co_freevars)],
            kwonlyargs=[], kw_defaults=[], defaults=[]),
        body=[fdef, ast.Return(ast.Name(fdef.name, ast.Load()))],
        decorator_list=[], returns=None, type_params=[])
    ast.copy_location(factory, fdef)
    module = ast.Module([factory], type_ignores=[])
    ast.fix_missing_locations(module)
    compiled = compile(module, code.co_filename, "exec")
    (factory_code,) = [c for c in compiled.co_consts if isinstance(c, types.CodeType)]
    (new,) = [c for c in factory_code.co_consts
              if isinstance(c, types.CodeType) and c.co_name == fn.__name__]
    if not set(new.co_freevars) <= set(code.co_freevars) | set(_HELPER_NAMES):
        return None
    return _named_as(new, fn.__name__)


def _named_as(code, name):
    """`code` with its loop bodies named `name`, as locations and tracebacks show them."""
    consts = tuple(_named_as(c, name) if isinstance(c, types.CodeType) else c
                   for c in code.co_consts)
    if code.co_name.startswith("_jitlib_for_"):
        qualname = code.co_qualname.rsplit(".", 1)[0] + "." + name
        return code.replace(co_consts=consts, co_name=name, co_qualname=qualname)
    return code.replace(co_consts=consts)


def _in_class(qualname):
    # a method's names starting with __ were mangled by its class; compiled again outside
    # it they would not be, so methods keep their code
    parts = qualname.split(".")
    return any(p != "<locals>" and q != "<locals>" for p, q in zip(parts, parts[1:]))


def _own_nodes(statements):
    """Every node of `statements`, not descending into nested functions and classes."""
    todo = list(statements)
    while todo:
        node = todo.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda,
                                      ast.ClassDef)):
                todo.append(child)


_REFUSED = (ast.Return, ast.Yield, ast.YieldFrom, ast.Await, ast.Global, ast.Nonlocal,
            ast.Delete, ast.Try, ast.With, ast.AsyncWith, ast.AsyncFor, ast.Import,
            ast.ImportFrom, ast.Expr)
if hasattr(ast, "TryStar"):
    _REFUSED += (ast.TryStar,)


def _capturable(loop, nonlocal_names):
    """The names of the lists the loop's body appends to (`hs.append(h)` statements), or
    None where the loop is not rewritten."""
    if not isinstance(loop, ast.For) or loop.orelse or not isinstance(loop.target, ast.Name):
        return None
    stored, appends, mentions = set(), {}, {}
    todo = [(node, False) for node in loop.body]   # (node, inside a nested loop)
    while todo:
        node, nested = todo.pop()
        listed = _appended_list(node)
        if listed is not None:
            appends[listed] = appends.get(listed, 0) + 1
        elif isinstance(node, _REFUSED) or isinstance(node, (ast.Break, ast.Continue)) \
                and not nested:
            return None
        if isinstance(node, ast.Name):
            mentions[node.id] = mentions.get(node.id, 0) + 1
            if isinstance(node.ctx, ast.Store):
                stored.add(node.id)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda,
                             ast.ClassDef)):
            continue
        inner = nested or isinstance(node, (ast.For, ast.While))
        todo.extend((child, inner) for child in ast.iter_child_nodes(node))
    # a list the body reads (hs[-1]) or rebinds would see the trips a traced body skips
    if stored & nonlocal_names or any(mentions[n] != k or n in stored
                                      for n, k in appends.items()):
        return None
    return set(appends)


def _appended_list(node):
    """N for a statement `N.append(value)`, else None."""
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        call = node.value
        if isinstance(call.func, ast.Attribute) and call.func.attr == "append" \
                and isinstance(call.func.value, ast.Name) and len(call.args) == 1 \
                and not call.keywords and not isinstance(call.args[0], ast.Starred):
            return call.func.value.id
    return None


def _temporaries(body, names, mentions):
    """The names in `names` that each trip binds before it reads them (a plain assignment
    at the top of the body is their first mention) and that nothing outside the loop
    mentions (`mentions`: per name, its count in the whole function): their values do
    not pass from trip to trip, so their shapes may change (a shrinking window)."""
    inside, first = {}, {}
    for k, stmt in enumerate(body):
        for node in ast.walk(stmt):
            if isinstance(node, ast.Name):
                inside[node.id] = inside.get(node.id, 0) + 1
                first.setdefault(node.id, k)
    temporaries = set()
    for name in names:
        if name not in first or inside[name] != mentions.get(name, 0):
            continue
        stmt = body[first[name]]
        bound = _assigned_names(stmt) if isinstance(stmt, ast.Assign) else None
        if isinstance(stmt, ast.For) and isinstance(stmt.target, ast.Name) \
                and stmt.target.id == name:
            # an inner loop's variable: each of its trips binds it first
            temporaries.add(name)
            continue
        if bound is not None and name in bound and not any(
                isinstance(n, ast.Name) and n.id == name for n in ast.walk(stmt.value)):
            temporaries.add(name)
    return temporaries


def _changes(body, names):
    """{position in `names`: "new" or "inplace"} for the names `body` binds anew (a plain
    assignment) or writes into (a subscript assignment, an augmented one)."""
    changes = {}
    for node in (n for stmt in body for n in ast.walk(stmt)):
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, ast.AugAssign) else []
        for target in targets:
            for part in (target.elts if isinstance(target, (ast.Tuple, ast.List))
                         else [target]):
                written = isinstance(part, ast.Subscript) or isinstance(node, ast.AugAssign)
                while isinstance(part, (ast.Subscript, ast.Attribute)):
                    part = part.value
                if isinstance(part, ast.Name) and part.id in names:
                    k = names.index(part.id)
                    if written:
                        changes.setdefault(k, "inplace")
                    else:
                        changes[k] = "new"
    return changes


def _assigned_names(stmt):
    """The names an assignment binds where every target is a name or a tuple or list of
    names (`a = b = ...`, `i, f, g, o = np.split(z, 4)`), else None."""
    names = []
    for target in stmt.targets:
        parts = target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target]
        if not all(isinstance(p, ast.Name) for p in parts):
            return None
        names.extend(p.id for p in parts)
    return names


class _Rewriter:
    def __init__(self, outer_locals, nonlocal_names, mentions, counter=None):
        self.outer_locals, self.nonlocal_names = outer_locals, nonlocal_names
        self.mentions = mentions
        self._counter = counter if counter is not None else [0]

    @property
    def count(self):
        """How many loops were rewritten, nested ones included."""
        return self._counter[0]

    def statements(self, body):
        out = []
        for stmt in body:
            if _capturable(stmt, self.nonlocal_names) is not None:
                out.extend(self._loop(stmt))
                continue
            if isinstance(stmt, (ast.If, ast.For, ast.While)):
                stmt.body = self.statements(stmt.body)
                stmt.orelse = self.statements(stmt.orelse)
            elif isinstance(stmt, (ast.With, ast.Try)):
                stmt.body = self.statements(stmt.body)
            out.append(stmt)
        return out

    def _loop(self, loop):
        self._counter[0] += 1
        count = self.count
        target = loop.target.id
        used = {node.id for stmt in loop.body for node in ast.walk(stmt)
                if isinstance(node, ast.Name)}
        names = sorted((used & self.outer_locals) | {target})
        index_used = any(isinstance(node, ast.Name) and node.id == target
                         and isinstance(node.ctx, ast.Load)
                         for stmt in loop.body for node in ast.walk(stmt))
        temporaries = tuple(names.index(n) for n in sorted(
            _temporaries(loop.body, set(names) - {target}, self.mentions)))
        # how the body changes each name (for a loop of traced length, which has no
        # Python trips to show it): bound anew (`x = ...`) or written (`x[...] = ...`,
        # `x -= ...`)
        changes = _changes(loop.body, names)
        body_name = f"_jitlib_for_{loop.lineno}_{count}"
        params = ", ".join(names)
        unbind = "".join(f"    if {n} is {_UNBOUND}: del {n}\n" for n in names)
        source = (f"def {body_name}(_jitlib_i, {params}):\n{unbind}"
                  f"    {target} = _jitlib_i\n    pass\n"
                  f"    return {_STATE}(locals(), {tuple(names)!r})\n"
                  f"({params},) = {_RUN}(_jitlib_iterable, {body_name}, "
                  f"{_STATE}(locals(), {tuple(names)!r}), {names.index(target)}, "
                  f"{index_used}, {temporaries!r}, {changes!r})\n"
                  + "".join(f"if {n} is {_UNBOUND}: del {n}\n" for n in names))
        made = ast.parse(source).body
        for node in (n for stmt in made for n in ast.walk(stmt)):
            if hasattr(node, "lineno"):
                node.lineno = node.end_lineno = loop.lineno
                node.col_offset, node.end_col_offset = loop.col_offset, loop.col_offset
        body_def = made[0]
        at = next(i for i, s in enumerate(body_def.body) if isinstance(s, ast.Pass))
        # loops inside the body are the body function's own: rewritten over its locals
        # (a Gauss-Seidel row sweep inside the sweeps' loop), so each is traced once too
        assigned = {node.id for stmt in loop.body for node in ast.walk(stmt)
                    if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)}
        inner = _Rewriter(set(names) | assigned, self.nonlocal_names, self.mentions,
                          self._counter)
        body_def.body[at:at + 1] = inner.statements(loop.body)
        call = made[1].value
        call.args[0] = loop.iter
        if isinstance(loop.iter, ast.Call) and isinstance(loop.iter.func, ast.Name) \
                and loop.iter.func.id == "range" and not loop.iter.keywords \
                and not any(isinstance(a, ast.Starred) for a in loop.iter.args):
            # range(j) with j traced (an outer loop's counter) is a loop of traced length
            call.args[0] = ast.Call(ast.Name(_RANGE, ast.Load()),
                                    [loop.iter.func] + loop.iter.args, [])
            ast.copy_location(call.args[0], loop.iter)
            ast.fix_missing_locations(call.args[0])
        for node in (n for stmt in loop.body for n in ast.walk(stmt)):
            listed = _appended_list(node)
            if listed is not None:    # hs.append(v) -> _jitlib_append(hs, v)
                node.value.args.insert(0, node.value.func.value)
                node.value.func = ast.Name(_APPEND, ast.Load())
                ast.copy_location(node.value.func, node.value)
        return made


# ---------------------------------------------------------------------------- running

def state_of(scope, names):
    """The values of `names` in `scope` (a locals() dict), UNBOUND where unbound."""
    return tuple(scope.get(n, UNBOUND) for n in names)


_collecting = threading.local()   # .lists: id(list) -> values its body appended this trip


def append_to(values, value):
    """`values.append(value)`, except while a loop body is traced once for its trips:
    then the value is one trip's entry of a stacked loop output."""
    lists = getattr(_collecting, "lists", None)
    if lists is not None and id(values) in lists:
        lists[id(values)].append(value)
    else:
        values.append(value)


class _NotSteady(Exception):
    """The loop's trips are not one function of its arrays: run it as Python."""


class TracedRange:
    """`range(start, stop)` where a bound is traced, met while a loop body is traced once
    (Gram-Schmidt's `for i in range(j)` inside the loop over j): its trips are a while
    of traced length."""

    step = 1

    def __init__(self, start, stop):
        self.start, self.stop = start, stop


def range_of(callee, *bounds):
    """`callee(*bounds)` (a `for` statement's `range(...)`), or a TracedRange where
    callee is range, a bound is traced and a loop body is being traced once."""
    from jitlib.trace.context import current_trace
    from jitlib.trace.tracer import Tracer
    if callee is not range or not any(isinstance(b, Tracer) for b in bounds) \
            or getattr(current_trace(), "outer", None) is None or len(bounds) > 2:
        return callee(*bounds)
    return TracedRange(*((0,) + bounds if len(bounds) == 1 else bounds))


def _traced_trips(rest, body, state, index, index_used, temporaries, changes):
    """The state after a loop over TracedRange `rest`, traced once; raises _NotSteady
    (the enclosing loop then runs as Python) where it cannot be: the variables it carries
    come from the body's text (`changes`: arrays it binds anew are new values, arrays it
    writes into are written in place), and every other value must stay what it is."""
    from jitlib.trace.tracer import Tracer
    plan = []
    for j, x in enumerate(state):
        if j == index:
            plan.append("index")
        elif j in temporaries:
            plan.append("temporary")
        elif x is UNBOUND or isinstance(x, Tracer) and x._base is not None:
            raise _NotSteady
        elif isinstance(x, Tracer) and j in changes:
            plan.append(changes[j])
        elif j in changes:
            raise _NotSteady     # a Python value the trips change
        else:
            plan.append("same")
    captured = _captured(rest, body, state, plan, index, [0] * len(state), index_used)
    if captured is None:
        raise _NotSteady
    return captured


def run_for(iterable, body, state, index, index_used, temporaries=(), changes=None):
    """What `for i in iterable: state = body(i, *state)` leaves, with the trips traced
    once as a `while` where they provably repeat (all of them, or those past the first
    two). `state[index]` is the loop variable; `index_used`: whether the body reads it;
    `temporaries`: the positions of variables each trip binds before reading and nothing
    after the loop reads."""
    from jitlib.trace.context import current_trace
    if type(iterable) is TracedRange:
        return _traced_trips(iterable, body, state, index, index_used, temporaries,
                             changes or {})
    if type(iterable) is not range or len(iterable) < MIN_TRIPS \
            or current_trace() is None or not config.capture_loops():
        return _python(iterable, body, state)
    grown = []    # per Python trip, how many values each list in the state gained
    start = _Start(state)
    steps_before = _root_steps()
    for i in iterable[:PYTHON_TRIPS]:
        values, lengths = _snapshot(state)
        before, state = state, body(i, *state)
        grown.append([len(x) - n if type(x) is list else 0 for x, n in zip(state, lengths)])
    rest = iterable[PYTHON_TRIPS:]
    plan = _steady(before, state, index, values, temporaries)
    if plan is None or any(g != grown[0] for g in grown):
        return _python(rest, body, state)
    # where the Python trips began as the others do, the loop takes them too: their ops
    # are then dead, and never optimized or compiled (LU's first trips, whose shrinking
    # slices make kernels of their own, were a third of its first call)
    # (not where the Python trips drew numbers: their draws stay, made once each)
    if _steady(start.state, state, index, start.instrs, temporaries) == plan \
            and _root_steps() == steps_before:
        captured = start.rolled(iterable, body, state, plan, index, grown[-1], index_used)
        if captured is not None:
            return captured
    captured = _captured(rest, body, state, plan, index, grown[-1], index_used)
    return captured if captured is not None else _python(rest, body, state)


def _root_trace():
    """The jit trace the current one (a loop body's, a branch's) is nested in."""
    from jitlib.trace.context import current_trace
    root = current_trace()
    while getattr(root, "outer", None) is not None:
        root = root.outer
    return root


def _root_steps():
    return len(_root_trace().call_inputs)


class _Start:
    """The state before a loop's first trip, to roll every trip from it."""

    def __init__(self, state):
        self.state = tuple(state)
        self.instrs, self.lengths = _snapshot(state)

    def rolled(self, iterable, body, state, plan, index, appended, index_used):
        """`_captured` over all of `iterable` from the start; None (and `state` as it
        was after the Python trips) where it cannot be."""
        # (arrays that swap names are back where they began only after whole cycles)
        written = [(self.state[j], self.state[j].instr, self.instrs[j])
                   for j, kind in enumerate(plan) if kind == "inplace" or type(kind) is tuple]
        made = {j: state[j][self.lengths[j]:] for j, n in enumerate(appended) if n}
        for x, _, first in written:
            x._instr = first    # as before the first trip: no write, no effect
        for j in made:
            del state[j][self.lengths[j]:]
        captured = _captured(iterable, body, self.state, plan, index, appended, index_used,
                             typed_by=[(j, made[j]) for j in made])
        if captured is None:
            for x, instr, _ in written:
                x._instr = instr
            for j, items in made.items():
                state[j].extend(items)
        return captured


def _snapshot(state):
    """Each variable's traced value (None for others) and each list's length (0 for
    others)."""
    from jitlib.trace.tracer import Tracer
    return ([x.instr if isinstance(x, Tracer) else None for x in state],
            [len(x) if type(x) is list else 0 for x in state])


def _python(iterable, body, state):
    for i in iterable:
        state = body(i, *state)
    return state


def _steady(before, after, index, values, temporaries=()):
    """Per variable, how the last trip treated it ("inplace", "new" or "same"; "index"
    for the loop variable, "temporary" for one of `temporaries`), or None where the trips
    are not shown to repeat. `values`: the traced variables' values before the trip (an
    array only read stays "same")."""
    from jitlib.trace.tracer import Tracer
    plan = []
    ids_before = {id(x) for x in before}
    for j, (a, b) in enumerate(zip(before, after)):
        if j == index:
            plan.append("index")
        elif j in temporaries:
            plan.append("temporary")
        elif isinstance(a, Tracer) and isinstance(b, Tracer):
            if a.shape != b.shape or a.dtype != b.dtype or a._weak != b._weak \
                    or a._base is not None or b._base is not None:
                return None
            if b is a:
                plan.append("same" if b.instr is values[j] else "inplace")
            elif id(b) not in ids_before:
                plan.append("new")
            else:
                # `u, out = out, u`: j now names the array variable m named
                m = next(m for m, x in enumerate(before) if x is b)
                plan.append(("moved", m))
        elif isinstance(a, Tracer) or isinstance(b, Tracer) or b is not a:
            return None
        else:
            plan.append("same")
    arrays = [id(x) for j, x in enumerate(after)   # none is a view (above)
              if isinstance(x, Tracer) and plan[j] != "temporary"]
    if len(set(arrays)) != len(arrays):
        return None            # two variables name one array: separate carries would not
    moved = [kind[1] for kind in plan if type(kind) is tuple]
    if moved and ("new" in plan or sorted(moved) != sorted(
            j for j, kind in enumerate(plan) if type(kind) is tuple)):
        # arrays that change names must only swap among themselves: an array no name
        # keeps would take its writes with it
        return None
    return plan


def _names_at_end(plan, trips):
    """Per variable, the variable whose array (before the first of `trips` trips) it
    names after them: the trips' renaming (`plan`'s moves) applied `trips` times."""
    step = [kind[1] if type(kind) is tuple else j for j, kind in enumerate(plan)]
    order, power = 1, step
    while power != list(range(len(plan))):
        power, order = [step[k] for k in power], order + 1
    names = list(range(len(plan)))
    for _ in range(trips % order):
        names = [step[k] for k in names]
    return names


def _captured(rest, body, state, plan, index, appended, index_used=False, typed_by=None):
    """The state after `rest` trips traced as one fori_loop, or None where the body did
    something a loop cannot repeat (the trace is left as it was). `appended[j]`: how
    many values the list `state[j]` gains each trip; they become stacked loop outputs,
    typed by the last values of the lists (or by `typed_by`: [(j, the values a list
    gained over the Python trips)], where the lists were cut back)."""
    from jitlib.trace import control_flow, host_random
    from jitlib.trace.context import current_trace
    from jitlib.trace.tracer import StackedRow, Tracer, broadcast
    from jitlib.hlo import build
    root = _root_trace()
    mark = len(root.params), len(root.call_inputs), len(root.tracers)
    carried = [j for j, kind in enumerate(plan) if kind in ("inplace", "new")
               or type(kind) is tuple]
    # one stacked buffer per value a list gains per trip, typed by the last Python trip's
    gained = dict(typed_by) if typed_by is not None else {
        j: state[j] for j, n in enumerate(appended) if n}
    stacks = [(j, q, gained[j][len(gained[j]) - n + q])
              for j, n in enumerate(appended) for q in range(n)]
    if any(not isinstance(item, Tracer) for _, _, item in stacks):
        return None
    n_trips = len(rest) if type(rest) is range else 0   # (a TracedRange appends nothing)
    # with step 1 the counter is the loop variable; otherwise it counts trips, and the
    # loop variable is start + step * counter
    lower, upper = (rest.start, rest.stop) if rest.step == 1 else (0, n_trips)
    buffers = tuple(Tracer(broadcast(build.constant(0, item.dtype),
                                     (n_trips, *item.shape)))
                    for _, _, item in stacks)
    # np.random draws in the body: each trip's numbers, drawn before the call (never
    # in a loop inside another loop's body traced once: the outer trips would repeat
    # them; a loop of traced length has no known number of rows)
    draws = host_random.LoopDraws(root, n_trips) if n_trips \
        and not host_random.nested_loop() else None

    def step(i, carry):
        if draws is not None:
            draws.start_trip(current_trace(), i - lower)
        args = list(state)
        args[index] = var = i if rest.step == 1 or not index_used \
            else rest.start + rest.step * i
        for j, value in zip(carried, carry):
            args[j] = value
        lists = {id(state[j]): [] for j, n in enumerate(appended) if n}
        _collecting.lists = lists
        try:
            out = body(var, *args)
        finally:
            _collecting.lists = None
        for j, kind in enumerate(plan):
            if kind == "same" and out[j] is not args[j] \
                    or kind in ("inplace", "new") and not isinstance(out[j], Tracer) \
                    or type(kind) is tuple and out[j] is not args[kind[1]]:
                raise _NotSteady
        filled = []
        for buf, (j, q, item) in zip(carry[len(carried):], stacks):
            got = lists[id(state[j])]
            value = got[q] if len(got) == appended[j] else None
            if not isinstance(value, Tracer) or value.shape != item.shape \
                    or value.dtype != item.dtype:
                raise _NotSteady
            buf[i - lower] = value
            filled.append(buf)
        return tuple(out[j] for j in carried) + tuple(filled)

    try:
        with host_random.drawing_per_trip(draws):
            result = control_flow.fori_loop(lower, upper, step,
                                            tuple(state[j] for j in carried) + buffers)
    except Exception:   # noqa: BLE001 - any failure: the trips run as Python instead
        result = None
    n_draws = len(draws.stacked) if draws is not None else 0
    if result is None or (len(root.params), len(root.call_inputs), len(root.tracers)) \
            != (mark[0] + n_draws, mark[1], mark[2] + n_draws) \
            or n_draws and len(draws.draws) != n_draws:
        # a new implicit input inside the body (a global read at call time) would be
        # one value for every trip: forget it, and let Python make one per trip
        del root.params[mark[0]:], root.call_inputs[mark[1]:], root.tracers[mark[2]:]
        return None
    if n_draws:
        draws.register()
    out = [UNBOUND if kind == "temporary" else x for x, kind in zip(state, plan)]
    names = _names_at_end(plan, n_trips) if any(type(k) is tuple for k in plan) else None
    for j, value in zip(carried, result):
        if plan[j] == "inplace":
            state[j]._assign(value.instr)
        elif type(plan[j]) is tuple:
            # the array j names after the trips holds what the loop carried as j
            out[j] = state[names[j]]
            out[j]._assign(value.instr)
        else:
            out[j] = value
    stacked = result[len(carried):]
    loc = build.here()
    for t in range(n_trips):     # each trip's values, in the order the trips made them
        for (j, q, item), buf in zip(stacks, stacked):
            state[j].append(StackedRow(buf.instr, t, item.shape, loc))
    out[index] = rest[-1] if type(rest) is range else rest.stop - 1
    return tuple(out)

