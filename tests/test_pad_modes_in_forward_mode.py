"""np.pad in forward mode: the modes that copy the array's elements are differentiated, the
others (ramps, "empty") are refused naming the user's line, as in reverse mode."""

import numpy as np
import pytest

import s2sgrad as sg

X = np.array([0.3, -0.7, 1.2, 0.5])
WEIGHTS = np.arange(8.0)


def padded(x, mode):
    return np.sum(np.pad(x, 2, mode=mode) * WEIGHTS)


@pytest.mark.parametrize("mode", ["linear_ramp", "empty"])
@pytest.mark.parametrize("engine", ["s2s", "auto", "tape"])
def test_statistics_padding_refused_in_forward_mode(mode, engine):
    with pytest.raises(sg.S2SGradError, match=f"np.pad with mode='{mode}'") as refused:
        sg.jvp(lambda x: padded(x, mode), (X,), (np.ones(4),), mode=engine)
    assert "test_pad_modes_in_forward_mode.py:" in str(refused.value)


@pytest.mark.parametrize("mode", ["edge", "wrap", "reflect", "symmetric", "constant"])
def test_copying_padding_in_forward_mode(mode):
    _, tangent = sg.jvp(lambda x: padded(x, mode), (X,), (np.ones(4),), mode="s2s")
    expected = np.sum(np.pad(np.ones(4), 2, mode=mode) * WEIGHTS)
    np.testing.assert_allclose(tangent, expected)


def test_odd_reflection_in_forward_mode():
    # odd reflection (2 * edge - mirrored element) is linear in the array
    def odd(x):
        return np.sum(np.pad(x, 2, mode="reflect", reflect_type="odd") * WEIGHTS)

    direction = np.array([0.5, -1.0, 2.0, 0.25])
    _, tangent = sg.jvp(odd, (X,), (direction,), mode="s2s")
    expected = np.sum(np.pad(direction, 2, mode="reflect", reflect_type="odd") * WEIGHTS)
    np.testing.assert_allclose(tangent, expected)
