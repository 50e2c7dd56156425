"""Normalise error messages so that the same mistake groups together.

``Error: flight HAT030 not available on date 2024-05-13`` and ``Error: flight HAT223
not available on date 2024-05-14`` are one pitfall. Values that vary between calls
(ids, numbers, dates, quoted values, paths, URLs, e-mail addresses) become
placeholders; the words that say what went wrong stay. Quoted *phrases* (with
spaces) stay too, because in ``"error": "rate limit exceeded"`` the quoted part is
the message itself; only quoted single tokens (``'gift_card_7'``, ``"a.py"``) and
never JSON keys are replaced.
"""

from __future__ import annotations

import re

MAX_CHARS = 200

_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\b[A-Za-z][A-Za-z0-9+.\-]*://[^\s'\"<>]+"), "<url>"),
    (re.compile(r"\b[\w.+\-]+@[\w\-]+(?:\.[\w\-]+)+\b"), "<email>"),
    (
        re.compile(
            r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"
        ),
        "<uuid>",
    ),
    (
        re.compile(
            r"\b\d{4}-\d{2}-\d{2}"
            r"(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+\-]\d{2}:?\d{2})?)?\b"
        ),
        "<date>",
    ),
    (re.compile(r"\b\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?\b"), "<time>"),
    # A quoted single token that is not a JSON key ("key": stays).
    (re.compile(r"'[^'\s]{1,80}'(?!\s*:)|\"[^\"\s]{1,80}\"(?!\s*:)"), "<str>"),
    (re.compile(r"(?<![\w<])(?:~|\.{1,2})?(?:/[\w.\-]+){2,}/?"), "<path>"),
    (re.compile(r"\b[A-Za-z]:\\[^\s'\"]+"), "<path>"),
    # A token mixing letters and digits: HAT030, gift_card_5094406, 0x1f, abc123def.
    (re.compile(r"\b(?=[\w\-]*\d)(?=[\w\-]*[A-Za-z])[\w\-]{2,}\b"), "<id>"),
    (re.compile(r"(?<![\w.])[-+]?\d+(?:[.,]\d+)*\b"), "<n>"),
)
_PLACEHOLDER = re.compile(r"\[REDACTED:[a-z0-9\-]+\]")
_SPACE = re.compile(r"\s+")
_MARK = 0xF0000  # private-use code points stand in for placeholders while rules run
_OWN_MARKS = re.compile("[\U000f0000-\U000fffff]")  # so input never holds one


def normalize_message(text: str) -> str:
    """The message with varying values replaced by ``<id>``, ``<n>``, ``<str>``, ...

    Redaction placeholders (``[REDACTED:kind]``) survive as they are. The result is
    whitespace-collapsed and at most :data:`MAX_CHARS` characters.
    """
    text = _SPACE.sub(" ", _OWN_MARKS.sub("", text)).strip()
    if not text:
        return ""
    kept: list[str] = []

    def stash(match: re.Match[str]) -> str:
        kept.append(match.group(0))
        return chr(_MARK + len(kept) - 1)

    text = _PLACEHOLDER.sub(stash, text)
    for pattern, placeholder in _RULES:
        text = pattern.sub(placeholder, text)
    if kept:
        text = "".join(
            kept[ord(ch) - _MARK] if _MARK <= ord(ch) < _MARK + len(kept) else ch for ch in text
        )
    if len(text) > MAX_CHARS:
        text = text[: MAX_CHARS - 1] + "…"
    return text
