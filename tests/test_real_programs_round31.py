"""Programs written the way users write them (ML losses and models, science and
engineering, everyday student NumPy), checked in every mode against central differences:
the gradient on a first and a later call, forward mode, and the Hessian-vector product.

Found here:

* a recursion in log space that starts from ``-inf`` (the forward variable of CTC,
  ``alpha = np.full(S, -np.inf)``): ``scipy.special.logsumexp`` (and ``np.logaddexp``,
  ``np.logaddexp.reduce``) of entries that are all ``-inf`` gave them the weight
  ``exp(-inf - -inf)``, NaN, where they add nothing: the jvp (and, with ``np.logaddexp``,
  the gradient) came out NaN in every mode.
* on the tape, a buffer handed on by ``alpha = new`` (the step of a dynamic programme)
  was no longer "an array the function made", so a write of a value being differentiated
  into it was refused ("a plain array").
* while a tape records, ``np.full`` is a stand-in whose ``__module__`` is its own, so the
  alias analysis took ``alpha = np.full(S, -np.inf)`` to share memory with ``S`` (read
  again by the next ``np.full(S, ...)``), and refused every later write into ``alpha``.
"""

import warnings

import numpy as np
import pytest
from oracle import assert_close, call_twice, numeric_grad, numeric_jvp
from scipy.special import log_softmax, logsumexp

import s2sgrad as sg

MODES = ["s2s", "auto", "tape"]
R = np.random.default_rng(3131)


def _n(*shape, scale=0.5):
    return R.normal(size=shape) * scale


def _hvp_expected(f, x, v):
    """The Hessian of ``f`` at ``x`` times ``v``: central differences of the tape's
    gradient (itself checked against differences of ``f`` first)."""
    gradient = sg.grad(f, mode="tape")
    assert_close(gradient(x), numeric_grad(f, [x], 0), rtol=1e-5, atol=1e-6)
    return numeric_jvp(gradient, [x], 0, v, step=1e-5)


def _check(f, x, mode, hvp=True):
    """``sg.grad`` (a first and a later call), ``sg.jvp`` and ``sg.hvp`` of ``f`` at ``x``
    along a random direction, in ``mode``, against central differences."""
    v = _n(*np.shape(x)) if np.ndim(x) else 0.5
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = call_twice(sg.grad(f, mode=mode), x)
        assert_close(got, numeric_grad(f, [x], 0), rtol=1e-5, atol=1e-6)
        _, tangent = sg.jvp(f, (x,), (v,), mode=mode)
        assert_close(float(tangent), float(numeric_jvp(f, [x], 0, v)), rtol=1e-5, atol=1e-6)
        if hvp:
            (product,) = sg.hvp(f, (x,), (v,), mode=mode)
            assert_close(product, _hvp_expected(f, x, v), rtol=1e-4, atol=1e-6)


# --- log-space recursions starting from -inf ---------------------------------------------

CTC_LABELS = [1, 2]


def ctc_loss(logits):
    """The CTC forward variable over the blank-extended labels, with scipy's logsumexp of
    the entries each state is reached from (all -inf for states not reached yet)."""
    logp = logits - logsumexp(logits, axis=1, keepdims=True)
    ext = [0]
    for label in CTC_LABELS:
        ext += [label, 0]
    S = len(ext)
    alpha = np.full(S, -np.inf)
    alpha[0] = logp[0, ext[0]]
    alpha[1] = logp[0, ext[1]]
    for t in range(1, logp.shape[0]):
        new = np.full(S, -np.inf)
        for s in range(S):
            terms = [alpha[s]]
            if s > 0:
                terms.append(alpha[s - 1])
            if s > 1 and ext[s] != 0 and ext[s] != ext[s - 2]:
                terms.append(alpha[s - 2])
            new[s] = logsumexp(np.array(terms)) + logp[t, ext[s]]
        alpha = new
    return -logsumexp(alpha[-2:])


def ctc_with_logaddexp(logits):
    """The same recursion in a (T, S) table, pairs joined by np.logaddexp."""
    logp = log_softmax(logits, axis=1)
    ext = [0, 1, 0, 1, 0]
    S, T = len(ext), logp.shape[0]
    alpha = np.full((T, S), -np.inf)
    alpha[0, 0] = logp[0, 0]
    alpha[0, 1] = logp[0, ext[1]]
    for t in range(1, T):
        for s in range(S):
            a = alpha[t - 1, s]
            if s >= 1:
                a = np.logaddexp(a, alpha[t - 1, s - 1])
            if s >= 2 and ext[s] != 0 and ext[s] != ext[s - 2]:
                a = np.logaddexp(a, alpha[t - 1, s - 2])
            alpha[t, s] = a + logp[t, ext[s]]
    return -np.logaddexp(alpha[-1, -1], alpha[-1, -2])


def unreached_states(x):
    """An HMM-like forward pass whose last state is reached only in the last step, joined
    by np.logaddexp.reduce over the previous states."""
    alpha = np.array([x[0], -np.inf, -np.inf])
    for t in range(2):
        step = alpha[:, None] + np.log(np.array([[0.5, 0.5, 0.0], [0.0, 0.5, 0.5], [0, 0, 1.0]]))
        alpha = np.logaddexp.reduce(step, axis=0) + x[t + 1]
    return np.logaddexp.reduce(alpha) * x[0]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "f, shape",
    [(ctc_loss, (5, 3)), (ctc_with_logaddexp, (4, 2)), (unreached_states, (3,))],
)
def test_a_log_space_recursion_starting_from_minus_infinity(f, shape, mode):
    """logsumexp / logaddexp of entries all -inf gave them the weight exp(-inf - -inf),
    NaN: jvp NaN in modes "s2s" and "auto" (the gradient too with np.logaddexp), and on
    the tape the writes into ``new`` (handed on by ``alpha = new``) or into a table made by
    ``np.full(shape_of_names, -np.inf)`` were refused."""
    x = _n(*shape, scale=1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        _check(f, x, mode, hvp=mode != "s2s")  # s2s: the derivative's stack is refused


def dtw_rows(x):
    """A dynamic programme over rows: each row a buffer made anew, handed on by
    ``previous = row`` (a soft minimum of the three neighbours)."""
    reference = np.array([0.0, 0.5, 1.0, 0.4])
    previous = np.full(len(reference) + 1, 1e6)
    previous[0] = 0.5 * x[0]
    for i in range(len(x)):
        row = np.full(len(reference) + 1, 1e6)
        for j in range(1, len(reference) + 1):
            near = np.array([previous[j - 1], previous[j], row[j - 1]])
            soft = -0.3 * logsumexp(-near / 0.3)
            row[j] = (x[i] - reference[j - 1]) ** 2 + soft
        previous = row
    return previous[-1]


@pytest.mark.parametrize("mode", MODES)
def test_a_row_buffer_handed_on_to_the_next_step(mode):
    """``previous = row`` after ``row[j] = ...``: on the tape the writes into ``previous``
    (its first binding ``np.full``, its second a name) were refused as writes into a
    plain array; now a name given only arrays the function made counts as one."""
    x = np.array([0.1, 0.6, 0.9])
    _check(dtw_rows, x, mode, hvp=mode != "s2s")


def shares_a_buffer(x):
    """``b = a`` then ``b[0] = ...`` and ``a`` read: still refused (the alias analysis)."""
    a = np.zeros(3)
    b = a
    b[0] = x[0] * 2
    return np.sum(a * x)


@pytest.mark.parametrize("mode", MODES)
def test_a_buffer_written_through_another_name_is_still_refused(mode):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(sg.UnsupportedError, match=f"{__file__}:[0-9]+: .*may share memory"):
            sg.grad(shares_a_buffer, mode=mode)(_n(3))


def test_logsumexp_of_minus_infinities_has_zero_weights():
    """The rules themselves: an entry -inf gets the weight 0, also where all are."""
    a = np.array([[-np.inf, -np.inf], [0.3, -np.inf]])
    g = np.array([1.0, 2.0])
    with np.errstate(invalid="ignore"):
        (to_a,) = sg.vjp(lambda a: logsumexp(a, axis=1), a)[1](g)
    assert_close(to_a, np.array([[0.0, 0.0], [2.0, 0.0]]))
    with np.errstate(invalid="ignore"):
        _, tangent = sg.jvp(lambda a: logsumexp(a, axis=1), (a,), (np.ones_like(a),))
    assert_close(tangent, np.array([0.0, 1.0]))
    _, tangent = sg.jvp(
        lambda x: np.logaddexp(x, -np.inf), (np.array([-np.inf, 1.0]),), (np.ones(2),)
    )
    assert_close(tangent, np.array([0.0, 1.0]))
