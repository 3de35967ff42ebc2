"""The public API as a strictly typed user sees it: `mypy` (configured in pyproject.toml)
checks this file with --strict, so calling a public function that has no annotations, or
with the wrong types, fails CI. Run by tests/test_typing.py, never imported."""
from typing import Any, Callable, assert_type

import numpy as np

import jitlib
import jitlib.buckets
from jitlib import tree


def loss(w: np.ndarray[Any, Any], x: np.ndarray[Any, Any]) -> Any:
    return np.mean((x @ w) ** 2)


def uses_jit() -> None:
    f = jitlib.jit(loss)
    assert_type(f, jitlib.Jitted)
    g = jitlib.jit(backend="cpu", static_argnums=(1,))(loss)
    assert_type(g, jitlib.Jitted)
    w, x = np.ones(3), np.ones((2, 3))
    lowered = f.lower(w, x)
    assert_type(lowered, jitlib.Lowered)
    assert_type(lowered.as_text("optimized"), str)
    assert_type(f.cache_info(), jitlib.CacheInfo)
    f.clear_cache()
    assert_type(jitlib.make_ir(loss), Callable[..., Any])


def uses_transforms() -> None:
    w, x = np.ones(3), np.ones((2, 3))
    assert_type(jitlib.grad(loss, argnums=(0, 1)), Callable[..., Any])
    assert_type(jitlib.value_and_grad(loss)(w, x), tuple[Any, Any])
    out, tangent = jitlib.jvp(loss, (w, x), (w, x))
    out, tangent, aux = jitlib.jvp(loss, (w, x), (w, x), has_aux=True)
    out, vjp_fn = jitlib.vjp(loss, w, x)
    assert_type(vjp_fn(np.ones(())), tuple[Any, ...])
    for transform in (jitlib.jacfwd, jitlib.jacrev, jitlib.hessian):
        assert_type(transform(loss, argnums=0), Callable[..., Any])
    assert_type(jitlib.vmap(loss, in_axes=(None, 0)), Callable[..., Any])


def uses_arrays(a: jitlib.Array) -> None:
    assert_type(a.shape, tuple[int, ...])
    assert_type(a.ndim, int)
    assert_type(a.copy(), jitlib.Array)
    host = np.asarray(a)   # a copy to the host
    assert_type(host.shape, tuple[Any, ...])
    assert_type(jitlib.from_dlpack(a), jitlib.Array)


def uses_buckets(path: str) -> None:
    rules = jitlib.buckets.load(path)
    assert_type(rules, list[jitlib.buckets.Rule])
    assert_type(rules[0].bucket_for(20), int | None)
    try:
        jitlib.jit(loss, buckets=rules)
    except (jitlib.buckets.BucketConfigError, jitlib.buckets.BucketRefusedError):
        pass


def uses_tree() -> None:
    leaves, treedef = tree.flatten({"w": np.ones(2), "b": [1.0, 2.0]})
    assert_type(leaves, list[Any])
    assert_type(treedef, tree.TreeDef)
    assert_type(treedef.num_leaves, int)
    assert_type(tree.unflatten(treedef, leaves), Any)
    assert_type(tree.tree_map(lambda a: a, leaves), Any)
    assert_type(tree.leaves(leaves), list[Any])
    assert_type(tree.structure(leaves), tree.TreeDef)


def uses_arrays_and_results() -> None:
    x = np.ones(3)
    jitlib.config.update("results", "numpy")
    assert_type(jitlib.config.get("results"), str)
    on_device = jitlib.device_put({"x": x})
    host = jitlib.device_get(on_device)
    f = jitlib.jit(loss, device_results=False)
    assert_type(f, jitlib.Jitted)
    a = jitlib.from_dlpack(host)
    assert_type(a.block_until_ready(), jitlib.Array)
    assert_type(a.shape, tuple[int, ...])
    assert_type(float(a[0]), float)
    assert_type(a.tolist(), Any)


def uses_pmap() -> None:
    step = jitlib.pmap(loss, axis_name="i", in_axes=(None, 0), backend="interpreter")
    assert_type(step, jitlib.parallel.pmap.Pmapped)
    assert_type(step(np.ones(3), np.ones((1, 3))), Any)
    assert_type(jitlib.devices()[0].id, int)
    assert_type(jitlib.device_count(), int)
