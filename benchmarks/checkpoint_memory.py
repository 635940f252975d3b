"""Peak memory and time of a gradient step over a chain of blocks, with and without
``s2sgrad.checkpoint``, in both engines.

Each block is four ``tanh`` layers sharing a 128×128 weight matrix, on a batch of 256. The
un-checkpointed chain keeps every block's intermediates until the backward pass; the
checkpointed one keeps each block's input and recomputes the rest when the backward pass
reaches it, so its peak grows by one array per block instead of about eight.

Run it with ``.venv/bin/python benchmarks/checkpoint_memory.py [--depths 5,10,20,40]``.
"""

from __future__ import annotations

import argparse
import time
import tracemalloc

import numpy as np

import s2sgrad as sg


def block(w, x):
    h = np.tanh(x @ w)
    h = np.tanh(h @ w)
    h = np.tanh(h @ w)
    return np.tanh(h @ w)


checkpointed_block = sg.checkpoint(block)


def chain_of(step, depth: int):
    """``loss(w, x)``: ``depth`` applications of ``step``, then a sum of squares."""

    def loss(w, x):
        for _ in range(depth):
            x = step(w, x)
        return np.sum(x * x)

    return loss


def measure(loss, w, x, mode: str) -> tuple[float, float]:
    """(peak MiB, seconds) of one gradient step, after a warm-up call."""
    gradient = sg.grad(loss, mode=mode)
    gradient(w, x)
    tracemalloc.start()
    gradient(w, x)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    start = time.perf_counter()
    gradient(w, x)
    return peak / 2**20, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--depths", default="5,10,20,40", help="comma-separated chain lengths")
    depths = [int(d) for d in parser.parse_args().depths.split(",")]
    rng = np.random.default_rng(0)
    w, x = rng.normal(scale=0.05, size=(128, 128)), rng.normal(size=(256, 128))
    print(f"{'mode':<5} {'depth':>5} {'kept MiB':>9} {'ckpt MiB':>9} {'kept ms':>8} {'ckpt ms':>8}")
    for mode in ("s2s", "tape"):
        for depth in depths:
            kept, kept_time = measure(chain_of(block, depth), w, x, mode)
            ckpt, ckpt_time = measure(chain_of(checkpointed_block, depth), w, x, mode)
            print(
                f"{mode:<5} {depth:>5} {kept:>9.1f} {ckpt:>9.1f} "
                f"{1000 * kept_time:>8.1f} {1000 * ckpt_time:>8.1f}"
            )


if __name__ == "__main__":
    main()
