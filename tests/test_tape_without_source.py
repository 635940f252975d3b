"""In-place changes on the tape in functions without source (exec'd strings, a plain REPL).

With source, the tape asks the alias analysis whether a name sharing the changed array is
read afterwards. Without it, the tape looks at what the running frame holds: a change of an
array that a held value views or wraps (``w = y[1:]; y += v``; ``v = np.squeeze(y)`` of a
1-d ``y`` wraps the very array ``y`` does), or of a view, is followed through those values
(tape/view_writes.py) or refused; one that nothing else shares is followed, as before.
"""

import sys

import numpy as np
import pytest
from oracle import numeric_grad

import s2sgrad as sg

SOURCE = """
def update_with_a_view_read_after(x):
    y = x * 2.0
    w = y[1:]
    y += x ** 2
    return np.sum(w ** 2) + np.sum(y)


def item_write_with_a_view_read_after(x):
    y = x * 2.0
    w = y[1:]
    y[0] = x[1] * 5.0
    y[2] = x[0] ** 2
    return np.sum(w ** 2) + np.sum(y)


def write_into_a_row(x):
    y = np.stack([x, x * 3.0])
    row = y[0]
    row[1] = x[2] ** 3
    return np.sum(y ** 2)


def write_into_a_squeezed_view(x):
    y = x * 2.0
    v = np.squeeze(y)
    v[0] = v[1] * 3.0
    return np.sum(y ** 2)


def update_of_a_list_entry(x):
    y = x * 2.0
    kept = [y]
    y += x ** 2
    return np.sum(kept[0] * 3.0) + np.sum(y)


def item_write_nothing_shares(x):
    y = x * 2.0
    y[0] = x[1] ** 2
    return np.sum(y ** 2)


def update_nothing_shares(x):
    acc = x * 0.0
    for k in range(3):
        acc += x ** 2 * k
    return np.sum(acc * x)
"""

SHARED = [
    "update_with_a_view_read_after",
    "item_write_with_a_view_read_after",
    "write_into_a_row",
    "write_into_a_squeezed_view",
    "update_of_a_list_entry",
]
UNSHARED = ["item_write_nothing_shares", "update_nothing_shares"]

# mode="auto" says it takes the tape for a function without source
pytestmark = pytest.mark.filterwarnings("ignore::s2sgrad.errors.FallbackWarning")


@pytest.fixture(scope="module")
def without_source():
    names = {"np": np}
    exec(compile(SOURCE, "<string>", "exec"), names)
    return names


@pytest.mark.parametrize("name", SHARED)
@pytest.mark.parametrize("mode", ["tape", "auto"])
def test_a_change_another_value_may_see_is_followed_or_refused(without_source, name, mode):
    """The held values sharing the changed memory follow the change (tape/view_writes.py);
    else the change is refused, naming the line."""
    f = without_source[name]
    x = np.random.default_rng(1).normal(size=3)
    try:
        got = sg.grad(f, mode=mode)(x)
    except sg.S2SGradError as refused:
        assert "no source" in str(refused) and "<string>:" in str(refused)
        return
    np.testing.assert_allclose(got, numeric_grad(f, [x], 0), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("name", UNSHARED)
@pytest.mark.parametrize("mode", ["tape", "auto"])
@pytest.mark.parametrize("seed", [0, 1])
def test_a_change_nothing_shares_is_differentiated(without_source, name, mode, seed):
    f = without_source[name]
    x = np.random.default_rng(seed).normal(size=3)
    np.testing.assert_allclose(
        sg.grad(f, mode=mode)(x), numeric_grad(f, [x], 0), rtol=1e-6, atol=1e-8
    )


@pytest.mark.parametrize("name", SHARED)
def test_with_source_the_same_functions_are_right_or_refused(name, tmp_path, monkeypatch):
    (tmp_path / "shared_module.py").write_text("import numpy as np\n" + SOURCE)
    monkeypatch.syspath_prepend(str(tmp_path))
    import shared_module

    f = getattr(shared_module, name)
    x = np.random.default_rng(2).normal(size=3)
    try:
        got = sg.grad(f, mode="auto")(x)
    except sg.S2SGradError:
        return
    finally:
        sys.modules.pop("shared_module", None)
    np.testing.assert_allclose(got, numeric_grad(f, [x], 0), rtol=1e-6, atol=1e-8)
