"""The scripted model the A/B tests run against (through the OpenAI double's responder).

It is a pure function of the request, as a real model is: it looks for a warm history
in the messages and behaves worse without one, so the harness must come out with exactly
the per-arm numbers the script implies.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.support.openai_double import Reply, call, text, tool_calls


def has_warm_history(messages: list[dict[str, Any]]) -> bool:
    """Warm history = tool calls shown before the (last) user message, the task."""
    last_user = max(i for i, m in enumerate(messages) if m["role"] == "user")
    return any(m.get("tool_calls") for m in messages[:last_user])


def steps_taken(messages: list[dict[str, Any]]) -> int:
    """Assistant turns since the task message: where the scripted model is."""
    last_user = max(i for i, m in enumerate(messages) if m["role"] == "user")
    return sum(1 for m in messages[last_user:] if m["role"] == "assistant")


def scripted_model(
    episodes: list[tuple[str, bool]] | None = None,
) -> Callable[[dict[str, Any]], Reply]:
    """Cold: a wrong first call (``../notes.txt``, which the sandbox refuses), then the
    right ones; warm: right first time. Records ``(task, warm)`` per episode start."""

    def respond(request: dict[str, Any]) -> Reply:
        messages = request["messages"]
        warm = has_warm_history(messages)
        step = steps_taken(messages)
        if step == 0 and episodes is not None:
            episodes.append((messages[-1]["content"], warm))
        script = [] if warm else [call("read_file", {"path": "../notes.txt"})]
        script += [
            call("read_file", {"path": "notes.txt"}),
            call("write_file", {"path": "out.txt", "content": "HELLO"}),
        ]
        return tool_calls(script[step]) if step < len(script) else text("done")

    return respond
