"""Logistic regression on a dataset spread over a Dask cluster, with s2sgrad's gradient.

The gradient s2sgrad generates is plain NumPy calls, so it runs on Dask arrays unchanged:
each call builds a task graph, and the workers compute it chunk by chunk. The data is made
on the workers (``dask.array.random``), so it never exists on this process. Starts a
``LocalCluster`` of two worker processes, prints the loss as full-batch gradient descent
runs, and the accuracy at the end.

Run with ``python examples/dask_logistic_regression.py``; ``DASK_EXAMPLE_ROWS`` sets the
number of rows (default 200,000, in chunks of a tenth of that) and ``DASK_EXAMPLE_STEPS``
the number of steps (default 25).
"""

import numpy as np
from _shared import env_int

import s2sgrad as sg


def loss(w, X, y):
    z = X @ w
    return np.mean(np.logaddexp(0.0, z) - y * z)


def dataset(rows: int, columns: int = 8, seed: int = 0):
    """Features and labels made lazily, chunk by chunk, where the workers need them."""
    import dask.array as da

    state = da.random.RandomState(seed)
    X = state.normal(size=(rows, columns), chunks=(max(rows // 10, 1), columns))
    truth = np.linspace(-1.0, 1.0, columns)
    y = ((X @ truth + 0.5 * state.normal(size=rows, chunks=X.chunks[0])) > 0).astype(float)
    return X, y


def main() -> None:
    import dask
    from dask.distributed import Client, LocalCluster

    rows, steps = env_int("DASK_EXAMPLE_ROWS", 200_000), env_int("DASK_EXAMPLE_STEPS", 25)
    with (
        LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None) as cluster,
        Client(cluster),
    ):
        X, y = dataset(rows)
        print(f"{rows} rows in {X.numblocks[0]} chunks on 2 workers")
        value_and_grad = sg.value_and_grad(loss)
        w = np.zeros(X.shape[1])
        for step in range(steps):
            value, gradient = dask.compute(*value_and_grad(w, X, y))  # one graph per step
            w = w - 2.0 * gradient
            if step == 0 or (step + 1) % 5 == 0:
                print(f"step {step + 1:3d}: loss {value:.6f}")
        accuracy = float((((X @ w) > 0) == (y > 0.5)).mean().compute())
        print("learned w =", np.array2string(w, precision=4))
        print(f"training accuracy: {accuracy:.4f}")


if __name__ == "__main__":
    main()
