"""When a review is due: counters over user turns and tool iterations.

Reviewing after every turn would double the cost of a conversation, so reviews fire on
a cadence, as in Hermes Agent: a *memory* review after N user turns (facts about the
user accumulate with conversation) and a *skill* review after N tool iterations
(procedures accumulate with tool use), both 10 by default, 0 for never. A counter
resets when the main agent called the matching tool itself during the turn: it just
saved what it thought worth saving, so a review right after would mostly repeat it.
When both fire, one combined review runs.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from warmstart.review.config import ReviewKind

MEMORY_TOOLS = frozenset({"memory"})
SKILL_TOOLS = frozenset({"skill_manage"})
_INVALID_CALLS = frozenset({"unknown_tool", "not_whitelisted", "bad_arguments"})


@dataclass(frozen=True)
class TurnStats:
    """What one turn of the main agent did, as far as the triggers care.

    ``tool_iterations`` counts model requests that asked for tools (an assistant
    message with tool calls); ``tools_called`` names the tools it called with valid
    arguments (a call that never reached the tool does not count as "saved").
    """

    user_turns: int = 1
    tool_iterations: int = 0
    tools_called: frozenset[str] = field(default_factory=frozenset)

    @classmethod
    def from_messages(cls, messages: Sequence[Mapping[str, Any]]) -> TurnStats:
        """Stats of a slice of OpenAI messages holding one (or more) turns."""
        user_turns = sum(1 for m in messages if m.get("role") == "user")
        iterations = 0
        called: set[str] = set()
        for message in messages:
            if message.get("role") != "assistant" or not message.get("tool_calls"):
                continue
            iterations += 1
            for call in message.get("tool_calls") or ():
                function = call.get("function") if isinstance(call, Mapping) else None
                if isinstance(function, Mapping) and function.get("name"):
                    called.add(str(function["name"]))
        return cls(max(user_turns, 1), iterations, frozenset(called))

    @classmethod
    def from_run(cls, result: Any) -> TurnStats:
        """Stats of one :class:`~warmstart.runtime.RunResult` (warm history excluded)."""
        conversation = result.messages[result.warm_start + result.warm_count :]
        iterations = sum(
            1 for m in conversation if m.get("role") == "assistant" and m.get("tool_calls")
        )
        called = {c.tool for c in result.calls if c.error_kind not in _INVALID_CALLS}
        return cls(1, iterations, frozenset(called))


class Triggers:
    """The two counters of one conversation; thread-safe."""

    def __init__(self, memory_every: int = 10, skills_every: int = 10) -> None:
        """``memory_every`` user turns and ``skills_every`` tool iterations; 0 disables."""
        self.memory_every = memory_every
        self.skills_every = skills_every
        self.turns_since_memory = 0
        self.iterations_since_skill = 0
        self._lock = threading.Lock()

    def observe(self, stats: TurnStats) -> ReviewKind | None:
        """Count one finished turn and say which review is due now, if any."""
        with self._lock:
            memory_due = self._memory(stats)
            skills_due = self._skills(stats)
        if memory_due and skills_due:
            return "both"
        if memory_due:
            return "memory"
        if skills_due:
            return "skills"
        return None

    def _memory(self, stats: TurnStats) -> bool:
        if self.memory_every <= 0:
            return False
        if _called(stats.tools_called, MEMORY_TOOLS):
            self.turns_since_memory = 0
            return False
        self.turns_since_memory += stats.user_turns
        if self.turns_since_memory >= self.memory_every:
            self.turns_since_memory = 0
            return True
        return False

    def _skills(self, stats: TurnStats) -> bool:
        if self.skills_every <= 0:
            return False
        if _called(stats.tools_called, SKILL_TOOLS):
            self.iterations_since_skill = 0
            return False
        self.iterations_since_skill += stats.tool_iterations
        if self.iterations_since_skill >= self.skills_every:
            self.iterations_since_skill = 0
            return True
        return False

    def reset(self) -> None:
        """Start counting afresh (a new conversation)."""
        with self._lock:
            self.turns_since_memory = 0
            self.iterations_since_skill = 0


def _called(tools: Iterable[str], wanted: frozenset[str]) -> bool:
    return any(tool in wanted for tool in tools)
