"""Guards that tell, faster than building the signature, that a call has the signature
its code was made for.

The hot path of a transformed function looks its code up by the signature of the arrays
it is given (``(shape, dtype, class)`` of each). Building that key and hashing it costs
about a microsecond for six arrays; a generated guard compares each argument against the
signature directly (``type(a0) is C0 and a0.dtype is D0 and a0.shape == S0 ...``), in
less than half of that. A guard that says no only sends the call down the usual path: it
says yes exactly when the key would equal the signature.

Example::

    guard = signature_guard(((((2,), np.dtype("float64"), np.ndarray)),))
    guard(np.zeros(2))  # True
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["signature_guard"]


def signature_guard(key: tuple) -> Callable[..., bool] | None:
    """A function of the call's positional arguments that is true when their signature
    is ``key`` (a tuple of ``(shape, dtype, class)``, one per argument); None for a key of
    another form.

    Example::

        signature_guard(((((2,), np.dtype("float64"), np.ndarray)),))(np.ones(2))  # True
    """
    if not all(type(part) is tuple and len(part) == 3 for part in key):
        return None
    if not all(type(part[0]) is tuple for part in key):
        return None
    namespace: dict = {}
    tests = []
    parameters = []
    for index, (shape, dtype, cls) in enumerate(key):
        namespace[f"S{index}"], namespace[f"D{index}"], namespace[f"C{index}"] = shape, dtype, cls
        parameters.append(f"a{index}")
        tests.append(
            f"type(a{index}) is C{index} and a{index}.dtype is D{index} "
            f"and a{index}.shape == S{index}"
        )
    body = " and ".join(tests) if tests else "True"
    source = f"def guard({', '.join(parameters)}):\n    return {body}\n"
    exec(compile(source, "<s2sgrad signature guard>", "exec"), namespace)  # noqa: S102
    return namespace["guard"]
