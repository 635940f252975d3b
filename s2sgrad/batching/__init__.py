"""Batched derivatives: one pullback (or pushforward) for many cotangents (or tangents).

``sg.jacobian`` and ``sg.jacfwd`` need one backward (or forward) pass per output (or
input) element. The generated derivative code is linear in its cotangent (tangent), so
it can take a whole batch of them at once, stacked along a leading axis, as a
:class:`BatchedValue`: NumPy's override protocols send every operation to a batching
rule that does for the batch what NumPy does for one example. An operation without a
rule raises :class:`NotBatchable`, and the Jacobian is built one element at a time.

Example::

    import s2sgrad as sg
    sg.jacobian(lambda w: np.tanh(x @ w))(w)  # every row from one backward pass
"""

# the batching rules register themselves with BatchedValue when imported
from s2sgrad.batching import rules as _rules  # noqa: F401
from s2sgrad.batching.jacobians import forward_jacobian, refused, reverse_jacobian, stats
from s2sgrad.batching.values import BatchedValue, NotBatchable

__all__ = [
    "BatchedValue",
    "NotBatchable",
    "reverse_jacobian",
    "forward_jacobian",
    "stats",
    "refused",
]
