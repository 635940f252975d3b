"""What s2sgrad answers does not depend on what ran before it in the process.

The Hessian-vector product of ``np.add.at(sums, segments, E[tokens])`` into ``sums =
np.zeros(...)`` (an embedding bag) was refused in s2s when it ran first in a process, and
differentiated when a tape had recorded before: the sharing analysis summarises a function
(which of its arguments its result may share) from its source, cached by code, and read
``added_at`` (a runtime helper with a derivative rule) as a call of its primitive, which may
return any argument, until the tape, routing the helper, left a copy of it whose own source
says it returns a new array. Each scenario runs in a fresh interpreter, both ways.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import s2sgrad
import s2sgrad as sg

# the s2sgrad under test (a worktree, or the checkout its tests came with) and these tests
PACKAGE_ROOT = Path(s2sgrad.__file__).resolve().parents[1]
TESTS = Path(__file__).resolve().parent

_SCENARIO = """
import json, sys
import numpy as np
import s2sgrad as sg
from test_order_independent_results import a_tape_records, product_in_s2s
if sys.argv[1] == "tape-first":
    a_tape_records()
try:
    outcome = product_in_s2s().tolist()
except sg.S2SGradError as error:
    outcome = str(error)
print(json.dumps({"hvp": outcome}))
"""


def embedding_bag(E, tokens, segments, target):
    sums = np.zeros((len(target), E.shape[1]))
    np.add.at(sums, segments, E[tokens])
    counts = np.bincount(segments, minlength=len(target))[:, None]
    return np.sum((sums / counts - target) ** 2)


_R = np.random.default_rng(2929)
ARGS = (
    _R.normal(size=(5, 3)),
    np.array([0, 2, 2, 4, 1, 3]),
    np.array([0, 0, 1, 1, 2, 2]),
    _R.normal(size=(3, 3)),
)
DIRECTION = _R.normal(size=(5, 3))


def of_embeddings(E):
    return embedding_bag(E, *ARGS[1:])


def product_in_s2s():
    (product,) = sg.hvp(of_embeddings, (ARGS[0],), (DIRECTION,), mode="s2s")
    return product


def a_tape_records():
    sg.grad(lambda x: np.sum(x**2), mode="tape")(np.ones(3))


def _run(order):
    environment = dict(os.environ)
    environment["PYTHONPATH"] = os.pathsep.join([str(PACKAGE_ROOT), str(TESTS)])
    environment["PYTHONDONTWRITEBYTECODE"] = "1"
    done = subprocess.run(
        [sys.executable, "-c", _SCENARIO, order],
        capture_output=True,
        text=True,
        env=environment,
        cwd=TESTS,  # not the checkout, whose s2sgrad "-c" would import first
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _expected_product():
    """The loss is quadratic in E: ``sum((M @ E / c - target) ** 2)`` with ``M`` adding the
    rows of each segment, so its Hessian-vector product is ``M.T @ (2 * M @ D / c**2)``."""
    _, tokens, segments, target = ARGS
    adding = np.zeros((len(target), len(ARGS[0])))
    np.add.at(adding, (segments, tokens), 1.0)
    counts = np.bincount(segments, minlength=len(target))[:, None]
    return adding.T @ (2 * (adding @ DIRECTION) / counts**2)


@pytest.fixture(scope="module")
def outcomes():
    return {order: _run(order) for order in ("alone", "tape-first")}


@pytest.mark.parametrize("order", ["alone", "tape-first"])
def test_the_hessian_of_an_embedding_bag_is_differentiated_in_s2s_either_way(outcomes, order):
    got = outcomes[order]["hvp"]
    assert not isinstance(got, str), got  # a refusal
    np.testing.assert_allclose(np.array(got), _expected_product(), rtol=1e-5, atol=1e-7)
