"""Silence one thread's console output while leaving every other thread's alone.

A background review shares the process with the user's program, so it must not print
into their terminal (a prompt, a progress bar, a chat UI). Redirecting ``sys.stdout``
globally would also blank the main thread for the whole review, so instead the
streams are wrapped once in a router that drops writes from silenced threads only,
and log records emitted on those threads are kept away from console handlers (file
handlers still get them). The wrapping is reference-counted and undone when the last
silenced block exits, unless someone replaced the stream meanwhile (then it is left
to them).
"""

from __future__ import annotations

import contextlib
import logging
import sys
import threading
from collections.abc import Iterator
from typing import Any, TextIO

_lock = threading.Lock()
_silenced: dict[int, int] = {}
_installed: dict[str, _Router] = {}


class _Router:
    """A text stream that forwards writes unless they come from a silenced thread."""

    def __init__(self, original: TextIO) -> None:
        self.original = original

    def write(self, text: str) -> int:
        if threading.get_ident() in _silenced:
            return len(text)
        return self.original.write(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        if threading.get_ident() not in _silenced:
            self.original.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.original, name)


class _DropSilenced(logging.Filter):
    """Drop records logged on a silenced thread (console handlers only)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.thread not in _silenced


_filter = _DropSilenced()


def _console_handlers() -> list[logging.Handler]:
    return [
        h
        for h in logging.getLogger().handlers
        if isinstance(h, logging.StreamHandler) and not isinstance(h, logging.FileHandler)
    ]


def _install() -> None:
    for name in ("stdout", "stderr"):
        current = getattr(sys, name)
        if not isinstance(current, _Router):
            router = _Router(current)
            _installed[name] = router
            setattr(sys, name, router)
    for handler in _console_handlers():
        handler.addFilter(_filter)


def _uninstall() -> None:
    for name, router in list(_installed.items()):
        if getattr(sys, name) is router:
            setattr(sys, name, router.original)
        del _installed[name]
    for handler in logging.getLogger().handlers:
        handler.removeFilter(_filter)


def is_silenced(ident: int | None = None) -> bool:
    """Whether the thread ``ident`` (default: this one) is silenced now."""
    return (threading.get_ident() if ident is None else ident) in _silenced


@contextlib.contextmanager
def thread_silence() -> Iterator[None]:
    """Drop this thread's ``print``/stream writes and console log records in the block."""
    ident = threading.get_ident()
    with _lock:
        if not _silenced:
            _install()
        _silenced[ident] = _silenced.get(ident, 0) + 1
    try:
        yield
    finally:
        with _lock:
            _silenced[ident] -= 1
            if not _silenced[ident]:
                del _silenced[ident]
            if not _silenced:
                _uninstall()
