"""Pytrees: flatten, rebuild and map nested containers, custom classes included."""

from __future__ import annotations

import dataclasses
from collections import OrderedDict
from typing import NamedTuple

import numpy as np
import pytest

from s2sgrad.pytrees import (
    register_pytree,
    tree_flatten,
    tree_leaves,
    tree_map,
    tree_structure,
    tree_unflatten,
)


class Pair(NamedTuple):
    w: np.ndarray
    b: float


@dataclasses.dataclass(frozen=True)
class Dense:
    w: np.ndarray
    b: np.ndarray
    scale: float = 1.0
    size: int = dataclasses.field(init=False, default=0)

    def __post_init__(self):
        object.__setattr__(self, "size", int(np.size(self.w)))


class Layer:
    def __init__(self, w, b, name):
        self.w, self.b, self.name = w, b, name


register_pytree(
    Layer, lambda layer: ((layer.w, layer.b), layer.name), lambda name, ch: Layer(*ch, name)
)


def example_tree(rng):
    return {
        "layers": [Pair(rng.normal(size=3), 0.5), (rng.normal(size=(2, 2)), None)],
        "dense": Dense(rng.normal(size=2), rng.normal(size=2), 2.0),
        "custom": Layer(rng.normal(size=4), 1.5, "out"),
        "ordered": OrderedDict([("z", 1.0), ("a", 2.0)]),
    }


def same_tree(a, b):
    leaves_a, structure_a = tree_flatten(a)
    leaves_b, structure_b = tree_flatten(b)
    return structure_a == structure_b and all(
        np.array_equal(x, y) for x, y in zip(leaves_a, leaves_b)
    )


def test_flatten_then_unflatten_rebuilds_every_kind_of_node():
    tree = example_tree(np.random.default_rng(0))
    leaves, structure = tree_flatten(tree)
    rebuilt = tree_unflatten(structure, leaves)
    assert same_tree(rebuilt, tree)
    assert type(rebuilt["layers"][0]) is Pair
    assert type(rebuilt["dense"]) is Dense and rebuilt["dense"].scale == 2.0
    assert type(rebuilt["custom"]) is Layer and rebuilt["custom"].name == "out"
    assert type(rebuilt["ordered"]) is OrderedDict
    assert list(rebuilt["ordered"]) == ["z", "a"]  # an OrderedDict keeps its order
    assert rebuilt["layers"][1][1] is None


def test_leaves_in_a_fixed_order_and_none_has_none():
    leaves = tree_leaves({"b": [2.0, (3.0, None)], "a": 1.0})
    assert leaves == [1.0, 2.0, 3.0]  # a dict's keys sorted; None is an empty node
    assert tree_structure((None,)).leaf_count == 0


def test_tree_map_over_several_trees_keeps_classes():
    rng = np.random.default_rng(1)
    params, gradient = example_tree(rng), example_tree(rng)
    updated = tree_map(lambda p, g: p - 0.1 * g, params, gradient)
    expected = [p - 0.1 * g for p, g in zip(tree_leaves(params), tree_leaves(gradient))]
    assert all(np.allclose(u, e) for u, e in zip(tree_leaves(updated), expected))
    assert type(updated["dense"]) is Dense  # every field is a child, rebuilt without __init__


def test_mismatched_structures_are_refused_with_both_structures_named():
    with pytest.raises(ValueError, match=r"structure .*list\(\*, \*\).*tuple\(\*, \*\)"):
        tree_map(lambda a, b: a + b, (1.0, 2.0), [1.0, 2.0])
    with pytest.raises(ValueError, match="has 2 leaves, but 3 were given"):
        tree_unflatten(tree_structure((1.0, 2.0)), [1.0, 2.0, 3.0])


def test_register_pytree_refuses_what_is_not_a_new_class():
    with pytest.raises(TypeError, match="takes a class"):
        register_pytree(Layer(1, 2, "x"), None, None)
    with pytest.raises(ValueError, match="already"):
        register_pytree(tuple, None, None)


def test_dir_of_the_package_lists_the_public_api_only():
    import s2sgrad

    names = dir(s2sgrad)
    assert {"grad", "vmap", "tree_map", "optimizers", "GradientTape"} <= set(names)
    assert not {"api", "compiler", "runtime", "tape", "errors"} & set(names)
