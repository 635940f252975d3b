"""State kept in a list or dict longer than 4,096 entries, and in a closure variable the
function assigns (``nonlocal n``), seen by what runs a function more than once for one
answer. Kept states skipped long containers (too costly to copy) and closure variables:
a checkpointed function appending its loss to a 5,000-entry list gave its caller a wrong
gradient, and a forward Jacobian or Hessian on the tape computed each column with a count
the other columns did not see. Long containers are now noted by their length and last
entries; assigned closure variables like globals."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import assert_close, numeric_grad

import s2sgrad as sg

MODES = ["s2s", "tape", "auto"]
LONG_HISTORY: list = [0] * 5000
LONG_TABLE: dict = {i: 0 for i in range(5000)}
LONG_DATA: list = list(np.linspace(-1.0, 1.0, 5000))
SEEN: list = [0] * 5000


def _appends_its_loss(x):
    loss = np.sum(np.sin(x) ** 2)
    LONG_HISTORY.append(loss)
    return loss


appends_its_loss = sg.checkpoint(_appends_its_loss)


def reads_the_appended_loss(x):
    return appends_its_loss(x) * LONG_HISTORY[-1]


def _enters_its_loss(x):
    loss = np.sum(np.sin(x) ** 2)
    LONG_TABLE["loss"] = loss
    return loss


enters_its_loss = sg.checkpoint(_enters_its_loss)


def reads_the_entered_loss(x):
    return enters_its_loss(x) * LONG_TABLE["loss"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f", [reads_the_appended_loss, reads_the_entered_loss])
def test_a_number_stored_in_a_long_container_by_a_checkpoint_is_refused(f, mode):
    x = np.random.default_rng(31).normal(size=3)
    for _ in range(2):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", sg.S2SGradWarning)
            with pytest.raises(sg.UnsupportedError, match="stores numbers around it") as refused:
                sg.grad(f, mode=mode)(x)
        assert __file__ in str(refused.value)


def _reads_long_data(x):
    return np.sum(np.tanh(x * LONG_DATA[17]) * LONG_DATA[-3])


reads_long_data = sg.checkpoint(_reads_long_data)


@pytest.mark.parametrize("mode", MODES)
def test_a_checkpoint_only_reading_a_long_list_is_differentiated(mode):
    rng = np.random.default_rng(32)
    for shape in [(), (4,), (2, 3)]:
        x = rng.normal(size=shape)

        def loss(v):
            return reads_long_data(v) * 2.0

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", sg.S2SGradWarning)
            for _ in range(2):
                assert_close(sg.grad(loss, mode=mode)(x), numeric_grad(loss, [x], 0))


def counts_into_a_long_list(x):
    SEEN.append(1)
    return np.sin(x * (len(SEEN) % 7 + 1))


@pytest.mark.parametrize("mode", MODES)
def test_a_forward_jacobian_counts_one_call_in_a_long_list(mode):
    x = np.random.default_rng(33).normal(size=4)
    for _ in range(2):
        scale = (len(SEEN) + 1) % 7 + 1  # what one plain call computes with
        length = len(SEEN)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", sg.S2SGradWarning)
            jacobian = sg.jacfwd(counts_into_a_long_list, mode=mode)(x)
        assert_close(jacobian, np.diag(scale * np.cos(x * scale)))
        assert len(SEEN) == length + 1


def _closure_counter():
    calls = 0

    def counted(x):
        nonlocal calls
        calls += 1
        return np.sum(np.sin(x * (calls % 5 + 1)))

    return counted, lambda: calls


@pytest.mark.parametrize("mode", ["tape", "auto"])  # (s2s refuses assigning a nonlocal)
def test_a_hessian_counts_one_call_in_a_closure_variable(mode):
    counted, calls = _closure_counter()
    x = np.random.default_rng(34).normal(size=3)
    for _ in range(2):
        scale = (calls() + 1) % 5 + 1
        before = calls()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", sg.S2SGradWarning)
            hessian = sg.hessian(counted, mode=mode)(x)
        assert_close(hessian, np.diag(-(scale**2) * np.sin(x * scale)))
        assert calls() - before <= 2  # one call (auto's refused first try puts it back)
