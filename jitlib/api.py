"""`jit`: trace once per signature, compile, cache, run.

The cache key of a call is written down in `_Signature`: the pytree structure of
the dynamic arguments, each leaf's (shape, dtype, weak), the static arguments'
values, and the backend. A key seen before runs the cached executable without
tracing again.
"""
import functools
import inspect
import os
import sys
import time
import warnings
from typing import Any, Callable, Literal, NamedTuple, Sequence, overload

import numpy as np

from jitlib import config, errors, forksafe, logs, tree, writeback
from jitlib import dask as _dask
from jitlib.cache import hooks as _cache_hooks
from jitlib.cache.explain import format_call
from jitlib.array import Array
from jitlib.hlo import dtypes
from jitlib.hlo.verifier import verify
from jitlib.trace import free_values, host_random, rolling
from jitlib.trace.context import Trace, abstract_leaf, current_trace, result_instr
from jitlib.trace.int_ranges import ExactInt, NeedsIntValues
from jitlib.trace.tracer import Tracer
# the NumPy function tables, imported now rather than on a process's first traced
# call, where they cost more than loading a cached program (a few ms)
from jitlib.trace import functions as _functions  # noqa: F401

# Argument types whose (shape, dtype) alone key a call; an Array keys like an ndarray.
_ARRAY_TYPES = (np.ndarray, Array)


class CacheInfo(NamedTuple):
    """A jitted function's cache counters (`Jitted.cache_info()`)."""
    hits: int
    misses: int    # = compiles
    entries: int


class _Signature(NamedTuple):
    names: tuple       # the dynamic arguments' names, in call order
    in_tree: tree.TreeDef
    leaves: tuple      # ((shape, dtype, weak), ...) of the dynamic leaves
    static: tuple      # ((name, value), ...) of the static arguments
    backend: str
    matmul_precision: str = "highest"   # how products round (config "matmul_precision")


class _Entry(NamedTuple):
    module: object
    out_tree: tree.TreeDef
    executable: object
    effects: object = None   # writeback.Effects, where the function writes into arguments


class Lowered:
    """A traced function: the Module, and its text before or after optimisation.

    >>> import numpy as np, jitlib
    >>> lowered = jitlib.jit(lambda x: np.exp(x) + 1.0).lower(np.zeros(3))
    >>> print(lowered.as_text().splitlines()[1].split("loc(")[0].strip())
    %0 = f64[3] exp(%x)
    """

    def __init__(self, module: Any, out_tree: tree.TreeDef, backend: str,
                 effects: Any = None) -> None:
        self.module = module
        self.out_tree = out_tree
        self.backend = backend
        self.effects = effects
        self._optimized = None

    def as_text(self, stage: str = "traced") -> str:
        """IR text. stage="traced": the Module as traced. stage="optimized": after
        simplification and fusion, one `fusion` op per kernel, headed by one comment
        line per kernel naming the user lines it covers. stage="kernels": the backend's
        generated source per kernel (backend="cpu": LLVM IR; backend="gpu": Triton, with
        each file's path). stage="assembly" (backend="cpu"): each kernel's host assembly."""
        from jitlib.hlo.printer import print_module
        if stage == "traced":
            effects = self.effects.describe(self.out_tree.num_leaves) if self.effects else []
            return "\n".join(effects + [print_module(self.module, short_locs=True)])
        if stage in ("kernels", "assembly"):   # generated code, where the backend has it
            from jitlib.backends import get_backend
            backend = get_backend(self.backend)
            method, what, which = (("kernel_sources", "generated kernels", "cpu or gpu")
                                   if stage == "kernels" else
                                   ("kernel_assembly", "kernel assembly", "cpu"))
            if not hasattr(backend, method):
                raise ValueError(f"backend {self.backend!r} has no {what}; "
                                 f"use backend={which}")
            text: str = getattr(backend, method)(self.module)
            return text
        if stage != "optimized":
            raise ValueError("stage must be 'traced', 'optimized', 'kernels' or 'assembly', "
                             f"got {stage!r}")
        from jitlib.fusion.fuse import kernel_summary
        from jitlib.hlo.ops import Op
        optimized = self.optimized()
        header = [f"# {kernel_summary(k)}" for k in optimized.instructions
                  if k.op is Op.FUSION]
        return "\n".join(header + [print_module(optimized, short_locs=True)])

    def optimized(self) -> Any:
        """The Module after the optimizer (simplification, then fusion into kernels)."""
        if self._optimized is None:
            from jitlib.fusion import optimize
            self._optimized = optimize(self.module)
        return self._optimized

    def compile(self) -> Any:
        """The backend's executable for this Module (what a jitted call runs)."""
        from jitlib.backends import get_backend
        return get_backend(self.backend).compile(self.module)

    def __str__(self) -> str:
        return self.as_text()


class Jitted:
    """The callable `jit` returns. Also has `.lower`, `.cache_info`, `.clear_cache`."""

    def __init__(self, fn: Callable[..., Any], static_argnums: int | Sequence[int] = (),
                 static_argnames: str | Sequence[str] = (), backend: str | None = None,
                 buckets: Any = None, max_compiles: int | None = None,
                 on_exceed: str = "error", cache_size: int | None = None,
                 device_results: bool | None = None,
                 matmul_precision: str | None = None) -> None:
        functools.update_wrapper(self, fn)
        if not hasattr(self, "__name__"):   # partials and callable objects have none
            self.__name__ = getattr(type(fn), "__name__", "fn")
        self.fn = fn
        self.backend = backend
        # None: the process-wide "results" setting decides at each call (config.py)
        self.device_results = device_results
        # None: the process-wide "matmul_precision" setting at each call's compile
        self.matmul_precision = (None if matmul_precision is None
                                 else config.matmul_precision(matmul_precision))
        self._signature = _python_signature(fn)
        self._positional = _positional_names(self._signature)
        self._static = _static_names(fn, self._signature, static_argnums, static_argnames)
        self._fast = {}   # _fast_key -> the same entries as _cache
        # the cache layer (jitlib/cache, jitlib/buckets): bounded cache, budget, buckets
        from jitlib.buckets.runtime import bucket_layer
        from jitlib.cache.budget import Recompiles
        from jitlib.cache.memory import CompileCache
        self._cache = CompileCache(cache_size, on_evict=self._fast.clear)
        self._recompiles = Recompiles(self.__name__, max_compiles, on_exceed)
        self._buckets = bucket_layer(self, buckets)
        self._hits = self._misses = 0
        self._lock = forksafe.lock()
        # Python int arguments key the cache by range until a trace needs their values
        # (trace/int_ranges.py); from then on, by value
        self._int_values = False
        self._stale = None   # why the cached traces were dropped (a guard broke), if so
        self._warned_escape = False

    # -- the call path

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if current_trace() is not None:
            return self.fn(*args, **kwargs)   # inside another trace: inline
        if "dask.array" in sys.modules:   # Dask arrays in, Dask arrays out (jitlib/dask)
            is_dask = _dask.dask_arrays_in(args, kwargs)
            if is_dask is not None:
                return _dask.call(self, args, kwargs, is_dask)
        out = self._call(args, kwargs)
        if self.device_results is False or (self.device_results is None
                                            and config.results_on_host()):
            from jitlib.transfer import device_get
            return device_get(out)
        return out

    def _call(self, args, kwargs):
        if self._buckets is not None:
            return self._with_int_values(lambda: self._buckets(args, kwargs))
        fast_key = self._fast_key(args, kwargs)
        entry = self._fast.get(fast_key) if fast_key is not None else None
        if entry is not None:
            self._hits += 1
            if entry.effects is not None:
                return self._run_with_effects(entry, args, args, kwargs)
            return tree.unflatten(entry.out_tree, list(_run(entry.executable, args)))
        return self._with_int_values(lambda: self._call_traced(args, kwargs, fast_key))

    def _call_traced(self, args, kwargs, fast_key):
        bound = self._bind(args, kwargs)
        key, dynamic, flat = self._key(bound)
        entry = self._entry(key, lambda: self._compile(key, bound, dynamic))
        if fast_key is not None:
            self._fast[fast_key] = entry
        # a jitlib.Array stays where it is (on the GPU); the executable takes it as is
        arrays = [x if type(x) is Array else np.asarray(x, dtype=shape_dtype[1])
                  for x, shape_dtype in zip(flat, key.leaves)]
        if entry.effects is not None:
            return self._run_with_effects(entry, flat, arrays, kwargs, args)
        outs = _run(entry.executable, arrays)
        return tree.unflatten(entry.out_tree, list(outs))

    def _drop_if_stale(self, effects):
        """Whether a guard of `effects` broke (a global rebound, a small global array
        changed); then every cached trace is dropped and the next compile says why."""
        broken = effects.broken_guard()
        if broken is None:
            return False
        self._stale = broken
        with self._lock:
            self._cache.clear()
            self._fast.clear()
        return True

    def _run_with_effects(self, entry, flat, arrays, kwargs, args=None):
        """Run a function with effects beyond its results: globals read at call time
        (guarded: a rebound name traces again), writes into arguments (the caller's
        arrays `flat` receive them, as eager NumPy leaves them)."""
        effects = entry.effects
        if self._drop_if_stale(effects):
            return self(*(flat if args is None else args), **kwargs)
        inputs = effects.call_inputs() if effects.steps else []
        targets = list(flat) + inputs
        effects.check(targets)
        outs = _run(entry.executable, list(arrays) + inputs)
        return tree.unflatten(entry.out_tree,
                              effects.finish(targets, outs, entry.out_tree.num_leaves))

    def _with_int_values(self, call):
        """`call()`; if its trace needs the values of Python int arguments, the function
        keys them by value from now on and `call()` runs again (trace/int_ranges.py)."""
        try:
            return call()
        except NeedsIntValues as e:
            if self._int_values:
                raise
            logs.log("recompiles", "%s: Python int arguments are keyed by value from now "
                     "on: %s", self.__name__, e.message)
            self._int_values = True
        # outside the except block: the second trace's errors must not chain to the first
        return call()

    def _entry(self, key, compile):
        """The compiled entry for `key`; a miss runs `compile()` once, under the lock
        (another thread may have compiled it while this one waited)."""
        entry = self._cache.get(key)
        if entry is None:
            with self._lock:
                entry = self._cache.get(key)
                if entry is None:
                    start = time.perf_counter()
                    entry = compile()
                    self._cache[key] = entry
                    self._misses += 1
                    if logs.enabled("compiles"):
                        logs.log("compiles", "compiled %s in %.1f ms",
                                 format_call(self.__name__, key),
                                 (time.perf_counter() - start) * 1e3)
                    return entry
        self._hits += 1
        return entry

    def _fast_key(self, args, kwargs):
        """The common call, positional ndarrays and nothing static, keys a second cache
        by (shape, dtype) per argument and the backend: the full key is a function of
        exactly these, so a hit skips binding and flattening."""
        if kwargs or self._static or not all(type(a) in _ARRAY_TYPES for a in args):
            return None
        return (self.backend or config.default_backend(),
                config.matmul_precision(self.matmul_precision),
                tuple((a.shape, a.dtype) for a in args))

    def lower(self, *args: Any, **kwargs: Any) -> Lowered:
        """Trace for these arguments (no compile) and return a `Lowered`."""
        def lower() -> Lowered:
            bound = self._bind(args, kwargs)
            key, dynamic, _ = self._key(bound)
            module, out_tree = self._trace(bound, dynamic, key)
            return Lowered(module, out_tree, key.backend, module.effects)
        lowered: Lowered = self._with_int_values(lower)
        return lowered

    def cache_info(self) -> CacheInfo:
        """Hits, misses (compiles) and signatures cached so far."""
        return CacheInfo(self._hits, self._misses, len(self._cache))

    def recompiles(self) -> list[str]:
        """One line per compile so far: what differed from the nearest cached signature."""
        return [text for _, _, text in self._recompiles.history]

    def clear_cache(self) -> None:
        """Forget every compiled signature and reset the counters."""
        with self._lock:
            self._cache.clear()
            self._fast.clear()
            self._hits = self._misses = 0

    def __get__(self, obj, objtype=None):
        # jit on a method: bind like a function would
        return self if obj is None else functools.partial(self, obj)

    # -- signature, tracing, compiling

    def _bind(self, args, kwargs):
        if self._signature is None:
            return _Bound(dict(enumerate(args)), kwargs)
        names = self._positional
        if names is not None and not kwargs and len(args) == len(names):
            return _Bound(dict(zip(names, args)), {}, names=names)
        try:
            bound = self._signature.bind(*args, **kwargs)
        except TypeError as e:
            raise errors.JitlibTypeError(
                f"{self.__name__}{self._signature}: {e}",
                hint="call the jitted function with the same arguments as the original") \
                from None
        return _Bound(bound.arguments, {}, bound)

    def _key(self, bound):
        static, names, dynamic = [], [], []
        for name, value in bound.arguments.items():
            # a NumPy generator is keyed by identity: its draws replay on it at each call
            if name in self._static or isinstance(value, host_random.GENERATOR_TYPES):
                try:
                    hash(value)
                except TypeError:
                    raise errors.JitlibTypeError(
                        f"static argument {name!r} of {self.__name__} is an unhashable "
                        f"{type(value).__name__}: static arguments key the compile cache",
                        hint="pass a hashable value (a tuple instead of a list), or make "
                             "the argument dynamic") from None
                static.append((name, value))
            else:
                names.append(name)
                dynamic.append(value)
        flat, in_tree = tree.flatten(tuple(dynamic))
        try:
            leaves = tuple(abstract_leaf(x, "") for x in flat)
        except errors.JitlibTypeError:
            # name the offending argument; the names are only worth computing now
            leaf_names = _leaf_names(names, in_tree)
            for i, x in enumerate(flat):
                abstract_leaf(x, f"argument {leaf_names[i]!r} of {self.__name__}")
            raise
        if self._int_values:
            leaves = tuple((shape, dtype, ExactInt(int(x)) if type(weak) is tuple else weak)
                           for (shape, dtype, weak), x in zip(leaves, flat))
        backend = self.backend or config.default_backend()
        key = _Signature(tuple(names), in_tree, leaves, tuple(static), backend,
                         config.matmul_precision(self.matmul_precision))
        return key, dynamic, flat

    def _trace(self, bound, dynamic, key, check=True):
        """The Module of `fn` at `key`; `check=False` skips the verifier (0.1-0.4 ms) for a
        trace that is only read beside a verified one (the bucket proof's probes)."""
        trace = Trace(self.__name__, key.matmul_precision)
        if config.roll_loops():
            trace.log = []   # what each builder call asked for, for the loop roller
        names = _leaf_names(key.names, key.in_tree)
        # an array argument (weak False; a NumPy scalar's is None) can be written into
        tracers = [trace.new_parameter(shape, dtype, name, weak=weak, array=weak is False)
                   for (shape, dtype, weak), name in zip(key.leaves, names)]
        # an int keyed by value is the Python int itself (its parameter stays, unused)
        traced_args = tree.unflatten(key.in_tree, [
            weak.value if type(weak) is ExactInt else t
            for t, (_, _, weak) in zip(tracers, key.leaves)])
        call_args = dict(bound.arguments)
        call_args.update(zip(key.names, traced_args))
        for name, value in key.static:
            if isinstance(value, host_random.GENERATOR_TYPES):
                call_args[name] = host_random.RecordingGenerator(
                    trace, lambda env, g=value: g, name)
        containers = writeback.snapshot_containers(traced_args)
        with trace.active():
            fn, free = free_values.traced_function(self.fn, trace)
            try:
                out = bound.call(fn, call_args)
            except errors.JitlibError:
                raise
            except Exception as e:
                # NumPy sometimes turns our error into its own (buf[0] = tracer raises
                # "setting an array element with a sequence"): surface ours.
                cause = _jitlib_cause(e)
                if cause is None:
                    raise
                raise cause.with_traceback(cause.__traceback__) from None
            if containers:
                writeback.check_containers(containers, self.__name__, _definition(self.fn))
            if free is not None and not self._warned_escape:
                self._warn_if_escaped(free)
            flat_out, out_tree = tree.flatten(out)
            results = [result_instr(x, self.__name__, i) for i, x in enumerate(flat_out)]
            writes = sorted(trace.writes)
            results += [trace.tracers[i].instr for i in writes]
        module = trace.module(results, writes)
        if trace.log:
            module = rolling.roll(module, trace.log)
            trace.log = None
        returned = [(k, x._param) for k, x in enumerate(flat_out)
                    if isinstance(x, Tracer) and x._param is not None
                    and x._param < len(tracers)]
        guards = free.guards if free is not None else []
        if writes or returned or trace.call_inputs or guards:
            # where the writes happened, for messages: metadata beside the Module's
            # structure (its `writes`), as instruction locations are
            module.effects = writeback.Effects(
                writes, trace.writes, returned,
                [p.attrs["name"] for p in trace.params], len(tracers), trace.call_inputs,
                guards)
        if check:
            verify(module)   # a tracer bug must surface here, as IR, not in a backend
        return module, out_tree

    def _warn_if_escaped(self, free):
        name = free_values.escaped(free)
        if name is not None:
            self._warned_escape = True
            warnings.warn(
                f"jitlib: {self.__name__} left a traced value in the global {name!r} while "
                "jit traced it; that value exists only during the trace, and using it later "
                "raises EscapedTracerError. Return values from the jitted function instead.",
                errors.EscapedTracerWarning, stacklevel=5)

    def _compile(self, key, bound, dynamic):
        from jitlib.backends import get_backend
        stale, self._stale = self._stale, None
        _cache_hooks.before_compile(self, key, *([stale] if stale else []))
        module, out_tree = self._trace(bound, dynamic, key)
        if logs.enabled("ir"):
            logs.log("ir", "traced %s\n%s", self.__name__, module)
        backend = get_backend(key.backend)
        try:
            executable = backend.compile(module)
        except errors.JitlibError:
            raise
        except Exception as e:
            # A backend bug must reach the user as a report they can file, with the IR
            # that triggered it, never as a bare crash from deep inside LLVM or Triton.
            raise errors.CompileError(
                f"the {key.backend!r} backend failed to compile {self.__name__} "
                f"({len(module.instructions)} ops): {type(e).__name__}: "
                f"{_shortened(str(e))}\n{_ir_for_report(module)}",
                location=_definition(self.fn),
                hint="this is a jitlib bug: please report it with the IR; "
                     "backend='interpreter' runs the same program without compiling") from e
        return _Entry(module, out_tree, executable, module.effects)


def _run(executable, args):
    """Call a compiled program. One whose device keeps results (the CUDA device of the gpu
    backend) runs there: Arrays stay, host arrays are copied in once, results are Arrays."""
    run_on_device = getattr(getattr(executable, "device", None), "run_executable", None)
    if run_on_device is not None:
        return run_on_device(executable, args)
    return executable(*args)


class _Bound:
    """Arguments by name, and how to call the function with replacements."""

    def __init__(self, arguments, kwargs, bound=None, names=None):
        self.arguments = dict(arguments)
        self.arguments.update(kwargs)
        self._bound = bound
        self._names = names   # every parameter, in order, each given positionally

    def call(self, fn, values):
        if self._names is not None:
            return fn(*[values[name] for name in self._names])
        if self._bound is None:
            return fn(*[values[i] for i in sorted(values)])
        sig = self._bound.signature
        ordered = {name: values[name] for name in sig.parameters if name in values}
        bound = inspect.BoundArguments(sig, ordered)
        return fn(*bound.args, **bound.kwargs)


def _shortened(text, limit=600):
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} characters)"


# a program this long goes to a file, not into the message
_INLINE_IR_LINES = 60


def _ir_for_report(module):
    """The module's text for an error message: inline when short, else in a file whose
    path the message gives (a loop's trace can print to megabytes)."""
    import tempfile
    text = str(module)
    if text.count("\n") < _INLINE_IR_LINES:
        return text
    folder = os.path.join(tempfile.gettempdir(), "jitlib-errors")
    try:
        os.makedirs(folder, exist_ok=True)
        fd, path = tempfile.mkstemp(prefix=f"{module.name}-", suffix=".hlo", dir=folder)
        with os.fdopen(fd, "w") as f:
            f.write(text + "\n")
    except OSError as e:
        return f"(the IR, {text.count(chr(10))} lines, could not be written to a file: {e})"
    return f"the traced IR ({text.count(chr(10))} lines) is in {path}"


def _definition(fn):
    """Where `fn` is defined, for errors about the function as a whole."""
    code = getattr(inspect.unwrap(fn), "__code__", None)
    if code is None:
        return None
    return errors.SourceLocation(code.co_filename, code.co_firstlineno, code.co_name)


def _jitlib_cause(exc):
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, errors.JitlibError):
            return exc
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return None


def _positional_names(signature):
    """The parameter names where a call binds its arguments by position alone (no
    defaults, no *args, **kwargs or keyword-only parameters), else None: such a call
    skips inspect's binding, whose Python calls a first call pays cold."""
    if signature is None:
        return None
    params = list(signature.parameters.values())
    if any(p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
           or p.default is not p.empty for p in params):
        return None
    return tuple(p.name for p in params)


def _python_signature(fn):
    try:
        return inspect.signature(fn)
    except (TypeError, ValueError):
        return None


def _static_names(fn, signature, static_argnums, static_argnames, kind="static"):
    if isinstance(static_argnums, int):
        static_argnums = (static_argnums,)
    if isinstance(static_argnames, str):
        static_argnames = (static_argnames,)
    names = set(static_argnames)
    if signature is None:
        return names | set(static_argnums)
    params = list(signature.parameters.values())
    for i in static_argnums:
        if not -len(params) <= i < len(params) or params[i].kind not in (
                inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD):
            raise errors.JitlibTypeError(
                f"{kind}_argnums={i} does not name a positional parameter of "
                f"{getattr(fn, '__name__', fn)}{signature}")
        names.add(params[i].name)
    unknown = names - set(signature.parameters)
    if unknown:
        raise errors.JitlibTypeError(
            f"{kind}_argnames {sorted(unknown)} are not parameters of "
            f"{getattr(fn, '__name__', fn)}{signature}")
    return names


def _leaf_names(arg_names, in_tree):
    """A parameter name per leaf: the argument's name, numbered within pytrees."""
    out = []
    for name, child in zip(arg_names, in_tree.children):
        n = child.num_leaves
        label = name if isinstance(name, str) else f"arg{name}"
        out.extend([label] if n == 1 else [f"{label}_{i}" for i in range(n)])
    return out


_Backend = Literal["interpreter", "cpu", "gpu", "jax"]
_Precision = Literal["highest", "high", "default"]


@overload
def jit(fn: Callable[..., Any], *, static_argnums: int | Sequence[int] = ...,
        static_argnames: str | Sequence[str] = ..., backend: _Backend | None = ...,
        buckets: Any = ..., max_compiles: int | None = ..., on_exceed: str = ...,
        cache_size: int | None = ..., check: str | None = ..., check_rate: float = ...,
        check_raise: bool = ..., donate_argnums: int | Sequence[int] = ...,
        donate_argnames: str | Sequence[str] = ...,
        device_results: bool | None = ...,
        matmul_precision: _Precision | None = ...) -> Jitted: ...
@overload
def jit(fn: None = None, *, static_argnums: int | Sequence[int] = ...,
        static_argnames: str | Sequence[str] = ..., backend: _Backend | None = ...,
        buckets: Any = ..., max_compiles: int | None = ..., on_exceed: str = ...,
        cache_size: int | None = ..., check: str | None = ...,
        check_rate: float = ..., check_raise: bool = ...,
        donate_argnums: int | Sequence[int] = ..., donate_argnames: str | Sequence[str] = ...,
        device_results: bool | None = ...,
        matmul_precision: _Precision | None = ...) -> Callable[[Callable[..., Any]], Jitted]: ...
def jit(fn: Callable[..., Any] | None = None, *, static_argnums: int | Sequence[int] = (),
        static_argnames: str | Sequence[str] = (), backend: _Backend | None = None,
        buckets: Any = None, max_compiles: int | None = None, on_exceed: str = "error",
        cache_size: int | None = None, check: str | None = None, check_rate: float = 1.0,
        check_raise: bool = False, donate_argnums: int | Sequence[int] = (),
        donate_argnames: str | Sequence[str] = (), device_results: bool | None = None,
        matmul_precision: _Precision | None = None
        ) -> Jitted | Callable[[Callable[..., Any]], Jitted]:
    """Compile `fn` per argument signature. `backend`: "interpreter", "cpu", "gpu", "jax";
    default "gpu" where a CUDA GPU and Triton are present, else "cpu".
    `buckets`: shape-bucket rules (see jitlib/buckets); `max_compiles`/`on_exceed`: a
    recompile budget ("error" or "warn"); `cache_size`: signatures kept compiled.
    `check`: "numpy", "interpreter" or "jax" runs that reference beside a `check_rate`
    fraction of the calls and reports the error per output (see jitlib/check.py).
    `donate_argnums`/`donate_argnames` are accepted as in JAX and checked to name
    parameters; they change nothing: writes into arguments reach the caller whether
    donated or not (eager NumPy's semantics), and a written argument's new contents go
    straight into its memory where that is safe (fusion/in_place.py).
    `device_results`: what a call on the gpu backend returns. True: jitlib.Array in GPU
    memory (chained calls stay there); False: host NumPy arrays; None (the default): the
    "results" setting, `jitlib.config.update("results", "numpy")` or JITLIB_RESULTS=numpy,
    else Arrays (docs/arrays.md). Other backends return NumPy arrays either way.
    `matmul_precision`: how float products may round, as JAX names it: "highest" (NumPy's
    results), "high" (tf32x3 on the GPU), "default" (TF32; 16-bit products keep their
    type); None: the "matmul_precision" setting (docs/gpu_numerics.md).
    Without `fn`, a decorator with these options.

    >>> import numpy as np, jitlib
    >>> @jitlib.jit(backend="cpu")
    ... def relu_affine(x, w):
    ...     return np.maximum(x @ w, 0.0)
    >>> relu_affine(np.ones((2, 3)), np.full((3, 2), -0.5))
    array([[0., 0.],
           [0., 0.]])
    >>> relu_affine.cache_info()
    CacheInfo(hits=0, misses=1, entries=1)
    """
    options = dict(static_argnums=static_argnums, static_argnames=static_argnames,
                   backend=backend, buckets=buckets, max_compiles=max_compiles,
                   on_exceed=on_exceed, cache_size=cache_size,
                   device_results=device_results, matmul_precision=matmul_precision)
    if fn is not None and (donate_argnums or donate_argnames):
        _static_names(fn, _python_signature(fn), donate_argnums, donate_argnames, "donate")
    elif fn is None and (donate_argnums or donate_argnames):
        options.update(donate_argnums=donate_argnums, donate_argnames=donate_argnames)
    if check is not None:
        options.update(check=check, check_rate=check_rate, check_raise=check_raise)
    if backend is not None:
        from jitlib.backends import check_name
        check_name(backend)
    if fn is None:
        return functools.partial(jit, **options)
    if isinstance(fn, Jitted):
        fn = fn.fn
    if check is not None:   # a subclass: calls without check keep the plain path
        from jitlib.check import CheckedJitted
        return CheckedJitted(fn, **options)
    return Jitted(fn, **options)


def make_ir(fn: Callable[..., Any], *, static_argnums: int | Sequence[int] = (),
            static_argnames: str | Sequence[str] = ()) -> Callable[..., Any]:
    """`make_ir(f)(*args)` returns the traced Module, like jax.make_jaxpr.

    >>> import numpy as np, jitlib
    >>> module = jitlib.make_ir(lambda x: np.sum(x * 2.0))(np.ones(4, np.float32))
    >>> [str(i.op) for i in module.instructions]
    ['parameter', 'constant', 'broadcast_in_dim', 'mul', 'reduce_sum']
    """
    jitted = fn if isinstance(fn, Jitted) else jit(
        fn, static_argnums=static_argnums, static_argnames=static_argnames,
        backend="interpreter")

    @functools.wraps(jitted.fn)
    def trace_only(*args: Any, **kwargs: Any) -> Any:
        return jitted.lower(*args, **kwargs).module
    return trace_only


__all__ = ["jit", "make_ir", "Jitted", "Lowered", "CacheInfo", "dtypes"]
