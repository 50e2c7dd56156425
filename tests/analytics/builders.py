"""Small stores built from hand-written sessions, so every expected figure is known."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

from warmstart.config import MiningConfig
from warmstart.mining.miner import mine_session
from warmstart.model import Message, Session, ToolCallSpec
from warmstart.store import Store

Call = tuple[str, bool] | tuple[str, bool, str]
"""(tool, ok) or (tool, ok, error text): one assistant turn with one call and its result."""


def session(
    key: str,
    calls: Sequence[Call],
    *,
    source: str = "test",
    pad_to: int = 0,
    outcome: float | None = None,
    end_reason: str | None = None,
    model: str | None = None,
    started_at: float | None = None,
    step: float | None = None,
) -> Session:
    """A session: a user turn, then one assistant turn per call, each answered.

    Call ``i`` is at turn ``i``. Failed calls answer ``Error: <tool> failed on item
    <i>`` unless a text is given. With ``step``, the call at turn ``i`` (and its
    result) carries the timestamp ``started_at + step * (i + 1)``. User messages pad
    the session to ``pad_to`` messages (they add no turns).
    """
    messages = [Message("user", "please do the task", timestamp=started_at)]
    for i, call in enumerate(calls):
        tool, ok = call[0], call[1]
        error = call[2] if len(call) == 3 else f"Error: {tool} failed on item {i}"
        ts = None if step is None or started_at is None else started_at + step * (i + 1)
        spec = ToolCallSpec(f"call_{i}", tool, json.dumps({"item": i}))
        messages.append(Message("assistant", None, [spec], timestamp=ts))
        messages.append(
            Message(
                "tool", "done" if ok else error, tool_call_id=f"call_{i}", name=tool, timestamp=ts
            )
        )
    while len(messages) < pad_to:
        messages.append(Message("user", "and another thing"))
    return Session(
        source=source,
        external_id=key,
        messages=messages,
        outcome=outcome,
        end_reason=end_reason,
        model=model,
        started_at=started_at,
        fingerprint=key,
    )


def text_session(key: str, n: int = 4, source: str = "test") -> Session:
    """A conversation without any tool call."""
    roles = ["user", "assistant"]
    return Session(
        source=source,
        external_id=key,
        messages=[Message(roles[i % 2], f"message {i}") for i in range(n)],
        fingerprint=key,
    )


def store(url: str, sessions: Iterable[Session], config: MiningConfig | None = None) -> Store:
    """Mine and write the sessions; return the store."""
    cfg = config or MiningConfig()
    target = Store(url)
    target.write_sessions([(s, *mine_session(s, cfg)) for s in sessions])
    return target
