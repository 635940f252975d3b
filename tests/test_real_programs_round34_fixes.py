"""Round 34's fixes found by real users' programs, each against central differences."""

import copy
import logging
import warnings

import numpy as np
import pytest
from oracle import numeric_grad, numeric_jvp

import s2sgrad as sg

R = np.random.default_rng(3438)


def _leaves(d):
    return [d[k] for k in sorted(d)]


def _on_leaves(f, keys):
    return lambda leaves: f(dict(zip(keys, leaves)))


def settings_with_defaults(params):
    """Optional entries read by .get: one present, one absent (its default a constant), one
    absent with a default computed from another entry."""
    scale = params.get("scale", 1.0)
    shift = params.get("shift", 0.25)
    temperature = params.get("temperature", np.exp(params["W"][0]))
    z = np.tanh(params["W"] * scale + shift) / temperature
    return np.sum(z**2) + scale**3


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
@pytest.mark.parametrize("trial", range(3))
def test_forward_mode_through_dict_get(mode, trial):
    params = {"W": R.normal(size=(2, 3)), "scale": float(R.normal())}
    tangent = {"W": R.normal(size=(2, 3)), "scale": float(R.normal())}
    keys = sorted(params)
    value, derivative = sg.jvp(settings_with_defaults, (params,), (tangent,), mode=mode)
    expected = numeric_jvp(
        _on_leaves(settings_with_defaults, keys), [_leaves(params)], 0, _leaves(tangent)
    )
    np.testing.assert_allclose(value, settings_with_defaults(params), rtol=1e-12)
    np.testing.assert_allclose(derivative, expected, rtol=1e-6, atol=1e-8)


def test_forward_mode_through_dict_get_of_a_missing_key_without_default():
    def f(params):
        extra = params.get("extra")
        return np.sum(params["W"] ** 2) if extra is None else extra

    params, tangent = {"W": R.normal(size=3)}, {"W": R.normal(size=3)}
    _, derivative = sg.jvp(f, (params,), (tangent,), mode="s2s")
    np.testing.assert_allclose(derivative, 2 * params["W"] @ tangent["W"], rtol=1e-12)


LOG = logging.getLogger("round34.fixes")


def loss_logged_by_format(w):
    """A loss whose running value is written into a log line by str.format."""
    data = np.mean((np.tanh(X @ w) - Y) ** 2)
    message = "data term {:.4f}, norm {:.3f}".format(float(data), float(np.sum(w**2)))  # noqa: UP032
    LOG.debug(message)
    return data + 0.1 * np.sum(w**2)


def loss_logged_by_f_string(w):
    """The same loss, its line an f-string kept in a history list and printed nowhere."""
    history = []
    data = np.mean((np.tanh(X @ w) - Y) ** 2)
    line = f"data={data:.4f} w0={w[0]:+.2f}"
    history.append(line)
    return data + 0.1 * np.sum(w**2) + 0.0 * len(history)


def loss_reading_a_number_back_from_text(w):
    text = f"{float(np.sum(w)):.6f}"
    return float(text) * np.sum(w**2)


X = R.normal(size=(5, 3))
Y = R.normal(size=5)


@pytest.mark.parametrize("mode", ["s2s", "auto"])
@pytest.mark.parametrize("f", [loss_logged_by_format, loss_logged_by_f_string])
def test_forward_mode_past_text_written_for_a_log(f, mode):
    for _ in range(2):
        w, v = R.normal(size=3), R.normal(size=3)
        _, derivative = sg.jvp(f, (w,), (v,), mode=mode)
        np.testing.assert_allclose(derivative, numeric_jvp(f, [w], 0, v), rtol=1e-6, atol=1e-9)


def test_forward_mode_second_order_past_an_f_string_log_line():
    w, v = R.normal(size=3), R.normal(size=3)
    (hv,) = sg.hvp(loss_logged_by_f_string, (w,), (v,), mode="s2s")
    gradient = sg.grad(loss_logged_by_f_string, mode="tape")
    np.testing.assert_allclose(hv, numeric_jvp(gradient, [w], 0, v, step=1e-5), rtol=1e-5)


def test_forward_mode_still_refuses_a_number_read_back_from_text():
    w, v = R.normal(size=3), R.normal(size=3)
    where = f"{loss_reading_a_number_back_from_text.__code__.co_filename}:[0-9]+"
    with pytest.raises(sg.S2SGradError, match=where + ".*stop_gradient"):
        sg.jvp(loss_reading_a_number_back_from_text, (w,), (v,), mode="s2s")


def sgd_on_a_deep_copy(params):
    """A copy of the parameters taken by copy.deepcopy, stepped in place, compared with
    the originals (a lookahead-style objective)."""
    fast = copy.deepcopy(params)
    for _ in range(2):
        fast["W"] = fast["W"] - 0.1 * np.tanh(fast["W"])
        fast["b"] += 0.05 * fast["W"].sum(axis=0)
    return np.sum((fast["W"] - params["W"]) ** 2) + np.sum(fast["b"] * params["b"])


def rows_written_into_a_deep_copy(x):
    """An array deep-copied, then rows written, with the original read afterwards."""
    y = copy.deepcopy(x)
    y[0] = np.sin(x[1])
    y[1] *= x[0]
    return np.sum(y**2 * x)


@pytest.mark.parametrize("mode", ["s2s", "auto"])
def test_writes_into_a_deep_copy_are_differentiated_by_source(mode):
    params = {"W": R.normal(size=(2, 3)), "b": R.normal(size=3)}
    keys = sorted(params)
    gradient = sg.grad(sgd_on_a_deep_copy, mode=mode)(params)
    expected = numeric_grad(_on_leaves(sgd_on_a_deep_copy, keys), [_leaves(params)], 0)
    for key, e in zip(keys, expected):
        np.testing.assert_allclose(gradient[key], e, rtol=1e-6, atol=1e-9)
    tangent = {"W": R.normal(size=(2, 3)), "b": R.normal(size=3)}
    (hv,) = sg.hvp(sgd_on_a_deep_copy, (params,), (tangent,), mode=mode)
    along = numeric_jvp(
        lambda leaves: _leaves(sg.grad(sgd_on_a_deep_copy, mode="tape")(dict(zip(keys, leaves)))),
        [_leaves(params)],
        0,
        _leaves(tangent),
        step=1e-5,
    )
    for key, e in zip(keys, along):
        np.testing.assert_allclose(hv[key], e, rtol=1e-5, atol=1e-8)
    x, v = R.normal(size=(2, 3)), R.normal(size=(2, 3))
    np.testing.assert_allclose(
        sg.grad(rows_written_into_a_deep_copy, mode=mode)(x),
        numeric_grad(rows_written_into_a_deep_copy, [x], 0),
        rtol=1e-6,
        atol=1e-9,
    )
    _, derivative = sg.jvp(rows_written_into_a_deep_copy, (x,), (v,), mode=mode)
    np.testing.assert_allclose(
        derivative, numeric_jvp(rows_written_into_a_deep_copy, [x], 0, v), rtol=1e-6
    )


def running_mean_by_a_local_class(w):
    """A small class defined in the loss, whose method is named like a set's."""

    class Running:
        def __init__(self):
            self.total = 0.0
            self.count = 0

        def add(self, value):
            self.total += value
            self.count += 1

    stats = Running()
    for v in w:
        stats.add(v**2)
    return stats.total / stats.count


def entries_of_a_local_set_subclass(w):
    class Bag(set):
        pass

    seen = Bag()
    seen.add(w[0])
    return w[0] * len(seen)


def test_a_method_of_a_class_defined_in_the_function_is_not_taken_for_a_sets():
    """Was: ".add() writes into 'stats' in place, ...; use a new set"."""
    w = R.normal(size=3)
    where = f"{running_mean_by_a_local_class.__code__.co_filename}:[0-9]+"
    with pytest.raises(sg.UnsupportedError, match=where + ": .*method .add()") as refused:
        sg.grad(running_mean_by_a_local_class, mode="s2s")(w)
    assert "set" not in str(refused.value)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # auto tapes it, saying so
        gradient = sg.grad(running_mean_by_a_local_class, mode="auto")(w)
    np.testing.assert_allclose(gradient, numeric_grad(running_mean_by_a_local_class, [w], 0))
    with pytest.raises(sg.UnsupportedError, match=where + ": .*use a new set"):
        sg.grad(entries_of_a_local_set_subclass, mode="s2s")(w)
