"""Python `for` loops traced once: the body of `for t in range(n): ...` becomes one
`while` region after two ordinary trips, so tracing a loop costs the same at 10 trips
and at 10,000.

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
the body once more as `fori_loop` over them. Anything that says otherwise (a Python
number that changes, the index used as a Python int, a new random draw, a shape that
grows) makes it run the remaining trips as Python, which is what the loop would have
done anyway, so what it cannot prove costs time, never values.

Rewritten are `for NAME in ...:` statements without `else`, whose body has no `return`,
`yield`, `break`/`continue` of this loop, `global`/`nonlocal`, `del`, `try`/`with`, and
no statement that is a bare expression (`hs.append(h)`, `print(x)`): their effects are
outside the variables, where a body traced once cannot repeat them. Those loops stay
Python loops, traced trip by trip and rolled afterwards where their trips repeat.
"""
import ast
import inspect
import textwrap
import types

from jitlib import config, errors

MIN_TRIPS = 4   # a shorter loop runs as Python: two trips and one traced trip save nothing
PYTHON_TRIPS = 2

_RUN, _STATE, _UNBOUND = "_jitlib_run_for", "_jitlib_state", "_jitlib_unbound"
_HELPER_NAMES = (_RUN, _STATE, _UNBOUND)


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
    helpers = {_RUN: run_for, _STATE: state_of, _UNBOUND: UNBOUND}
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
    rewriter = _Rewriter(outer_locals, declared | set(code.co_freevars))
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
    if not isinstance(loop, ast.For) or loop.orelse or not isinstance(loop.target, ast.Name):
        return False
    stored = set()
    todo = [(node, False) for node in loop.body]   # (node, inside a nested loop)
    while todo:
        node, nested = todo.pop()
        if isinstance(node, _REFUSED) or isinstance(node, (ast.Break, ast.Continue)) \
                and not nested:
            return False
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            stored.add(node.id)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda,
                             ast.ClassDef)):
            continue
        inner = nested or isinstance(node, (ast.For, ast.While))
        todo.extend((child, inner) for child in ast.iter_child_nodes(node))
    return not stored & nonlocal_names


class _Rewriter:
    def __init__(self, outer_locals, nonlocal_names):
        self.outer_locals, self.nonlocal_names = outer_locals, nonlocal_names
        self.count = 0

    def statements(self, body):
        out = []
        for stmt in body:
            if _capturable(stmt, self.nonlocal_names):
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
        self.count += 1
        target = loop.target.id
        used = {node.id for stmt in loop.body for node in ast.walk(stmt)
                if isinstance(node, ast.Name)}
        names = sorted((used & self.outer_locals) | {target})
        index_used = any(isinstance(node, ast.Name) and node.id == target
                         and isinstance(node.ctx, ast.Load)
                         for stmt in loop.body for node in ast.walk(stmt))
        body_name = f"_jitlib_for_{loop.lineno}_{self.count}"
        params = ", ".join(names)
        unbind = "".join(f"    if {n} is {_UNBOUND}: del {n}\n" for n in names)
        source = (f"def {body_name}(_jitlib_i, {params}):\n{unbind}"
                  f"    {target} = _jitlib_i\n    pass\n"
                  f"    return {_STATE}(locals(), {tuple(names)!r})\n"
                  f"({params},) = {_RUN}(_jitlib_iterable, {body_name}, "
                  f"{_STATE}(locals(), {tuple(names)!r}), {names.index(target)}, "
                  f"{index_used})\n"
                  + "".join(f"if {n} is {_UNBOUND}: del {n}\n" for n in names))
        made = ast.parse(source).body
        for node in (n for stmt in made for n in ast.walk(stmt)):
            if hasattr(node, "lineno"):
                node.lineno = node.end_lineno = loop.lineno
                node.col_offset, node.end_col_offset = loop.col_offset, loop.col_offset
        body_def = made[0]
        at = next(i for i, s in enumerate(body_def.body) if isinstance(s, ast.Pass))
        body_def.body[at:at + 1] = loop.body
        call = made[1].value
        call.args[0] = loop.iter
        return made


# ---------------------------------------------------------------------------- running

def state_of(scope, names):
    """The values of `names` in `scope` (a locals() dict), UNBOUND where unbound."""
    return tuple(scope.get(n, UNBOUND) for n in names)


class _NotSteady(Exception):
    """The loop's trips are not one function of its arrays: run it as Python."""


def run_for(iterable, body, state, index, index_used):
    """What `for i in iterable: state = body(i, *state)` leaves, with the trips past the
    first two traced once as a `while` where they provably repeat. `state[index]` is the
    loop variable; `index_used`: whether the body reads it."""
    from jitlib.trace.context import current_trace
    if type(iterable) is not range or len(iterable) < MIN_TRIPS \
            or current_trace() is None or not config.capture_loops() \
            or index_used and iterable.step != 1:
        return _python(iterable, body, state)
    for i in iterable[:PYTHON_TRIPS]:
        before, state = state, body(i, *state)
    rest = iterable[PYTHON_TRIPS:]
    plan = _steady(before, state, index)
    if plan is None:
        return _python(rest, body, state)
    captured = _captured(rest, body, state, plan, index)
    return captured if captured is not None else _python(rest, body, state)


def _python(iterable, body, state):
    for i in iterable:
        state = body(i, *state)
    return state


def _steady(before, after, index):
    """Per variable, how the last trip treated it ("inplace", "new" or "same"; "index"
    for the loop variable), or None where the trips are not shown to repeat."""
    from jitlib.trace.tracer import Tracer
    plan = []
    ids_before = {id(x) for x in before}
    for j, (a, b) in enumerate(zip(before, after)):
        if j == index:
            plan.append("index")
        elif isinstance(a, Tracer) and isinstance(b, Tracer):
            if a.shape != b.shape or a.dtype != b.dtype or a._weak != b._weak \
                    or a._base is not None or b._base is not None:
                return None
            if b is a:
                plan.append("inplace")
            elif id(b) not in ids_before:
                plan.append("new")
            else:
                return None    # variables that swap arrays: not one function of each
        elif isinstance(a, Tracer) or isinstance(b, Tracer) or b is not a:
            return None
        else:
            plan.append("same")
    roots = [_root(x) for x in after if isinstance(x, Tracer)]
    if len({id(r) for r in roots}) != len(roots):
        return None            # two variables share memory: separate carries would not
    return plan


def _root(x):
    while x._base is not None:
        x = x._base
    return x


def _captured(rest, body, state, plan, index):
    """The state after `rest` trips traced as one fori_loop, or None where the body did
    something a loop cannot repeat (the trace is left as it was)."""
    from jitlib.trace import control_flow
    from jitlib.trace.context import current_trace
    from jitlib.trace.tracer import Tracer
    root = current_trace()
    while getattr(root, "outer", None) is not None:
        root = root.outer
    mark = len(root.params), len(root.call_inputs), len(root.tracers)
    carried = [j for j, kind in enumerate(plan) if kind in ("inplace", "new")]

    def step(i, carry):
        args = list(state)
        args[index] = i
        for j, value in zip(carried, carry):
            args[j] = value
        out = body(i, *args)
        for j, kind in enumerate(plan):
            if kind == "same" and out[j] is not args[j] \
                    or kind in ("inplace", "new") and not isinstance(out[j], Tracer):
                raise _NotSteady
        return tuple(out[j] for j in carried)

    # with step 1 the counter is the loop variable; otherwise the body does not read it
    lower, upper = (rest.start, rest.stop) if rest.step == 1 else (0, len(rest))
    try:
        result = control_flow.fori_loop(lower, upper, step,
                                        tuple(state[j] for j in carried))
    except Exception:   # noqa: BLE001 - any failure: the trips run as Python instead
        result = None
    if result is None or (len(root.params), len(root.call_inputs), len(root.tracers)) \
            != mark:
        # a draw from np.random or a new implicit input inside the body would be one
        # value for every trip: forget it, and let Python make one per trip
        del root.params[mark[0]:], root.call_inputs[mark[1]:], root.tracers[mark[2]:]
        return None
    out = list(state)
    for j, value in zip(carried, result):
        if plan[j] == "inplace":
            state[j]._assign(value.instr)
        else:
            out[j] = value
    out[index] = rest[-1]
    return tuple(out)
