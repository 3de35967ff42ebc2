"""Pytrees: nested containers of leaves, flattened to a leaf list plus a hashable structure.

Containers are tuple, list, dict (keys sorted), None (a node with no children), namedtuples,
dataclasses registered with :func:`register_dataclass`, and classes registered with
:func:`register_node`. Every other object is a leaf.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Iterable, Iterator, NamedTuple, TypeVar

__all__ = [
    "TreeDef",
    "flatten",
    "unflatten",
    "tree_map",
    "leaves",
    "structure",
    "register_node",
    "register_dataclass",
]

_NoneType = type(None)
_T = TypeVar("_T", bound=type)


class _Leaf:
    """Node kind of a leaf (a class, not a sentinel object, so TreeDefs pickle)."""


class _NodeSpec(NamedTuple):
    flatten: Callable[[Any], tuple[Iterable[Any], Any]]
    unflatten: Callable[[Any, tuple[Any, ...]], Any]


_registry: dict[type, _NodeSpec] = {}
# Dataclass field names, for readable TreeDef reprs: cls -> (data_fields, meta_fields).
_dataclass_fields: dict[type, tuple[tuple[str, ...], tuple[str, ...]]] = {}


class TreeDef:
    """Immutable, hashable description of a pytree's structure (everything but the leaves)."""

    __slots__ = ("_kind", "_aux", "_children", "_num_leaves", "_hash")
    _kind: type
    _aux: Any
    _children: tuple[TreeDef, ...]
    _num_leaves: int
    _hash: int

    def __init__(self, kind: type, aux: Any, children: tuple[TreeDef, ...]) -> None:
        setattr_ = object.__setattr__
        setattr_(self, "_kind", kind)
        setattr_(self, "_aux", aux)
        setattr_(self, "_children", children)
        n = 1 if kind is _Leaf else sum(c._num_leaves for c in children)
        setattr_(self, "_num_leaves", n)
        setattr_(self, "_hash", hash((kind, aux, children)))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("TreeDef is immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("TreeDef is immutable")

    def __reduce__(self) -> tuple[type[TreeDef], tuple[type, Any, tuple[TreeDef, ...]]]:
        return TreeDef, (self._kind, self._aux, self._children)

    @property
    def num_leaves(self) -> int:
        """Number of leaves in trees of this structure."""
        return self._num_leaves

    @property
    def node_type(self) -> type | None:
        """Type of the root node, or None if this TreeDef is a single leaf."""
        return None if self._kind is _Leaf else self._kind

    @property
    def node_data(self) -> Any:
        """Hashable auxiliary data of the root node (e.g. sorted dict keys)."""
        return self._aux

    @property
    def children(self) -> tuple[TreeDef, ...]:
        """TreeDefs of the root node's children."""
        return self._children

    def is_leaf(self) -> bool:
        """True if this TreeDef describes a single leaf."""
        return self._kind is _Leaf

    def unflatten(self, leaves: Iterable[Any]) -> Any:
        """Rebuild a tree of this structure from ``leaves``; same as :func:`unflatten`."""
        return unflatten(self, leaves)

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, TreeDef) or self._hash != other._hash:
            return False
        return (
            self._kind is other._kind
            and self._aux == other._aux
            and self._children == other._children
        )

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        return f"TreeDef({_format(self)})"


_LEAF = TreeDef(_Leaf, None, ())
_NONE = TreeDef(_NoneType, None, ())


def _format(td: TreeDef) -> str:
    kind = td._kind
    if kind is _Leaf:
        return "*"
    if kind is _NoneType:
        return "None"
    kids = [_format(c) for c in td._children]
    if kind is tuple:
        return "(" + ", ".join(kids) + ("," if len(kids) == 1 else "") + ")"
    if kind is list:
        return "[" + ", ".join(kids) + "]"
    if kind is dict:
        return "{" + ", ".join(f"{k!r}: {s}" for k, s in zip(td._aux, kids)) + "}"
    if kind in _dataclass_fields:
        data, meta = _dataclass_fields[kind]
        parts = [f"{n}={s}" for n, s in zip(data, kids)]
        parts += [f"{n}={v!r}" for n, v in zip(meta, td._aux)]
        return f"{kind.__name__}({', '.join(parts)})"
    if kind not in _registry and issubclass(kind, tuple):  # namedtuple
        fields: tuple[str, ...] = getattr(kind, "_fields")  # noqa: B009 - untyped to mypy
        return f"{kind.__name__}({', '.join(f'{n}={s}' for n, s in zip(fields, kids))})"
    return f"{kind.__name__}[{td._aux!r}]({', '.join(kids)})"


# --- registration ------------------------------------------------------------------------------


def register_node(
    cls: _T,
    flatten_fn: Callable[[Any], tuple[Iterable[Any], Any]],
    unflatten_fn: Callable[[Any, tuple[Any, ...]], Any],
) -> _T:
    """Register ``cls`` as a pytree node type.

    ``flatten_fn(obj)`` returns ``(children, aux)`` where ``aux`` is hashable;
    ``unflatten_fn(aux, children)`` rebuilds the object (``children`` is a tuple).
    Returns ``cls``. Registering a type twice, or a builtin container, raises ValueError.

    >>> class Pair:
    ...     def __init__(self, a, b): self.a, self.b = a, b
    >>> _ = register_node(Pair, lambda p: ((p.a, p.b), None), lambda _, ab: Pair(*ab))
    >>> leaves(Pair(1, [2, 3]))
    [1, 2, 3]
    """
    if not isinstance(cls, type):
        raise TypeError(f"register_node expects a class, got {cls!r}")
    if cls in (tuple, list, dict, _NoneType) or cls in _registry:
        raise ValueError(f"{cls.__qualname__} is already a registered pytree node type")
    _registry[cls] = _NodeSpec(flatten_fn, unflatten_fn)
    return cls


def register_dataclass(cls: _T | None = None, *,
                       meta_fields: Iterable[str] = ()) -> Any:
    """Register a dataclass as a pytree node; usable as ``@register_dataclass``.

    All fields from ``dataclasses.fields`` are children, except those named in
    ``meta_fields``, which become hashable static structure instead
    (``@register_dataclass(meta_fields=("name",))``). Returns the class, or, called with
    only ``meta_fields``, a decorator that registers and returns it.

    >>> @register_dataclass(meta_fields=("name",))
    ... @dataclasses.dataclass
    ... class Layer:
    ...     w: float
    ...     name: str
    >>> flatten(Layer(0.5, "dense"))[0]
    [0.5]
    """
    meta = tuple(meta_fields)

    def register(cls: _T) -> _T:
        if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):
            raise TypeError(f"register_dataclass expects a dataclass type, got {cls!r}")
        fields = dataclasses.fields(cls)
        names = {f.name for f in fields}
        unknown = [m for m in meta if m not in names]
        if unknown:
            raise ValueError(f"meta_fields {unknown} are not fields of {cls.__qualname__}")
        data = tuple(f.name for f in fields if f.name not in meta)
        init = {f.name for f in fields if f.init}

        def flatten_fn(obj: Any) -> tuple[list[Any], tuple[Any, ...]]:
            children = [getattr(obj, n) for n in data]
            return children, tuple(getattr(obj, n) for n in meta)

        def unflatten_fn(aux: tuple[Any, ...], children: tuple[Any, ...]) -> Any:
            values = dict(zip(data, children))
            values.update(zip(meta, aux))
            obj = cls(**{n: v for n, v in values.items() if n in init})
            # Fields with init=False cannot go through the constructor; set them directly
            # (object.__setattr__ so frozen dataclasses work too).
            for n, v in values.items():
                if n not in init:
                    object.__setattr__(obj, n, v)
            return obj

        register_node(cls, flatten_fn, unflatten_fn)
        _dataclass_fields[cls] = (data, meta)
        return cls

    return register if cls is None else register(cls)


# --- flatten / unflatten -----------------------------------------------------------------------


def _sorted_keys(d: dict[Any, Any]) -> tuple[Any, ...]:
    try:
        return tuple(sorted(d))
    except TypeError:
        types = sorted({type(k).__name__ for k in d})
        raise TypeError(
            "pytree dict keys must be mutually sortable (keys are sorted for a deterministic "
            f"leaf order); got keys of types {', '.join(types)}"
        ) from None


def _flatten(x: Any, out: list[Any], is_leaf: Callable[[Any], bool] | None) -> TreeDef:
    if is_leaf is not None and is_leaf(x):
        out.append(x)
        return _LEAF
    kind = type(x)
    if kind is tuple or kind is list:
        return TreeDef(kind, None, tuple([_flatten(c, out, is_leaf) for c in x]))
    if kind is dict:
        keys = _sorted_keys(x)
        return TreeDef(dict, keys, tuple([_flatten(x[k], out, is_leaf) for k in keys]))
    if x is None:
        return _NONE
    spec = _registry.get(kind)
    if spec is not None:
        children, aux = spec.flatten(x)
        kids = tuple([_flatten(c, out, is_leaf) for c in children])
        try:
            return TreeDef(kind, aux, kids)
        except TypeError:
            raise TypeError(
                f"flatten function for {kind.__qualname__} returned unhashable aux data "
                f"{aux!r}"
            ) from None
    if isinstance(x, tuple) and hasattr(kind, "_fields"):  # namedtuple
        return TreeDef(kind, None, tuple([_flatten(c, out, is_leaf) for c in x]))
    out.append(x)
    return _LEAF


def flatten(tree: Any,
            is_leaf: Callable[[Any], bool] | None = None) -> tuple[list[Any], TreeDef]:
    """Flatten ``tree`` into ``(leaves, treedef)``; leaves are in depth-first order.

    ``is_leaf(x)``, if given, may return True to treat a subtree as a single leaf.

    >>> leaves, treedef = flatten({"b": [1, 2], "a": (3, None)})
    >>> leaves, treedef
    ([3, 1, 2], TreeDef({'a': (*, None), 'b': [*, *]}))
    """
    out: list[Any] = []
    treedef = _flatten(tree, out, is_leaf)
    return out, treedef


def _build(td: TreeDef, it: Iterator[Any]) -> Any:
    kind = td._kind
    if kind is _Leaf:
        return next(it)
    if kind is _NoneType:
        return None
    kids = [_build(c, it) for c in td._children]
    if kind is tuple:
        return tuple(kids)
    if kind is list:
        return kids
    if kind is dict:
        return dict(zip(td._aux, kids))
    spec = _registry.get(kind)
    if spec is not None:
        return spec.unflatten(td._aux, tuple(kids))
    return kind(*kids)  # namedtuple


def unflatten(treedef: TreeDef, leaves: Iterable[Any]) -> Any:
    """Rebuild a tree with structure ``treedef`` from ``leaves``.

    Raises ValueError if the number of leaves does not match ``treedef.num_leaves``.

    >>> leaves, treedef = flatten({"w": [1, 2], "b": 3})
    >>> unflatten(treedef, [x * 10 for x in leaves])
    {'b': 30, 'w': [10, 20]}
    """
    if not isinstance(treedef, TreeDef):
        raise TypeError(f"unflatten expects a TreeDef, got {type(treedef).__name__}")
    items = list(leaves)
    if len(items) != treedef.num_leaves:
        raise ValueError(
            f"unflatten: expected {treedef.num_leaves} leaves for {treedef!r}, "
            f"got {len(items)}"
        )
    return _build(treedef, iter(items))


def _flatten_up_to(td: TreeDef, x: Any, out: list[Any]) -> None:
    # Flatten `x` only as deep as `td`: a leaf of `td` takes the whole matching subtree of `x`.
    kind: Any = td._kind   # Any: `type(x) is not kind` would narrow x to object
    if kind is _Leaf:
        out.append(x)
        return
    if type(x) is not kind:
        raise ValueError(
            f"tree structure mismatch: expected {_format(td)}, got a {type(x).__name__}"
        )
    if kind is _NoneType:
        return
    children: list[Any]
    if kind is dict:
        keys = _sorted_keys(x)
        if keys != td._aux:
            raise ValueError(f"tree structure mismatch: dict keys {list(keys)} != "
                             f"{list(td._aux)}")
        children = [x[k] for k in keys]
    elif kind in _registry:
        node_children, aux = _registry[kind].flatten(x)
        children = list(node_children)
        if aux != td._aux:
            raise ValueError(f"tree structure mismatch: {kind.__name__} node data {aux!r} "
                             f"!= {td._aux!r}")
    else:
        children = list(x)
    if len(children) != len(td._children):
        raise ValueError(
            f"tree structure mismatch: {kind.__name__} with {len(children)} children, "
            f"expected {len(td._children)}"
        )
    for c_td, c in zip(td._children, children):
        _flatten_up_to(c_td, c, out)


def tree_map(fn: Callable[..., Any], tree: Any, *rest: Any,
             is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """Apply ``fn`` to corresponding leaves of ``tree`` and ``rest``; keep ``tree``'s structure.

    Each tree in ``rest`` must have ``tree``'s structure, or have it as a prefix (a leaf of
    ``tree`` then pairs with a whole subtree); otherwise ValueError.

    >>> tree_map(lambda x, y: x + y, {"a": 1, "b": (2, 3)}, {"a": 10, "b": (20, 30)})
    {'a': 11, 'b': (22, 33)}
    """
    first, treedef = flatten(tree, is_leaf)
    others = []
    for other in rest:
        out: list[Any] = []
        _flatten_up_to(treedef, other, out)
        others.append(out)
    return _build(treedef, iter([fn(*xs) for xs in zip(first, *others)]))


def leaves(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> list[Any]:
    """Return the leaves of ``tree`` in flatten order.

    >>> leaves([1, {"x": 2, "y": None}, (3,)])
    [1, 2, 3]
    """
    out: list[Any] = []
    _flatten(tree, out, is_leaf)
    return out


def structure(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> TreeDef:
    """Return the TreeDef of ``tree``.

    >>> structure((1, [2, 3]))
    TreeDef((*, [*, *]))
    """
    return _flatten(tree, [], is_leaf)
