"""Which conversation a request belongs to, which A/B arm it is in, and its warm prefix.

Chat requests are stateless: every request repeats the whole conversation. The proxy
recognises a conversation by the ``X-Warmstart-Session`` header when the client sends
one, else by a hash of its first messages (the leading system messages and the first
message after them), which stay the same as the conversation grows. The prefix chosen
for the first request is kept per conversation, so every later request carries the
very same bytes and the upstream's prompt cache keeps hitting.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from warmstart.proxy.warm import WarmPlan

SESSION_HEADER = "x-warmstart-session"
SESSION_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:@-]{0,199}$")
ARMS = ("warm", "cold")


class BadSessionId(ValueError):
    """The client's session header is not a usable id."""


def session_id_for(messages: Sequence[Any], header: str | None = None) -> str:
    """The conversation id: the client's header, or ``h-`` and a hash of its first messages.

    The hash covers role and content of the leading system messages and of the first
    message after them, which is all a conversation's later requests are sure to repeat.
    """
    if header is not None:
        value = header.strip()
        if not SESSION_RE.match(value):
            raise BadSessionId(
                "X-Warmstart-Session must be 1-200 characters of letters, digits and ._:@- "
                "starting with a letter or digit"
            )
        return value
    head: list[Any] = []
    for message in messages:
        if not isinstance(message, dict):
            head.append(message)
            break
        head.append([message.get("role"), message.get("content")])
        if message.get("role") not in ("system", "developer"):
            break
    canonical = json.dumps(head, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return "h-" + hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()[:24]


def assign_arm(session_id: str, warm_share: float) -> str:
    """``warm`` with probability ``warm_share``, deterministically from the session id.

    A hash rather than a random draw, so a restarted proxy (or a second replica) puts a
    conversation in the same arm it was in before.
    """
    digest = hashlib.sha256(b"warmstart-ab\x00" + session_id.encode("utf-8")).digest()
    draw = int.from_bytes(digest[:8], "big") / 2**64
    return "warm" if draw < warm_share else "cold"


def is_new_conversation(messages: Sequence[Any]) -> bool:
    """A request starts a conversation when no assistant message is in it yet."""
    return not any(isinstance(m, dict) and m.get("role") == "assistant" for m in messages)


@dataclass
class Conversation:
    """What the proxy remembers about one conversation."""

    id: str
    plan: WarmPlan
    arm: str | None = None
    started_at: float = field(default_factory=time.time)
    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0


class Conversations:
    """An LRU map of conversations: the ones in use stay, idle ones are forgotten first.

    Forgetting costs nothing but a re-plan: plans are deterministic for a template
    version and a first user message, so a forgotten conversation gets the same prefix.
    """

    def __init__(self, limit: int = 10_000) -> None:
        self.limit = limit
        self._items: OrderedDict[str, Conversation] = OrderedDict()

    def get(self, session_id: str) -> Conversation | None:
        """The conversation, marked as recently used; None when unknown."""
        item = self._items.get(session_id)
        if item is not None:
            self._items.move_to_end(session_id)
        return item

    def put(self, conversation: Conversation) -> Conversation:
        """Remember ``conversation``; an existing one with the same id wins (first plan)."""
        existing = self._items.get(conversation.id)
        if existing is not None:
            self._items.move_to_end(conversation.id)
            return existing
        self._items[conversation.id] = conversation
        while len(self._items) > self.limit:
            self._items.popitem(last=False)
        return conversation

    def __len__(self) -> int:
        return len(self._items)
