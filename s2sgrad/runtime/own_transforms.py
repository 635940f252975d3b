"""The refusal of a call of s2sgrad's own transforms (``sg.jvp``, ``sg.vjp``, ``sg.hvp``, a
function ``sg.vmap`` or ``sg.jacobian`` made) met in a function being differentiated by
source transformation: it names the user's call and the transform as the user wrote it,
not the line of s2sgrad's own code where the transformer stopped.

Example::

    own_transform_refusal(sg.jvp, "model.py:12")
    # "model.py:12: sg.jvp is called in a function differentiated by source
    #  transformation, which does not differentiate through s2sgrad's own transforms (...)"
"""

from __future__ import annotations

from typing import Any

__all__ = ["is_public_transform", "own_transform_refusal"]

_PRODUCTS = (
    "sg.grad and sg.value_and_grad called inside are: a vector-Jacobian product is the "
    "gradient of np.sum(f(x) * v), a Hessian-vector product that of np.sum(sg.grad(f)(x) * v)"
)


def own_transform_refusal(function: Any, where: str) -> str:
    """Why ``function``, s2sgrad's own, called at the user's ``where``, is refused; the
    caller adds what mode to use.

    Example::

        own_transform_refusal(sg.vmap(f), "model.py:3")  # "model.py:3: a function made by
        # sg.vmap is called in a function ... (compute the batch with NumPy ...)"
    """
    matrix = getattr(function, "__s2sgrad_matrix__", None)
    if getattr(function, "__s2sgrad_vmapped__", False) or _is_vmap_call(function):
        called, advice = (
            "a function made by sg.vmap",
            ("compute the batch with NumPy on the whole array, or in a loop"),
        )
    elif matrix is not None:
        called, advice = f"a function made by {matrix}", "compute it with sg.grad of a row"
    elif getattr(function, "__module__", None) == "s2sgrad.api":
        called, advice = f"sg.{function.__name__}", _PRODUCTS
    else:
        name = getattr(function, "__qualname__", type(function).__name__)
        called, advice = f"s2sgrad's {name}", "sg.grad called inside is"
    return (
        f"{where}: {called} is called in a function differentiated by source "
        f"transformation, which does not differentiate through s2sgrad's own transforms ({advice})"
    )


def is_public_transform(function: Any) -> bool:
    """Whether ``function`` is one of s2sgrad's transforms as a user calls it: ``sg.jvp``,
    ``sg.vjp``, ``sg.hvp`` and the like, or a function ``sg.vmap`` made.

    Example::

        is_public_transform(sg.jvp)  # True
    """
    if getattr(function, "__s2sgrad_vmapped__", False):
        return True
    return getattr(function, "__module__", None) == "s2sgrad.api" and callable(function)


def _is_vmap_call(function: Any) -> bool:
    """``_Vectorized.__call__``, the code a function ``sg.vmap`` made runs."""
    qualname = getattr(function, "__qualname__", "")
    return qualname == "_Vectorized.__call__" and "batching" in getattr(function, "__module__", "")
