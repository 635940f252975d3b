"""NumPy functions added for issue 13, differentiated end to end.

Each function is checked through whole programs with ``sg.check_grads`` (reverse and
forward mode against central differences, and the derivatives of the gradient: second
order) in every engine, twice: the second call runs the code specialised to the shapes.
The rules themselves are checked one by one in tests/test_rules_*.py.
"""

from __future__ import annotations

import numpy as np
import pytest

import s2sgrad as sg

MODES = ("s2s", "tape", "auto")
RNG = np.random.default_rng(13)


def check_everywhere(f, *args, rtol=1e-5, atol=1e-6):
    """``check_grads`` to second order in every engine, on the first call and the second."""
    for mode in MODES:
        for _ in range(2):
            sg.check_grads(f, *args, order=2, mode=mode, rtol=rtol, atol=atol)


def einsum_sublists(x):
    m = np.reshape(x, (3, 4))
    return np.sum(np.einsum(m, [0, 1], m, [0, 1], [0]) ** 2)


def einsum_sublists_product(x, y):
    return np.einsum(x, [0, 1], y, [1, 2], [0, 2])


W = RNG.standard_normal((3, 4))


def cross(x):
    vectors = np.reshape(x, (4, 3))
    return np.sum(np.cross(vectors[:2], vectors[2:]) ** 2) + np.sum(np.cross(x[:3], W[:, :3]))


def diff(x):
    return np.sum(np.diff(x, n=2) ** 2) + np.sum(np.diff(x, prepend=x[0] ** 2, append=1.0) ** 3)


def splits(x):
    a, b = np.hsplit(np.reshape(x, (2, 6)), 2)
    c, d = np.vsplit(np.reshape(x, (4, 3)), [1])
    e, f = np.dsplit(np.reshape(x, (1, 3, 4)), 2)
    return np.sum(a * b) + np.sum(c * np.sin(d[0])) + np.sum(e**2 * f)


def joins(x):
    columns = np.column_stack([x[:6], np.reshape(x[6:], (6, 1))]) ** 2
    return np.sum(columns * np.arange(12.0).reshape(6, 2)) + np.sum(np.append(x[:3], x[5:]) ** 3)


def moves(x):
    m = np.reshape(x, (3, 4))
    taken = np.take_along_axis(m, np.array([[0, 3], [2, 2], [1, 0]]), axis=1)
    return np.sum(np.rollaxis(m, 1) * W.T) + np.sum(taken**2 * np.cos(m[:, :2]))


def partition(x):
    return np.sum(np.partition(x, 3)[:3] ** 2) + np.sum(np.partition(x * W.ravel(), (2, 8)) * x)


def compress(x):
    kept = np.compress([True, False] * 6, x) ** 2
    rows = np.compress([True, False, True], np.reshape(x, (3, 4)), axis=0)
    return np.sum(kept * x[:6]) + np.sum(np.sin(rows))


def compress_method(x):
    # on the tape this was an AttributeError from inside s2sgrad
    return np.sum(x.compress([True, False] * 6) ** 2 * x[:6])


def select(x):
    return np.sum(np.select([x > 0.5, x < -0.2], [x**2, x * 3], default=np.sin(x)) * x)


def ptp(x):
    return np.ptp(x) + np.sum(np.ptp(np.reshape(x, (3, 4)), axis=1) ** 2)


def matrix_power(x):
    m = np.reshape(x[:9], (3, 3)) / 3 + np.eye(3)
    return np.sum(np.linalg.matrix_power(m, 3)) + np.sum(np.linalg.matrix_power(m, -2) ** 2)


def eigvalsh(x):
    m = np.reshape(x[:9], (3, 3))
    s = m + m.T + 5 * np.eye(3)
    return np.sum(np.linalg.eigvalsh(s) ** 3) + np.sum(np.linalg.eigvalsh(s, UPLO="U") * x[:3])


def singular_values(x):
    s = np.linalg.svd(np.reshape(x, (3, 4)), compute_uv=False)
    return np.sum(s**2) + s[0]


def svd_reduced(x):
    u, s, vh = np.linalg.svd(np.reshape(x, (4, 3)), full_matrices=False)
    # products of a singular vector's entries do not depend on its sign
    return np.sum(u[:, 0] ** 4) + np.sum(s) + np.sum((vh[0] * u[0, 0]) ** 2)


def svd_full_first_rows(x):
    u, s, vh = np.linalg.svd(np.reshape(x, (3, 4)))  # vh is 4 x 4: use its first 3 rows only
    return np.sum(s**3) + np.sum((vh[1] * u[2, 1]) ** 2) + np.sum(u[:, 2] ** 4)


def qr(x):
    q, r = np.linalg.qr(np.reshape(x, (4, 3)))
    # squares and absolute values do not depend on the signs of Q's columns and R's rows
    return np.sum(r**2) + np.sum(np.abs(q[:, 0])) + np.sum((q * r[:, 0]) ** 2)


def gradient(x, h):
    rows, columns = np.gradient(np.reshape(x, (3, 4)), h, 0.5)
    along = np.gradient(np.reshape(x, (3, 4)), h, axis=(0, 1), edge_order=2)
    return np.sum(rows**2 * columns) + np.sum(along[1] ** 3) + np.sum(np.gradient(x) * x)


@pytest.mark.parametrize(
    "f, args",
    [
        (einsum_sublists, (RNG.standard_normal(12),)),
        (einsum_sublists_product, (RNG.standard_normal((2, 3)), RNG.standard_normal((3, 2)))),
        (cross, (RNG.standard_normal(12),)),
        (diff, (RNG.standard_normal(12),)),
        (splits, (RNG.standard_normal(12),)),
        (joins, (RNG.standard_normal(12),)),
        (moves, (RNG.standard_normal(12),)),
        (partition, (RNG.standard_normal(12),)),
        (compress, (RNG.standard_normal(12),)),
        (compress_method, (RNG.standard_normal(12),)),
        (select, (RNG.standard_normal(12),)),
        (ptp, (RNG.standard_normal(12),)),
        (matrix_power, (RNG.standard_normal(12),)),
        (eigvalsh, (RNG.standard_normal(12),)),
        (singular_values, (RNG.standard_normal(12),)),
        (svd_reduced, (RNG.standard_normal(12),)),
        (qr, (RNG.standard_normal(12),)),
        (gradient, (RNG.standard_normal(12), 0.7)),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_functions(f, args):
    check_everywhere(f, *args)


def astype(x):
    return np.sum(np.astype(x, np.float64) ** 2)


def astype_method(x):
    return np.sum(x.astype(np.float64) ** 2 * x)


@pytest.mark.skipif(not hasattr(np, "astype"), reason="np.astype is NumPy 2 only")
def test_astype_function():
    check_everywhere(astype, RNG.standard_normal(5))


def test_astype_method():
    # its rules were np.asarray(g, dtype=...), which the tape does not record again
    check_everywhere(astype_method, RNG.standard_normal(5))


def item(x):
    return x.item(2) * x[3] + np.sin(np.reshape(x, (3, 4)).item(1, -1)) ** 2


def test_item_differentiates_by_source():
    x = RNG.standard_normal(12)
    for mode in ("s2s", "auto"):
        for _ in range(2):
            sg.check_grads(item, x, mode=mode)


def test_item_on_the_tape_is_refused():
    # the tape cannot make a Python float carry a derivative: refused, naming the line
    with pytest.raises(sg.NonDifferentiableError) as caught:
        sg.grad(item, mode="tape")(RNG.standard_normal(12))
    message = str(caught.value)
    assert f"{__file__}:{item.__code__.co_firstlineno + 1}" in message
    assert ".item()" in message and "stop_gradient" in message


def test_svd_with_full_matrices():
    # fine while the extra rows of vh get no cotangent; forward mode in source-transformed
    # code cannot know they go unused, and refuses (the tape builds it from reverse mode)
    x = RNG.standard_normal(12)
    sg.check_grads(svd_full_first_rows, x, mode="tape")
    for mode in ("s2s", "auto"):
        sg.check_grads(svd_full_first_rows, x, mode=mode, modes=("rev",), order=1)
    with pytest.raises(sg.NonDifferentiableError, match="full_matrices=False"):
        sg.jvp(svd_full_first_rows, (x,), (x,), mode="s2s")


def svd_full_extra_row(x):
    u, s, vh = np.linalg.svd(np.reshape(x, (3, 4)))
    return np.sum(vh[3] ** 3)


def test_svd_extra_rows_are_refused():
    for mode in MODES:
        with pytest.raises(sg.NonDifferentiableError, match="full_matrices=False"):
            sg.grad(svd_full_extra_row, mode=mode)(RNG.standard_normal(12))


def qr_of_a_wide_matrix(x):
    q, r = np.linalg.qr(np.reshape(x, (3, 4)))
    return np.sum(r**2)


def test_qr_of_a_wide_matrix_is_refused():
    for mode in MODES:
        with pytest.raises(sg.NonDifferentiableError, match="mode='reduced'"):
            sg.grad(qr_of_a_wide_matrix, mode=mode)(RNG.standard_normal(12))
