"""NumPy calls that write into an array (``out=``, ``np.copyto``, ``np.putmask``,
``np.fill_diagonal``) on the tape under a function transform: into a view of a value being
differentiated, the write reaches the array it views (tape/view_writes.py); into a plain
array the function made itself, that array becomes a tape value the write goes into."""

from __future__ import annotations

import numpy as np
import pytest
from oracle import assert_tape_program

import s2sgrad as sg

HERE = __file__


def copied_into_a_row(x):
    t = np.outer(x, x[::-1]) * 1.0
    v = t[0]
    np.copyto(v, np.sin(x) * 2.0)
    return np.sum(t * np.outer(x, x))


def masked_into_a_row(x):
    t = np.outer(x, x[::-1]) * 1.0
    v = t[1]
    np.putmask(v, v > 0, x**2)
    return np.sum(t * np.outer(x, x))


def diagonal_of_a_block_filled(x):
    t = np.outer(x, x) * 1.0
    v = t[1:, :]
    np.fill_diagonal(v, x[0] * 3.0)
    return np.sum(t * t)


def out_into_slices(x):
    t = np.outer(x, x) * 1.0
    np.negative(t[1:], out=t[1:])
    np.sin(t[0], out=t[0])
    return np.sum(t * np.outer(x, x[::-1]))


def out_into_a_buffer(x):
    t = np.zeros(x.size)
    np.exp(x**2 * 0.5, t)
    return np.sum(np.sin(t * x))


def out_keyword_into_a_buffer(x):
    t = np.empty(x.size)
    np.multiply(np.sin(x), 2.0, out=t)
    return np.sum((t * x) ** 2)


def copied_into_a_buffer(x):
    t = np.zeros(x.size)
    np.copyto(t, np.tanh(x))
    return np.sum(t * x)


def masked_into_a_buffer(x):
    t = np.ones(x.size)
    np.putmask(t, np.arange(x.size) % 2 == 0, np.sin(x))
    return np.sum(np.tanh(t * x))


PROGRAMS = [
    copied_into_a_row,
    masked_into_a_row,
    diagonal_of_a_block_filled,
    out_into_slices,
    out_into_a_buffer,
    out_keyword_into_a_buffer,
    copied_into_a_buffer,
    masked_into_a_buffer,
]


@pytest.mark.parametrize("size", [3, 4])
@pytest.mark.parametrize("program", PROGRAMS, ids=lambda f: f.__name__)
def test_the_tape_follows_the_write(program, size):
    assert_tape_program(program, size)


def out_into_a_parameter(x, buffer):
    np.exp(x, out=buffer)
    return np.sum(buffer * x)


def out_into_a_buffer_a_view_shares(x):
    t = np.zeros(x.size)
    head = t[:2]
    np.exp(x, t)
    return np.sum(head * x[:2])


def added_at_into_a_buffer_a_view_shares(x):
    t = np.zeros(x.size)
    head = t[:2]
    np.add.at(t, [0, 1], x[:2])
    return np.sum(head * x[:2])


@pytest.mark.parametrize(
    "program",
    [out_into_a_parameter, out_into_a_buffer_a_view_shares, added_at_into_a_buffer_a_view_shares],
)
def test_a_plain_array_others_see_is_still_refused(program):
    x = np.random.default_rng(0).normal(size=3)
    arguments = (x, np.zeros(3)) if program is out_into_a_parameter else (x,)
    with pytest.raises(sg.S2SGradError, match=rf"{HERE}:\d+"):
        sg.grad(program, mode="tape")(*arguments)
