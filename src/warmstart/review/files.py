"""Atomic writes and cross-process locks shared by the review stores.

Why both: a reader must never see a half-written ``MEMORY.md`` (so files are written
to a temporary file in the same folder, flushed to disk and renamed over the old one),
and two writers doing read-modify-write must not interleave (so each store takes an
exclusive ``filelock`` around the whole cycle). ``filelock`` uses ``fcntl.flock`` on a
``<file>.lock`` beside the file, the same primitive and lock-file name Hermes Agent's
memory tool uses, so a warmstart reviewer and a running Hermes agent exclude each other.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

from filelock import FileLock, Timeout

from warmstart.review.errors import StoreWriteError

DEFAULT_LOCK_TIMEOUT = 30.0


def atomic_write_text(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` in one step: temp file, fsync, rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=str(path.parent), prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def lock_path_for(path: Path) -> Path:
    """``MEMORY.md`` -> ``MEMORY.md.lock`` (the name Hermes Agent locks too)."""
    return path.with_name(path.name + ".lock")


@contextlib.contextmanager
def locked(path: Path, timeout: float = DEFAULT_LOCK_TIMEOUT) -> Iterator[None]:
    """Hold the exclusive lock guarding ``path`` for the duration of the block.

    A fresh :class:`FileLock` per use: each holds its own descriptor, so two threads of
    one process exclude each other exactly as two processes do. A wait longer than
    ``timeout`` becomes a :class:`StoreWriteError` the review tool reports to the model.
    """
    lock_file = lock_path_for(path)
    lock_file.parent.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(lock_file), timeout=timeout)
    try:
        lock.acquire()
    except Timeout as exc:
        raise StoreWriteError(
            f"{path.name} is locked by another writer (waited {timeout:g} s); "
            "nothing was changed, try again later"
        ) from exc
    try:
        yield
    finally:
        lock.release()
