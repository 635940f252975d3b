"""A loop whose body changes the list it runs over (a worklist that grows, a list popped
as it is read): Python's loop sees the change, a loop read by index over a copy does not.
Source transformation gave the gradient of the copy's loop (3.0 where 15.0 is right);
such a loop is now refused by source transformation, and ``mode="auto"`` runs it on the
tape. Changing the entry just visited (``xs[i] = ...`` of ``enumerate``, ``d[k] = ...``)
is what a loop over the copy sees as well, and stays transformed."""

import warnings

import numpy as np
import pytest

import s2sgrad as sg


def doubling_worklist(x):
    items = [x]
    for v in items:
        if len(items) < 4:
            items.append(v * 2.0)
    return sum(items)  # x + 2x + 4x + 8x


def doubling_worklist_enumerated(x):
    items = [x]
    for i, v in enumerate(items):
        if i < 3:
            items.append(v * 2.0)
    return sum(items)


def extended_while_read(x):
    items = [x]
    for v in items:
        if len(items) < 4:
            items += [v * 2.0]
    return sum(items)


def popped_while_read(x):
    items = [x, 2 * x, 3 * x, 4 * x]
    total = 0.0
    for v in items:
        total = total + v
        if len(items) > 2:
            items.pop()
    return total  # x + 2x


def zipped_with_a_growing_list(x):
    grows = [x, x]
    total = 0.0
    for u, w in zip(grows, [1.0, 2.0, 3.0]):
        if len(grows) < 3:
            grows.append(u * 5.0)
        total = total + u * w
    return total  # x + 2x + 15x


def written_ahead(x):
    items = [x, x, x]
    total = 0.0
    for v in items:
        items[2] = v * 3.0
        total = total + v
    return total  # x + x + 3x


CHANGING = [
    (doubling_worklist, 15.0),
    (doubling_worklist_enumerated, 15.0),
    (extended_while_read, 15.0),
    (popped_while_read, 3.0),
    (zipped_with_a_growing_list, 18.0),
    (written_ahead, 5.0),
]
IDS = [f.__name__ for f, _ in CHANGING]


@pytest.mark.parametrize("f, slope", CHANGING, ids=IDS)
@pytest.mark.parametrize("mode", ["auto", "tape"])
def test_loops_that_change_their_list_get_pythons_gradient(f, slope, mode):
    for x in (1.3, -0.7):
        h = 1e-6
        assert (f(x + h) - f(x - h)) / (2 * h) == pytest.approx(slope)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", sg.S2SGradWarning)
            assert sg.grad(f, mode=mode)(x) == pytest.approx(slope)
            assert sg.jvp(f, (x,), (1.0,), mode=mode)[1] == pytest.approx(slope)
            assert sg.hessian(f, mode=mode)(x) == pytest.approx(0.0, abs=1e-9)


@pytest.mark.parametrize("f, slope", CHANGING, ids=IDS)
def test_loops_that_change_their_list_are_refused_by_source(f, slope):
    with pytest.raises(sg.UnsupportedError, match=r"test_loops_changing_their_list\.py:\d+"):
        sg.grad(f, mode="s2s")(1.3)


def entry_replaced(xs):
    xs = list(xs)
    for i, v in enumerate(xs):
        xs[i] = np.sin(v)
    return np.sum(np.stack(xs) ** 2)


@pytest.mark.parametrize("mode", ["s2s", "auto"])
def test_writing_the_entry_just_visited_is_still_transformed(mode):
    rng = np.random.default_rng(3)
    rows = [rng.normal(size=2) for _ in range(3)]
    with warnings.catch_warnings():
        warnings.simplefilter("error", sg.S2SGradWarning)
        g_rows = sg.grad(entry_replaced, mode=mode)(rows)
    for row, got in zip(rows, g_rows):
        np.testing.assert_allclose(got, 2 * np.sin(row) * np.cos(row))
