"""Every script in examples/ runs, and the numbers it prints are true.

Each example runs in a subprocess, as a reader runs it (``python examples/NAME.py``), with
this checkout's s2sgrad first on the path, small sizes set by environment variables and
its files written into a temporary directory. The numbers it prints are checked against
values computed here independently: analytic derivatives, or the example's computation
redone in plain NumPy. The examples on real data need the ``examples`` extra
(scikit-learn, matplotlib, tqdm), which the ``test`` extra includes; without them those
tests are skipped.
"""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
NUMBER = re.compile(r"(?<![\w.^])-?\d+(?:\.\d*)?(?:e[-+]?\d+)?")  # not the 2 in "dx2"


def run_example(name: str, output: Path, **env: str) -> str:
    """Run ``examples/<name>.py`` with ``output`` as its output directory; return its stdout."""
    environment = dict(os.environ, PYTHONPATH=str(ROOT), S2SGRAD_EXAMPLES_OUTPUT=str(output))
    environment.update(env)
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / f"{name}.py")],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, f"{name}.py failed:\n{result.stdout}\n{result.stderr}"
    return result.stdout


def line(stdout: str, prefix: str) -> str:
    """The rest of the one line of ``stdout`` that starts with ``prefix``."""
    found = [text[len(prefix) :] for text in stdout.splitlines() if text.startswith(prefix)]
    assert len(found) == 1, f"expected one line starting {prefix!r} in:\n{stdout}"
    return found[0]


def numbers(text: str) -> list[float]:
    return [float(match) for match in NUMBER.findall(text)]


def example_module(name: str):
    """Import an example as a module, for its inputs (never for the expected answers)."""
    if str(EXAMPLES) not in sys.path:
        sys.path.insert(0, str(EXAMPLES))
    return __import__(name)


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def test_every_example_has_a_test():
    tested = set(re.findall(r'"(\w+)"', Path(__file__).read_text()))  # names quoted here
    scripts = {path.stem for path in EXAMPLES.glob("*.py") if not path.stem.startswith("_")}
    assert scripts <= tested, f"examples without a test: {sorted(scripts - tested)}"


def test_quickstart_learns_the_true_weights(tmp_path):
    stdout = run_example("quickstart", tmp_path)
    learned = line(stdout, "learned w = ")
    w = numbers(learned.split("b =")[0])
    b = numbers(learned.split("b =")[1].split("(")[0])
    np.testing.assert_allclose(w, [0.5, -1.0, 0.25], atol=1e-3)
    assert b == pytest.approx([0.1], abs=1e-3)


def test_loops_and_branches_agree_with_finite_differences(tmp_path):
    stdout = run_example("loops_and_branches", tmp_path)  # the example asserts its own checks
    a, x = 0.8, 0.5
    for _ in range(200):  # the fixed point of x = cos(a x), by plain iteration
        x = x + 0.5 * (math.cos(a * x) - x)
    implicit = -x * math.sin(a * x) / (1.0 + a * math.sin(a * x))
    assert numbers(line(stdout, "dx/da = "))[0] == pytest.approx(implicit, abs=1e-9)


def test_checkpointed_cnn_trains_with_the_plain_gradients(tmp_path):
    stdout = run_example("checkpointed_cnn", tmp_path, CHECKPOINTED_CNN_BLOCKS="3")
    losses = numbers(line(stdout, "losses over 5 SGD steps:"))
    assert len(losses) == 6 and losses[-1] < losses[0]
    assert numbers(line(stdout, "largest difference from the un-checkpointed"))[0] < 1e-12
    assert "over 3 blocks" in line(stdout, "peak memory of a gradient step")  # measured in
    # tests/test_controls_checkpoint.py at full depth


def test_gradient_tape_basics_prints_tensorflows_numbers(tmp_path):
    stdout = run_example("gradient_tape_basics", tmp_path)
    assert numbers(line(stdout, "d(x^2)/dx at 3:")) == [2 * 3.0]
    assert numbers(line(stdout, "nested tapes, x = 5:"))[-2:] == [2 * 5.0, 2.0]
    assert numbers(line(stdout, "persistent tape:")) == [4 * 3.0**3, 2 * 3.0]
    assert "non-persistent" in line(stdout, "second gradient of a non-persistent tape: ")
    for prefix in ("stop_recording:", "reset:"):
        rest = line(stdout, prefix)
        assert numbers(rest.split("dz/dy")[0]) == [2 * 2.0] and rest.endswith("None")
    rest = line(stdout, "watch_accessed_variables=False:")
    assert "dy/dx0 = None" in rest
    assert numbers(rest.split("dy/dx1 =")[1])[0] == pytest.approx(sigmoid(10.0), rel=1e-12)
    weighted = numbers(line(stdout, "output_gradients [1, 0.5, 0.25] for y = x^2:").split(":")[-1])
    np.testing.assert_allclose(weighted, 2 * np.array([1.0, 2.0, 3.0]) * [1.0, 0.5, 0.25])
    assert line(stdout, "unconnected source:").strip() == "None"
    assert numbers(line(stdout, "unconnected source, 'zero':")) == [0.0]
    two = numbers(line(stdout, "two tapes:").replace("dx0", "").replace("dx1", ""))
    assert two == pytest.approx([math.cos(0.0), sigmoid(0.0) * (1 - sigmoid(0.0))])
    assert numbers(line(stdout, "x^3 at 1:")) == [3 * 1.0**2, 6 * 1.0]
    w = np.random.default_rng(0).normal(size=(3, 2))  # the example's model: loss = mean(y^2)
    y = np.array([[1.0, 2.0, 3.0]]) @ w
    np.testing.assert_allclose(numbers(line(stdout, "model:").split("dl/db =")[1]), y[0], rtol=1e-6)


def test_custom_gradient_clips_also_after_export(tmp_path):
    stdout = run_example("custom_gradient_export", tmp_path)
    v = 2.0
    upstream = 1.0
    expected = upstream * min(1.0, 0.5 / abs(upstream)) * 2 * v  # clipped cotangent · d(v²)/dv
    assert numbers(line(stdout, "f(2.0) =")) == [v * v]
    for how in ("generated code", "tape", "GradientTape", "exported module in a fresh interpreter"):
        assert numbers(line(stdout, f"gradient, {how}:")) == [expected]
    assert (tmp_path / "df_clipped.py").exists()


def test_input_gradient_regularisation_matches_its_analytic_value(tmp_path):
    stdout = run_example("input_gradient_regularisation", tmp_path)
    params, x, _ = example_module("input_gradient_regularisation").init()
    y = np.tanh(x @ params["kernel"] + params["bias"])
    g1 = (2 * y * (1 - y**2)) @ params["kernel"].T  # d sum(y²) / dx
    assert numbers(line(stdout, "|g1| ="))[-1] == pytest.approx(np.linalg.norm(g1), abs=1e-6)
    for mode in ("s2s", "tape", "auto"):
        assert numbers(line(stdout, f"grad of grad, mode={mode}:"))[-1] < 1e-6
    assert numbers(line(stdout, "GradientTape: largest difference"))[-1] < 1e-6
    losses = [numbers(text)[-1] for text in stdout.splitlines() if text.startswith("step")]
    assert len(losses) == 4 and losses == sorted(losses, reverse=True)


def test_jacobians_and_the_hessian(tmp_path):
    pytest.importorskip("matplotlib")
    stdout = run_example("jacobians", tmp_path)
    differences = [
        numbers(text.split("difference")[1])[0]
        for text in stdout.splitlines()
        if "difference" in text
    ]
    assert len(differences) == 4 and max(differences) < 1e-12
    assert numbers(line(stdout, "  sum of the jacobian vs the gradient:"))[0] < 1e-12
    assert numbers(line(stdout, "tensor source:")) == [7, 10, 5, 10, 7, 10, 5, 10]
    assert numbers(line(stdout, "batch jacobian: full")) == [7, 6, 7, 5, 7, 6, 5]
    assert numbers(line(stdout, "  batch jacobian vs diagonal blocks:"))[0] < 1e-12
    assert numbers(line(stdout, "batch norm:"))[-1] > 0.1  # examples interact
    assert numbers(line(stdout, "  so batch_jacobian is not the diagonal blocks:"))[-1] > 0.1
    assert numbers(line(stdout, "hessian:")) == [5, 8, 5, 8, 5, 8]
    assert numbers(line(stdout, "  symmetric:"))[-1] < 1e-12
    before, after = numbers(line(stdout, "  Newton step:"))
    assert after < before
    for picture in ("sigmoid.png", "hessian.png"):
        assert (tmp_path / picture).read_bytes()[:4] == b"\x89PNG"


def test_split_model_chains_pullbacks_and_trains(tmp_path):
    stdout = run_example("split_model", tmp_path, SPLIT_MODEL_STEPS="100")
    params1, params2, x, y = example_module("split_model").init()
    h = np.tanh(np.tanh(x @ params1["w1"] + params1["b1"]) @ params1["w2"] + params1["b2"])
    loss = np.mean((h @ params2["w3"] + params2["b3"] - y) ** 2)
    assert numbers(line(stdout, "loss "))[0] == pytest.approx(loss, abs=1e-6)
    assert numbers(line(stdout, "chained pullbacks vs the whole model"))[-1] < 1e-12
    assert numbers(line(stdout, "two GradientTapes and output_gradients"))[-1] < 1e-12
    losses = [numbers(text)[-1] for text in stdout.splitlines() if text.startswith("step")]
    assert len(losses) == 3 and losses[-1] < losses[0] / 10


def d2l_f(a: float) -> float:
    b = a * 2
    while abs(b) < 1000:
        b = b * 2
    return b if b > 0 else 100 * b


def test_d2l_autograd(tmp_path):
    stdout = run_example("d2l_autograd", tmp_path)
    x = np.arange(4.0)
    a = float(np.random.default_rng(0).normal())
    for part in stdout.split("GradientTape:"):  # the function transforms, then the tape
        first = line(part, "  y = 2 x.x =")
        assert numbers(first.split("grad:")[0]) == [2 * x @ x]
        assert numbers(first.split("grad:")[1].split("grad ==")[0]) == list(4 * x)
        assert numbers(line(part, "  grad of sum(x):")) == [1.0] * 4
        assert numbers(line(part, "  grad of sum(stop_gradient(x * x) * x):")[:-10]) == list(x * x)
        control = line(part, "  control flow:")
        assert control.endswith("grad == d / a: True")
        assert numbers(control.split("grad =")[1])[0] == pytest.approx(d2l_f(a) / a)
    assert numbers(line(stdout, "  grad of sum(x * x):")) == list(2 * x)
    assert numbers(line(stdout, "  the same persistent tape, grad of sum(x * x):")[:-13]) == list(
        2 * x
    )


def test_swift_custom_differentiation_prints_in_swifts_order(tmp_path):
    stdout = run_example(
        "swift_custom_differentiation", tmp_path, XOR_STEPS="3", XOR_MORE_STEPS="1000"
    )
    lines = stdout.splitlines()
    taking = "Taking e(2.718281828459045) to the power of 3.0!"
    assert lines[:4] == [taking, lines[1], taking, lines[3]]  # sillyExp runs once per line
    assert numbers(lines[1])[-1] == pytest.approx(math.exp(3.0), rel=1e-14)
    assert lines[3].startswith("∇exp(3) =")
    assert numbers(lines[3])[-1] == pytest.approx(math.exp(3.0), rel=1e-14)

    x = 2.0
    d_sines = math.cos(math.sin(math.sin(x))) * math.cos(math.sin(x)) * math.cos(x)
    assert numbers(lines[4]) == pytest.approx([d_sines, 0.0], rel=1e-14)

    assert lines[5].startswith("∂log/∂x = ") and lines[5].endswith("but rewritten to 0.5")
    assert numbers(lines[5])[0] == pytest.approx(1 / 30.0)
    assert numbers(lines[6]) == [1.0] and lines[6].startswith("∂+/∂sin")
    assert numbers(lines[7]) == [pytest.approx(math.cos(30.0) + 0.5, rel=1e-14)]

    xor = lines[8:17]  # per step: the loss, then the hooks in the backward pass's order
    targets = np.array([0.0, 1.0, 1.0, 0.0])
    for step in range(3):
        loss, prediction, hidden = xor[3 * step : 3 * step + 3]
        assert loss.startswith("Loss:") and prediction.startswith("∂L/∂ŷ =")
        assert hidden.startswith("∂L/∂layer1 =")
        cotangent = np.array(numbers(prediction.split("=")[1]))  # 2 (ŷ - y) / 4, rounded
        predicted = targets + 2 * cotangent
        assert numbers(loss)[0] == pytest.approx(np.mean((predicted - targets) ** 2), abs=1e-3)
        assert len(numbers(hidden.split("=")[1])) == 4 * 10

    trained = numbers(lines[17].split("steps:")[1])  # the loss, then the four predictions
    assert lines[17].startswith("after 1000 more steps:") and trained[0] < 1e-3
    np.testing.assert_allclose(trained[1:], targets, atol=0.05)

    assert lines[18:] == [
        "Running original computation...",
        "  Computing square...",
        "Running backpropagation...",
        "  Computing square...",
        lines[22],
    ]
    assert numbers(lines[22]) == [pytest.approx(-2 * math.cos(10.0) * math.sin(10.0), rel=1e-14)]


def digits_sizes():
    from sklearn.datasets import load_digits

    total = len(load_digits().target)
    return total - total // 4, total // 4


@pytest.mark.parametrize("name", ["digits_mlp", "digits_cnn"])
def test_digits_examples_train_and_save_their_pictures(tmp_path, name):
    for module in ("sklearn", "matplotlib", "tqdm"):
        pytest.importorskip(module)
    stdout = run_example(name, tmp_path, DIGITS_EPOCHS="2")
    assert numbers(stdout.splitlines()[0]) == list(digits_sizes())
    losses = numbers(line(stdout, "training loss per epoch:"))
    assert len(losses) == 2 and losses[1] < losses[0] < math.log(10) + 0.5
    assert numbers(line(stdout, "test accuracy:"))[0] > 0.5  # chance is 0.1
    if name == "digits_cnn":
        assert numbers(line(stdout, "checkpointed vs plain gradient"))[-1] < 1e-12
    for picture in ("loss", "predictions"):
        assert (tmp_path / f"{name}_{picture}.png").read_bytes()[:4] == b"\x89PNG"


def test_dask_logistic_regression_descends_as_numpy_does(tmp_path):
    pytest.importorskip("dask.distributed")
    stdout = run_example(
        "dask_logistic_regression", tmp_path, DASK_EXAMPLE_ROWS="4000", DASK_EXAMPLE_STEPS="5"
    )
    assert numbers(line(stdout, "4000 rows in ")) == [10.0, 2.0]
    X, y = (np.asarray(part) for part in example_module("dask_logistic_regression").dataset(4000))
    w, losses = np.zeros(X.shape[1]), []
    for _ in range(5):  # the same descent with the analytic gradient, in NumPy
        z = X @ w
        losses.append(np.mean(np.logaddexp(0.0, z) - y * z))
        w = w - 2.0 * X.T @ (1.0 / (1.0 + np.exp(-z)) - y) / len(y)
    assert numbers(line(stdout, "step   1: loss"))[0] == pytest.approx(math.log(2.0), abs=1e-6)
    assert numbers(line(stdout, "step   5: loss"))[0] == pytest.approx(losses[4], abs=1e-6)
    np.testing.assert_allclose(numbers(line(stdout, "learned w =")), w, atol=1e-4)
