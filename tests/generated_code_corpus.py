"""Small functions whose s2s gradients call the runtime helpers of ``s2sgrad.runtime``.

tests/test_tape_lists_and_helpers.py differentiates each generated gradient again on the
tape (``grad(lambda x: vdot(grad(f)(x), v), mode="tape")``), so that every helper that
generated code calls is differentiated by the tape at least once. Each takes a vector of
six numbers, and is smooth near the points the test uses.
"""

import math

import numpy as np

trapezoid = getattr(np, "trapezoid", None) or np.trapz


class _Settings:
    def __init__(self):
        self.weights = np.linspace(0.5, 1.5, 6)


SETTINGS = _Settings()


def slices(x):
    return np.sum(np.sin(x[1:]) * x[:-1])


def fancy_index(x):
    return np.sum(x[[0, 2, 2, 5]] ** 2 * x[1])


def matmul(x):
    a = x.reshape(2, 3)
    return np.sum(np.tanh(a @ a.T)) + np.sum(a.T @ a[:, :2])


def dot(x):
    return np.dot(x, x[::-1]) + np.sum(np.dot(x.reshape(2, 3), x[:3]) ** 2)


def joined(x):
    a, b = np.split(x, 2)
    return np.sum(np.concatenate([a * b, b**2]) ** 2) + np.sum(np.stack([a, b]) ** 3)


def stacked(x):
    joined = np.sum(np.hstack([x[:2], x[3:]]) ** 2) + np.sum(np.append(x, x[:2] ** 2) ** 2)
    return joined + np.sum(np.vstack([x[:3], x[3:]]) ** 3)


def from_lists(x):
    return np.sum(np.array([[x[0] * x[1], 2.0], [x[2], np.sin(x[3])]]) ** 2)


def tiled(x):
    return np.sum(np.tile(x[:2], 3) * x) + np.sum(np.repeat(x[:3], 2) * x)


def windows(x):
    rows = np.lib.stride_tricks.sliding_window_view(x, 3)
    return np.sum((rows @ x[:3]) ** 2)


def blocks(x):
    a = x[:4].reshape(2, 2)
    return np.sum(np.block([[a, x[4:6].reshape(2, 1)], [x[3:6].reshape(1, 3)]]) ** 2 * x[0])


def diagonal(x):
    a = x[:4].reshape(2, 2)
    return np.sum(np.diag(x[:3]) ** 2 * x[3]) + np.sum(np.diag(a) * np.trace(a))


def taken(x):
    along = np.take_along_axis(x.reshape(2, 3), np.array([[2, 0], [1, 1]]), axis=1)
    return np.sum(np.take(x, [0, 3, 3]) ** 2) + np.sum(along**3)


def padded(x):
    return np.sum(np.pad(x, (1, 2)) * np.arange(9.0) * np.pad(x, (2, 1)))


def differences(x):
    return np.sum(np.diff(x) ** 2 * x[:-1])


def products(x):
    return np.prod(x[:4]) + np.sum(np.cumprod(x[:3]) * x[3:])


def norms(x):
    rows = np.linalg.norm(x.reshape(2, 3), axis=1)
    return np.linalg.norm(x) * x[0] + np.sum(rows**3) + np.linalg.norm(x, 3)


def written(x):
    y = x.copy()
    y[1] = x[0] ** 2
    y[[2, 3]] = np.sin(x[4:])
    return np.sum(y * x)


def repeated_writes(x):
    y = np.zeros_like(x)
    y[[0, 0, 1]] = x[:3] ** 2
    return np.sum(y * x)


def scattered(x):
    t = x * 1.0
    np.add.at(t, [0, 0, 2], x[3:] * x[1])
    return np.sum(np.sin(t) * x)


def reductions(x):
    a = x.reshape(2, 3)
    return np.sum(np.var(a, axis=0) * np.std(a, axis=1).sum()) + np.max(a) * np.mean(a)


def where_and_clip(x):
    return np.sum(np.where(x > 0.2, x**2, np.sin(x)) * np.clip(x, -0.45, 0.9))


def linalg(x):
    a = x[:4].reshape(2, 2) + 2 * np.eye(2)
    solved = np.sum(np.linalg.solve(a, x[4:]))
    return np.sum(np.linalg.inv(a) * x[4]) + np.linalg.det(a) * x[5] + solved


def least_squares(x):
    a = x.reshape(3, 2) + np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    solution = np.linalg.lstsq(a, x[:3], rcond=None)[0]
    return np.sum(solution**2) + np.sum(np.linalg.pinv(a) ** 2)


def sorted_and_rolled(x):
    return np.sum(np.sort(x) * np.cumsum(x)) + np.sum(np.flip(x) * np.roll(x, 2))


def einsum_and_outer(x):
    a = x.reshape(2, 3)
    return np.sum(np.einsum("ij,kj->ik", a, a) ** 2) + np.sum(np.outer(x[:2], x[3:]) ** 2)


def tensordot_and_kron(x):
    a = x.reshape(2, 3)
    return np.sum(np.tensordot(a, a, axes=([1], [1])) ** 2) + np.sum(np.kron(x[:2], x[2:4]) ** 2)


def softmax_like(x):
    return np.sum(np.logaddexp(x, x[::-1])) + np.sum(np.exp(x) / np.sum(np.exp(x)) * x)


def spectrum(x):
    return np.sum(np.abs(np.fft.rfft(x)) ** 2 * np.arange(4.0))


def integrated(x):
    spaced = trapezoid(x**2, np.cumsum(np.abs(x) + 0.5))
    return trapezoid(x**2, dx=0.5) + spaced + np.sum(np.convolve(x, x[:3]) ** 2)


def covariances(x):
    rows = np.sum(np.cov(x.reshape(2, 3)) ** 2) + np.sum(np.cov(x[:3], x[3:]) ** 2)
    return rows + np.sum(np.corrcoef(x.reshape(2, 3)) ** 2)


def interpolated(x):
    return np.sum(np.interp([0.5, 1.5], [0.0, 1.0, 2.0], x[:3]) * x[0])


def statistics(x):
    return np.median(x) * x[0] + np.percentile(x, 30.0) * x[1] + np.sum(np.polyval(x[:3], x[3:]))


def ufunc_methods(x):
    outer = np.sum(np.multiply.outer(x[:2], x[2:]))
    return np.sum(np.add.accumulate(x) * x) + np.logaddexp.reduce(x) + outer


def cast(x):
    return np.sum(x.astype(np.float64) ** 2) + np.sum(x.astype(int) * x)


def mapping(x):
    d = {"a": x[:2], "b": x[2:] ** 2}
    total = 0.0
    for _, v in d.items():
        total = total + np.sum(v**2) * x[0]
    return total + sum(np.sum(v) for v in d.values())


def unpacked(x):
    a, b, *rest = x
    first, second = list(x[:2])
    return a * b * np.sum(rest) + first * second**2


def looped(x):
    total = 0.0
    for w in [x[:2], x[2:4]] + [x[4:]]:
        total = total + np.sum(w**2) * x[0]
    return total


def dict_entries(x):
    parts = {"a": x[:3], "b": x[3:]}
    p = dict(parts)
    p["a"] = np.sin(p["a"])
    p["c"] = p["b"] * 2.0
    q = dict([("a", p["a"]), ("a", p["c"] * 3.0)])
    return np.sum(p["a"] * p["c"]) + np.sum(p["b"] ** 2) + np.sum(q["a"])


def popped(x):
    items = [x[:2], np.sin(x[2:4]), x[4:] * 2.0]
    first = items.pop(0)
    last = items.pop(-1)
    return np.sum(first * items[0] + last)


def attribute_of_a_module_object(x):
    return np.sum(np.sin(x) * SETTINGS.weights)


def special_functions(x):
    return np.sum(np.i0(x) * x) + math.gamma(x[0] ** 2 + 1.5) * math.lgamma(x[1] ** 2 + 2.5)


def argument_written(x):
    x[0] = x[1] * x[2]
    return np.sum(x**2)


def doubled_until_large(x):
    b = x * 2
    while np.sum(b * b) < 1000:
        b = b * 2
    return np.sum(b)


class _Pair:
    def __init__(self, first, second):
        self.first = first
        self.second = second


def record_attribute_stored(x):
    pair = _Pair(x[:3], x[3:])
    pair.first = np.sin(pair.first) * pair.second
    return np.sum(pair.first * pair.second)


CORPUS = [
    record_attribute_stored,
    attribute_of_a_module_object,
    argument_written,
    special_functions,
    doubled_until_large,
    slices,
    fancy_index,
    matmul,
    dot,
    joined,
    stacked,
    from_lists,
    tiled,
    windows,
    blocks,
    diagonal,
    taken,
    padded,
    differences,
    products,
    norms,
    written,
    repeated_writes,
    scattered,
    reductions,
    where_and_clip,
    linalg,
    least_squares,
    sorted_and_rolled,
    einsum_and_outer,
    tensordot_and_kron,
    softmax_like,
    spectrum,
    integrated,
    covariances,
    interpolated,
    statistics,
    ufunc_methods,
    cast,
    mapping,
    unpacked,
    looped,
    popped,
    dict_entries,
]
