import collections
import dataclasses
import pickle

import numpy as np
import pytest

from jitlib import tree

Point = collections.namedtuple("Point", ["x", "y"])


@tree.register_dataclass
@dataclasses.dataclass
class Params:
    w: object
    b: object


@tree.register_dataclass(meta_fields=("name",))
@dataclasses.dataclass(frozen=True)
class Layer:
    weight: object
    name: str
    scale: object = dataclasses.field(default=1.0, init=False)


class Box:
    """A plain class registered with register_node."""

    def __init__(self, label, items):
        self.label = label
        self.items = items


tree.register_node(
    Box,
    lambda b: (b.items, b.label),
    lambda label, children: Box(label, list(children)),
)


def roundtrip(t):
    leaves, td = tree.flatten(t)
    assert len(leaves) == td.num_leaves
    return tree.unflatten(td, leaves)


@pytest.mark.parametrize(
    "t",
    [
        1,
        (),
        [],
        {},
        None,
        (1, 2),
        [1, (2, 3), [4]],
        {"a": 1, "b": [2, 3]},
        (None, {"x": None}, [None]),
        {"outer": {"inner": (1, [2, {"deep": 3}])}},
        Point(1, (2, 3)),
    ],
)
def test_roundtrip_builtin_containers(t):
    assert roundtrip(t) == t


def test_leaf_order_is_depth_first():
    t = ([1, 2], {"b": 4, "a": 3}, (5, (6,)))
    assert tree.leaves(t) == [1, 2, 3, 4, 5, 6]


def test_none_is_a_node_not_a_leaf():
    leaves, td = tree.flatten(None)
    assert leaves == []
    assert td.num_leaves == 0
    assert not td.is_leaf()
    assert tree.leaves([None, 1, None]) == [1]


def test_arrays_and_scalars_are_leaves():
    a = np.arange(3)
    leaves, td = tree.flatten({"a": a, "s": 2.5})
    assert leaves[0] is a and leaves[1] == 2.5
    assert tree.structure(a).is_leaf()


def test_namedtuple_type_preserved():
    t = [Point(1, 2), Point(x=Point(3, 4), y=None)]
    out = roundtrip(t)
    assert out == t
    assert type(out[0]) is Point and type(out[1].x) is Point
    # A namedtuple and a plain tuple with the same contents have different structure.
    assert tree.structure(Point(1, 2)) != tree.structure((1, 2))


def test_dict_keys_sorted_and_order_independent():
    d1 = {"b": 1, "a": 2, "c": 3}
    d2 = {"c": 30, "a": 20, "b": 10}
    assert tree.leaves(d1) == [2, 1, 3]
    assert tree.structure(d1) == tree.structure(d2)
    assert list(roundtrip(d1)) == ["a", "b", "c"]


def test_unsortable_dict_keys_raise_type_error():
    with pytest.raises(TypeError, match="sortable"):
        tree.flatten({1: "x", "a": "y"})


def test_treedef_hash_eq():
    s1 = tree.structure(({"a": 1, "b": [2, 3]}, None))
    s2 = tree.structure(({"b": ["x", "y"], "a": "z"}, None))
    s3 = tree.structure(({"a": 1, "b": [2]}, None))
    assert s1 == s2 and hash(s1) == hash(s2)
    assert s1 != s3
    assert s1 != tree.structure([{"a": 1, "b": [2, 3]}, None])
    assert len({s1, s2, s3}) == 2
    assert tree.structure([1]) != tree.structure((1,))
    assert tree.structure(None) != tree.structure(1)
    assert s1 != "not a treedef"


def test_treedef_is_immutable():
    td = tree.structure((1, 2))
    with pytest.raises(AttributeError):
        td.foo = 1
    with pytest.raises(AttributeError):
        td._children = ()


def test_treedef_pickles():
    td = tree.structure(({"a": 1}, [Point(1, 2), None]))
    assert pickle.loads(pickle.dumps(td)) == td


def test_treedef_repr():
    assert repr(tree.structure((1, {"a": 2, "b": None}))) == "TreeDef((*, {'a': *, 'b': None}))"
    assert repr(tree.structure((1,))) == "TreeDef((*,))"
    assert repr(tree.structure([1, 2])) == "TreeDef([*, *])"
    assert repr(tree.structure(5)) == "TreeDef(*)"
    assert repr(tree.structure(Point(1, 2))) == "TreeDef(Point(x=*, y=*))"
    assert repr(tree.structure(Params(1, 2))) == "TreeDef(Params(w=*, b=*))"


def test_treedef_properties():
    td = tree.structure({"a": 1, "b": (2, 3)})
    assert td.node_type is dict
    assert td.node_data == ("a", "b")
    assert [c.num_leaves for c in td.children] == [1, 2]
    assert td.num_leaves == 3
    assert tree.structure(1).node_type is None
    assert td.unflatten([7, 8, 9]) == {"a": 7, "b": (8, 9)}


def test_registered_dataclass():
    p = Params(w=np.ones(2), b=[1.0, {"k": 2.0}])
    leaves, td = tree.flatten(p)
    assert len(leaves) == 3
    out = tree.unflatten(td, leaves)
    assert type(out) is Params
    assert out.w is p.w and out.b == p.b
    assert tree.structure(Params(1, 2)) != tree.structure(Point(1, 2))


def test_dataclass_meta_fields_and_non_init_fields():
    layer = Layer(weight=3.0, name="dense")
    object.__setattr__(layer, "scale", 0.5)
    leaves, td = tree.flatten(layer)
    assert leaves == [3.0, 0.5]
    assert td != tree.structure(Layer(weight=3.0, name="conv"))
    out = tree.unflatten(td, [4.0, 2.0])
    assert out.weight == 4.0 and out.name == "dense" and out.scale == 2.0
    assert repr(td) == "TreeDef(Layer(weight=*, scale=*, name='dense'))"


def test_register_dataclass_rejects_non_dataclass():
    class NotDC:
        pass

    with pytest.raises(TypeError):
        tree.register_dataclass(NotDC)


def test_registered_custom_node():
    b = Box("lbl", [1, (2, 3)])
    leaves, td = tree.flatten([b, 4])
    assert leaves == [1, 2, 3, 4]
    out = tree.unflatten(td, [10, 20, 30, 40])
    assert isinstance(out[0], Box)
    assert out[0].label == "lbl" and out[0].items == [10, (20, 30)]
    assert out[1] == 40
    assert tree.structure(Box("a", [1])) != tree.structure(Box("b", [1]))


def test_register_twice_raises():
    with pytest.raises(ValueError):
        tree.register_node(Box, lambda b: ((), None), lambda a, c: Box(None, []))
    with pytest.raises(ValueError):
        tree.register_node(tuple, lambda b: ((), None), lambda a, c: ())


def test_unflatten_wrong_leaf_count():
    td = tree.structure({"a": 1, "b": (2, 3)})
    with pytest.raises(ValueError, match=r"expected 3 leaves.*got 2"):
        tree.unflatten(td, [1, 2])
    with pytest.raises(ValueError, match=r"expected 3 leaves.*got 4"):
        tree.unflatten(td, [1, 2, 3, 4])


def test_tree_map():
    t = {"a": 1, "b": [2, Point(3, None)]}
    assert tree.tree_map(lambda x: x * 10, t) == {"a": 10, "b": [20, Point(30, None)]}
    t2 = {"a": 100, "b": [200, Point(300, None)]}
    assert tree.tree_map(lambda x, y: x + y, t, t2) == {"a": 101, "b": [202, Point(303, None)]}


def test_tree_map_prefix_and_mismatch():
    # A leaf of the first tree pairs with a whole subtree of the others.
    out = tree.tree_map(lambda spec, sub: (spec, sub), [0, 1], [(1, 2), {"k": 3}])
    assert out == [(0, (1, 2)), (1, {"k": 3})]
    with pytest.raises(ValueError, match="mismatch"):
        tree.tree_map(lambda x, y: x, [1, 2], (1, 2))
    with pytest.raises(ValueError, match="mismatch"):
        tree.tree_map(lambda x, y: x, {"a": 1}, {"b": 1})
    with pytest.raises(ValueError, match="mismatch"):
        tree.tree_map(lambda x, y: x, [1, 2], [1, 2, 3])


def test_is_leaf():
    t = [(1, 2), (3, 4)]
    leaves, td = tree.flatten(t, is_leaf=lambda x: isinstance(x, tuple))
    assert leaves == [(1, 2), (3, 4)]
    assert td.num_leaves == 2
    assert tree.unflatten(td, ["a", "b"]) == ["a", "b"]
