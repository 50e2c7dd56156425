"""Errors of the background review: the stores refuse a write with one of these.

    WarmstartError
     └── ReviewError              anything the review package refuses on purpose
          ├── StoreWriteError     a memory or skill write that cannot be applied as asked
          │    ├── MemoryWriteError   bad operation, no match, over the character limit
          │    ├── MemoryFileError    MEMORY.md/USER.md unreadable or edited out of shape
          │    └── SkillWriteError    bad name, front matter, path, or no such skill
          └── PendingError        no staged write with that id, or it cannot be applied

Store errors carry ``details`` (current entries, usage, a file preview) because the
review tools turn them into JSON tool results the model reads and reacts to: a model
told *why* and *what is there now* can fix its call in the same turn.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from warmstart.errors import WarmstartError


class ReviewError(WarmstartError):
    """Base class of every error the review package raises on purpose."""


class StoreWriteError(ReviewError):
    """A write to the memory or skill store that was refused; nothing was changed."""

    def __init__(self, message: str, details: Mapping[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details: dict[str, Any] = dict(details or {})


class MemoryWriteError(StoreWriteError):
    """A memory operation is malformed, matches nothing (or too much), or overflows."""


class MemoryFileError(StoreWriteError):
    """A memory file cannot be read, or holds content the tool would destroy by writing."""


class SkillWriteError(StoreWriteError):
    """A skill write names a bad or missing skill, path or front matter."""


class PendingError(ReviewError):
    """A staged write does not exist or can no longer be applied."""
