"""Checks the product and linear-algebra rules (and their runtime helpers) against finite
differences.

Most cases go through ``rulecheck.check_rule``. Its JVP check evaluates every entry of a
rule with the one tangent it draws, so a product whose operands have different shapes (where
``np.matmul(a, t)`` cannot take the tangent of ``a``) is checked in reverse mode only; the
same products with operands of one shape check the JVP rules.

``cholesky`` and ``eigh`` read one triangle of their input; they are checked as functions of
an unconstrained ``x`` through ``sym(x) = (x + x.T) / 2`` by ``check_structured``, which also
handles the two outputs of ``slogdet`` and ``eigh`` (with ``None`` cotangents) and the sign
freedom of eigenvectors. ``test_every_rule_is_tested`` fails for a rule added without a test.
"""

import inspect
import operator
import warnings

import numpy as np
import pytest
import rulecheck
from oracle import numeric_jvp, numeric_vjp
from rulecheck import assert_every_rule_is_tested, check_rule

from s2sgrad.rules import get_rule
from s2sgrad.rules.registry import per_argument
from s2sgrad.runtime import (
    dot_cotangent_a,
    dot_cotangent_b,
    matmul_cotangent_a,
    matmul_cotangent_b,
    rhs_as_matrix,
)

RULE_MODULES = ("s2sgrad.rules.linalg", "s2sgrad.runtime.linalg")

_rng = np.random.default_rng(11)


def r(*shape):
    return _rng.standard_normal(shape)


def well_conditioned(*shape):
    """Random square matrices (the last two axes) far from singular."""
    n = shape[-1]
    return r(*shape) + 3.0 * np.eye(n)


def spd(*shape):
    """Random symmetric positive definite matrices."""
    m = r(*shape)
    return m @ np.swapaxes(m, -1, -2) + shape[-1] * np.eye(shape[-1])


def sym(x):
    return (x + np.swapaxes(x, -1, -2)) / 2


def case(primitive, *args, _jvp=None, **kwargs):
    """``rulecheck.case``, checking the JVP by default only when every array argument has
    one shape, so that each entry of the rule can be evaluated with the tangent drawn."""
    if _jvp is None:
        _jvp = len({np.shape(a) for a in args if isinstance(a, np.ndarray)}) <= 1
    return rulecheck.case(primitive, *args, _jvp=_jvp, **kwargs)


# NumPy 2.0 changed solve(a, b): b is a vector only when 1-D; NumPy 1.x took b as stacked
# vectors whenever it has one dimension fewer than a
SOLVE_STACKS_VECTORS = np.lib.NumpyVersion(np.__version__) < "2.0.0"
numpy2_solve = pytest.mark.skipif(
    SOLVE_STACKS_VECTORS, reason="NumPy 1.x's solve reads this b as stacked vectors"
)
numpy1_solve = pytest.mark.skipif(
    not SOLVE_STACKS_VECTORS, reason="NumPy 2's solve reads this b as a matrix"
)


DOT_SHAPES = [
    ((), ()),
    ((), (3,)),
    ((3,), ()),
    ((), (2, 3)),
    ((3,), (3,)),
    ((2, 3), (3,)),
    ((3,), (3, 4)),
    ((2, 3), (3, 4)),
    ((3, 3), (3, 3)),
    ((2, 3, 4), (4,)),
    ((2, 3, 4), (4, 5)),
    ((4,), (2, 4, 5)),
    ((2, 3), (5, 3, 4)),
    ((2, 3, 4), (3, 4, 2)),
]

MATMUL_SHAPES = [
    ((3,), (3,)),
    ((2, 3), (3,)),
    ((3,), (3, 4)),
    ((2, 3), (3, 4)),
    ((3, 3), (3, 3)),
    ((2, 3, 3), (2, 3, 3)),
    ((5, 2, 3), (3, 4)),
    ((2, 3), (5, 3, 4)),
    ((3,), (5, 3, 4)),
    ((5, 2, 3), (3,)),
    ((2, 1, 2, 3), (1, 3, 3, 2)),
    ((2, 1, 2, 3), (4, 3, 2)),
]

EINSUMS = [
    ("ij,jk->ik", (2, 3), (3, 4)),
    ("ij,jk", (2, 3), (3, 4)),
    ("ij,jk", (3, 3), (3, 3)),
    ("ii->i", (3, 3)),
    ("ii", (3, 3)),
    ("iij->j", (2, 2, 3)),
    ("ij->", (2, 3)),
    ("ij->j", (2, 3)),
    ("ji", (2, 3)),
    ("i,i->", (4,), (4,)),
    ("i,j->ij", (2,), (3,)),
    ("ij,ij->ij", (1, 3), (4, 3)),
    ("bij,bjk->bik", (2, 2, 3), (2, 3, 2)),
    ("...ij,...jk->...ik", (2, 1, 2, 3), (4, 3, 2)),
    ("...i,...i", (2, 3), (3,)),
    ("i...,i...->...", (3, 2), (3, 1)),
    ("ij,jk,kl->il", (2, 3), (3, 4), (4, 2)),
    (" ij , jk -> ki ", (2, 3), (3, 4)),
]

CASES = [
    *[case(np.dot, r(*sa), r(*sb)) for sa, sb in DOT_SHAPES],
    case(np.dot, 2.5, r(3)),
    case(np.ndarray.dot, r(2, 3), r(3, 4)),
    case(np.ndarray.dot, r(3), r(3)),
    *[case(np.matmul, r(*sa), r(*sb)) for sa, sb in MATMUL_SHAPES],
    *[case(operator.matmul, r(*sa), r(*sb)) for sa, sb in MATMUL_SHAPES[::3]],
    case(np.vdot, r(6), r(6)),
    case(np.vdot, r(2, 3), r(3, 2)),
    case(np.inner, np.array(2.0), r(3)),
    case(np.inner, r(3), r(3)),
    case(np.inner, r(2, 3), r(2, 3)),
    case(np.inner, r(2, 3), r(3)),
    case(np.inner, r(2, 3), r(4, 3)),
    case(np.inner, r(2, 2, 3), r(4, 3)),
    case(np.inner, r(3), r(2, 4, 3)),
    case(np.outer, r(3), r(4)),
    case(np.outer, r(2, 2), r(3)),
    case(np.tensordot, r(2, 3, 4), r(3, 4, 5)),
    case(np.tensordot, r(3, 3), r(3, 3), 1),
    case(np.tensordot, r(2, 3), r(3, 4), axes=1),
    case(np.tensordot, r(2), r(3), 0),
    case(np.tensordot, r(2, 3, 4), r(3, 5, 2), ([1, 0], [0, 2])),
    case(np.tensordot, r(2, 3, 4), r(4, 5), (2, 0)),
    case(np.tensordot, r(2, 3, 4), r(4, 3), axes=([-1, 1], [0, -1])),
    case(np.tensordot, r(2, 3, 4), r(2, 5), ([0], [0])),
    case(np.tensordot, r(2, 3, 4), r(5, 6, 4), ([2], [2])),
    case(np.kron, r(2, 3), r(4, 5)),
    case(np.kron, r(3), r(2, 2)),
    case(np.kron, r(2), r(3)),
    case(np.kron, r(2, 1, 3), r(2, 2)),
    *[case(np.einsum, spec, *[r(*s) for s in shapes]) for spec, *shapes in EINSUMS],
    case(np.einsum, "ij,jk->ik", r(2, 3), r(3, 4), optimize=True),
    # the sublist form: einsum(a, [0, 1], b, [1, 2], [0, 2]) is einsum("ab,bc->ac", a, b)
    case(np.einsum, r(3, 4), [0, 1], r(3, 4), [0, 1], [0], _argnums=[0, 2]),
    case(np.einsum, r(2, 3), [0, 1], r(3, 4), [1, 2], _argnums=[0, 2]),
    case(np.einsum, r(3, 3), [5, 5], [5], _argnums=[0]),
    case(np.einsum, r(2, 2, 3), [Ellipsis, 30], r(3), [30], [Ellipsis], _argnums=[0, 2]),
    case(np.linalg.inv, well_conditioned(3, 3)),
    case(np.linalg.inv, well_conditioned(2, 3, 3)),
    case(np.linalg.det, well_conditioned(3, 3)),
    case(np.linalg.det, well_conditioned(2, 3, 3)),
    case(np.linalg.solve, well_conditioned(3, 3), r(3)),
    case(np.linalg.solve, well_conditioned(3, 3), r(3, 3)),
    case(np.linalg.solve, well_conditioned(3, 3), r(3, 2)),
    case(np.linalg.solve, well_conditioned(2, 3, 3), r(2, 3, 2)),
    case(np.linalg.solve, well_conditioned(2, 3, 3), r(3), _marks=numpy2_solve),
    case(np.linalg.solve, well_conditioned(3, 3), r(2, 3, 2)),
    case(np.linalg.solve, well_conditioned(2, 3, 3), r(3, 1), _marks=numpy2_solve),
    case(np.linalg.solve, well_conditioned(2, 3, 3), r(2, 3), _marks=numpy1_solve),
    case(np.linalg.solve, well_conditioned(2, 2, 3, 3), r(2, 2, 3), _marks=numpy1_solve),
    case(np.cross, r(3), r(3)),
    case(np.cross, r(4, 3), r(3)),
    case(np.cross, r(2, 1, 3), r(4, 3)),
    case(np.cross, r(3, 4), r(4, 3), axisa=0),
    case(np.cross, r(3, 2), r(3, 2), axis=0),
    case(np.cross, r(2, 3), r(3, 2), 1, 0, 0),
    case(np.linalg.matrix_power, well_conditioned(3, 3), 3),
    case(np.linalg.matrix_power, well_conditioned(3, 3), 1),
    case(np.linalg.matrix_power, well_conditioned(3, 3), 0),
    case(np.linalg.matrix_power, well_conditioned(3, 3), -2),
    case(np.linalg.matrix_power, r(2, 3, 3), 2),
    case(np.linalg.pinv, well_conditioned(3, 3)),
    case(np.linalg.pinv, r(4, 2)),
    case(np.linalg.pinv, r(2, 4)),
    case(np.linalg.pinv, r(2, 4, 3)),
    case(np.linalg.cond, well_conditioned(3, 3)),
    case(np.linalg.cond, well_conditioned(2, 3, 3), -2),
    case(np.linalg.cond, well_conditioned(3, 3), "fro"),
    case(np.linalg.cond, well_conditioned(3, 3), p=np.inf),
    case(np.linalg.tensorsolve, well_conditioned(6, 6).reshape(2, 3, 6), r(2, 3)),
    case(np.linalg.tensorsolve, well_conditioned(4, 4).reshape(4, 2, 2), r(4)),
    case(np.linalg.tensorinv, well_conditioned(6, 6).reshape(6, 2, 3), ind=1),
    case(np.linalg.tensorinv, well_conditioned(4, 4).reshape(2, 2, 2, 2)),
    case(np.linalg.tensorinv, well_conditioned(6, 6).reshape(2, 3, 6)),
    case(np.linalg.tensorinv, well_conditioned(4, 4).reshape(4, 2, 2), ind=1),
    # Runtime helpers: each is linear in g and in the operand it does not stand for.
    *[
        case(helper, r(*np.shape(np.matmul(r(*sa), r(*sb)))), r(*sa), r(*sb), _argnums=[0, 2])
        for helper in (matmul_cotangent_a,)
        for sa, sb in MATMUL_SHAPES
    ],
    *[
        case(helper, r(*np.shape(np.matmul(r(*sa), r(*sb)))), r(*sa), r(*sb), _argnums=[0, 1])
        for helper in (matmul_cotangent_b,)
        for sa, sb in MATMUL_SHAPES
    ],
    *[
        case(dot_cotangent_a, r(*np.shape(np.dot(r(*sa), r(*sb)))), r(*sa), r(*sb), _argnums=[0, 2])
        for sa, sb in DOT_SHAPES
    ],
    *[
        case(dot_cotangent_b, r(*np.shape(np.dot(r(*sa), r(*sb)))), r(*sa), r(*sb), _argnums=[0, 1])
        for sa, sb in DOT_SHAPES
    ],
    case(rhs_as_matrix, r(4, 3), r(3), _argnums=[0]),
    case(rhs_as_matrix, r(3, 2), r(3, 2), _argnums=[0]),
]


@pytest.mark.parametrize("primitive, args, kwargs, argnums, jvp", CASES)
def test_rule(primitive, args, kwargs, argnums, jvp):
    check_rule(primitive, *args, argnums=argnums, kwargs=kwargs, jvp=jvp, rtol=1e-5, atol=1e-5)


# ------------------------------------------------------ symmetric inputs, several outputs


def check_structured(primitive, x, *, symmetric=False, gauge=None, cotangents=None, **kwargs):
    """Check the rules of a one-argument ``primitive`` at ``x`` against finite differences.

    ``symmetric``: ``primitive`` is checked as a function of ``x`` through ``sym``. ``gauge``
    maps the outputs (a tuple for several) to a canonical form (eigenvector signs); it must
    be locally constant up to the output, as the signs are. ``cotangents`` lists the output
    cotangents to try (``None`` entries allowed); by default one random cotangent.
    """
    rule = get_rule(primitive)
    prepare = sym if symmetric else (lambda v: v)

    def f(v):
        out = primitive(prepare(v), **kwargs)
        return gauge(out, out) if gauge else out

    ans = primitive(prepare(x), **kwargs)
    outputs = _parts(f(x))
    for g in cotangents or [tuple(r(*np.shape(o)) for o in outputs)]:
        raw_g = _raw_cotangent(g, ans, gauge)
        actual = per_argument(rule.vjp(_single(raw_g), ans, prepare(x), **kwargs), 1)[0]
        expected = numeric_vjp(lambda v: _parts(f(v)), [x], 0, g)
        np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-6, err_msg="VJP")
    t = r(*np.shape(x))
    tangent = per_argument(rule.jvp(t, ans, prepare(x), **kwargs), 1)[0]
    tangent = _parts(gauge(tangent, ans) if gauge else tangent)
    expected = numeric_jvp(lambda v: _parts(f(v)), [x], 0, t)
    for got, want in zip(tangent, expected, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg="JVP")
    x32 = x.astype(np.float32)
    ans32 = primitive(prepare(x32), **kwargs)
    g32 = tuple(np.ones(np.shape(o), np.float32) for o in _parts(ans32))
    cotangent32 = rule.vjp(_single(g32), ans32, prepare(x32), **kwargs)
    assert np.result_type(cotangent32) == np.float32


def _parts(out):
    return tuple(out) if isinstance(out, tuple) else (out,)


def _single(g):
    return g[0] if len(g) == 1 else g


def _raw_cotangent(g, ans, gauge):
    """The cotangent of the primitive's own outputs, given that of the gauged outputs."""
    if gauge is None:
        return g
    return gauge(g, ans)


def eigenvector_signs(values, reference):
    """Multiply the eigenvector part of ``values`` by the signs that make each eigenvector
    of ``reference`` have a positive largest entry (a locally constant, linear gauge)."""
    vectors = reference[1]
    biggest = np.take_along_axis(vectors, np.argmax(np.abs(vectors), axis=-2)[..., None, :], -2)
    return (values[0], None if values[1] is None else values[1] * np.sign(biggest))


@pytest.mark.parametrize("shape", [(3, 3), (2, 3, 3)])
def test_slogdet(shape):
    x = well_conditioned(*shape)
    x[..., 0, :] *= -1  # a negative determinant somewhere
    g = r(*shape[:-2])
    check_structured(np.linalg.slogdet, x, cotangents=[(r(*shape[:-2]), g), (None, g)])
    rule = get_rule(np.linalg.slogdet)
    only_sign = rule.vjp((g, None), np.linalg.slogdet(x), x)
    np.testing.assert_array_equal(only_sign, np.zeros(shape))


CHOLESKY_HAS_UPPER = "upper" in inspect.signature(np.linalg.cholesky).parameters


@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4)])
@pytest.mark.parametrize(
    "upper",
    [
        False,
        pytest.param(
            True,
            marks=pytest.mark.skipif(
                not CHOLESKY_HAS_UPPER, reason="np.linalg.cholesky takes upper= from NumPy 2.0"
            ),
        ),
    ],
)
def test_cholesky(shape, upper):
    keywords = {"upper": upper} if upper else {}
    check_structured(np.linalg.cholesky, spd(*shape), symmetric=True, **keywords)


@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4)])
def test_eigh(shape):
    x = r(*shape)
    gw, gv = r(*shape[:-1]), r(*shape)
    check_structured(
        np.linalg.eigh,
        x,
        symmetric=True,
        gauge=eigenvector_signs,
        cotangents=[(gw, gv), (gw, None), (None, gv)],
    )


@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4)])
@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigvalsh(shape, uplo):
    check_structured(np.linalg.eigvalsh, r(*shape), symmetric=True, UPLO=uplo)


def _cross_takes_2_vectors() -> bool:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            np.cross(np.ones(2), np.ones(2))
        except ValueError:
            return False
    return True


@pytest.mark.skipif(
    not _cross_takes_2_vectors(),
    reason="np.cross of 2-vectors, deprecated in NumPy 2.0, is gone from this NumPy",
)
@pytest.mark.filterwarnings("ignore:Arrays of 2-dimensional vectors:DeprecationWarning")
@pytest.mark.parametrize("shape_a, shape_b", [((2,), (2,)), ((4, 2), (3,)), ((3,), (2, 2))])
def test_cross_of_2_vectors(shape_a, shape_b):
    check_rule(np.cross, r(*shape_a), r(*shape_b), jvp=shape_a == shape_b)


def singular_vector_signs(values, reference):
    """Multiply U's columns and Vh's rows by the signs that make each column of the
    reference U have a positive largest entry (locally constant and linear, like
    ``eigenvector_signs``); the singular values are left alone."""
    u = reference[0]
    k = np.shape(reference[1])[-1]
    biggest = np.take_along_axis(u, np.argmax(np.abs(u), axis=-2)[..., None, :], -2)
    signs = np.sign(biggest)[..., :k]
    u_part = None if values[0] is None else values[0][..., :k] * signs
    vh_part = None if values[2] is None else values[2][..., :k, :] * np.swapaxes(signs, -1, -2)
    return (u_part, values[1], vh_part)


@pytest.mark.parametrize("shape", [(3, 4), (4, 3), (3, 3), (2, 3, 4)])
def test_svd(shape):
    x = r(*shape)
    k = min(shape[-2:])
    gu, gs, gvh = r(*shape[:-1], k), r(*shape[:-2], k), r(*shape[:-2], k, shape[-1])
    check_structured(
        np.linalg.svd,
        x,
        gauge=singular_vector_signs,
        cotangents=[(gu, gs, gvh), (None, gs, None), (gu, None, None), (None, None, gvh)],
        full_matrices=False,
    )


@pytest.mark.parametrize("shape", [(3, 4), (4, 3), (2, 3, 3)])
def test_singular_values(shape):
    check_structured(np.linalg.svd, r(*shape), compute_uv=False)


def diagonal_signs(values, reference):
    """Multiply Q's columns and R's rows by the signs of R's diagonal (QR's sign freedom)."""
    signs = np.sign(np.diagonal(reference[1], axis1=-2, axis2=-1))
    q = None if values[0] is None else values[0] * np.expand_dims(signs, -2)
    r_part = None if values[1] is None else values[1] * np.expand_dims(signs, -1)
    return (q, r_part)


@pytest.mark.parametrize("shape", [(4, 3), (3, 3), (2, 5, 2)])
def test_qr(shape):
    x = r(*shape)
    gq, gr = r(*shape), r(*shape[:-2], shape[-1], shape[-1])
    cotangents = [(gq, gr), (None, gr), (gq, None)]
    check_structured(np.linalg.qr, x, gauge=diagonal_signs, cotangents=cotangents)


def test_eigh_cotangent_is_symmetric():
    x = sym(r(4, 4))
    ans = np.linalg.eigh(x)
    ga = get_rule(np.linalg.eigh).vjp((r(4), r(4, 4)), ans, x)
    np.testing.assert_allclose(ga, ga.T)


# ---------------------------------------------------------------------------- coverage

TESTED = {c.values[0] for c in CASES} | {np.linalg.slogdet, np.linalg.cholesky, np.linalg.eigh}
TESTED |= {np.linalg.eigvalsh, np.linalg.svd, np.linalg.qr}
# NumPy 2's np.linalg.matmul, outer and tensordot share these rules (rules/array_api.py):
# each is tested in test_rules_array_api.py and test_coverage.py
TESTED |= {getattr(np.linalg, n) for n in ("matmul", "outer", "tensordot") if hasattr(np.linalg, n)}


def test_every_rule_is_tested():
    assert_every_rule_is_tested(RULE_MODULES, TESTED)


def test_matrix_rank_is_not_differentiable():
    assert not get_rule(np.linalg.matrix_rank).differentiable
