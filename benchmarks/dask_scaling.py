"""Gradient time and memory per worker on a Dask cluster, as workers and data grow.

The gradient of a logistic-regression loss over ``rows`` rows of 16 features, made on the
workers by ``dask.array.random`` in chunks of 50,000 rows (6.4 MB), so the data never
exists on one process. For 1 and 2 worker processes (one thread each) and each data size,
it times ``dask.compute(value_and_grad(w, X, y))`` (the best of three; the graph is built
anew each time, as in a training loop) and reads each worker's peak resident memory. The
peak should stay about the same as the data grows: workers hold a few chunks at a time.

Run it with ``.venv/bin/python benchmarks/dask_scaling.py [--rows 200000,800000,3200000]``
(needs the ``dask`` extra).
"""

from __future__ import annotations

import argparse
import resource
import time

import numpy as np

import s2sgrad as sg

CHUNK_ROWS = 50_000
COLUMNS = 16


def loss(w, X, y):
    z = X @ w
    return np.mean(np.logaddexp(0.0, z) - y * z)


def peak_memory_mb() -> float:
    """This process's peak resident memory (Linux reports kilobytes)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run(workers: int, sizes: list[int]) -> list[tuple]:
    import dask
    import dask.array as da
    from dask.distributed import Client, LocalCluster

    rows_out = []
    value_and_grad = sg.value_and_grad(loss, mode="s2s")
    with (
        LocalCluster(n_workers=workers, threads_per_worker=1, dashboard_address=None) as cluster,
        Client(cluster) as client,
    ):
        for rows in sizes:
            state = da.random.RandomState(0)
            X = state.normal(size=(rows, COLUMNS), chunks=(CHUNK_ROWS, COLUMNS))
            y = (state.random_sample(rows, chunks=CHUNK_ROWS) > 0.5).astype(float)
            w = np.full(COLUMNS, 0.01)
            times = []
            for _ in range(3):
                start = time.perf_counter()
                dask.compute(*value_and_grad(w, X, y))
                times.append(time.perf_counter() - start)
            peaks = client.run(peak_memory_mb)
            rows_out.append((workers, rows, min(times), max(peaks.values())))
    return rows_out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="200000,800000,3200000")
    options = parser.parse_args(argv)
    sizes = [int(text) for text in options.rows.split(",")]
    print(f"{'workers':>7} {'rows':>10} {'data MB':>8} {'gradient s':>10} {'peak MB/worker':>15}")
    for workers in (1, 2):
        for workers_, rows, seconds, peak in run(workers, sizes):
            data_mb = rows * (COLUMNS + 1) * 8 / 1e6
            print(f"{workers_:>7} {rows:>10} {data_mb:>8.0f} {seconds:>10.3f} {peak:>15.0f}")


if __name__ == "__main__":
    main()
