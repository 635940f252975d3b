"""Checkpointing at scale: the small CNN of ``examples/checkpointed_cnn.py`` trained with its
convolution checkpointed, and the peak memory of a deep chain of checkpointed blocks."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest

import s2sgrad as sg

MODES = ["s2s", "tape"]

_path = Path(__file__).parents[1] / "examples" / "checkpointed_cnn.py"
_spec = importlib.util.spec_from_file_location("checkpointed_cnn", _path)
cnn = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cnn)


@pytest.mark.parametrize("mode", MODES)
def test_training_the_checkpointed_cnn_lowers_the_loss(mode):
    params, images, labels = cnn.init()
    assert params["kernel"].shape == (5, 5, 3, 6) and images.shape == (10, 16, 16, 3)
    losses, trained = cnn.train(params, images, labels, steps=5, mode=mode)
    assert len(losses) == 6
    assert all(later < earlier for earlier, later in zip(losses, losses[1:])), losses
    assert losses[-1] < 0.5 * losses[0]
    assert {k: v.shape for k, v in trained.items()} == {k: v.shape for k, v in params.items()}


@pytest.mark.parametrize("mode", MODES)
def test_checkpointed_gradients_equal_the_plain_ones(mode):
    params, images, labels = cnn.init(seed=1)
    plain = sg.grad(cnn.plain_loss, mode=mode)
    checkpointed = sg.grad(cnn.loss, mode=mode)
    for _ in range(2):  # generic code, then code specialised to these shapes
        expected = plain(params, images, labels)
        result = checkpointed(params, images, labels)
        assert set(result) == set(params)
        for name in params:
            np.testing.assert_allclose(result[name], expected[name], rtol=1e-12, atol=1e-15)


def test_both_engines_agree_on_the_cnn():
    params, images, labels = cnn.init(seed=2)
    transformed = sg.grad(cnn.loss, mode="s2s")
    taped = sg.grad(cnn.loss, mode="tape")
    for _ in range(2):
        by_source = transformed(params, images, labels)
        by_tape = taped(params, images, labels)
        for name in params:
            np.testing.assert_allclose(by_source[name], by_tape[name], rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize("mode", MODES)
def test_checkpointing_a_deep_chain_lowers_peak_memory(mode):
    w, x = cnn.chain_inputs()
    np.testing.assert_allclose(
        sg.grad(cnn.checkpointed_chain, mode=mode)(w, x),
        sg.grad(cnn.chain, mode=mode)(w, x),
        rtol=1e-10,
    )
    kept = cnn.peak_memory(cnn.chain, w, x, mode=mode)
    recomputed = cnn.peak_memory(cnn.checkpointed_chain, w, x, mode=mode)
    print(
        f"\n[{mode}] peak memory of a gradient step over 20 blocks: "
        f"{kept / 2**20:.1f} MiB kept, {recomputed / 2**20:.1f} MiB checkpointed"
    )
    assert recomputed < 0.5 * kept
