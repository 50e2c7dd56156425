"""Typed errors raised by the warmstart library.

The CLI turns each into one red line and a non-zero exit; set
``WARMSTART_RAISE_ERRORS=1`` to see the traceback instead.

    WarmstartError
     ├── ConfigError            bad configuration value or file
     ├── SourceError            an input log that cannot be read at all
     │    └── UnknownSourceError   no source recognises the input
     ├── StoreError             the warmstart database cannot be opened or migrated
     ├── TemplateError          unknown template, bad name, bad export file
     │    └── InvalidNameError     a name with path tricks or of bad length
     ├── InjectError            a warm history that fails validation
     ├── ApprovalError          the approval gate refused, timed out or is unreachable
     └── ContextWindowTooSmall  a model's context window is below the minimum
"""

from __future__ import annotations


class WarmstartError(Exception):
    """Base class of every error warmstart raises on purpose."""


class ConfigError(WarmstartError):
    """A configuration value or file is invalid."""


class SourceError(WarmstartError):
    """An input log cannot be read at all (missing, unreadable, wrong kind)."""


class UnknownSourceError(SourceError):
    """No registered source recognises the input."""


class StoreError(WarmstartError):
    """The warmstart store cannot be opened, migrated or written."""


class TemplateError(WarmstartError):
    """A template is unknown, or an export file is malformed."""


class InvalidNameError(TemplateError):
    """A user-given name is empty, too long or contains path tricks."""


class InjectError(WarmstartError):
    """A warm history does not validate (unpaired ids, bad arguments)."""


class ApprovalError(WarmstartError):
    """The approval gate refused, timed out or could not be reached."""


class ContextWindowTooSmall(WarmstartError):
    """A model's context window is smaller than the run needs."""

    def __init__(self, model: str, length: int, minimum: int, setting: str) -> None:
        self.model = model
        self.length = length
        self.minimum = minimum
        self.setting = setting
        super().__init__(
            f"model {model!r} has a context window of {length:,} tokens, below the "
            f"minimum of {minimum:,}; set {setting} to override"
        )
