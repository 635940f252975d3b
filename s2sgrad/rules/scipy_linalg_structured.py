"""Derivative rules of the structured matrices of ``scipy.linalg``: ``toeplitz``,
``circulant``, ``hankel`` and ``block_diag``.

Each is linear in its arguments: forward mode builds the same matrix of the tangents.
``toeplitz``, ``circulant`` and ``hankel`` read every entry of the matrix from one vector
(``toeplitz(c, r)``: ``T[i, j] = c[i - j]`` on and below the diagonal, ``r[j - i]`` above
it; ``circulant(c)``: ``c[(i - j) % n]``; ``hankel(c, r)``: ``c[i + j]``, then ``r[i + j -
n + 1]``), so reverse mode sums the cotangent back onto that vector
(``index_cotangent``). ``block_diag(*arrays)`` gives each array its own block of the
cotangent. SciPy flattens the vectors it is given; the cotangents take their shapes back.

Example::

    sg.grad(lambda c: np.sum(scipy.linalg.toeplitz(c) ** 2))(np.arange(3.0))
"""

from __future__ import annotations

import numpy as np
from scipy import linalg

from s2sgrad.rules.registry import jvp_rule, vjp_rule
from s2sgrad.runtime import index_cotangent

__all__: list[str] = []


def _toeplitz_index(rows: int, columns: int) -> np.ndarray:
    """Where ``T[i, j]`` lies in ``concatenate([r[:0:-1], c])``."""
    return (columns - 1) + np.arange(rows)[:, None] - np.arange(columns)[None, :]


@vjp_rule(linalg.toeplitz)
def _toeplitz(g, ans, c, r=None):
    rows, columns = np.shape(ans)
    along = index_cotangent(g, np.zeros(rows + columns - 1), _toeplitz_index(rows, columns))
    g_c = along[columns - 1 :]
    g_r = np.concatenate([np.zeros(1), along[: columns - 1][::-1]])
    if r is None:  # r is c (conjugated: real values only)
        return np.reshape(g_c + g_r, np.shape(c))
    return np.reshape(g_c, np.shape(c)), np.reshape(g_r, np.shape(r))


@jvp_rule(linalg.toeplitz)
def _toeplitz_jvp(t, ans, c, r=None):
    if r is None:
        return linalg.toeplitz(t)
    return linalg.toeplitz(t, np.zeros(np.size(r))), linalg.toeplitz(np.zeros(np.size(c)), t)


def _circulant_index(size: int) -> np.ndarray:
    return (np.arange(size)[:, None] - np.arange(size)[None, :]) % size


@vjp_rule(linalg.circulant)
def _circulant(g, ans, c):
    flat = index_cotangent(g, np.zeros(np.shape(ans)[0]), _circulant_index(np.shape(ans)[0]))
    return np.reshape(flat, np.shape(c))


@jvp_rule(linalg.circulant)
def _circulant_jvp(t, ans, c):
    return linalg.circulant(t)


def _hankel_index(rows: int, columns: int) -> np.ndarray:
    """Where ``H[i, j]`` lies in ``concatenate([c, r[1:]])``."""
    return np.arange(rows)[:, None] + np.arange(columns)[None, :]


@vjp_rule(linalg.hankel)
def _hankel(g, ans, c, r=None):
    rows, columns = np.shape(ans)
    along = index_cotangent(g, np.zeros(rows + columns - 1), _hankel_index(rows, columns))
    g_c = np.reshape(along[:rows], np.shape(c))
    if r is None:  # r is zeros
        return g_c
    return g_c, np.reshape(np.concatenate([np.zeros(1), along[rows:]]), np.shape(r))


@jvp_rule(linalg.hankel)
def _hankel_jvp(t, ans, c, r=None):
    if r is None:
        return linalg.hankel(t)
    return linalg.hankel(t, np.zeros(np.size(r))), linalg.hankel(np.zeros(np.size(c)), t)


def _blocks(arrays) -> list[tuple[int, int, int, int]]:
    """``(first row, rows, first column, columns)`` of each array's block."""
    found = []
    row = column = 0
    for a in arrays:
        rows, columns = np.shape(np.atleast_2d(np.zeros(np.shape(a))))
        found.append((row, rows, column, columns))
        row, column = row + rows, column + columns
    return found


@vjp_rule(linalg.block_diag, inline=False)
def _block_diag(g, ans, *arrs):
    return tuple(
        np.reshape(g[row : row + rows, column : column + columns], np.shape(a))
        for a, (row, rows, column, columns) in zip(arrs, _blocks(arrs))
    )


@jvp_rule(linalg.block_diag, inline=False)
def _block_diag_jvp(t, ans, *arrs):
    # entry i: the tangent of the matrix when array i moves by t
    entries = []
    for index, a in enumerate(arrs):
        if np.shape(a) != np.shape(t):
            entries.append(None)
            continue
        parts = [t if k == index else np.zeros(np.shape(b)) for k, b in enumerate(arrs)]
        entries.append(linalg.block_diag(*parts))
    return tuple(entries)
