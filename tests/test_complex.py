"""Complex numbers follow autograd's convention (docs/complex.md): the gradient of a real
loss wrt z = x + iy is dL/dx - i dL/dy, which for a holomorphic f makes the VJP g * f'(z).

The oracle moves the real and the imaginary parts separately (``numeric_complex_grad``);
every check runs in both engines (and "auto"), twice (generic code, then specialised).
"""

from __future__ import annotations

import inspect
import warnings

import numpy as np
import pytest

import s2sgrad as sg
from s2sgrad.errors import FallbackWarning
from tests.oracle import numeric_complex_grad

MODES = ("s2s", "tape", "auto")
HERE = __file__
rng = np.random.default_rng(7)


def cnormal(*shape, dtype=np.complex128):
    return (rng.normal(size=shape) + 1j * rng.normal(size=shape)).astype(dtype)


W = cnormal(3, 4)  # weights that make a complex result a real loss


def check(f, args, modes=MODES, index=0, rtol=1e-5, atol=1e-6):
    expected = numeric_complex_grad(f, args, index)
    for mode in modes:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FallbackWarning)
            gradient = sg.grad(f, wrt=index, mode=mode)
            first = gradient(*args)
            second = gradient(*args)
        assert np.result_type(first) == np.result_type(args[index]), mode
        np.testing.assert_allclose(first, expected, rtol=rtol, atol=atol, err_msg=mode)
        np.testing.assert_allclose(second, first, rtol=1e-12, atol=1e-12, err_msg=mode)


# ---------------------------------------------------------------------------- holomorphic

HOLOMORPHIC = [
    np.exp, np.log, np.sin, np.cos, np.tan, np.tanh, np.sinh, np.cosh, np.sqrt, np.square,
    np.reciprocal, np.expm1, np.log1p, np.log2, np.log10, np.exp2, np.arcsin, np.arccos,
    np.arctan, np.arcsinh, np.arccosh, np.arctanh, np.negative, np.positive,
]  # fmt: skip


def _weighted(u):
    def f(z):
        return np.sum(np.real(u(z) * W))

    return f


@pytest.mark.parametrize("u", HOLOMORPHIC, ids=lambda u: u.__name__)
def test_holomorphic_functions(u):
    z = 0.5 * cnormal(3, 4) + 0.1
    check(_weighted(u), (z,))


def binary_operations(z, w):
    return np.sum(np.real((z * w + z / w - w**z + z**2 - 3.0 * z) * 1j))


@pytest.mark.parametrize("index", [0, 1])
def test_arithmetic_broadcasting_both_arguments(index):
    z = 0.5 * cnormal(3, 1) + 1.0
    w = 0.5 * cnormal(4) + 1.0
    check(binary_operations, (z, w), index=index)


def sine(z):
    return np.sin(z)


def test_holomorphic_vjp_is_g_times_the_derivative():
    z = cnormal(5)
    g = cnormal(5)
    for mode in MODES:
        _, pullback = sg.vjp(sine, z, mode=mode)
        np.testing.assert_allclose(pullback(g)[0], g * np.cos(z), rtol=1e-12)


def test_grad_of_a_complex_result_is_that_of_its_real_part():
    def f(z):
        return np.sin(z) * z

    z = 0.3 + 0.8j
    for mode in MODES:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FallbackWarning)
            got = sg.grad(f, mode=mode)(z)
        np.testing.assert_allclose(got, np.cos(z) * z + np.sin(z), rtol=1e-12)


# ---------------------------------------------------------------------------- taking z apart


def parts(z):
    return np.sum(np.abs(z) * np.real(z) + np.angle(z) * np.imag(z) ** 2 + np.real(np.conj(z) * W))


def methods(z):
    return np.sum(z.real * z.imag + np.real(z.conj() * W) + np.real(z.conjugate()) ** 2)


def angle_in_degrees(z):
    return np.sum(np.angle(z, deg=True) * np.abs(W))


@pytest.mark.parametrize("f", [parts, methods, angle_in_degrees])
def test_real_imag_abs_angle_conj(f):
    check(f, (cnormal(3, 4),))


def modulus_squared(z):
    return np.sum(np.abs(z) ** 2)


def z_times_conj(z):
    return np.sum(np.real(z * np.conj(z)))


@pytest.mark.parametrize("f", [modulus_squared, z_times_conj])
def test_equivalent_formulations_agree(f):
    z = cnormal(3, 2)
    for mode in MODES:
        np.testing.assert_allclose(sg.grad(f, mode=mode)(z), 2 * np.conj(z), rtol=1e-12)


def statistics(z):
    return np.var(z) + np.std(z, axis=0)[1] + np.linalg.norm(z) + np.real(np.vdot(z, W[:, :2]))


def vdot_other_side(z):
    return np.imag(np.vdot(W[:, :2], z)) + np.sum(np.std(z, axis=1, ddof=1))


@pytest.mark.parametrize("f", [statistics, vdot_other_side])
def test_var_std_norm_vdot(f):
    check(f, (cnormal(3, 2),))


def reductions_and_indexing(z):
    t = np.cumsum(z, axis=1)[:, ::-1] * np.prod(z[:2], axis=0) + np.mean(z, axis=0)
    return np.sum(np.real(np.concatenate([t, z.T @ z]) * np.trace(z[:2, :2])))


def test_reductions_products_and_indexing():
    check(reductions_and_indexing, (cnormal(3, 2),))


def test_complex64_stays_complex64():
    z = cnormal(3, 4, dtype=np.complex64)
    for mode in MODES:
        assert sg.grad(modulus_squared, mode=mode)(z).dtype == np.complex64
        assert sg.grad(_weighted(np.exp), mode=mode)(z).dtype == np.complex64


# ---------------------------------------------------------------------------- real inputs


def through_complex_intermediates(x):
    z = np.exp(1j * x) * (1.0 + 2.0j) + x
    return np.sum(np.abs(z) ** 2 + np.angle(z) * x)


GLOBAL_COMPLEX = np.array([1.0 + 2.0j, 3.0 - 1.0j])


def times_global_complex(x):
    return np.sum(np.abs(x * GLOBAL_COMPLEX) ** 2)


def times_constant(x, c):
    return np.sum(np.abs(x * c) ** 2)


@pytest.mark.parametrize("f", [through_complex_intermediates, times_global_complex])
def test_a_real_input_gets_a_real_gradient(f):
    x = rng.normal(size=2)
    check(f, (x,))


def test_a_complex_constant_argument():
    x = rng.normal(size=2)
    check(times_constant, (x, GLOBAL_COMPLEX))


@pytest.mark.parametrize("mode", MODES)
def test_second_order_through_complex_intermediates(mode):
    x = rng.normal(size=2)
    v = rng.normal(size=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FallbackWarning)
        (got,) = sg.hvp(through_complex_intermediates, (x,), (v,), mode=mode)
        hessian = sg.hessian(through_complex_intermediates, mode=mode)(x)
        twice = sg.grad(lambda y: np.sum(sg.grad(through_complex_intermediates)(y) * v))(x)

    def directional(y):
        return np.sum(sg.grad(through_complex_intermediates, mode="tape")(y) * v)

    expected = numeric_complex_grad(directional, (x,), 0)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(hessian @ v, expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(twice, expected, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------------- forward mode


def holomorphic_and_not(z):
    return np.sin(z) * np.conj(z) + np.abs(z) + 1j * np.angle(z)


@pytest.mark.parametrize("mode", MODES)
def test_jvp_moves_along_a_complex_direction(mode):
    z = cnormal(4)
    t = cnormal(4)
    step = 1e-6
    expected = (holomorphic_and_not(z + step * t) - holomorphic_and_not(z - step * t)) / (2 * step)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FallbackWarning)
        _, tangent = sg.jvp(holomorphic_and_not, (z,), (t,), mode=mode)
    np.testing.assert_allclose(tangent, expected, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------------- linalg


def determinants(a):
    sign, logdet = np.linalg.slogdet(a)
    return np.real(np.linalg.det(a) * W[0, 0]) + logdet + np.real(sign * W[1, 1])


def solves(a):
    return np.sum(np.real(np.linalg.solve(a, W[:3, :2]) * W[:3, 2:])) + np.sum(
        np.real(np.linalg.inv(a) * W[:3, :3])
    )


if np.lib.NumpyVersion(np.__version__) >= "2.0.0":  # cholesky(upper=) is new in NumPy 2.0

    def cholesky_of_hermitian(a):
        m = a + np.conj(a.T) + 6.0 * np.eye(3)
        return np.sum(np.real(np.linalg.cholesky(m) * W[:3, :3])) + np.sum(
            np.abs(np.linalg.cholesky(m, upper=True)) ** 2 * np.abs(W[:3, 1:])
        )

else:

    def cholesky_of_hermitian(a):
        m = a + np.conj(a.T) + 6.0 * np.eye(3)
        return np.sum(np.real(np.linalg.cholesky(m) * W[:3, :3])) + np.sum(
            np.abs(np.conj(np.linalg.cholesky(m)).T) ** 2 * np.abs(W[:3, 1:])
        )


def eigh_invariant(a):
    """Eigenvectors are defined up to a phase: only losses that do not see it are checked."""
    w, v = np.linalg.eigh(a + np.conj(a.T))
    projector = v @ (np.exp(w)[:, None] * np.conj(v.T))
    return np.sum(np.real(projector * W[:3, :3])) + np.sum(np.abs(v) ** 2 * np.abs(W[:3, :3]))


def eigvalsh_of_hermitian(a):
    return np.sum(np.linalg.eigvalsh(a + np.conj(a.T)) ** 3)


@pytest.mark.parametrize(
    "f", [determinants, solves, cholesky_of_hermitian, eigh_invariant, eigvalsh_of_hermitian]
)
def test_linear_algebra(f):
    a = cnormal(3, 3) + 3.0 * np.eye(3)
    check(f, (a,), atol=1e-5)


@pytest.mark.parametrize("f", [cholesky_of_hermitian, eigh_invariant, eigvalsh_of_hermitian])
def test_linear_algebra_forward(f):
    a = cnormal(3, 3) + 3.0 * np.eye(3)
    t = cnormal(3, 3)
    step = 1e-6
    expected = (f(a + step * t) - f(a - step * t)) / (2 * step)
    for mode in MODES:
        _, tangent = sg.jvp(f, (a,), (t,), mode=mode)
        np.testing.assert_allclose(tangent, expected, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------------- refusals


def sign_of_complex(z):
    return np.sum(np.real(np.sign(z)))


def maximum_of_complex(x):
    return np.sum(np.abs(np.maximum(x * 1j, 0.5)))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f", [sign_of_complex, maximum_of_complex])
def test_a_rule_not_known_right_for_complex_values_is_refused(f, mode):
    x = cnormal(3) if f is sign_of_complex else rng.normal(size=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FallbackWarning)
        with pytest.raises(sg.UnsupportedError) as error:
            sg.grad(f, mode=mode)(x)
    message = str(error.value)
    line = inspect.getsourcelines(f)[1]
    assert f"{HERE}:" in message and "complex" in message, message
    if mode != "s2s" or f is maximum_of_complex:  # the step itself
        assert f"{HERE}:{line + 1}" in message, message


# ---------------------------------------------------------------------------- eig, eigvals


def eigenvalues(a):
    w = np.linalg.eigvals(a)
    return np.sum(np.real(w**2 * W[0, :3])) + np.sum(np.abs(w))


def eigen_function(a):
    """exp of a through its eigendecomposition: blind to each eigenvector's scale."""
    w, v = np.linalg.eig(a)
    m = v @ (np.exp(w)[:, None] * np.linalg.inv(v))
    return np.sum(np.real(m * W[:3, :3])) + np.sum(np.real(w * W[1, :3]))


@pytest.mark.parametrize("f", [eigenvalues, eigen_function])
@pytest.mark.parametrize("complex_", [False, True], ids=["real", "complex"])
def test_eig_and_eigvals(f, complex_):
    a = cnormal(3, 3) if complex_ else rng.normal(size=(3, 3))
    check(f, (a,), atol=1e-5)
    t = cnormal(3, 3) if complex_ else rng.normal(size=(3, 3))
    step = 1e-6
    expected = (f(a + step * t) - f(a - step * t)) / (2 * step)
    for mode in MODES:
        _, tangent = sg.jvp(f, (a,), (t,), mode=mode)
        np.testing.assert_allclose(tangent, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mode", MODES)
def test_eig_second_order(mode):
    a = rng.normal(size=(3, 3))
    v = rng.normal(size=(3, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FallbackWarning)
        (got,) = sg.hvp(eigen_function, (a,), (v,), mode=mode)

    def directional(b):
        return np.sum(sg.grad(eigen_function, mode="tape")(b) * v)

    expected = numeric_complex_grad(directional, (a,), 0)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


# ---------------------------------------------------------------------------- products, writes


def products(z):
    w = W[:3, :3]
    total = np.dot(z, w[0]) + np.einsum("i,ij->", z, w) + np.tensordot(z, w, axes=1)[1]
    total = total + np.inner(z, w[1]) + np.sum(np.outer(z, z) * w) + np.sum(np.kron(z, w[2]))
    return np.real(total)


def item_writes(z):
    y = np.zeros(3, dtype=complex)
    y[0] = z[0] * z[1]
    y[1:] = np.exp(z[1:])
    return np.sum(np.abs(y) ** 2)


def real_into_complex_writes(x):
    y = np.zeros(3, dtype=complex)
    y[0] = x[0] * 1j
    y[1:] = x[1:]
    return np.sum(np.abs(y * W[0, :3]) ** 2)


@pytest.mark.parametrize("f", [products, item_writes])
def test_products_and_item_writes(f):
    check(f, (cnormal(3),))


def test_real_values_written_into_a_complex_array():
    check(real_into_complex_writes, (rng.normal(size=3),))


# ---------------------------------------------------------------------------- every ready rule

# One use of each complex-ready primitive that moves values around (its rule moves the
# cotangent back). The rules are the same functions in both engines; the tape applies them
# one by one, so a wrong one cannot hide behind another.
MOVES = {
    np.reshape: lambda z: np.reshape(z, (4, 3)),
    np.ndarray.reshape: lambda z: z.reshape(2, 6),
    np.expand_dims: lambda z: np.expand_dims(z, 1),
    np.squeeze: lambda z: np.squeeze(z[:1]),
    np.ndarray.squeeze: lambda z: z[:, :1].squeeze(),
    np.atleast_1d: lambda z: np.atleast_1d(z),
    np.atleast_2d: lambda z: np.atleast_2d(z[0]),
    np.atleast_3d: lambda z: np.atleast_3d(z),
    np.ravel: lambda z: np.ravel(z),
    np.ndarray.ravel: lambda z: z.ravel(),
    np.ndarray.flatten: lambda z: z.flatten(),
    np.transpose: lambda z: np.transpose(z),
    np.ndarray.transpose: lambda z: z.transpose(),
    np.ndarray.T: lambda z: z.T,
    np.swapaxes: lambda z: np.swapaxes(z, 0, 1),
    np.ndarray.swapaxes: lambda z: z.swapaxes(0, 1),
    np.moveaxis: lambda z: np.moveaxis(z, 0, 1),
    np.rollaxis: lambda z: np.rollaxis(z, 1),
    np.flip: lambda z: np.flip(z, 1),
    np.fliplr: lambda z: np.fliplr(z),
    np.flipud: lambda z: np.flipud(z),
    np.roll: lambda z: np.roll(z, 2, axis=1),
    np.rot90: lambda z: np.rot90(z),
    np.broadcast_to: lambda z: np.broadcast_to(z[0], (2, 4)),
    np.tile: lambda z: np.tile(z, (2, 1)),
    np.lib.stride_tricks.as_strided: lambda z: (
        np.lib.stride_tricks.as_strided(z, (2, 2), (z.strides[1], z.strides[1])) * z[0, :2]
    ),
    np.lib.stride_tricks.sliding_window_view: lambda z: (
        np.lib.stride_tricks.sliding_window_view(z, (2, 2)) * z[0, :2]
    ),
    np.repeat: lambda z: np.repeat(z, 2, axis=0),
    np.ndarray.repeat: lambda z: z.repeat(2),
    np.copy: lambda z: np.copy(z),
    np.ndarray.copy: lambda z: z.copy(),
    np.ndarray.astype: lambda z: z.astype(np.complex128),
    np.full_like: lambda z: np.full_like(z, z[1, 2]),
    np.concatenate: lambda z: np.concatenate([z, z[:1] * 2]),
    np.stack: lambda z: np.stack([z, z * 1j]),
    np.hstack: lambda z: np.hstack([z, z]),
    np.vstack: lambda z: np.vstack([z, z]),
    np.dstack: lambda z: np.dstack([z, z]),
    np.column_stack: lambda z: np.column_stack([z[0], z[1]]),
    np.append: lambda z: np.append(z, z[0]),
    np.split: lambda z: np.split(z, 2, axis=1)[1],
    np.array_split: lambda z: np.array_split(z, 3, axis=1)[0],
    np.hsplit: lambda z: np.hsplit(z, 2)[0],
    np.vsplit: lambda z: np.vsplit(z, 3)[2],
    np.dsplit: lambda z: np.dsplit(np.atleast_3d(z), 1)[0],
    np.take: lambda z: np.take(z, [0, 2, 2]),
    np.ndarray.take: lambda z: z.take([1, 1], axis=1),
    np.take_along_axis: lambda z: np.take_along_axis(z, np.array([[0, 1], [1, 1], [3, 0]]), 1),
    np.diff: lambda z: np.diff(z, axis=1),
    np.diag: lambda z: np.diag(z[:, :3]),
    np.diagonal: lambda z: np.diagonal(z),
    np.ndarray.diagonal: lambda z: z.diagonal(1),
    np.triu: lambda z: np.triu(z),
    np.tril: lambda z: np.tril(z, 1),
    np.pad: lambda z: np.pad(z, 1),
    np.where: lambda z: np.where(np.abs(z) > 0.5, z, z * 2j),
    np.r_: lambda z: np.r_[z, z[:1] * 2j],
    np.c_: lambda z: np.c_[z, z[:, :1] * 2j],
    np.nansum: lambda z: np.nansum(z, axis=0),
    np.nanmean: lambda z: np.nanmean(z, axis=1),
    np.ndarray.sum: lambda z: z.sum(axis=1),
    np.ndarray.mean: lambda z: z.mean(),
    np.ndarray.prod: lambda z: z.prod(axis=0),
    np.cumprod: lambda z: np.cumprod(z, axis=1),
    np.ndarray.cumsum: lambda z: z.cumsum(),
    np.ndarray.cumprod: lambda z: z.cumprod(),
    np.ndarray.trace: lambda z: z.trace(),
    np.ndarray.var: lambda z: z.var(axis=0),
    np.ndarray.std: lambda z: z.std(axis=1),
    np.ndarray.dot: lambda z: z.dot(W.T[:4, :2]),
    np.linalg.matrix_power: lambda z: np.linalg.matrix_power(z[:, :3], 3),
    np.linalg.pinv: lambda z: np.linalg.pinv(z) * 2.0,
    np.linalg.qr: lambda z: np.linalg.qr(z.T)[0] * 2.0,
}


@pytest.mark.parametrize("primitive", list(MOVES), ids=lambda p: getattr(p, "__name__", "T"))
def test_every_ready_rule_moves_the_cotangent(primitive):
    z = cnormal(3, 4)
    op = MOVES[primitive]
    weights = cnormal(*np.shape(op(z)))

    def f(z):
        return np.sum(np.real(op(z) * weights))

    expected = numeric_complex_grad(f, (z,), 0)
    np.testing.assert_allclose(sg.grad(f, mode="tape")(z), expected, rtol=1e-5, atol=1e-6)
    t = cnormal(3, 4)
    along = (f(z + 1e-6 * t) - f(z - 1e-6 * t)) / 2e-6
    np.testing.assert_allclose(sg.jvp(f, (z,), (t,), mode="tape")[1], along, rtol=1e-5, atol=1e-6)


def made_into_arrays(z):
    """np.full, np.array and np.asarray of differentiated values: by source transformation
    only (the tape refuses them, for real values too)."""
    filled = np.full((2, 3), z[0, 1]) * W[:2, :3]
    listed = np.array([z[0, 0], z[1, 1] * 2j]) * np.asarray(z[2, :2])
    return np.sum(np.real(filled)) + np.sum(np.real(listed))


def test_arrays_made_of_complex_values():
    check(made_into_arrays, (cnormal(3, 4),), modes=("s2s", "auto"))


def operators_and_builtins(z):
    a = np.add(z, 1.0) * np.subtract(z, 2j) + np.multiply(z, z) / np.divide(z, 3.0)
    b = pow(z[0], 2) + abs(z[1]) + sum(list(z)) + sum(tuple(z[:2])) + z[2].item() + (+z[0])
    return np.real(np.sum(np.power(a, 2) + z.astype(np.complex128) * b))


def test_operators_and_builtins():
    check(operators_and_builtins, (cnormal(3) + 1.0,), modes=("s2s", "auto"))
    # .item() is refused on the tape, for real values too


def _label(primitive):  # NumPy 1.x ufuncs have a __name__ but no __qualname__
    name = getattr(primitive, "__qualname__", None) or getattr(primitive, "__name__", None)
    return name or repr(primitive)


# the complex-ready primitives tested above other than through MOVES and HOLOMORPHIC
TESTED_BY_NAME = {
    "neg", "pos", "add", "sub", "mul", "truediv", "pow", "matmul", "getitem", "abs", "sum",
    "list", "tuple", "ndarray.item", "real", "ndarray.real", "imag", "ndarray.imag",
    "conjugate", "ndarray.conj", "ndarray.conjugate", "absolute", "angle", "subtract",
    "multiply", "divide", "power", "mean", "prod", "var", "std", "cumsum", "trace", "norm",
    "dot", "vdot", "outer", "inner", "tensordot", "kron", "einsum", "inv", "det", "slogdet",
    "solve", "cholesky", "eigh", "eigvalsh", "eig", "eigvals", "astype", "full", "array",
    "asarray",
    "svd",
    "getattr",  # tests/test_model_objects.py: a dataclass holding complex arrays
    # tests/test_coverage.py's samples, in complex128 to second order
    "row_stack", "diagonal", "matrix_transpose", "matvec", "matrix_norm", "vector_norm",
    "unstack", "cumulative_sum", "cumulative_prod", "diagflat", "resize", "delete", "ediff1d",
    "multi_dot", "insert", "real_if_close",
    # tests/test_coverage.py's samples in complex128, and tests/test_rules_polynomials.py's
    # roots of complex coefficients
    "polyder", "roots", "polyval", "vander",
    "wofz", "lambertw",  # tests/test_rules_scipy_special_complex.py, complex arguments
}  # fmt: skip


def test_every_complex_ready_rule_is_tested():
    """The claim "right for complex values" is one a test must prove (numpy.fft's rules are
    checked by tests/test_fft.py, the runtime helpers through the rules that call them)."""
    from s2sgrad.rules import get_rule
    from s2sgrad.rules.registry import registered_primitives

    covered = {id(p) for p in [*MOVES, *HOLOMORPHIC]}
    untested = [
        _label(p)
        for p in registered_primitives()
        if get_rule(p).complex
        and get_rule(p).differentiable
        and id(p) not in covered
        and _label(p) not in TESTED_BY_NAME
        and not (getattr(p, "__module__", None) or "").startswith(("s2sgrad", "numpy.fft"))
    ]
    assert not untested, untested


def applies(z, function):
    return np.sum(np.real(function(z)))


@pytest.mark.parametrize("mode", MODES)
def test_a_function_passed_in_is_checked_when_it_runs(mode):
    """The transformer cannot see which rule a passed-in function has: it refuses complex
    arguments for source transformation, and the tape checks the step when it runs."""
    z = cnormal(3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FallbackWarning)
        with pytest.raises(sg.UnsupportedError, match="complex"):
            sg.grad(applies, mode=mode)(z, np.sign)
        if mode != "s2s":
            np.testing.assert_allclose(sg.grad(applies, mode=mode)(z, np.exp), np.exp(z))


def hermitian_spectrum(x):
    """A real function of real x through complex Hermitian matrices."""
    m = x[0] * W[:3, :3] + x[1] * np.conj(W[:3, :3].T) + np.eye(3) * 8.0
    h = m + np.conj(m.T)
    w, v = np.linalg.eigh(h)
    sign, logdet = np.linalg.slogdet(h * (1.0 + 0.5j))
    projector = v @ np.conj(v.T)
    cholesky = np.sum(np.abs(np.linalg.cholesky(h)) ** 2 * x[0])
    return np.sum(w**3) + cholesky + logdet + np.real(sign) + np.sum(np.abs(projector) ** 2)


@pytest.mark.parametrize("mode", MODES)
def test_second_order_through_hermitian_linear_algebra(mode):
    x = rng.normal(size=2)
    v = rng.normal(size=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FallbackWarning)
        (got,) = sg.hvp(hermitian_spectrum, (x,), (v,), mode=mode)

    def directional(y):
        return np.sum(sg.grad(hermitian_spectrum, mode="tape")(y) * v)

    expected = numeric_complex_grad(directional, (x,), 0)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


def hermitian_part(a):
    return (a + np.conj(a.T)) / 2.0


def through_a_helper(a):
    return np.sum(np.linalg.eigvalsh(hermitian_part(a)) ** 3)


def sign_helper(a):
    return np.sign(a)


def makes_complex_for_a_helper(x):
    return np.sum(np.real(sign_helper(x * 1j)))


def test_a_helper_function_is_checked_through_its_own_derivative():
    check(through_a_helper, (cnormal(3, 3),), atol=1e-5)
    with pytest.raises(sg.UnsupportedError) as error:
        sg.grad(makes_complex_for_a_helper, mode="s2s")(rng.normal(size=3))
    line = inspect.getsourcelines(makes_complex_for_a_helper)[1] + 1
    assert f"{HERE}:{line}" in str(error.value), str(error.value)
    with pytest.raises(sg.UnsupportedError, match="np.sign meets a complex value"):
        sg.grad(makes_complex_for_a_helper, mode="tape")(rng.normal(size=3))


def sine_loss(z, w):
    return np.sum(np.real(np.sin(z) * w) + np.imag(z * np.conj(w)))


@pytest.mark.parametrize("mode", MODES)
def test_second_order_at_a_complex_point(mode):
    # the tape refused its own copy step (an argument recorded again) for complex values,
    # so every second derivative of a complex argument failed on the tape
    z, w, c, t = cnormal(2, 3), cnormal(3), cnormal(2, 3), cnormal(2, 3)
    gradient = sg.grad(sine_loss, mode="tape")

    def h(z):  # a real function of the gradient
        return np.sum(np.real(np.conj(c) * gradient(z, w)))

    expected = numeric_complex_grad(h, (z,), 0)
    step = 1e-6
    along = (gradient(z + step * t, w) - gradient(z - step * t, w)) / (2 * step)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FallbackWarning)
        inner = sg.grad(sine_loss, mode=mode)
        _, pullback = sg.vjp(inner, z, w, mode=mode)
        np.testing.assert_allclose(pullback(np.conj(c))[0], expected, rtol=1e-5, atol=1e-6)
        (product,) = sg.hvp(lambda z: sine_loss(z, w), (z,), (t,), mode=mode)
        np.testing.assert_allclose(product, along, rtol=1e-5, atol=1e-6)
        _, tangent = sg.jvp(inner, (z, w), (t, np.zeros_like(w)), mode=mode)
        np.testing.assert_allclose(tangent, along, rtol=1e-5, atol=1e-6)
        if mode != "s2s":  # a function that calls a transform on complex values: the tape's

            def h_of(z):
                return np.sum(np.real(np.conj(c) * sg.grad(sine_loss, mode=mode)(z, w)))

            np.testing.assert_allclose(sg.grad(h_of, mode=mode)(z), expected, rtol=1e-5, atol=1e-6)


def test_a_python_complex_argument_gets_a_python_complex_gradient():
    """As a Python float gets a float: not a 0-d array."""

    def f(z):
        return abs(z) ** 3 + (z * z).real

    z = 0.7 - 1.3j
    expected = complex(numeric_complex_grad(f, (z,), 0))
    for mode in ("s2s", "auto", "tape"):
        gradient = sg.grad(f, mode=mode)(z)
        assert type(gradient) is complex
        assert abs(gradient - expected) < 1e-6
