"""Collections that walk only what a test made.

A test worker holds every object the tests before made alive (module functions keep their
generated code); a full ``gc.collect()`` walks all of them, seconds late in a run, where
the same test alone took a tenth of one. Frozen objects are set aside by the collector, and
a reference from one still keeps an object alive, so a test that something it made is
freed proves the same with everything older frozen.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def older_objects_frozen() -> Iterator[None]:
    """Freeze every object alive now for the block: its collections walk only the objects
    made inside it. Everything is unfrozen after (Python offers no partial unfreeze).

    Example::

        with older_objects_frozen():
            gradient = sg.grad(f)
            ...
            gc.collect()  # walks the objects made since the block began
    """
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def frozen_for_the_end() -> None:
    """Freeze every object alive (after a collection of the young generations): called
    when the run is over, so that pytest's closing full collections walk nothing. Late in
    a worker they walked millions of objects, seconds each.

    Example::

        frozen_for_the_end()
        gc.collect()  # walks only what was made since
    """
    gc.collect(1)
    gc.freeze()
