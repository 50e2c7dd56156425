"""Text hygiene for the store: what SQLite and PostgreSQL both accept.

PostgreSQL refuses NUL characters in text and both drivers refuse lone surrogates,
which hostile or broken logs do contain; such characters become U+FFFD rather
than failing the whole batch.
"""

from __future__ import annotations


def clean(text: str | None) -> str | None:
    """Return ``text`` safe to store, or ``None`` unchanged."""
    if text is None:
        return None
    if "\x00" in text:
        text = text.replace("\x00", "\ufffd")
    if text.isascii():  # fast path: ASCII holds no surrogates
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "replace").decode("utf-8")
    return text


def clip(text: str | None, limit: int) -> str | None:
    """Clean and cut ``text`` to ``limit`` characters."""
    if text is None:
        return None
    return clean(text[:limit] if len(text) > limit else text)
