"""Between the compiler and the tape below and the transforms above: argument handling
(:mod:`~s2sgrad.engines.arguments`) and the choice of engine per mode, with the
vector-Jacobian and Jacobian-vector products built on it (:mod:`~s2sgrad.engines.products`).

Both ``api`` and ``batching`` build on this package, so neither imports the other's
internals.
"""
