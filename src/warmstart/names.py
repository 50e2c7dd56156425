"""Validation of user-given names (templates, skills): no path tricks, bounded length."""

from __future__ import annotations

import re

from warmstart.errors import InvalidNameError

MAX_NAME = 64
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


def validate_name(name: str, what: str = "template") -> str:
    """Return ``name`` if it is a safe identifier, else raise :class:`InvalidNameError`."""
    if not isinstance(name, str) or not name:
        raise InvalidNameError(f"{what} name must not be empty")
    if len(name) > MAX_NAME:
        raise InvalidNameError(f"{what} name {name[:20]!r}… is longer than {MAX_NAME} characters")
    if ".." in name or "/" in name or "\\" in name:
        raise InvalidNameError(f"{what} name {name!r} must not contain '..', '/' or '\\'")
    if not _NAME_RE.match(name):
        raise InvalidNameError(
            f"{what} name {name!r} may only hold letters, digits, '.', '_' and '-', "
            "starting with a letter or digit"
        )
    return name
