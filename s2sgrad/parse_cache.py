"""A cache on disk of what was parsed from source files, so a new process parses less.

The first time a process inlines a derivative rule, it reads the rule's source and parses
it (about 200 µs a rule); loading the parsed body back from this cache takes about 50 µs.
Entries are kept per source text, in one pickle file each, under ``$S2SGRAD_CACHE_DIR``
(default ``$XDG_CACHE_HOME/s2sgrad``, else ``~/.cache/s2sgrad``; set the variable to an
empty string to turn the cache off). A file's entries count only for the same source text
(its CRC-32 and size) and the same versions of s2sgrad, Python and gast; anything
unreadable is ignored. New entries are written when the process exits, and the oldest
files go once there are more than ``KEPT_FILES``.

Example::

    body = load("/path/rules.py", ("_sin", 12))
    if body is None:
        body = parse_it()
        store("/path/rules.py", ("_sin", 12), body)
"""

from __future__ import annotations

import atexit
import contextlib
import copyreg
import io
import os
import pickle
import sys
import tempfile
import zlib
from typing import Any

import gast

__all__ = ["load", "store", "write", "directory", "forget_loaded"]

_FORMAT = 3  # raise when what is stored changes shape
KEPT_FILES = 64  # more than a few checkouts' worth of rule modules


class _Table:
    """The entries stored for one source file, and where they are kept."""

    __slots__ = ("path", "stamp", "entries", "changed")

    def __init__(self, path: str | None, stamp: tuple | None, entries: dict):
        self.path = path
        self.stamp = stamp
        self.entries = entries
        self.changed = False


_tables: dict[str, _Table] = {}
_write_registered = False


def directory() -> str | None:
    """Where the cache files are, or None when the cache is turned off.

    Example::

        directory()  # '/home/me/.cache/s2sgrad'
    """
    configured = os.environ.get("S2SGRAD_CACHE_DIR")
    if configured is not None:
        return configured or None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "s2sgrad")


def load(filename: str, key: tuple) -> Any:
    """What was stored for ``key`` of source file ``filename``, or None.

    Example::

        load(rule.__code__.co_filename, (rule.__qualname__, rule.__code__.co_firstlineno))
    """
    table = _tables.get(filename)
    if table is None:
        table = _tables[filename] = _open(filename)
    blob = table.entries.get(key)
    if blob is None:
        return None
    try:
        return pickle.loads(blob)
    except Exception:  # written by something else: parse again, and overwrite it
        del table.entries[key]
        return None


def store(filename: str, key: tuple, value: Any) -> None:
    """Keep ``value`` for ``key`` of source file ``filename``; written when the process exits.

    Example::

        store(rule.__code__.co_filename, (rule.__qualname__, 12), parsed_body)
    """
    global _write_registered
    table = _tables.get(filename)
    if table is None:
        table = _tables[filename] = _open(filename)
    if table.path is None:
        return
    buffer = io.BytesIO()
    try:
        _NodePickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(value)
    except Exception:  # something in it cannot be pickled: it is parsed in each process
        return
    table.entries[key] = buffer.getvalue()
    table.changed = True
    if not _write_registered:
        _write_registered = True
        atexit.register(write)


def write() -> None:
    """Write the entries stored since the cache files were read (done at exit).

    Example::

        write()
    """
    for table in _tables.values():
        if not table.changed or table.path is None:
            continue
        table.changed = False
        contents = {"stamp": table.stamp, "entries": table.entries}
        folder = os.path.dirname(table.path)
        with contextlib.suppress(OSError, pickle.PicklingError):
            os.makedirs(folder, exist_ok=True)
            handle, temporary = tempfile.mkstemp(dir=folder, suffix=".tmp")
            try:
                with os.fdopen(handle, "wb") as file:
                    pickle.dump(contents, file, protocol=pickle.HIGHEST_PROTOCOL)
                os.replace(temporary, table.path)  # readers see the old file or the new one
            except BaseException:
                os.unlink(temporary)
                raise
            _prune(folder)


def forget_loaded() -> None:
    """Drop what this process read or stored (not the files), so the next use reads again.

    Example::

        forget_loaded()
    """
    _tables.clear()


def _open(filename: str) -> _Table:
    root = directory()
    if root is None:
        return _Table(None, None, {})
    try:
        with open(filename, "rb") as file:
            text = file.read()
    except (OSError, ValueError):  # "<string>", a file since removed …
        return _Table(None, None, {})
    checksum = zlib.crc32(text)
    stamp = (_FORMAT, _version(), sys.version_info[:2], getattr(gast, "__version__", None))
    stamp += (checksum, len(text))
    name = os.path.splitext(os.path.basename(filename))[0]
    path = os.path.join(root, f"{name}-{checksum:08x}-{len(text):x}.pickle")
    entries: dict = {}
    try:
        with open(path, "rb") as file:
            contents = pickle.load(file)
        if contents["stamp"] == stamp and isinstance(contents["entries"], dict):
            entries = contents["entries"]
    except Exception:  # missing, unreadable or from another version: start afresh
        pass
    return _Table(path, stamp, entries)


def _prune(folder: str) -> None:
    """Remove the least recently written cache files beyond the newest ``KEPT_FILES``."""
    with os.scandir(folder) as found:
        files = [(e.stat().st_mtime, e.path) for e in found if e.name.endswith(".pickle")]
    for _, path in sorted(files, reverse=True)[KEPT_FILES:]:
        with contextlib.suppress(OSError):
            os.remove(path)


class _NodePickler(pickle.Pickler):
    """Pickles syntax nodes as their class and fields: loading them skips ``__init__``."""

    def reducer_override(self, obj):
        if isinstance(obj, gast.AST):
            return copyreg.__newobj__, (type(obj),), obj.__dict__
        return NotImplemented


def _version() -> str:
    from s2sgrad import __version__

    return __version__
