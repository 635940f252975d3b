"""Gradients of the benchmark workloads in autograd, JAX and PyTorch, when they are installed.

None of them is required. autograd and JAX differentiate the very same function objects as
s2sgrad, with the global name ``np`` rebound to ``autograd.numpy`` or ``jax.numpy``; PyTorch
gets a line-by-line port of each function (:data:`TORCH_PORTS`). Everything runs on the CPU
in float64, like the NumPy code.

Example:
    >>> from workloads import workload
    >>> import numpy as np
    >>> w = workload("rosenbrock")
    >>> args = w.make_args(np.random.default_rng(0), n=5)
    >>> columns = [c for fw in available() for c in fw.gradients(w, args)]
"""

from __future__ import annotations

import importlib
import importlib.metadata
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
from workloads import Workload, with_numpy


@dataclass(frozen=True)
class Column:
    """One timed column: ``call()`` computes the gradients, ``to_numpy`` converts them."""

    title: str
    call: Callable[[], Any]
    to_numpy: Callable[[Any], tuple]


class Framework:
    """A comparison framework: its name, version and gradient columns for a workload."""

    name = ""
    module = ""

    def __init__(self) -> None:
        importlib.import_module(self.module)
        self.version = importlib.metadata.version(self.module)

    def gradients(self, w: Workload, args: tuple) -> Iterator[Column]:
        raise NotImplementedError


class Autograd(Framework):
    name = module = "autograd"

    def gradients(self, w: Workload, args: tuple) -> Iterator[Column]:
        import autograd
        import autograd.numpy as anp

        fn = with_numpy(w.fn, anp)
        indices = w.wrt_indices()

        # autograd.grad differentiates one argument, so the wrt arguments travel as one tuple.
        def packed(params, *rest):
            full = list(rest)
            for i, p in zip(indices, params):
                full[i] = p
            return fn(*full)

        grad = autograd.grad(packed)
        params = tuple(args[i] for i in indices)
        yield Column("autograd", lambda: grad(params, *args), lambda g: tuple(g))


class Jax(Framework):
    name = module = "jax"

    def __init__(self) -> None:
        super().__init__()
        import jax

        jax.config.update("jax_enable_x64", True)

    def gradients(self, w: Workload, args: tuple) -> Iterator[Column]:
        import jax
        import jax.numpy as jnp

        fn = with_numpy(w.fn, jnp)
        jargs = tuple(jnp.asarray(a) if isinstance(a, np.ndarray) else a for a in args)
        grad = jax.grad(fn, argnums=w.wrt_indices())
        jitted = jax.jit(grad)

        def to_numpy(g):
            return tuple(np.asarray(x) for x in g)

        yield Column("jax", lambda: jax.block_until_ready(grad(*jargs)), to_numpy)
        yield Column("jax.jit", lambda: jax.block_until_ready(jitted(*jargs)), to_numpy)


class Torch(Framework):
    name = module = "torch"

    def gradients(self, w: Workload, args: tuple) -> Iterator[Column]:
        import torch

        if w.name not in TORCH_PORTS:
            return
        fn = TORCH_PORTS[w.name]
        targs = [torch.as_tensor(a, dtype=torch.float64) for a in args]
        params = [targs[i].requires_grad_(True) for i in w.wrt_indices()]

        def call():
            return torch.autograd.grad(fn(torch, *targs), params)

        yield Column("torch", call, lambda g: tuple(x.detach().numpy() for x in g))


def available() -> list[Framework]:
    """The comparison frameworks that import on this machine.

    Example:
        >>> [fw.name for fw in available()]  # doctest: +SKIP
        ['autograd', 'jax', 'torch']
    """
    found = []
    for kind in (Autograd, Jax, Torch):
        try:
            found.append(kind())
        except ImportError:
            continue  # not installed: its column is left out
        except Exception as error:  # installed but broken: say so, and leave it out
            print(f"{kind.name} is installed but failed to load: {error}")
    return found


# --------------------------------------------------------------------------------------------
# PyTorch ports of the workloads in workloads.py, statement for statement.


def torch_xor_mlp(torch, W1, b1, W2, b2, X, y):
    h = torch.tanh(X @ W1 + b1)
    out = h @ W2 + b2
    return torch.mean((out - y) ** 2)


def torch_mlp_softmax(torch, W1, b1, W2, b2, X, Y):
    h = torch.clamp_min(X @ W1 + b1, 0.0)
    logits = h @ W2 + b2
    shifted = logits - torch.amax(logits, dim=1, keepdim=True)
    logp = shifted - torch.log(torch.sum(torch.exp(shifted), dim=1, keepdim=True))
    return -torch.sum(Y * logp) / X.shape[0]


def torch_attention(torch, Wq, Wk, Wv, X):
    q = X @ Wq
    k = X @ Wk
    v = X @ Wv
    scores = (q @ k.T) / X.shape[1] ** 0.5
    e = torch.exp(scores - torch.amax(scores, dim=1, keepdim=True))
    weights = e / torch.sum(e, dim=1, keepdim=True)
    out = weights @ v
    return torch.sum(out**2)


def torch_rosenbrock(torch, x):
    return torch.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def torch_rnn(torch, Wx, Wh, b, xs):
    h = torch.zeros((xs.shape[1], Wh.shape[0]), dtype=xs.dtype)
    for t in range(xs.shape[0]):
        h = torch.tanh(xs[t] @ Wx + h @ Wh + b)
    return torch.sum(h**2)


def torch_scalar_loop(torch, a, b, x):
    for _ in range(200):
        x = torch.sin(x) * a + b * x
    return x


TORCH_PORTS = {
    "xor_mlp": torch_xor_mlp,
    "mlp_softmax": torch_mlp_softmax,
    "attention": torch_attention,
    "rosenbrock": torch_rosenbrock,
    "rnn": torch_rnn,
    "scalar_loop": torch_scalar_loop,
}
