"""A Jacobian differentiated again (``sg.jacfwd(sg.jacobian(f))``, JAX's Hessian idiom).

The Jacobian's wrapper is s2sgrad's own code, which source transformation cannot read: it
was refused naming ``s2sgrad/api.py`` and a ``with`` statement, in s2s and in the warning
of mode "auto". Now the refusal names the user's function and says to use ``sg.hessian``;
mode "auto" still gives the right second derivatives on the tape.
"""

import re
import warnings

import numpy as np
import pytest
from oracle import assert_close

import s2sgrad as sg


def f(x):
    return np.sum(np.sin(x) * x[::-1])


def _hessian(x):
    """The analytic Hessian of ``f``: d/dx_i of cos(x_i) x_r(i) + sin(x_r(i))."""
    n = x.size
    reverse = np.eye(n)[::-1]
    return (
        np.diag(-np.sin(x) * x[::-1])
        + reverse * np.cos(x)[:, None]
        + (reverse * np.cos(x)[None, :])
    )


OUTER = {"jacfwd": sg.jacfwd, "jacobian": sg.jacobian}
INNER = {"jacobian": sg.jacobian, "jacfwd": sg.jacfwd}


@pytest.mark.parametrize("outer", OUTER)
@pytest.mark.parametrize("inner", INNER)
def test_s2s_refuses_naming_the_users_function(outer, inner):
    x = np.array([0.3, -0.4, 1.2])
    matrix = OUTER[outer](INNER[inner](f, mode="s2s"), mode="s2s")
    with pytest.raises(sg.UnsupportedError) as error:
        matrix(x)
    message = str(error.value)
    assert re.match(rf"{re.escape(__file__)}:\d+: a Jacobian made by sg\.{inner}", message)
    assert "sg.hessian(f)" in message and "api.py" not in message


@pytest.mark.parametrize("outer", OUTER)
@pytest.mark.parametrize("inner", INNER)
@pytest.mark.parametrize("n", [2, 4])
def test_auto_gives_the_hessian_and_warns_at_the_users_function(outer, inner, n):
    x = np.random.default_rng(n).normal(size=n)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        hessian = OUTER[outer](INNER[inner](f, mode="auto"), mode="auto")(x)
    assert_close(hessian, _hessian(x))
    messages = [str(w.message) for w in caught if issubclass(w.category, sg.S2SGradWarning)]
    assert all("api.py" not in m for m in messages)  # the fallback warns once per function
    assert_close(sg.hessian(f, mode="s2s")(x), _hessian(x))
